"""Kafka's client quotas: the quota settings kept per entity (store.py), the sampled rates
they are measured against (rate.py) and the manager that resolves a client's quota, records
its usage and says how long to throttle it (manager.py)."""

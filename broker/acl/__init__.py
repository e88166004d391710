"""Kafka's ACL authorizer (the model of ``StandardAuthorizer``): ACL bindings and filters
(model.py), their durable owner (store.py), the decision and its audit log (authorizer.py)."""

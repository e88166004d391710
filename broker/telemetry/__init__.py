"""Client telemetry (KIP-714): client-metrics subscriptions, client instances, pushed metrics.

``subscriptions`` owns the CLIENT_METRICS config resources (what an operator sets with
``kafka-client-metrics``); ``instances`` answers GetTelemetrySubscriptions and PushTelemetry with
Kafka's ClientMetricsManager semantics; ``receiver`` decodes the pushed OTLP metrics and shows
them on the Prometheus listener (``broker/metrics``).
"""

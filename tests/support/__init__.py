"""What tests share: topics (topics.py), waiting with a deadline (waiting.py), a group of our consumers
(consumer_groups.py); the broker process itself is tests/broker_process.py, Apache Kafka's is reference/kafka.py."""

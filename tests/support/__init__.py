"""What tests share: topics (topics.py), waiting with a deadline (waiting.py); the broker process
itself is tests/broker_process.py, Apache Kafka's is reference/kafka.py."""

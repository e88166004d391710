# Weir broker image: one process, data in /data, Kafka wire protocol on 9092.
FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md ./
COPY protocol ./protocol
COPY broker ./broker
COPY client ./client
RUN pip install --no-cache-dir .
EXPOSE 9092
VOLUME ["/data"]
ENTRYPOINT ["python", "-m", "broker"]
CMD ["--host", "0.0.0.0", "--port", "9092", "--data-dir", "/data", "--override", "advertised.listeners=PLAINTEXT://localhost:9092"]

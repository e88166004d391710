# Weir broker image: one process, data in /data, Kafka wire protocol on 9092.
FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml setup.py README.md ./
# The wheel maps these folders under one namespace, weir.* (setup.py); pipeline/ is part of it
# (its PySpark dependencies are the optional `pipeline` extra, not installed here).
COPY weir ./weir
COPY protocol ./protocol
COPY broker ./broker
COPY client ./client
COPY pipeline ./pipeline
# gcc only for the build of the C record walk (protocol/_record_scan.c), then removed.
RUN apt-get update && apt-get install -y --no-install-recommends gcc libc6-dev \
    && pip install --no-cache-dir . \
    && apt-get purge -y gcc libc6-dev && apt-get autoremove -y && rm -rf /var/lib/apt/lists/*
EXPOSE 9092
VOLUME ["/data"]
ENTRYPOINT ["python", "-m", "weir.broker"]
CMD ["--host", "0.0.0.0", "--port", "9092", "--data-dir", "/data", "--override", "advertised.listeners=PLAINTEXT://localhost:9092"]

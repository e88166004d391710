"""The load of the power-cut tests, run as a process the test kills: librdkafka (confluent-kafka)
clients print each thing the broker acknowledged, one line each, flushed before the next.

    python -m tests.integration.power_load BOOTSTRAP ROUND

- ``commit ROUND-N OFFSET``: a transaction committed (commit_transaction returned): its
  records ``ROUND-N-0..`` in ``orders`` and its offset OFFSET for group ``power-eos``;
- ``ack PARTITION OFFSET VALUE``: an idempotent acks=all record in ``plain`` acknowledged;
- ``offset OFFSET``: a plain OffsetCommit of OFFSET for group ``power-plain`` answered.
"""

from __future__ import annotations

import sys

from confluent_kafka import Consumer, Producer, TopicPartition

RECORDS_PER_TXN = 6
ORDER_PARTITIONS = 3
TXN_ID = "power-txn"
TIMEOUT_S = 30


def say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def main() -> None:
    bootstrap, round_ = sys.argv[1], int(sys.argv[2])
    common = {"bootstrap.servers": bootstrap, "socket.connection.setup.timeout.ms": 3000}
    transactional = Producer({**common, "transactional.id": TXN_ID, "linger.ms": 1})
    transactional.init_transactions(TIMEOUT_S)
    eos_group = Consumer({**common, "group.id": "power-eos", "enable.auto.commit": False})
    plain_group = Consumer({**common, "group.id": "power-plain", "enable.auto.commit": False})
    plain = Producer({**common, "enable.idempotence": True, "acks": "all", "linger.ms": 1})

    def acknowledged(error, message):
        if error is None:
            say(f"ack {message.partition()} {message.offset()} {message.value().decode()}")

    n = 0
    while True:
        offset = round_ * 1_000_000 + n + 1  # grows across rounds: a committed offset never goes back
        transactional.begin_transaction()
        for i in range(RECORDS_PER_TXN):
            transactional.produce("orders", value=f"{round_}-{n}-{i}".encode(), partition=i % ORDER_PARTITIONS)
        transactional.send_offsets_to_transaction([TopicPartition("input", 0, offset)],
                                                  eos_group.consumer_group_metadata(), TIMEOUT_S)
        transactional.commit_transaction(TIMEOUT_S)
        say(f"commit {round_}-{n} {offset}")
        for i in range(2):
            plain.produce("plain", value=f"{round_}-{n}-{i}".encode(), partition=i, on_delivery=acknowledged)
        plain.poll(0)
        plain_group.commit(offsets=[TopicPartition("input", 0, offset)], asynchronous=False)
        say(f"offset {offset}")
        n += 1


if __name__ == "__main__":
    main()

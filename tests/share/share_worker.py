"""A share consumer in its own process: polls until it holds records, prints their offsets, then
holds them without polling again (the test kills it with SIGKILL)."""

import sys
import time

from confluent_kafka import ShareConsumer


def main(bootstrap: str, group: str, topic: str) -> None:
    consumer = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group,
                              "share.acknowledgement.mode": "explicit"})
    consumer.subscribe([topic])
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        held = [m.offset() for m in consumer.poll(0.5) if m.error() is None]
        if held:
            print("HELD", " ".join(map(str, held)), flush=True)
            break
    time.sleep(3600)  # hold the records until killed


if __name__ == "__main__":
    main(*sys.argv[1:])

"""A share consumer in its own process: polls once it gets records, accepts the first ``accept``
of them (commit_sync: the broker has answered), prints what it holds and what it accepted, then
holds the rest without polling again (the test kills it with SIGKILL)."""

import sys
import time

from confluent_kafka import AcknowledgeType, ShareConsumer


def main(bootstrap: str, group: str, topic: str, accept: str = "0") -> None:
    consumer = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group,
                              "share.acknowledgement.mode": "explicit"})
    consumer.subscribe([topic])
    held = []
    deadline = time.monotonic() + 60
    while not held and time.monotonic() < deadline:
        held = [m for m in consumer.poll(0.5) if m.error() is None]
    accepted = held[:int(accept)]
    for message in accepted:
        consumer.acknowledge(message, AcknowledgeType.ACCEPT)
    if accepted:
        results = consumer.commit_sync(30)
        assert all(error is None for error in results.values()), results
    print("HELD", " ".join(str(m.offset()) for m in held), flush=True)
    print("ACCEPTED", " ".join(str(m.offset()) for m in accepted), flush=True)
    time.sleep(3600)  # hold the rest until killed


if __name__ == "__main__":
    main(*sys.argv[1:])

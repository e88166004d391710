"""A small exactly-once service, and the program its tests (test_shouting_service.py) check
with Weir's pytest plugin: it reads lines from one topic, writes them upper-cased to another,
and commits what it read in the same transaction as what it wrote (consume-transform-produce
on Weir's client), so a crash of the service or of the broker never loses or repeats a line.

    python examples/testing/shouting_service.py --bootstrap 127.0.0.1:9092 --source lines --sink shouts

SIGTERM or SIGINT stops it cleanly; kill -9 is what its tests do to it.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
import time

from weir.client import GroupTransactSession
from weir.client.errors import KafkaException

RETRY_PAUSE_S = 0.2  # between attempts while the broker is away (restarting)


def shout(value: bytes) -> bytes:
    """The transformation: the service's whole business logic."""
    return value.upper()


async def end_transaction(session: GroupTransactSession) -> bool:
    """Commit; while the broker restarts the commit is tried again, a fatal error (a newer
    instance with our transactional id fenced us) stops the service."""
    while True:
        try:
            return await session.end()
        except KafkaException as exc:
            if getattr(exc, "fatal", False):
                raise
            await asyncio.sleep(RETRY_PAUSE_S)


async def run(bootstrap: str, source: str, sink: str, *, group: str, transactional_id: str,
              stop: asyncio.Event, commit_interval_ms: int = 100) -> None:
    """Serve until ``stop`` is set; an open transaction then commits."""
    session = GroupTransactSession(
        source, bootstrap_servers=bootstrap, group_id=group, transactional_id=transactional_id,
        group_instance_id=transactional_id,  # a restarted instance takes its predecessor's place at once (KIP-345)
        transaction_timeout_ms=10000, producer_options=dict(linger_ms=5))
    await session.start()  # fences an earlier instance with this transactional id and aborts what it left open
    try:
        opened = 0.0
        while not stop.is_set():
            try:
                batches = await session.getmany(timeout_ms=50, max_records=100)
            except KafkaException as exc:  # the broker is away: the session reconnects on the next call
                if getattr(exc, "fatal", False):
                    raise
                await asyncio.sleep(RETRY_PAUSE_S)
                continue
            for records in batches.values():
                if records and not opened:
                    opened = time.monotonic()
                for record in records:
                    await session.send(sink, shout(record.value), record.key)
            if session.in_transaction and time.monotonic() - opened >= commit_interval_ms / 1000:
                await end_transaction(session)
                opened = 0.0
        if session.in_transaction:
            await end_transaction(session)
    finally:
        await session.close()


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bootstrap", default="127.0.0.1:9092")
    parser.add_argument("--source", required=True)
    parser.add_argument("--sink", required=True)
    parser.add_argument("--group", default="shouting-service")
    parser.add_argument("--transactional-id", default="shouting-service-1")
    args = parser.parse_args(argv)

    async def serve() -> None:
        stop = asyncio.Event()
        for signum in (signal.SIGTERM, signal.SIGINT):
            asyncio.get_running_loop().add_signal_handler(signum, stop.set)
        print("serving", flush=True)
        await run(args.bootstrap, args.source, args.sink, group=args.group,
                  transactional_id=args.transactional_id, stop=stop)

    asyncio.run(serve())


if __name__ == "__main__":
    sys.exit(main())

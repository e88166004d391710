"""Creating a topic on a running broker, through Weir's own admin client."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Mapping

from .settings import as_properties


async def create_topic(bootstrap_servers: str, name: str, partitions: int = 1,
                       config: Mapping[str, object] | None = None) -> str:
    """Create ``name`` (replication factor 1: a single broker) and return its name.

    Raises the admin client's errors, e.g. ``TopicAlreadyExistsError`` or ``InvalidConfigError``.
    """
    from weir.client.admin import Admin, NewTopic  # the client is imported only when a topic is made

    async with Admin(bootstrap_servers) as admin:
        await admin.create_topics([NewTopic(name, partitions, 1, as_properties(config))])
    return name


def create_topic_blocking(bootstrap_servers: str, name: str, partitions: int = 1,
                          config: Mapping[str, object] | None = None) -> str:
    """``create_topic`` for synchronous callers, also when the calling thread runs an event loop
    (an async test using a synchronous fixture): the call gets a loop of its own in a thread.
    The broker must not be served by the calling thread's loop, or this waits for ever."""
    outcome: list = []

    def run() -> None:
        try:
            outcome.append(asyncio.run(create_topic(bootstrap_servers, name, partitions, config)))
        except BaseException as exc:  # handed to the caller's thread
            outcome.append(exc)

    worker = threading.Thread(target=run, name=f"weir-create-topic-{name}")
    worker.start()
    worker.join()
    if isinstance(outcome[0], BaseException):
        raise outcome[0]
    return outcome[0]

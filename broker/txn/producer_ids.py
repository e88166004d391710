"""Producer ids that are never handed out twice, across restarts and crashes.

Ids are reserved in blocks: the end of the current block is made durable
(write, fsync, rename) before any id in it is handed out, as Kafka's
ProducerIdManager does with its blocks. A crash wastes the rest of a block,
never reuses an id.
"""

from __future__ import annotations

from pathlib import Path

from weir.protocol.errors import Errors, KafkaError

from ..log import disk

BLOCK_SIZE = 1000


class ProducerIdAllocator:
    def __init__(self, data_dir: Path, block_size: int = BLOCK_SIZE):
        self._path = Path(data_dir) / "producer_id_block"
        self._block_size = block_size
        reserved = 0
        if self._path.exists():
            text = self._path.read_text().strip()
            reserved = int(text) if text else 0
        self._next = reserved
        self._block_end = reserved

    def allocate(self) -> int:
        if self._next >= self._block_end:
            self._reserve(self._next + self._block_size)
        producer_id = self._next
        self._next += 1
        return producer_id

    def _reserve(self, block_end: int) -> None:
        try:
            # The directory too: a rename not yet on the disk leaves the old block after a power
            # loss, and its ids would be handed out again.
            disk.replace_durably(self._path, f"{block_end}\n".encode())
        except KafkaError:
            # Kafka's producer id manager answers this while it waits for its next block.
            raise KafkaError(Errors.COORDINATOR_LOAD_IN_PROGRESS, "cannot reserve the next producer id block") \
                from None
        self._block_end = block_end

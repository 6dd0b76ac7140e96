"""Producer ids from persisted blocks (Kafka's ProducerIdManager, for one node).

Ids come in blocks of 1000. Before an id of a block is handed out, the block's end is
persisted in `<first log dir>/producer-id-block`, so ids are never reused after a restart or
crash. File layout (UTF-8 JSON, replaced atomically):
`{"version": 1, "next_block_start": <int64>}`.
"""

from __future__ import annotations

import json
from pathlib import Path

from odradek.broker.storage.files import atomic_write
from odradek.coordinator.txn.coordinator import ProducerIdsExhaustedError

PRODUCER_ID_BLOCK_FILE = "producer-id-block"
PRODUCER_ID_BLOCK_SIZE = 1000
_INT64_MAX = 2**63 - 1


class ProducerIdAllocator:
    """A `ProducerIdSource` for the transaction coordinator."""

    def __init__(self, path: Path, block_size: int = PRODUCER_ID_BLOCK_SIZE) -> None:
        self.path = path
        self.block_size = block_size
        # Read on first use: a damaged file fails InitProducerId, not the broker's start.
        self._next: int | None = None
        self._block_end = 0

    def _read(self) -> int:
        try:
            data = json.loads(self.path.read_text())
        except FileNotFoundError:
            return 0
        except (OSError, ValueError) as exc:
            raise OSError(f"unreadable producer id block file {self.path}: {exc}") from exc
        start = data.get("next_block_start") if isinstance(data, dict) else None
        if not isinstance(start, int) or start < 0:
            raise OSError(f"producer id block file {self.path} has no valid next_block_start")
        return start

    def _write(self, next_block_start: int) -> None:
        data = json.dumps({"version": 1, "next_block_start": next_block_start}).encode()
        atomic_write(self.path, data)  # file and directory fsynced: survives a power loss

    def next_producer_id(self) -> int:
        if self._next is None:
            self._next = self._block_end = self._read()
        if self._next >= self._block_end:
            end = self._next + self.block_size
            if end > _INT64_MAX:
                raise ProducerIdsExhaustedError("producer ids exhausted")
            self._write(end)  # reserve the block before using it
            self._block_end = end
        pid = self._next
        self._next += 1
        return pid

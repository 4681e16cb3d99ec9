"""Bytes a read keeps for later in an unlinked temporary file, so holding them costs their
offsets only: the spooled records of a read (`read.RecordSpool`) and the bodies a raw check
keeps for the full read that follows it (`raw.RawCheck`)."""

from __future__ import annotations

import os
import tempfile
from typing import Any


class ByteSpool:
    """`add` writes bytes and returns their (offset, length); `get` reads them back. The file
    is unlinked at once (no other process can open it by name) and dropped by `close`."""

    def __init__(self) -> None:
        self._file: Any = None
        self._size = 0

    def add(self, data: bytes) -> tuple[int, int]:
        if self._file is None:
            self._file = tempfile.TemporaryFile(buffering=0)  # noqa: SIM115 - close()
        view = memoryview(data)
        while view:
            view = view[self._file.write(view) :]
        span = (self._size, len(data))
        self._size += len(data)
        return span

    def get(self, span: tuple[int, int]) -> bytes:
        if not span[1]:
            return b""
        return os.pread(self._file.fileno(), span[1], span[0])

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
        self._size = 0

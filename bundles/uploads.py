"""Receiving bundle bodies with bounded memory: size limits enforced while the bytes arrive."""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.core.files.uploadhandler import FileUploadHandler, SkipFile, StopUpload
from django.http import HttpRequest

READ_CHUNK = 64 * 1024


def scratch_dir() -> Path:
    folder = Path(settings.DATA_DIR) / "bundle-imports"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


class TooLargeError(Exception):
    """The body grew past the configured limit while it was being read."""


@dataclass
class Spooled:
    """A request body: in memory when small, else in a scratch file under DATA_DIR."""

    size: int
    data: bytes | None = None
    path: Path | None = None

    def discard(self) -> None:
        if self.path is not None:
            self.path.unlink(missing_ok=True)
            self.path = None


def new_scratch_file() -> tuple[Any, Path]:
    fd, name = tempfile.mkstemp(prefix="bundle-", suffix=".json", dir=scratch_dir())
    return os.fdopen(fd, "wb"), Path(name)


def spool_body(request: HttpRequest, *, max_bytes: int, memory_bytes: int) -> Spooled:
    """Read the raw body in chunks; switch to a scratch file past `memory_bytes`."""
    buffer = bytearray()
    handle, path, size = None, None, 0
    try:
        while True:
            piece = request.read(READ_CHUNK)
            if not piece:
                break
            size += len(piece)
            if size > max_bytes:
                raise TooLargeError(size)
            if handle is None:
                buffer.extend(piece)
                if len(buffer) > memory_bytes:
                    handle, path = new_scratch_file()
                    handle.write(buffer)
                    buffer = bytearray()
            else:
                handle.write(piece)
    except BaseException:
        if handle is not None:
            handle.close()
            assert path is not None
            path.unlink(missing_ok=True)
        raise
    if handle is not None:
        handle.close()
        return Spooled(size=size, path=path)
    return Spooled(size=size, data=bytes(buffer))


class ScratchUpload(UploadedFile):
    def __init__(self, path: Path, name: str, content_type: str, size: int) -> None:
        super().__init__(path.open("rb"), name, content_type, size)
        self.scratch_path = path


class BundleUploadHandler(FileUploadHandler):
    """Writes the multipart field `file` straight to a scratch file, counting bytes.

    Closed until the view opens it (`accepting`), after the caller is authenticated and
    authorised: a body parsed before that (by anything) writes nothing to disk. Every file it
    wrote is in `paths`, so the view's `discard()` leaves nothing behind on any failure."""

    def __init__(self, request: HttpRequest, *, max_bytes: int) -> None:
        super().__init__(request)
        self.max_bytes = max_bytes
        self.accepting = False
        self.too_large = False
        self.file_parts = 0  # parts named `file`: exactly one is an upload
        self.size = 0
        self.handle: Any = None
        self.path: Path | None = None
        self.paths: list[Path] = []
        self.uploads: list[ScratchUpload] = []

    def new_file(self, field_name: str, *args: Any, **kwargs: Any) -> None:
        if field_name != "file" or not self.accepting:
            raise SkipFile()
        self.file_parts += 1
        if self.file_parts > 1:  # the view refuses the upload: nothing more is written
            raise SkipFile()
        super().new_file(field_name, *args, **kwargs)
        self.handle, self.path = new_scratch_file()
        self.paths.append(self.path)

    def receive_data_chunk(self, raw_data: bytes, start: int) -> None:
        self.size += len(raw_data)
        if self.size > self.max_bytes:
            self.too_large = True
            self.discard()
            raise StopUpload(connection_reset=False)
        self.handle.write(raw_data)

    def file_complete(self, file_size: int) -> UploadedFile | None:
        if self.handle is None or self.path is None:
            return None
        self.handle.close()
        self.handle = None
        upload = ScratchUpload(
            self.path, self.file_name or "bundle.json", self.content_type or "", file_size
        )
        self.uploads.append(upload)
        return upload

    def upload_interrupted(self) -> None:
        """The body ended inside a part: only a file still being written is incomplete."""
        if self.handle is not None:
            self.discard()

    def discard(self) -> None:
        """Close and delete every scratch file this upload wrote."""
        if self.handle is not None:
            self.handle.close()
            self.handle = None
        for upload in self.uploads:
            upload.close()
        for path in self.paths:
            path.unlink(missing_ok=True)
        self.paths, self.path, self.uploads = [], None, []

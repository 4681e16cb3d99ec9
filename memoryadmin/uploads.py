"""Refuse oversized multipart uploads while they stream, before they reach memory or disk."""

from __future__ import annotations

from django.conf import settings
from django.core.files.uploadhandler import FileUploadHandler, SkipFile


class SizeLimitUploadHandler(FileUploadHandler):
    """First in FILE_UPLOAD_HANDLERS: passes chunks on until a file passes the bundle limit,
    then drops that file (the rest of the form still parses, CSRF token included) and marks
    the request with `upload_too_large` so the view can say why."""

    def new_file(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().new_file(*args, **kwargs)
        self.received = 0

    def receive_data_chunk(self, raw_data: bytes, start: int) -> bytes:
        self.received += len(raw_data)
        if self.received > settings.BUNDLE_MAX_BYTES:
            if self.request is not None:
                self.request.upload_too_large = True
            raise SkipFile(f"upload larger than {settings.BUNDLE_MAX_BYTES} bytes")
        return raw_data

    def file_complete(self, file_size: int) -> None:
        return None  # the next handler stores the file

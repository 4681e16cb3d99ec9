"""Domain errors that services raise and every face understands (no HTTP in them).

A ValidationError with a `code` is a 400 with that code; a Conflict (the request is valid but the
current state refuses it) is a 409. memoryadmin.api_errors.exception_handler maps them; HTML
views show their message next to the form.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError


class Conflict(ValidationError):
    """The current state refuses the request (answers 409). Subclasses name their `code`."""

    code: str | None = "conflict"

    def __init__(self, message: Any, code: str | None = None, params: Any = None) -> None:
        super().__init__(message, code=code or type(self).code, params=params)

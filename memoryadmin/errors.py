"""Domain errors that services raise and every face understands (no HTTP in them).

Each is a Django ValidationError whose class names its stable `code`, so HTML views show its
message next to the form like any other, and memoryadmin.api_errors.exception_handler answers
it by kind: a DomainError is a 400, Forbidden a 403, NotFound a 404, Conflict (the request is
valid but the current state refuses it) a 409, Unprocessable a 422. A plain ValidationError is
a 400 with its own code (default `invalid`).
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError


class DomainError(ValidationError):
    """A refusal whose class names its stable `code` (answers 400). Subclasses name theirs; a
    raise may pass another. `details` is structured context for machines; field errors (a dict
    of messages) fill it by themselves."""

    code: str | None = "invalid"
    details: Any = None

    def __init__(self, message: Any, code: str | None = None, params: Any = None) -> None:
        super().__init__(message, code=code or type(self).code, params=params)
        if code:  # a dict or a list of messages keeps no code of its own
            self.code = code


class Forbidden(DomainError):
    """This actor may not do this here, whatever its role (answers 403)."""

    code = "forbidden"


class NotFound(DomainError):
    """What the request names does not exist for this team (answers 404)."""

    code = "not-found"


class Conflict(DomainError):
    """The current state refuses the request (answers 409). Subclasses name their `code`."""

    code = "conflict"


class Unprocessable(DomainError):
    """The request is well-formed, but what it names cannot take it (answers 422)."""

    code = "unprocessable"

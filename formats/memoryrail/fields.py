"""MemoryRail 1 front matter values: text, lists, timestamps and links. No Django import."""

from __future__ import annotations

import posixpath
import re
from datetime import UTC, datetime
from typing import Any

_TIMESTAMP_RE = re.compile(
    r"^\d{4}-\d{2}-\d{2}"
    r"(?:[Tt ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:[Zz]|[+-]\d{2}(?::?\d{2})?)?)?$"
)


def parse_timestamp(value: str) -> datetime | None:
    """ISO 8601 date or date-time; naive values are read as UTC. None when not ISO 8601."""
    if not isinstance(value, str) or not _TIMESTAMP_RE.match(value):
        return None
    try:
        parsed = datetime.fromisoformat(value.replace(",", "."))
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def format_timestamp(moment: datetime) -> str:
    moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def _text(value: Any) -> str | None:
    """Any YAML scalar read as text (the spec accepts any scalar); None for null or collections."""
    if value is None or isinstance(value, list | dict):
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _text_list(value: Any) -> list[str] | None:
    if value is None:
        return []
    if isinstance(value, list):
        items = [_text(item) for item in value]
        return None if any(item is None for item in items) else items  # type: ignore[return-value]
    single = _text(value)
    return None if single is None else [single]


def check_link(link: str) -> str | None:
    """A problem code for a link that is not a safe repo-relative POSIX path, else None."""
    if not link or "\\" in link or "\x00" in link:
        return "link-invalid"
    if link.startswith("/") or re.match(r"^[A-Za-z]:", link):
        return "link-outside-repo"
    normalized = posixpath.normpath(link)
    if normalized == ".." or normalized.startswith("../"):
        return "link-outside-repo"
    if normalized == ".git" or normalized.startswith(".git/"):
        return "link-invalid"
    return None

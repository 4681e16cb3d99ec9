"""MemoryAI Protocol v1: canonical JSON, `encode_record`, the §3.6 checksum (whole and
streamed) and content hashes. No Django here."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from formats.memoryai.fields import SECTIONS, BundleError

# --- hashing and checksums ------------------------------------------------------------------


def content_hash(content: str) -> str:
    """SHA-256 hex of the UTF-8 content exactly as given (no normalisation)."""
    return hashlib.sha256(content.encode("utf-8")).hexdigest()


def canonical_json(value: Any, *, ascii_escaped: bool = False) -> str:
    """Sorted keys, `,`/`:` separators; non-ASCII as UTF-8 unless `ascii_escaped`."""
    return json.dumps(
        value,
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=ascii_escaped,
        allow_nan=False,
    )


# orjson writes floats below 1e-4 as 0.0000… or 1.5e-7 where Python writes 1.5e-07; elsewhere
# (sorted keys, escapes, other numbers) its output is the canonical form byte for byte.
_SMALL_FLOAT = re.compile(rb"[0-9]e-[0-9]")
_DIGITS = frozenset(b"0123456789")
_MARKS_SCANNED = 64  # '.' or '-' looked at one by one before a whole-text search takes over


def _small_float(data: bytes) -> bool:
    """Whether `data` holds "0.0000" or a digit, "e-" and a digit: orjson's way with a small
    float (see encode_record). Found from the few '.' and '-' of a record (memchr) instead of
    substring searches over every byte, which cost a 2.5 KB chunk record ~15 µs; a text with
    many of them is searched whole."""
    find, digits = data.find, _DIGITS
    seen = 0
    at = find(b".")
    while at != -1:
        if at and data[at - 1 : at + 5] == b"0.0000":
            return True
        seen += 1
        if seen > _MARKS_SCANNED:
            return b"0.0000" in data or _SMALL_FLOAT.search(data) is not None
        at = find(b".", at + 1)
    at = find(b"-")
    while at != -1:
        if (
            2 <= at < len(data) - 1
            and data[at - 1] == 101  # "e"
            and data[at - 2] in digits
            and data[at + 1] in digits
        ):
            return True
        seen += 1
        if seen > _MARKS_SCANNED:
            return _SMALL_FLOAT.search(data) is not None
        at = find(b"-", at + 1)
    return False


def encode_record(record: Any) -> tuple[bytes, bytes]:
    """(compact JSON to send, its canonical form for the checksum) from one serialisation.

    The canonical form is that of the JSON *as sent*, as a receiver parses it back."""
    try:
        data = orjson.dumps(record, option=orjson.OPT_SORT_KEYS)
    except TypeError:  # integers past 64 bits: the standard library's form on both sides
        try:
            data = canonical_json(record).encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate has no UTF-8 form: its escaped form
            data = _ascii_canonical(record)  # (the record is refused when it is validated)
        except (TypeError, ValueError, RecursionError) as exc:
            raise BundleError("not-serialisable", f"value is not plain JSON: {exc}") from exc
        return data, data
    if _small_float(data):
        return data, canonical_json(orjson.loads(data)).encode("utf-8")
    return data, data


def _without_checksum(bundle: Mapping[str, Any]) -> dict[str, Any]:
    body = dict(bundle)
    manifest = body.get("manifest")
    if isinstance(manifest, Mapping):
        body["manifest"] = {k: v for k, v in manifest.items() if k != "checksum"}
    return body


def bundle_checksum(bundle: Mapping[str, Any], *, ascii_escaped: bool = False) -> str:
    """§3.6 as pinned here: SHA-256 hex of the canonical bundle without manifest.checksum."""
    try:
        text = canonical_json(_without_checksum(bundle), ascii_escaped=ascii_escaped)
    except (TypeError, ValueError, RecursionError) as exc:
        raise BundleError("not-serialisable", f"bundle is not plain JSON: {exc}") from exc
    # surrogatepass: a lone surrogate has no UTF-8 form (such records are refused anyway)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class ChecksumResult:
    declared: str | None
    computed: str
    ok: bool
    form: str  # "utf-8", "ascii-escaped", or "" when neither matched


def verify_checksum(bundle: Mapping[str, Any]) -> ChecksumResult:
    """Compare manifest.checksum with the UTF-8 form, then the ASCII-escaped form."""
    manifest = bundle.get("manifest")
    declared = manifest.get("checksum") if isinstance(manifest, Mapping) else None
    declared = declared.lower() if isinstance(declared, str) else None
    computed = bundle_checksum(bundle)
    if declared == computed:
        return ChecksumResult(declared, computed, True, "utf-8")
    if declared is not None and declared == bundle_checksum(bundle, ascii_escaped=True):
        return ChecksumResult(declared, computed, True, "ascii-escaped")
    return ChecksumResult(declared, computed, False, "")


class StreamingChecksum:
    """The §3.6 checksum computed record by record, equal to `bundle_checksum` of the whole.

    `head` is the bundle without its sections; `present` maps each section present in the
    bundle to "array" or "null". Records must be fed in `SECTIONS` order.
    """

    def __init__(
        self, head: Mapping[str, Any], present: Mapping[str, str], *, ascii_form: bool = True
    ) -> None:
        body = _without_checksum(head)
        self._ascii_form = ascii_form  # False: producers need only the UTF-8 form
        self._keys = sorted(set(body) - set(SECTIONS) | set(present))
        self._head = body
        self._present = dict(present)
        self._position = -1  # index into _keys of the last key written
        self._open_section: str | None = None
        self._first_record = True
        self._utf8 = hashlib.sha256()
        # The ASCII-escaped form is the UTF-8 form until the first non-ASCII value: it starts
        # as a copy of the UTF-8 hash at that point, so all-ASCII bundles are hashed once.
        self._ascii: Any = None
        self._write("{")

    def _update(self, data: bytes) -> None:
        """Bytes that are the same in both forms (ASCII)."""
        self._utf8.update(data)
        if self._ascii is not None:
            self._ascii.update(data)

    def _update_forms(self, data: bytes, ascii_data: Callable[[], bytes]) -> None:
        """A canonical value in UTF-8 that is not ASCII, and how to get its escaped form."""
        if self._ascii_form:
            if self._ascii is None:
                self._ascii = self._utf8.copy()
            self._ascii.update(ascii_data())
        self._utf8.update(data)

    def _write(self, text: str) -> None:
        """Structural text (brackets, commas): identical in both forms."""
        self._update(text.encode("ascii"))

    def _write_value(self, value: Any) -> None:
        # orjson's canonical form (see encode_record); values parsed from JSON hold no NaN.
        data = encode_record(value)[1]
        if data.isascii():
            self._update(data)
        else:
            self._update_forms(data, lambda: _ascii_canonical(value))

    def _close_section(self) -> None:
        if self._open_section is not None:
            self._write("]")
            self._open_section = None

    def _advance_to(self, index: int) -> None:
        """Write every key after the current one up to and including `index`."""
        self._close_section()
        while self._position < index:
            self._position += 1
            key = self._keys[self._position]
            self._write("," if self._position else "")
            self._write_value(key)
            self._write(":")
            if key in SECTIONS:
                if self._present[key] == "null":
                    self._write("null")
                elif self._position == index:
                    self._write("[")
                    self._open_section = key
                    self._first_record = True
                else:
                    self._write("[]")
            else:
                self._write_value(self._head[key])

    def _enter(self, section: str) -> None:
        if self._open_section != section:
            index = self._keys.index(section)
            if index <= self._position:
                raise BundleError("section-order", f"{section} fed out of order")
            self._advance_to(index)
        if not self._first_record:
            self._update(b",")
        self._first_record = False

    def feed(self, section: str, record: Any) -> None:
        self._enter(section)
        self._write_value(record)

    def feed_encoded(self, section: str, data: bytes) -> None:
        """A record as `encode_record(record)[1]` gave it (what `feed` would hash)."""
        self._enter(section)
        if data.isascii():
            self._update(data)
        else:
            self._update_forms(data, lambda: _ascii_canonical(json.loads(data)))

    def feed_encoded_lines(self, section: str, lines: bytes) -> None:
        """Records as `feed_encoded` takes them, each followed by a newline (canonical JSON
        holds none), e.g. spooled while the sections arrived in another order than the
        checksum's: hashed a block at a time."""
        if not lines:
            return
        if not lines.isascii():
            for line in lines[:-1].split(b"\n"):
                self.feed_encoded(section, line)
            return
        self._enter(section)
        self._update(lines[:-1].replace(b"\n", b","))

    def feed_joined(self, section: str, parts: Iterable[bytes]) -> None:
        """ASCII records as `feed_encoded` takes them, joined by commas, in pieces cut
        anywhere (e.g. a spool's blocks with each newline made a comma): hashed as they come,
        without splitting them into records. Every record must be ASCII (checked)."""
        entered = False
        for part in parts:
            if not part:
                continue
            if not part.isascii():
                raise ValueError("feed_joined takes ASCII records only")
            if not entered:
                self._enter(section)
                entered = True
            self._update(part)

    def feed_canonical(self, section: str, data: bytes) -> None:
        """A record already in canonical UTF-8 form (`canonical_json(record).encode()`).

        Only for producers: a checksum built with `ascii_form=False` (one hash, not two)."""
        if self._ascii_form:
            raise BundleError("checksum-form", "feed_canonical needs ascii_form=False")
        self._enter(section)
        self._utf8.update(data)

    def hexdigests(self) -> tuple[str, str]:
        """(UTF-8 form, ASCII-escaped form); call once, after the last record."""
        self._advance_to(len(self._keys) - 1)
        self._close_section()
        self._write("}")
        utf8 = self._utf8.hexdigest()
        return utf8, (self._ascii.hexdigest() if self._ascii is not None else utf8)


def _ascii_canonical(value: Any) -> bytes:
    try:
        return canonical_json(value, ascii_escaped=True).encode("ascii")
    except (TypeError, ValueError, RecursionError) as exc:
        raise BundleError("not-serialisable", f"value is not plain JSON: {exc}") from exc

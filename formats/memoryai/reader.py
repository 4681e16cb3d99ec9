"""Read a bundle file in one streamed pass: top-level values, and record arrays one record at a
time. No Django here.

Records are decoded by the standard library's C scanner (`JSONDecoder.raw_decode`) straight
from a text window over the file, so a record costs one C call: ijson's C `items` fed from
Python parse events (the earlier reader) spent a Python round trip on each of the ~50 events
of a chunk record and was 4x slower on a 260 MB bundle. The window holds one record plus one
read block, so memory stays flat whatever the file's size.
"""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Iterator
from typing import IO, Any, NoReturn

from formats.memoryai.fields import BundleError

BLOCK_CHARS = 1 << 20
MAX_VALUE_CHARS = 64 << 20  # one record or top-level value (a chunk's content is at most 1M)

_WHITESPACE = re.compile(r"[ \t\n\r]*")
_SPACE_OR_END = frozenset(" \t\n\r") | {""}
_CUT_SLACK = 8  # a value cut inside "\\uXXXX", "true" or "-1e5" fails a few characters early


def _no_constants(name: str) -> NoReturn:
    raise ValueError(f"{name} is not JSON")


_DECODER = json.JSONDecoder(parse_constant=_no_constants)


class BundleFile:
    """`items()` yields (key, is_array, value) per top-level key in the file's order. For a
    record section whose value is an array, `value` is an iterator of its records; what the
    caller leaves unread is skipped when it asks for the next key."""

    def __init__(self, stream: IO[bytes], sections: frozenset[str] | set[str]) -> None:
        self._stream = stream
        self._sections = sections
        self._decode = codecs.getincrementaldecoder("utf-8")("strict").decode
        self._buf = ""
        self._pos = 0
        self._offset = 0  # characters dropped from the front of the window
        self._eof = False

    # -- the window ------------------------------------------------------------------------

    def _fill(self, at_least: int = 0) -> bool:
        """Read more of the file into the window; False at the end of the file."""
        if self._eof:
            return False
        raw = self._stream.read(max(at_least, BLOCK_CHARS))
        try:
            text = self._decode(raw, final=not raw)
        except UnicodeDecodeError as exc:
            self._fail(f"the bundle is not valid UTF-8 ({exc.reason})")
        if not raw:
            self._eof = True
        self._offset += self._pos
        self._buf = self._buf[self._pos :] + text
        self._pos = 0
        return bool(raw) or bool(text)

    def _fail(self, message: str) -> NoReturn:
        raise BundleError("malformed-json", f"not valid JSON: {message}")

    def _skip_whitespace(self) -> str:
        """Skip whitespace; the next character, or '' at the end of the file."""
        while True:
            self._pos = _WHITESPACE.match(self._buf, self._pos).end()
            if self._pos < len(self._buf):
                return self._buf[self._pos]
            if not self._fill():
                return ""

    def _expect(self, char: str, what: str) -> None:
        found = self._skip_whitespace()
        if found != char:
            got = repr(found) if found else "the end of the file"
            where = self._offset + self._pos
            self._fail(f"expected {what} (character {where}), found {got}")
        self._pos += 1

    def _value(self) -> Any:
        """Decode the value at the cursor (whitespace already skipped)."""
        while True:
            buf, pos = self._buf, self._pos
            if len(buf) - pos < BLOCK_CHARS >> 2 and not self._eof:
                # read on before a value near the window's end: a value cut there costs a
                # failed decode whose error counts the window's lines (~1 ms a window)
                self._fill()
                continue
            try:
                value, end = _DECODER.raw_decode(buf, pos)
            except json.JSONDecodeError as exc:
                # A value cut by the window's end fails too (at the end, or as a string that
                # never closes): read on, then try again. An error well inside is the file's.
                where = self._offset + exc.pos
                cut = exc.pos >= len(buf) - _CUT_SLACK or exc.msg.startswith("Unterminated")
                if cut and self._more(len(buf) - pos):
                    continue
                self._fail(f"{exc.msg} (character {where})")
            except ValueError as exc:  # NaN / Infinity
                self._fail(f"{exc} (character {self._offset + pos})")
            except RecursionError:
                self._fail(f"nested too deeply (character {self._offset + pos})")
            # a number near the window's end may go on in the next block ("1" of "1.5e-3")
            if end > len(buf) - _CUT_SLACK and not self._eof:
                self._more(end - pos)  # moves the window: decode again (at the end: as is)
                continue
            self._pos = end
            return value

    def _more(self, pending: int) -> bool:
        if pending > MAX_VALUE_CHARS:
            self._fail(
                f"a value longer than {MAX_VALUE_CHARS} characters (from character "
                f"{self._offset + self._pos})"
            )
        return self._fill(pending)  # doubling: a long value is not re-scanned block by block

    # -- the document ----------------------------------------------------------------------

    def items(self) -> Iterator[tuple[str, bool, Any]]:
        if self._skip_whitespace() != "{":
            raise BundleError("not-object", "a bundle must be a JSON object")
        self._pos += 1
        seen: set[str] = set()
        char = self._skip_whitespace()
        if char == "}":
            self._pos += 1
        else:
            while True:
                if char != '"':
                    self._expect('"', "a key")
                key = self._value()
                if key in seen:
                    raise BundleError("duplicate-key", f"top-level key {key!r} repeats", key)
                seen.add(key)
                self._expect(":", "':'")
                char = self._skip_whitespace()
                if key in self._sections and char == "[":
                    self._pos += 1
                    records = self._records()
                    yield key, True, records
                    for _ in records:  # what the caller did not read
                        pass
                else:
                    if not char:
                        self._fail("the bundle ends inside a value")
                    yield key, False, self._value()
                if self._separator("}", "'}'") == "}":
                    break
                char = self._skip_whitespace()
        if self._skip_whitespace():
            self._fail(f"content after the bundle (character {self._offset + self._pos})")

    def _records(self) -> Iterator[Any]:
        char = self._skip_whitespace()
        if char == "]":
            self._pos += 1
            return
        value = self._value
        while True:
            if not char:
                self._fail("the bundle ends inside an array")
            yield value()
            if self._separator("]", "']'") == "]":
                return
            # the common case, the next record right after the comma, without a regex call
            pos = self._pos
            char = self._buf[pos] if pos < len(self._buf) else ""
            if char in _SPACE_OR_END:
                char = self._skip_whitespace()

    def _separator(self, close: str, name: str) -> str:
        """Consume the ',' or `close` after a value; which one it was."""
        pos = self._pos
        char = self._buf[pos] if pos < len(self._buf) else ""
        if char in _SPACE_OR_END:
            char = self._skip_whitespace()
        if char != "," and char != close:
            got = repr(char) if char else "the end of the file"
            where = self._offset + self._pos
            self._fail(f"expected ',' or {name} (character {where}), found {got}")
        self._pos += 1
        return char

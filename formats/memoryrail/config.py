"""MemoryRail 1: find a project and read its config (.memoryrail/config.json) strictly.
No Django import."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from formats.frontmatter import line_of
from formats.memoryrail.model import CONFIG_PATH, REGULAR_MODES, SYMLINK_MODE, Config, Problem

MAX_CONFIG_BYTES = 64 * 1024
REVIEW_MODES = ("off", "agents")


class ConfigError(Exception):
    """The project config is missing or not MemoryRail version 1."""

    def __init__(self, code: str, message: str, line: int | None = None) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.line = line

    def as_problem(self) -> Problem:
        return Problem(self.code, CONFIG_PATH, self.line, self.message)


def find_root(start: Path) -> Path | None:
    """The nearest directory at or above `start` that holds .memoryrail/config.json."""
    current = start.resolve()
    for candidate in (current, *current.parents):
        if (candidate / CONFIG_PATH).is_file():
            return candidate
    return None


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise ConfigError("config-invalid-json", f"config.json repeats the key {key!r}")
        result[key] = value
    return result


def read_limited(path: Path, limit: int) -> bytes:
    """At most limit + 1 bytes of a file: enough to tell it is too large without reading it all.

    Asks for the file's size + 1 first: a read of `limit + 1` bytes allocates that whole buffer
    (1 MiB for a 1 KiB memory), which cost more than reading the file. A file that grew since
    its fstat, or a short read, is read on in small pieces up to the limit."""
    with path.open("rb", buffering=0) as handle:
        return read_open(handle.fileno(), os.fstat(handle.fileno()).st_size, limit)


def read_open(descriptor: int, size: int, limit: int) -> bytes:
    """`read_limited`'s reads of an open file whose fstat gave `size`."""
    data = os.read(descriptor, min(size, limit) + 1)
    while data and len(data) <= limit:
        more = os.read(descriptor, min(limit + 1 - len(data), 65536))
        if not more:
            break
        data += more
    return data


def _inside(path: Path, root: Path) -> bool:
    """True when `path` is no symlink and resolves inside `root` (git can commit symlinks)."""
    return not path.is_symlink() and path.resolve().is_relative_to(root.resolve())


# One escape of a JSON string, matched in sequence (valid JSON: every backslash starts one).
_JSON_ESCAPE = re.compile(r"\\(?:u([0-9A-Fa-f]{4})|.)")


def _json_unsafe_escape(text: str) -> ConfigError | None:
    """A NUL or half a surrogate pair written as a \\u escape in valid JSON text (a raw NUL
    or control character is already a JSON syntax error): refused with its line."""
    high: int | None = None
    previous_end = -1
    for match in _JSON_ESCAPE.finditer(text):
        point = int(match[1], 16) if match[1] else -1
        if high is not None:
            if 0xDC00 <= point <= 0xDFFF and match.start() == previous_end:
                high = None
                previous_end = match.end()
                continue
            break
        if point == 0:
            return ConfigError(
                "config-nul", "config.json writes a NUL character", line_of(text, match.start())
            )
        if 0xD800 <= point <= 0xDBFF:
            high = match.start()
        elif 0xDC00 <= point <= 0xDFFF:
            high = match.start()
            break
        previous_end = match.end()
    if high is not None:
        message = "config.json writes half a surrogate pair"
        return ConfigError("config-lone-surrogate", message, line_of(text, high))
    return None


def parse_config(data: bytes) -> Config:
    if len(data) > MAX_CONFIG_BYTES:
        raise ConfigError("config-too-large", f"config.json is over {MAX_CONFIG_BYTES} bytes")
    try:
        text = data.decode("utf-8")
        raw = json.loads(text, object_pairs_hook=_unique_keys)
    except UnicodeDecodeError as exc:
        raise ConfigError("config-not-utf8", "config.json is not valid UTF-8") from exc
    except json.JSONDecodeError as exc:
        raise ConfigError("config-invalid-json", f"config.json: {exc.msg}", exc.lineno) from exc
    except RecursionError as exc:
        raise ConfigError("config-invalid-json", "config.json nests too deeply") from exc
    unsafe = _json_unsafe_escape(text) if "\\" in text else None
    if unsafe is not None:
        raise unsafe
    if not isinstance(raw, dict):
        raise ConfigError("config-not-object", "config.json must hold a JSON object", 1)
    version = raw.get("version")
    if version != 1 or isinstance(version, bool):
        raise ConfigError(
            "config-version",
            f"config.json version must be 1 (MemoryRail 1), not {json.dumps(version)}",
        )
    review = raw.get("review", "off")
    if review not in REVIEW_MODES:
        raise ConfigError(
            "config-review", f"config.json review must be 'off' or 'agents', not {review!r}"
        )
    return Config(version=1, review=review, raw=raw)


def load_config(root: Path) -> Config:
    path = root / CONFIG_PATH
    if not path.is_file():
        raise ConfigError("config-missing", f"{CONFIG_PATH} does not exist")
    if not (_inside(path.parent, root) and _inside(path, root)):
        raise ConfigError("config-missing", f"{CONFIG_PATH} is a symlink, not a regular file")
    return parse_config(read_limited(path, MAX_CONFIG_BYTES))


def config_from_entry(mode: str | None, data: bytes | None) -> Config:
    """`load_config`'s answer from the config file's tree entry: its git mode (None: there is
    none, or `.memoryrail` is a symlink, which git does not look through) and its bytes."""
    if mode == SYMLINK_MODE:
        raise ConfigError("config-missing", f"{CONFIG_PATH} is a symlink, not a regular file")
    if mode not in REGULAR_MODES or data is None:  # none, or a submodule
        raise ConfigError("config-missing", f"{CONFIG_PATH} does not exist")
    return parse_config(data[: MAX_CONFIG_BYTES + 1])

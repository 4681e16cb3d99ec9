"""Git's object formats as the working copy reads and writes them without its files: `ls-tree`
listings, `cat-file --batch` answers, and the `fast-import` stream of one commit.

No git command runs here (that is `reviews.git.WorkingCopy`): a commit made from objects
alone needs neither the index nor the checked-out files, so it cannot pick up anything a
crashed earlier attempt left in them.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path

from formats.memoryrail import REGULAR_MODES

Changes = dict[str, tuple[str, bytes] | None]  # path -> (mode, bytes) written, or None: removed


@dataclass(frozen=True)
class TreeEntry:
    mode: str
    sha: str
    size: int = -1  # a blob's bytes, when listed with them (`ls-tree -l`); -1: not listed

    @property
    def regular(self) -> bool:
        """A file (not a symlink, a submodule or a folder)."""
        return self.mode in REGULAR_MODES


def tree_entries(listing: str) -> dict[str, TreeEntry]:
    """`git ls-tree -r -z [-l]` output: path -> (mode, object[, size])."""
    entries = {}
    for entry in listing.split("\x00"):
        if entry:
            info, _, path = entry.partition("\t")
            mode, _, rest = info.split(" ", 2)
            sha, _, size = rest.partition(" ")
            size = size.strip()
            entries[path] = TreeEntry(mode, sha, int(size) if size.isdigit() else -1)
    return entries


def batch_contents(output: bytes) -> dict[str, bytes]:
    """`git cat-file --batch` output: object -> its bytes (a missing one is left out)."""
    found: dict[str, bytes] = {}
    at = 0
    while at < len(output):
        end = output.index(b"\n", at)
        header = output[at:end].split(b" ")
        at = end + 1
        if len(header) != 3:  # "<name> missing" (or ambiguous)
            continue
        size = int(header[2])
        found[header[0].decode("ascii")] = output[at : at + size]
        at += size + 1
    return found


def fetched_head(fetch_head: Path) -> str:
    """The commit a one-refspec fetch wrote first to FETCH_HEAD ("<sha>\t\tbranch 'x' of
    <url>"), or "" when the file is missing or not that."""
    try:
        first = fetch_head.read_text(encoding="utf-8", errors="replace").partition("\n")[0]
    except OSError:
        return ""
    sha, tab, _ = first.partition("\t")
    return sha if tab and re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", sha) else ""


def _crud(c: str) -> bool:
    return c <= " " or c in ".,:;<>\"\\'"


def ident(name: str, email: str, *, when: float) -> bytes:
    """An author or committer line's value as `git commit` writes it from GIT_AUTHOR_NAME and
    GIT_AUTHOR_EMAIL: crud trimmed from both ends, `<`, `>` and line breaks dropped, the
    local time zone."""

    def clean(value: str) -> str:
        start, stop = 0, len(value)
        while start < stop and _crud(value[start]):
            start += 1
        while stop > start and _crud(value[stop - 1]):
            stop -= 1
        return "".join(c for c in value[start:stop] if c not in "\n<>")

    shown = clean(name)
    if not shown:  # git commit refuses it too
        raise ValueError(f"name consists only of disallowed characters: {name!r}")
    offset = time.localtime(when).tm_gmtoff // 60
    sign, offset = ("-", -offset) if offset < 0 else ("+", offset)
    zone = f"{sign}{offset // 60:02d}{offset % 60:02d}"
    return f"{shown} <{clean(email)}> {int(when)} {zone}".encode()


def quoted(path: str) -> bytes:
    """A path as fast-import reads it, always C-quoted (a space, quote or line break in it
    cannot end or split its command)."""
    out = bytearray(b'"')
    for byte in path.encode("utf-8", "surrogateescape"):
        if byte in (0x22, 0x5C):
            out += b"\\" + bytes([byte])
        elif byte < 0x20 or byte == 0x7F:
            out += f"\\{byte:03o}".encode()
        else:
            out.append(byte)
    return bytes(out + b'"')


def _data(payload: bytes) -> bytes:
    return b"data %d\n%s\n" % (len(payload), payload)


def commit_stream(
    ref: str,
    parent: str,
    changes: Changes,
    message: str,
    *,
    author: tuple[str, str],
    committer: tuple[str, str],
) -> bytes:
    """One commit on `parent` changing `changes` (path -> (mode, bytes); None removes it),
    made now, then `get-mark`, which makes fast-import print the commit's name."""
    when = time.time()
    identities = (ident(*author, when=when), ident(*committer, when=when))
    parts = [
        b"feature done\n",
        b"commit %s\nmark :1\nauthor %s\ncommitter %s\n" % (ref.encode(), *identities),
        _data(message.encode("utf-8")),
        b"from %s\n" % parent.encode("ascii"),
    ]
    for path, change in changes.items():
        if change is None:
            parts.append(b"D %s\n" % quoted(path))
        else:
            mode, payload = change
            parts.append(b"M %s inline %s\n" % (mode.encode("ascii"), quoted(path)))
            parts.append(_data(payload))
    parts.append(b"\nget-mark :1\ndone\n")
    return b"".join(parts)

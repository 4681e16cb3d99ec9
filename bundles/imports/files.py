"""Reading a bundle file in one pass (formats.memoryai.reader): sections in the file's order,
checksum spools, and the JSON parse of a body small enough to import at once."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import IO, Any

import orjson
from django.core.exceptions import ValidationError
from django.db import transaction

from bundles.imports.context import ImportOptions, Progress
from bundles.imports.importer import Importer, _head_of
from bundles.imports.report import _audit_import
from formats import memoryai as protocol
from formats.memoryai import SECTIONS
from formats.memoryai.reader import BundleFile
from memoryadmin.audit import Actor
from memoryadmin.bulk import json_loads
from memoryadmin.models import Team

SPOOL_BUFFER = 1 << 20  # checksum spools are written a record at a time through this buffer
SPOOL_READ = 1 << 20  # and read back for the checksum in blocks of this size

_ENVELOPE_KEYS = frozenset({"format", "version", "manifest"})


TAIL_BYTES = 1 << 20  # where a manifest written last is looked for

_RAW_DECODER = json.JSONDecoder()


_NEWLINE_TO_COMMA = bytes.maketrans(b"\n", b",")


class _Spool:
    """A section's canonical records, a line each (canonical JSON holds no newline), and
    whether all of them are ASCII: then the checksum hashes the spool's blocks as they are,
    each newline made a comma, instead of splitting them into lines."""

    def __init__(self) -> None:
        self.file = tempfile.TemporaryFile(buffering=SPOOL_BUFFER)  # noqa: SIM115 - close()
        self.ascii = True

    def write(self, data: bytes) -> None:
        self.file.write(data)
        self.file.write(b"\n")
        if self.ascii and not data.isascii():
            self.ascii = False

    def feed(self, checksum: protocol.StreamingChecksum, section: str) -> None:
        """The section's records into `checksum`, a block at a time."""
        stream = self.file
        stream.seek(0)
        if self.ascii:
            checksum.feed_joined(section, _joined(stream))
            return
        rest = b""
        while block := stream.read(SPOOL_READ):
            block, _, tail = (rest + block).rpartition(b"\n")
            checksum.feed_encoded_lines(section, block + b"\n" if block else b"")
            rest = tail

    def close(self) -> None:
        self.file.close()


def _joined(stream: IO[bytes]) -> Iterator[bytes]:
    """A spool's lines joined by commas: each newline a comma, the last one dropped."""
    held = b""
    while block := stream.read(SPOOL_READ):
        if held:
            yield held
        held = block.translate(_NEWLINE_TO_COMMA)
    if held:
        yield held[:-1]


class _HeadAfterSections(Exception):
    """A record section came before format, version or manifest (our own exports put the
    manifest last): the records cannot be read without it, so the head is read first."""

    def __init__(self, read: dict[str, Any]) -> None:
        super().__init__("the head comes after a record section")
        self.read = read


class _HeadGuessWrong(Exception):
    """The head taken from the file's tail is not the head the full pass read."""


def head_from_tail(path: Path, before: dict[str, Any]) -> dict[str, Any] | None:
    """The head our own export has: `before` (the values ahead of the first record section),
    every section as an array, and the manifest that closes the file. A guess, read from the
    last TAIL_BYTES without a pass over the records; the import's pass checks it against what
    it reads (`_stream_file`) and falls back to `read_head` when they differ."""
    size = path.stat().st_size
    with path.open("rb") as stream:
        stream.seek(max(0, size - TAIL_BYTES))
        tail = stream.read()
    at = tail.rfind(b'"manifest":')
    if at < 0:
        return None
    try:
        text = tail[at + len(b'"manifest":') :].decode("utf-8")
        manifest, end = _RAW_DECODER.raw_decode(text, len(text) - len(text.lstrip()))
    except (UnicodeDecodeError, ValueError):
        return None
    if text[end:].strip() != "}" or not isinstance(manifest, dict):
        return None
    head = {key: value for key, value in before.items() if key not in SECTIONS}
    return {**head, **{key: [] for key in SECTIONS}, "manifest": manifest}


def parse_bundle(data: bytes) -> Any:
    """orjson's fast parse; what it refuses gets the standard library's strict one, which also
    takes escaped lone surrogates (valid JSON text that no database stores): the format
    library then refuses those per record, instead of the whole bundle."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        try:
            return protocol.parse_json(data)
        except protocol.BundleError:
            raise ValidationError(
                f"The body is not valid JSON: {exc}", code="malformed-json"
            ) from exc


def _top_level(stream: IO[bytes]) -> Iterator[tuple[str, bool, Any]]:
    return BundleFile(stream, frozenset(SECTIONS)).items()


def read_head(stream: IO[bytes]) -> dict[str, Any]:
    """Every top-level value except the record arrays (replaced by [] placeholders)."""
    return {key: [] if is_array else value for key, is_array, value in _top_level(stream)}


class _Streamed:
    """An Importer fed by the file's single pass: each section as the pass reaches it.

    A section whose turn in the checksum's key order has come is hashed as it is read, the
    others wait in spools hashed at the end. The turn is judged by the head known when the
    pass reached the first section (from the file's tail, read first, or read so far, with
    the sections the manifest counts) and by the manifest's counts: a section counted empty
    that has not come yet is passed over. When the head the pass read differs, or a section
    passed over has records after all, the checksum takes a pass of its own (`_hash_file`)."""

    def __init__(
        self, importer: Importer, path: Path, head: dict[str, Any], *, so_far: bool = False
    ) -> None:
        self.importer = importer
        self.ctx = importer.ctx
        self.path = path
        self.spools: dict[str, _Spool] = {}
        self.edge_spool: IO[bytes] | None = None
        self.chunks_read = False
        self.hashed: set[str] = set()  # sections hashed as they were read
        self.passed: set[str] = set()  # counted empty, passed over before they came
        self.broken = False  # a section passed over had records
        self.head = _head_of(head)
        self.present = importer.envelope.sections
        if so_far:  # the sections to come are not known yet: those the manifest counts
            self.present = {s: "array" for s in SECTIONS if s in self.ctx.manifest.counts}
        self.checksum = protocol.StreamingChecksum(self.head, self.present)

    def _sink(self, section: str) -> Callable[[bytes], Any]:
        """Where the section's canonical records go: the checksum when its turn has come,
        else a spool."""
        if section in self.passed:
            return self._not_empty
        if self.present.get(section) == "array" and self._turn(section):
            self.hashed.add(section)
            return partial(self.checksum.feed_encoded, section)
        spool = self.spools[section] = _Spool()
        return spool.write

    def _turn(self, section: str) -> bool:
        """Every section before it in the checksum's order (SECTIONS is sorted) is hashed or
        counted empty and not come yet (then passed over)."""
        counts = self.ctx.manifest.counts
        passing = []
        for before in SECTIONS[: SECTIONS.index(section)]:
            if self.present.get(before) != "array" or before in self.hashed | self.passed:
                continue
            if before in self.spools or counts.get(before) != 0:
                return False
            passing.append(before)
        self.passed.update(passing)
        return True

    def _not_empty(self, data: bytes) -> None:
        self.broken = True

    def _checksum(
        self, envelope: protocol.Envelope, head: dict[str, Any]
    ) -> protocol.StreamingChecksum:
        """The checksum of what the pass read, the spooled sections fed in their turn."""
        if not self.broken and head == self.head and envelope.sections == self.present:
            checksum = self.checksum
        elif not self.hashed and not self.passed:
            checksum = protocol.StreamingChecksum(head, envelope.sections)
        else:
            return _hash_file(self.path, head, envelope.sections)
        for section in SECTIONS:
            spool = self.spools.get(section)
            if spool is not None:
                spool.feed(checksum, section)
        return checksum

    def stream_section(self, section: str, records: Iterator[Any]) -> None:
        """Import one section as the file's single pass reaches it. Its records' canonical
        bytes go to the checksum, or to a spool hashed at the end in the checksum's key order;
        edges wait in a spool of their own when the chunks they name have not been read yet."""
        self.ctx.report.section = section
        items = self.ctx.feed(section, records, self._sink(section))
        if section == "memory_edges" and not self.chunks_read:
            self.edge_spool = tempfile.TemporaryFile()  # noqa: SIM115 - closed in finish_stream
            for _, _, data in items:
                _spool_line(self.edge_spool.write, data)
            return
        self.importer.write_section(section, items)
        if section == "chunks":
            self.chunks_read = True

    def finish_stream(self, envelope: protocol.Envelope, head: dict[str, Any]) -> dict[str, Any]:
        try:
            if self.edge_spool is not None:
                self.ctx.report.section = "memory_edges"
                self.edge_spool.seek(0)
                self.importer.edges.write(
                    (index, json_loads(line)) for index, line in enumerate(self.edge_spool)
                )
            checksum = self._checksum(envelope, head)
        finally:
            self.close_spools()
        return self.importer.finish(checksum)

    def close_spools(self) -> None:
        for spool in self.spools.values():
            spool.close()
        if self.edge_spool is not None:
            self.edge_spool.close()
        self.spools, self.edge_spool = {}, None


def _stream_file(
    path: Path,
    *,
    team: Team,
    actor: Actor,
    options: ImportOptions,
    progress: Progress | None,
    head: dict[str, Any] | None,
    guessed: bool = False,
) -> dict[str, Any]:
    """The import's one pass over the file; `head` (read beforehand) when it comes last.
    A `guessed` head must be the one the pass reads, or this raises _HeadGuessWrong."""
    streamed: _Streamed | None = None
    read: dict[str, Any] = {}

    def start(envelope_head: dict[str, Any], *, so_far: bool = False) -> _Streamed:
        importer = Importer(
            team=team,
            envelope=protocol.validate_envelope(envelope_head),
            options=options,
            progress=progress,
            actor=actor,
        )
        return _Streamed(importer, path, envelope_head, so_far=so_far)

    if head is not None:
        streamed = start(head)
    try:
        with path.open("rb") as stream:
            for key, is_array, value in _top_level(stream):
                read[key] = [] if is_array else value
                if not is_array:
                    continue
                if streamed is None:
                    if not read.keys() >= _ENVELOPE_KEYS:
                        raise _HeadAfterSections(read)
                    streamed = start(read, so_far=True)
                streamed.stream_section(key, value)
        if guessed and read != head:
            raise _HeadGuessWrong
        if streamed is None:
            streamed = start(read)
        envelope = protocol.validate_envelope(read)  # keys after the first section included
        return streamed.finish_stream(envelope, _head_of(read))
    finally:
        if streamed is not None:
            streamed.close_spools()


def _hash_file(path: Path, head: dict[str, Any], present: dict[str, str]) -> Any:
    """The checksum in a pass of its own over the file (its sections spooled, then hashed in
    the checksum's order): when the head or sections the import's pass hashed by turned out
    otherwise."""
    checksum = protocol.StreamingChecksum(head, present)
    spools: dict[str, _Spool] = {}
    try:
        with path.open("rb") as stream:
            for key, is_array, records in _top_level(stream):
                if is_array:
                    spool = spools[key] = _Spool()
                    for record in records:
                        spool.write(protocol.encode_record(record)[1])
        for section in SECTIONS:
            if section in spools:
                spools[section].feed(checksum, section)
    finally:
        for spool in spools.values():
            spool.close()
    return checksum


def _import_head_last(
    path: Path, run: Callable[..., dict[str, Any]], before: dict[str, Any]
) -> dict[str, Any]:
    """The head comes after the records (our own exports): taken from the file's tail when it
    is there (one pass over the records, checked), else read in a pass of its own (two)."""
    guess = head_from_tail(path, before)
    if guess is not None:
        try:
            protocol.validate_envelope(guess)
        except protocol.BundleError:
            guess = None
    if guess is not None:
        try:
            with transaction.atomic():  # a wrong guess leaves nothing behind
                return run(head=guess, guessed=True)
        except _HeadGuessWrong:
            pass
    with path.open("rb") as stream:
        head = read_head(stream)
    return run(head=head)


def _spool_line(write: Callable[[bytes], Any], data: bytes) -> None:
    write(data)
    write(b"\n")


@transaction.atomic
def bundle_import_file(
    *,
    team: Team,
    actor: Actor,
    path: Path,
    options: ImportOptions | None = None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Import a bundle file without loading it whole: one pass when format, version and
    manifest come before the record sections, or when the manifest closes the file (our own
    exports: taken from the tail, checked by the pass); else the head is read first (two)."""
    options = options or ImportOptions()
    run = partial(_stream_file, path, team=team, actor=actor, options=options, progress=progress)
    try:  # raised before anything was written
        result = run(head=None)
    except _HeadAfterSections as late:
        result = _import_head_last(path, run, late.read)
    _audit_import(team=team, actor=actor, result=result, source="file", size=path.stat().st_size)
    return result

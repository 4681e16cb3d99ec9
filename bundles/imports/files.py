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

_ENVELOPE_KEYS = frozenset({"format", "version", "manifest"})


TAIL_BYTES = 1 << 20  # where a manifest written last is looked for

_RAW_DECODER = json.JSONDecoder()


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
    """An Importer fed by the file's single pass: each section as the pass reaches it."""

    def __init__(self, importer: Importer) -> None:
        self.importer = importer
        self.ctx = importer.ctx
        self.spools: dict[str, IO[bytes]] = {}
        self.edge_spool: IO[bytes] | None = None
        self.chunks_read = False

    def stream_section(self, section: str, records: Iterator[Any]) -> None:
        """Import one section as the file's single pass reaches it. Its records' canonical
        bytes go to a spool for the checksum (hashed at the end in the checksum's key order);
        edges wait in a spool of their own when the chunks they name have not been read yet."""
        spool = tempfile.TemporaryFile(buffering=SPOOL_BUFFER)  # noqa: SIM115 - finish_stream
        self.spools[section] = spool
        self.ctx.report.section = section
        items = self.ctx.feed(section, records, partial(_spool_line, spool.write))
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
            checksum = protocol.StreamingChecksum(head, envelope.sections)
            for section in SECTIONS:
                spool = self.spools.get(section)
                if spool is None:
                    continue
                spool.seek(0)
                rest = b""
                while block := spool.read(1 << 20):
                    block, _, tail = (rest + block).rpartition(b"\n")
                    checksum.feed_encoded_lines(section, block + b"\n" if block else b"")
                    rest = tail
        finally:
            self.close_spools()
        return self.importer.finish(checksum)

    def close_spools(self) -> None:
        for spool in (*self.spools.values(), self.edge_spool):
            if spool is not None:
                spool.close()
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

    def start(envelope_head: dict[str, Any]) -> _Streamed:
        return _Streamed(
            Importer(
                team=team,
                envelope=protocol.validate_envelope(envelope_head),
                options=options,
                progress=progress,
                actor=actor,
            )
        )

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
                    streamed = start(read)
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

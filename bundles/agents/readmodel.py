"""The read model agents see: the brain's served chunks (approved sources' active records and
active repository memories as mirrored, plus standalone imported chunks), each with its
provenance and the untrusted-content note; input checks shared by the four operations; and the
read log (refs, never content)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from django.db.models import Q
from django.utils import timezone

from bundles.agents.errors import AgentError
from bundles.context import UNTRUSTED_NOTE
from bundles.models import Chunk, ChunkOrigin
from bundles.provenance import origin_now, served, with_origin_source
from bundles.readlog import refs_summary
from bundles.secrets import mask_secrets
from bundles.usage.counting import read_log_write
from formats.crosswalk import REVERSE_TYPES, split_content
from formats.memoryrail.model import PREFIX_TYPES
from memoryadmin.audit import Actor
from memoryadmin.models import Team
from reviews.models import Repository

__all__ = ["UNTRUSTED_NOTE"]

ORIGINS = ("source", "repository", "brain")
MAX_QUERY_CHARS = 1000
MAX_LIMIT = 50
# Chunks that looked like prompt injection or a credential on import: left out unless asked
# for, labelled (and masked) when returned.
FLAGGED = Q(suspicious=True) | ~Q(secret_findings=[])


def clean_text(value: Any, *, field: str, max_chars: int, required: bool = True) -> str:
    """A trimmed string without NUL, at most `max_chars` long (codes: <field>-required,
    <field>-invalid, <field>-too-long)."""
    if value is None:
        value = ""
    if not isinstance(value, str):
        raise AgentError(400, f"{field}-invalid", f"{field} must be a string.")
    if "\x00" in value:
        raise AgentError(400, f"{field}-invalid", f"{field} must not contain NUL characters.")
    value = value.strip()
    if required and not value:
        raise AgentError(400, f"{field}-required", f"Give a non-empty {field}.")
    if len(value) > max_chars:
        raise AgentError(
            400,
            f"{field}-too-long",
            f"{field} is {len(value)} characters; at most {max_chars} are allowed.",
            {"max_chars": max_chars},
        )
    return value


def clean_list(value: Any, *, field: str, max_items: int, max_chars: int) -> list[str]:
    """A list of non-empty strings (a single string counts as a list of one)."""
    if value is None or value == "":
        return []
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list | tuple):
        raise AgentError(400, f"{field}-invalid", f"{field} must be a list of strings.")
    if len(value) > max_items:
        raise AgentError(
            400, f"{field}-too-many", f"Give at most {max_items} {field}.", {"max": max_items}
        )
    return [clean_text(item, field=field, max_chars=max_chars) for item in value]


def clean_limit(value: Any, *, default: int = 10, maximum: int = MAX_LIMIT) -> int:
    if value is None or value == "":
        return default
    try:
        limit = int(value)
    except (TypeError, ValueError):
        raise AgentError(400, "limit-invalid", "limit must be a whole number.") from None
    if not 1 <= limit <= maximum:
        raise AgentError(400, "limit-invalid", f"limit must be between 1 and {maximum}.")
    return limit


def team_repository(team: Team, value: Any) -> Repository | None:
    """The team's repository by id or name; None when not given; 404 when not the team's."""
    if value is None or value == "":
        return None
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise AgentError(400, "repository-invalid", "repository is an id or a name.")
    text = clean_text(str(value), field="repository", max_chars=100)
    repositories = Repository.objects.filter(team=team)
    found = repositories.filter(pk=int(text)).first() if text.isdigit() else None
    found = found or repositories.filter(name=text).first()
    if found is None:
        raise AgentError(
            404, "repository-not-found", "This team has no such repository.", {"repository": text}
        )
    return found


# ----------------------------------------------------------------------------- results


def active_origins_of(chunk_ids: Iterable[int], now: datetime | None = None) -> dict[int, list]:
    """chunk id -> its active, unexpired origins, smallest ref (the owner) first; one query."""
    now = now or timezone.now()
    found: dict[int, list[ChunkOrigin]] = {}
    rows = with_origin_source(
        ChunkOrigin.objects.filter(chunk_id__in=list(chunk_ids), active=True)
        .filter(Q(expires_at__isnull=True) | Q(expires_at__gt=now))
        .only("chunk_id", "kind", "ref", "metadata")
        .order_by("chunk_id", "ref")
    )
    for origin in rows:
        found.setdefault(origin.chunk_id, []).append(origin)
    return found


def native_type(chunk: Chunk, origin: ChunkOrigin | None) -> str:
    """The type in the thing's own format: a MemoryRail type for a repository memory, the
    OpenMemories kind for a source record, the MemoryAI memory type for a brain chunk."""
    tags = chunk.tags if isinstance(chunk.tags, list) else []
    if origin is not None and origin.kind == "repository":
        memory_ref = str((origin.metadata or {}).get("memory_ref", ""))
        kind = PREFIX_TYPES.get(memory_ref.split("-", 1)[0])
        if kind:
            return kind
        if chunk.memory_type == "pitfall" and "attempt" in tags:
            return "attempt"
        return REVERSE_TYPES.get(chunk.memory_type, chunk.memory_type)
    if origin is not None and origin.kind == "source":
        return "project" if chunk.memory_type == "fact" and "project" in tags else chunk.memory_type
    return chunk.memory_type


def chunk_flags(chunk: Chunk) -> list[str]:
    flags = []
    if chunk.suspicious:
        flags.append("suspicious")
    if chunk.secret_findings:
        flags.append("secret")
    return flags


def origin_provenance(origin: ChunkOrigin) -> dict[str, Any]:
    """The origin's provenance as served: a source's with its current snapshot's read time and
    its staleness (annotated by bundles.provenance.with_origin_source)."""
    provenance = {"origin": origin.kind, "ref": origin.ref, **(origin.metadata or {})}
    return served(provenance, origin_now(origin))


def chunk_result(chunk: Chunk, origins: list[ChunkOrigin]) -> dict[str, Any]:
    """One served chunk as agents see it. The ref is its owner's (the smallest active origin
    ref: `source:<id>:<record>`, `repository:<id>:<memory>`) or `brain:<chunk id>`."""
    owner = origins[0] if origins else None
    content = mask_secrets(chunk.content, chunk.secret_findings)
    title, body = split_content(content)
    # A one-line chunk is all title to split_content; its text is that line too, so an agent
    # that reads `text` sees the content.
    text = body or title
    if owner is not None:
        provenance = origin_provenance(owner)
        ref = owner.ref
    else:
        provenance = {
            "origin": "brain",
            "ref": f"brain:{chunk.pk}",
            "chunk_id": chunk.pk,
            "imported": chunk.origin,
        }
        ref = f"brain:{chunk.pk}"
    result: dict[str, Any] = {
        "ref": ref,
        "origin": provenance["origin"],
        "type": native_type(chunk, owner),
        "title": title,
        "text": text,
        "pinned": bool(chunk.is_pinned),
        "tags": chunk.tags if isinstance(chunk.tags, list) else [],
        "flags": chunk_flags(chunk),
        "provenance": provenance,
    }
    memory_ref = provenance.get("memory_ref")
    if memory_ref:
        result["memory_ref"] = memory_ref
        result["cite"] = f"[per {memory_ref}]"
    else:
        result["cite"] = f"[per {ref}]"
    if len(origins) > 1:
        result["also_from"] = [origin_provenance(o) for o in origins[1:]]
    if chunk.standalone and owner is not None:
        result.setdefault("also_from", []).append({"origin": "brain", "chunk_id": chunk.pk})
    return result


# ----------------------------------------------------------------------------- read log


def result_refs(operation: str, result: dict[str, Any]) -> list[str]:
    """The refs an agent operation returned (search, precheck, get), for its read log."""
    if operation == "search":
        return [r["ref"] for r in result["results"]]
    if operation == "precheck":
        return [m["provenance"]["ref"] for m in result["memories"]]
    return [result["memory"]["ref"]]


def agent_read_record(
    *,
    actor: Actor,
    team: Team,
    operation: str,
    refs: list[str],
    via: str,
    data: dict[str, Any] | None = None,
) -> None:
    """The read log of an agent operation (search, precheck, get): which refs it returned to
    which token, never the content nor the query text (its length only); and its usage
    counters, in one statement (bundles.usage.counting.read_log_write)."""
    summary = refs_summary(refs)
    read_log_write(
        actor=actor,
        team=team,
        operation=operation,
        refs=refs,
        action=f"agents.{operation}",
        target_type="bundles.agents",
        target_id=team.pk,
        summary=f"{operation}: {summary['count']} results ({via})",
        data={"via": via, **(data or {}), **summary},
    )

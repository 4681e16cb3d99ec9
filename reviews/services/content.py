"""The text of a memory file as memoryadmin shows it (secrets masked), and revealed once to a
reviewer who says why (audited). How the brain hashes it is formats.crosswalk.memory_hashes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import transaction

from formats.memoryrail.secrets import (
    secrets_mask,
    secrets_mask_field,
    secrets_mask_front_matter,
    secrets_masked,
)
from memoryadmin.audit import Actor, audit_record
from memoryadmin.errors import Conflict, DomainError
from memoryadmin.models import Scope
from memoryadmin.permissions import actor_require
from reviews.models import Memory


@dataclass(frozen=True)
class MemoryText:
    """What memoryadmin shows of a memory: every span the secret rules match is masked
    (`[secret masked: RULE]`, line breaks kept so the findings' line numbers still point)."""

    title: str
    body: str
    front_matter: Any
    masked: bool  # something was masked (a reveal would show more)


def memory_text(memory: Memory) -> MemoryText:
    title = masked_title(memory.title)
    body = masked_body(memory.body)
    front_matter = secrets_mask_front_matter(memory.front_matter)
    masked = (title, body, front_matter) != (memory.title, memory.body, memory.front_matter)
    return MemoryText(title=title, body=body, front_matter=front_matter, masked=masked)


def masked_body(body: str) -> str:
    """A memory's body as it may be shown or stored in a decision (`memory_text`'s body)."""
    return secrets_mask(body)[0] if body else body


def masked_title(title: str) -> str:
    """A title as it may be shown, stored in a decision, audited, committed or sent: read as
    its front matter line (`title: …`), like the scanner read it."""
    return str(secrets_mask_field("title", title))


def problems_masked(problems: Any) -> list[Any]:
    """Format problems as shown: their messages quote the file (a link, an id), never a secret
    that is in it."""
    return [
        {**p, "message": secrets_masked(p["message"])}
        if isinstance(p, dict) and isinstance(p.get("message"), str)
        else p
        for p in problems or []
    ]


def stale_masked(stale: Any) -> list[Any]:
    """Staleness entries as shown: a link is quoted from the file, never a secret in it."""
    return [
        {**s, "link": secrets_masked(s["link"])}
        if isinstance(s, dict) and isinstance(s.get("link"), str)
        else s
        for s in stale or []
    ]


class RevealRefused(DomainError):
    """The reveal cannot happen; `code` is the API's error code."""

    code = "reason-required"


class NothingMasked(Conflict, RevealRefused):
    """The memory has nothing masked: there is nothing to reveal."""

    code = "nothing-masked"


@transaction.atomic
def proposal_secret_reveal(*, actor: Actor, memory: Memory, reason: str) -> Memory:
    """Let a reviewer see a memory's masked text once: the caller shows the returned memory's
    own text in this one response. Audited (`review.secret-reveal`) with the reason and each
    finding's rule and line, never the value."""
    memory = Memory.objects.select_related("repository", "team").get(pk=memory.pk)
    actor_require(actor, memory.team, Scope.REVIEWS_WRITE)
    reason = reason.strip()
    if not reason:
        raise RevealRefused({"reason": "Say why you need to see the masked text (it is audited)."})
    if not memory_text(memory).masked:
        raise NothingMasked({"reason": f"{memory.ref} has nothing masked to reveal."})
    findings = [
        {"rule": str(f.get("rule", "")), "line": f.get("line")}
        for f in memory.secret_findings
        if isinstance(f, dict)
    ]
    audit_record(
        actor=actor,
        action="review.secret-reveal",
        team=memory.team,
        target=memory,
        summary=f"Revealed the masked text of {memory.ref} in {memory.repository.name}",
        data={
            "repository": memory.repository.name,
            "ref": memory.ref,
            "memory_id": memory.memory_id,
            "path": memory.path,
            "blob": memory.blob_sha,
            "reason": secrets_masked(reason[:2000]),  # a reason quoting the value keeps none
            "findings": findings,
            "rules": sorted({f["rule"] for f in findings}),
        },
    )
    return memory

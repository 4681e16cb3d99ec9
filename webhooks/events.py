"""The event names a team's webhook endpoints can subscribe to (no Django import)."""

from __future__ import annotations

PROPOSAL_CREATED = "proposal.created"
DECISION_MADE = "decision.made"
PUSH_FAILED = "push.failed"
SOURCE_STALE = "source.stale"
SOURCE_DENIED = "source.denied"
SOURCE_RECOVERED = "source.recovered"
IMPORT_FINISHED = "import.finished"

# Sent only by the "send test event" button, to one endpoint, whatever it subscribes to.
PING = "ping"

EVENT_DESCRIPTIONS: dict[str, str] = {
    PROPOSAL_CREATED: "A memory change was proposed for review",
    DECISION_MADE: "A reviewer approved or rejected a proposal",
    PUSH_FAILED: "Pushing reviewed changes to the git remote failed",
    SOURCE_STALE: "A source refresh failed and the last good snapshot is now stale",
    SOURCE_DENIED: "A source refused access (401/403)",
    SOURCE_RECOVERED: "A stale or denied source refreshed successfully again",
    IMPORT_FINISHED: "A background bundle import finished (succeeded or failed)",
}

ALL_EVENTS: tuple[str, ...] = tuple(EVENT_DESCRIPTIONS)


def is_subscribed(subscribed: list[str], event: str) -> bool:
    """An empty subscription list means every event."""
    return not subscribed or event in subscribed

"""Count an agent read in one statement: served N times, last on D, by token T; and the
reader's operations per day.

Every read that is audited (search, precheck, get and context; REST and MCP) writes its audit
event and its counters with `read_log_write`. The counters are ONE `INSERT … ON CONFLICT
(team_id, key) DO UPDATE SET count = count + excluded.count` for all the refs the read returned
plus the reader's activity row: PostgreSQL and SQLite (3.24+) both speak it, and the number of
statements does not grow with the number of results. Rows are sent sorted by key, so two
concurrent reads lock shared rows in the same order (no deadlock).

On PostgreSQL the audit event's INSERT rides in the same statement as a data-modifying CTE
(`WITH audit AS (INSERT INTO memoryadmin_auditevent …) INSERT INTO bundles_usagecounter …`):
one statement is one transaction, so the event and the counters land together or not at all,
in one round trip instead of BEGIN, two INSERTs and COMMIT. SQLite has no DML in a CTE: there
it is the two statements in one transaction.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from datetime import UTC, datetime

from django.db import connection, transaction
from django.db.models.sql import InsertQuery
from django.utils import timezone

from bundles.usage.models import UsageCounter, UsageKind
from memoryadmin.audit import Actor, audit_event_build, audit_record
from memoryadmin.models import AuditEvent, Team

COLUMNS = (
    "team_id",
    "kind",
    "key",
    "count",
    "first_at",
    "last_at",
    "last_token_id",
    "last_label",
    "operation",
    "day",
)
# The reads counted (the audit actions agents.<operation> and context.read).
OPERATIONS = ("search", "precheck", "get", "context")


def reader_of(actor: Actor) -> tuple[str, int | None, str]:
    """(activity key part, token id, label shown): a token by its name, never its secret."""
    if actor.token is not None:
        return f"token:{actor.token.pk}", actor.token.pk, actor.token.name[:200]
    if actor.user is not None:
        return f"user:{actor.user.pk}", None, actor.user.get_username()[:200]
    return "system", None, "system"


def activity_key(reader: str, operation: str, day: str) -> str:
    return f"activity:{reader}:{operation}:{day}"


def usage_count(
    *, team: Team, actor: Actor, operation: str, refs: Iterable[str], now: datetime | None = None
) -> None:
    """Bump the counters of `refs` (each once per read) and the reader's activity of the day.

    One statement whatever the number of refs (read_log_write adds the audit event to it)."""
    sql, params = usage_statement(team=team, actor=actor, operation=operation, refs=refs, now=now)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)


def read_log_write(
    *,
    actor: Actor,
    team: Team,
    operation: str,
    refs: Iterable[str],
    action: str,
    target_type: str,
    target_id: str | int,
    summary: str,
    data: dict[str, object],
) -> None:
    """A read's audit event (built by memoryadmin.audit.audit_event_build) and its usage
    counters: one statement on PostgreSQL, two in one transaction elsewhere."""
    refs = list(refs)
    if connection.vendor != "postgresql":
        with transaction.atomic():
            usage_count(team=team, actor=actor, operation=operation, refs=refs)
            audit_record(
                actor=actor,
                action=action,
                team=team,
                target_type=target_type,
                target_id=target_id,
                summary=summary,
                data=data,
            )
        return
    event = audit_event_build(
        actor=actor,
        action=action,
        team=team,
        target_type=target_type,
        target_id=target_id,
        summary=summary,
        data=data,
    )
    insert = InsertQuery(AuditEvent)
    insert.insert_values(
        [f for f in AuditEvent._meta.concrete_fields if not f.primary_key], [event]
    )
    ((audit_sql, audit_params),) = insert.get_compiler(connection=connection).as_sql()
    sql, params = usage_statement(team=team, actor=actor, operation=operation, refs=refs)
    with connection.cursor() as cursor:
        cursor.execute(f"WITH audit AS ({audit_sql}) {sql}", [*audit_params, *params])


def usage_statement(
    *, team: Team, actor: Actor, operation: str, refs: Iterable[str], now: datetime | None = None
) -> tuple[str, list[object]]:
    """The counters' upsert and its parameters."""
    now = now or timezone.now()
    reader, token_id, label = reader_of(actor)
    day = now.astimezone(UTC).date()
    rows = [
        (team.pk, UsageKind.SERVED.value, ref, 1, now, now, token_id, label, "", None)
        for ref in sorted(Counter(refs))
    ]
    rows.append(
        (
            team.pk,
            UsageKind.ACTIVITY.value,
            activity_key(reader, operation, day.isoformat()),
            1,
            now,
            now,
            token_id,
            label,
            operation,
            day,
        )
    )
    rows.sort(key=lambda row: row[2])
    return _upsert(rows)


def _upsert(rows: list[tuple]) -> tuple[str, list[object]]:
    quote = connection.ops.quote_name
    table = quote(UsageCounter._meta.db_table)
    columns = ", ".join(quote(c) for c in COLUMNS)
    placeholders = "(" + ", ".join(["%s"] * len(COLUMNS)) + ")"
    count, last_at = quote("count"), quote("last_at")
    token, label = quote("last_token_id"), quote("last_label")
    # Only quoted identifiers of our own table are formatted in; every value is a parameter.
    values = ", ".join([placeholders] * len(rows))
    sql = (
        f"INSERT INTO {table} ({columns}) VALUES {values} "  # noqa: S608
        f"ON CONFLICT ({quote('team_id')}, {quote('key')}) DO UPDATE SET "
        f"{count} = {table}.{count} + excluded.{count}, "
        f"{last_at} = excluded.{last_at}, {token} = excluded.{token}, "
        f"{label} = excluded.{label}"
    )
    ops = connection.ops
    params: list[object] = []
    for team_id, kind, key, number, first_at, last, token_id, reader, operation, day in rows:
        params += [team_id, kind, key, number, ops.adapt_datetimefield_value(first_at)]
        params += [ops.adapt_datetimefield_value(last), token_id, reader, operation]
        params.append(ops.adapt_datefield_value(day))
    return sql, params

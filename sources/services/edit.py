"""Change a source's name and refresh interval; test a location before adding it."""

from __future__ import annotations

from datetime import timedelta

from django.core.exceptions import ValidationError
from django.db import transaction

from formats import openmemories as om
from memoryadmin.audit import Actor, audit_record
from memoryadmin.errors import DomainError
from memoryadmin.models import Team
from sources.credentials import CredentialInvalid, credential_clean, scrub
from sources.fetchers import Credential, LocationError, SourceError, policy_from_settings
from sources.fetchers.factory import make_fetcher
from sources.fetchers.read import normalize_location
from sources.models import CredentialKind, Source, SourceKind
from sources.services.lifecycle import _local_identity, plain_http_refuse

MIN_INTERVAL = timedelta(minutes=1)
MAX_INTERVAL = timedelta(days=7)
MAX_NAME = 200


class SourceTestFailed(DomainError):
    """The location answered no valid manifest: nothing was saved. The message starts with
    the refresh's own error code (`tls-verify-failed: …`, `not-found: …`)."""

    code = "source-test-failed"


def interval_clean(interval: timedelta) -> timedelta:
    if interval < MIN_INTERVAL:
        raise ValidationError({"refresh_interval": "Refresh at most once a minute."})
    if interval > MAX_INTERVAL:
        raise ValidationError({"refresh_interval": "Refresh at least once a week."})
    return interval


@transaction.atomic
def source_update(
    *,
    actor: Actor,
    source: Source,
    name: str | None = None,
    refresh_interval: timedelta | None = None,
) -> Source:
    """Rename a source (kept over the manifest's name; empty: the manifest's again) or change
    how often it is refreshed (None: unchanged). Its location is its records' identity, so it
    is not editable: add the new one and delete the old."""
    source = Source.objects.select_for_update(of=("self",)).select_related("team").get(pk=source.pk)
    before = {"name": source.name_override, "refresh_minutes": _minutes(source.refresh_interval)}
    if name is not None:
        name = name.strip()
        if len(name) > MAX_NAME:
            raise ValidationError({"name": f"At most {MAX_NAME} characters."})
        source.name_override = name  # empty: the manifest's name again
    if refresh_interval is not None:
        source.refresh_interval = interval_clean(refresh_interval)
    after = {"name": source.name_override, "refresh_minutes": _minutes(source.refresh_interval)}
    changed = [key for key in before if before[key] != after[key]]
    if not changed:
        return source
    source.save(update_fields=["name_override", "refresh_interval"])
    audit_record(
        actor=actor,
        action="source.update",
        team=source.team,
        target=source,
        summary=f"Changed source {source.label} ({', '.join(changed)})",
        data={"identity": source.identity, "before": before, "after": after},
    )
    return source


def _minutes(interval: timedelta) -> int:
    return int(interval.total_seconds() // 60)


def source_test(
    *, actor: Actor, team: Team, location: str, credential: Credential | None = None
) -> om.Manifest:
    """Read the location's manifest through the same guards as a refresh and answer it (or
    SourceTestFailed with the refresh's error code); writes nothing, so a mistake leaves no
    row behind."""
    try:
        kind, identity = normalize_location(location)
    except LocationError as exc:
        raise ValidationError({"location": str(exc)}) from exc
    credential = credential or Credential()
    if kind == SourceKind.LOCAL:
        identity = _local_identity(actor=actor, team=team, identity=identity)
        if credential.kind != CredentialKind.NONE:
            raise CredentialInvalid({"credential_kind": "A local directory takes no credential."})
    else:
        plain_http_refuse(identity)
    credential = credential_clean(credential)
    policy = policy_from_settings()
    fetcher = make_fetcher(kind, identity, policy=policy, credential=credential)
    try:
        fetched = fetcher.get_manifest(None)
        return om.parse_manifest(
            fetched.body or b"",
            max_bytes=policy.max_manifest_bytes,
            max_entries=policy.max_entries,
        )
    except SourceError as exc:
        message = scrub(f"{exc.code}: {exc.message}", credential)
        raise SourceTestFailed({"location": message}) from None
    except om.ManifestError as exc:
        message = f"{exc.code}: invalid manifest: {exc.message}"
        raise SourceTestFailed({"location": message}) from None
    finally:
        fetcher.close()

"""OpenMemories sources of a team, their current snapshot of records, and refresh history."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db import models
from django.utils import timezone

from memoryadmin.models import Team

# the records whose state time can change: an expiry, or a replacement (whose target's state
# the selection decides together with the replacement's own)
TIMED = models.Q(expires__isnull=False) | ~models.Q(supersedes=[])


class SourceKind(models.TextChoices):
    LOCAL = "local", "Local directory"
    HTTPS = "https", "HTTPS URL"


class SourceState(models.TextChoices):
    PENDING = "pending", "Pending approval"
    APPROVED = "approved", "Approved"
    DISABLED = "disabled", "Disabled"


class Health(models.TextChoices):
    NEVER = "never", "Never refreshed"
    FRESH = "fresh", "Fresh"
    STALE = "stale", "Stale"
    # Refreshes failed and none ever succeeded: nothing to serve (stale serves an older copy).
    FAILED = "failed", "Failed, never read"
    DENIED = "denied", "Access denied"


class CredentialKind(models.TextChoices):
    NONE = "none", "None"
    BEARER = "bearer", "Bearer token"
    BASIC = "basic", "Basic (user and password)"


class SourceQuerySet(models.QuerySet):
    def with_snapshot(self) -> SourceQuerySet:
        """Each source with its current snapshot, in the same query, without the snapshot's
        byte fields (`Snapshot.BYTE_FIELDS`): only a refresh reads them, and a 10,000-record
        source's ~1 MB of them came as ~2 MB of hex to every page that showed the source."""
        return self.select_related("current_snapshot").defer(
            *(f"current_snapshot__{name}" for name in Snapshot.BYTE_FIELDS)
        )


class Source(models.Model):
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="sources")
    kind = models.CharField(max_length=8, choices=SourceKind.choices)
    # The configured absolute directory path or HTTPS base URL: half of every record's identity.
    identity = models.CharField(max_length=1000)
    display_name = models.CharField(max_length=200, blank=True)  # the manifest's name
    # A name an administrator gave (source_update); shown instead of the manifest's.
    name_override = models.CharField(max_length=200, blank=True)
    state = models.CharField(
        max_length=10, choices=SourceState.choices, default=SourceState.PENDING, db_index=True
    )
    added_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    approved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    approved_at = models.DateTimeField(null=True, blank=True)
    refresh_interval = models.DurationField(default=timedelta(hours=1))
    credential_kind = models.CharField(
        max_length=8, choices=CredentialKind.choices, default=CredentialKind.NONE
    )
    # Fernet ciphertext (memoryadmin.crypto) of a JSON object; never shown back.
    credential_encrypted = models.TextField(blank=True, default="")
    # When a credential was last given, replaced or cleared (null: never set).
    credential_changed_at = models.DateTimeField(null=True, blank=True)
    health = models.CharField(max_length=8, choices=Health.choices, default=Health.NEVER)
    last_attempt_at = models.DateTimeField(null=True, blank=True)
    last_success_at = models.DateTimeField(null=True, blank=True)
    last_error_code = models.CharField(max_length=64, blank=True)
    last_error = models.TextField(blank=True)
    stale_since = models.DateTimeField(null=True, blank=True)
    denied_since = models.DateTimeField(null=True, blank=True)
    current_snapshot = models.OneToOneField(
        "Snapshot", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    objects = SourceQuerySet.as_manager()

    class Meta:
        ordering = ["team", "display_name", "identity"]
        constraints = [
            models.UniqueConstraint(fields=["team", "identity"], name="source_identity_per_team")
        ]

    def __str__(self) -> str:
        return self.label

    @property
    def name(self) -> str:
        return self.name_override or self.display_name

    @property
    def label(self) -> str:
        return self.name or self.identity

    @property
    def has_credential(self) -> bool:
        return bool(self.credential_encrypted)

    # A refresh of this source holds the named lock `lock_name` (memoryadmin.locks) for at most
    # `lock_ttl` seconds; a run queued or running for longer than that counts as lost.
    lock_ttl = 900

    @property
    def lock_name(self) -> str:
        return f"source:{self.pk}"

    def is_due(self, now: datetime) -> bool:
        return self.last_attempt_at is None or self.last_attempt_at + self.refresh_interval <= now


class Snapshot(models.Model):
    """One successful read of a source. Only `Source.current_snapshot` is ever served."""

    # what the refresh keeps of its read for the next one, and nothing else reads
    BYTE_FIELDS = ("manifest_body", "raw_entries", "raw_stats")

    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="snapshots")
    created_at = models.DateTimeField(default=timezone.now)
    retrieved_at = models.DateTimeField(default=timezone.now)
    manifest_name = models.CharField(max_length=200)
    manifest_entries = models.PositiveIntegerField(default=0)
    # Kept so a 304 on the manifest can be parsed again without downloading it.
    manifest_body = models.BinaryField(default=b"")
    fingerprint = models.CharField(max_length=64)
    # sources.fetchers.raw: equal at the next read means the same bytes under the same rules,
    # so the refresh keeps this snapshot without parsing anything (blank: always read in full)
    raw_digest = models.CharField(max_length=64, blank=True, default="")
    # the manifest's accepted entries (sources.fetchers.raw.entries_pack): the raw check of
    # the same manifest bytes reads the files without parsing the manifest again
    raw_entries = models.BinaryField(blank=True, default=b"")
    # a local source's record files as read, per accepted entry (sources.fetchers.raw
    # .stats_pack): a file whose stat is unchanged is not read again by the raw check
    raw_stats = models.BinaryField(blank=True, default=b"")
    record_count = models.PositiveIntegerField(default=0)
    active_count = models.PositiveIntegerField(default=0)
    rejected_count = models.PositiveIntegerField(default=0)
    problem_count = models.PositiveIntegerField(default=0)

    def __str__(self) -> str:
        return f"{self.source} @ {self.retrieved_at:%Y-%m-%d %H:%M}"


class InactiveReason(models.TextChoices):
    EXPIRED = "expired", "Expired"
    SUPERSEDED = "superseded", "Superseded"


class Record(models.Model):
    # no index of its own: the unique (snapshot, record_id) and the indexes in Meta lead with it
    snapshot = models.ForeignKey(
        Snapshot, on_delete=models.CASCADE, related_name="records", db_index=False
    )
    # The snapshot's source, kept on the row for the queries that filter by it. No constraint
    # of its own in the database: the snapshot's already holds the source (a source row cannot
    # go while a snapshot of it is there), and a cold refresh inserts every record, where its
    # check was a third of the records' COPY (10k records: 183 ms with both keys, 63 without).
    source = models.ForeignKey(
        Source, on_delete=models.CASCADE, related_name="+", db_constraint=False
    )
    record_id = models.CharField(max_length=500)
    path = models.CharField(max_length=1000)
    kind = models.CharField(max_length=16)
    scope = models.CharField(max_length=1000)
    title = models.CharField(max_length=500)
    body = models.TextField()
    tags = models.JSONField(default=list)
    provenance = models.JSONField(null=True, blank=True)
    created = models.DateTimeField()
    updated = models.DateTimeField()
    expires = models.DateTimeField(null=True, blank=True)
    supersedes = models.JSONField(default=list)
    extensions = models.JSONField(default=dict)
    content_hash = models.CharField(max_length=64)
    retrieved_at = models.DateTimeField()
    active = models.BooleanField(default=True)
    inactive_reason = models.CharField(max_length=12, choices=InactiveReason.choices, blank=True)

    class Meta:
        ordering = ["record_id"]
        constraints = [
            models.UniqueConstraint(fields=["snapshot", "record_id"], name="record_id_per_snapshot")
        ]
        indexes = [
            models.Index(fields=["snapshot", "active", "scope"]),
            # The source page walks a snapshot's active records in record_id order, a page at
            # a time, instead of sorting all of them per request.
            models.Index(fields=["snapshot", "active", "record_id"], name="record_snapshot_page"),
            # An unchanged refresh re-selects only the records time can move (snapshot_keep):
            # without this it visited every record of the snapshot (~8 ms at 10k).
            models.Index(fields=["snapshot"], condition=TIMED, name="record_snapshot_timed"),
        ]

    def __str__(self) -> str:
        return f"{self.record_id} ({self.source_id})"

    def reason_now(self, now: datetime) -> str:
        """Expiry is applied at read time too: a record can expire between refreshes."""
        if self.active and self.expires is not None and self.expires <= now:
            return InactiveReason.EXPIRED
        return self.inactive_reason


class Rejection(models.Model):
    snapshot = models.ForeignKey(Snapshot, on_delete=models.CASCADE, related_name="rejections")
    path = models.CharField(max_length=1000, blank=True)
    record_id = models.CharField(max_length=500, blank=True)
    code = models.CharField(max_length=64)
    message = models.TextField()
    line = models.PositiveIntegerField(null=True, blank=True)

    class Meta:
        ordering = ["path", "id"]

    def __str__(self) -> str:
        return f"{self.code} {self.path}"


class Problem(models.Model):
    snapshot = models.ForeignKey(Snapshot, on_delete=models.CASCADE, related_name="problems")
    code = models.CharField(max_length=64)
    ids = models.JSONField(default=list)
    message = models.TextField()

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"{self.code} {', '.join(self.ids)}"


class HttpValidator(models.Model):
    """ETag / Last-Modified per URL, so an unchanged HTTPS source costs a round of 304s."""

    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="validators")
    url = models.CharField(max_length=2000)
    etag = models.CharField(max_length=500, blank=True)
    last_modified = models.CharField(max_length=100, blank=True)
    content_hash = models.CharField(max_length=64, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["source", "url"], name="validator_url_per_source")
        ]

    def __str__(self) -> str:
        return self.url


class RunStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    SUCCEEDED = "succeeded", "Succeeded"
    FAILED = "failed", "Failed (stale)"
    DENIED = "denied", "Access denied"
    SKIPPED = "skipped", "Skipped"


class RefreshRun(models.Model):
    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="runs")
    trigger = models.CharField(max_length=16, default="manual")  # manual|schedule|add|approve
    requested_by = models.CharField(max_length=200, blank=True)
    requested_at = models.DateTimeField(default=timezone.now)
    status = models.CharField(
        max_length=10, choices=RunStatus.choices, default=RunStatus.QUEUED, db_index=True
    )
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    duration_ms = models.PositiveIntegerField(null=True, blank=True)
    changed = models.BooleanField(default=False)
    record_count = models.PositiveIntegerField(default=0)
    active_count = models.PositiveIntegerField(default=0)
    rejected_count = models.PositiveIntegerField(default=0)
    problem_count = models.PositiveIntegerField(default=0)
    parsed_count = models.PositiveIntegerField(default=0)
    reused_count = models.PositiveIntegerField(default=0)
    error_code = models.CharField(max_length=64, blank=True)
    error = models.TextField(blank=True)

    class Meta:
        ordering = ["-requested_at", "-id"]

    def __str__(self) -> str:
        return f"run {self.pk} of {self.source_id}: {self.status}"

    @property
    def is_finished(self) -> bool:
        return self.status not in (RunStatus.QUEUED, RunStatus.RUNNING)

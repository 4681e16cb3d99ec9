"""A team's brain (MemoryAI Protocol v1): chunks, edges, entities, sessions, moods, agents."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

from formats import memoryai as protocol
from memoryadmin.models import ApiToken, Team

# The chunk columns a bundle's ChunkRecord carries, in record order (export reads them,
# import writes them).
CHUNK_RECORD_COLUMNS = (
    "content",
    "content_hash",
    "memory_type",
    "embedding",
    "embedding_model",
    "embedding_dim",
    "tags",
    "zone",
    "importance",
    "is_pinned",
    "decay_score",
    "tier",
    "created_at",
    "accessed_at",
    "valid_until",
    "metadata",
)


class BrainSettings(models.Model):
    """The team's embedding model; empty until set or adopted from the first bundle with one."""

    team = models.OneToOneField(Team, on_delete=models.CASCADE, related_name="brain_settings")
    embedding_model = models.CharField(max_length=protocol.MAX_MODEL_CHARS, blank=True)
    embedding_dim = models.PositiveIntegerField(default=0)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name_plural = "brain settings"

    def __str__(self) -> str:
        return f"{self.team}: {self.embedding_model or '(no model)'}/{self.embedding_dim}"

    @property
    def is_set(self) -> bool:
        return bool(self.embedding_model) and self.embedding_dim > 0


class Origin(models.TextChoices):
    IMPORT = "import", "Imported bundle"
    MANUAL = "manual", "Entered by hand"
    SOURCE = "source", "Source record"
    REPOSITORY = "repository", "Repository memory"


class ChunkQuerySet(models.QuerySet):
    def live(self) -> ChunkQuerySet:
        return self.filter(is_deleted=False)

    def dna(self) -> ChunkQuerySet:
        return self.filter(is_dna=True)


class Chunk(models.Model):
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="chunks", db_index=False)
    content = models.TextField()
    content_hash = models.CharField(max_length=64)
    memory_type = models.CharField(max_length=64)
    embedding = models.BinaryField(null=True, blank=True)  # little-endian float32
    embedding_model = models.CharField(max_length=protocol.MAX_MODEL_CHARS, blank=True)
    embedding_dim = models.PositiveIntegerField(default=0)
    tags = models.JSONField(default=list, blank=True)
    zone = models.CharField(max_length=16, default="standard")
    importance = models.FloatField(default=0.5)
    is_pinned = models.BooleanField(default=False)
    decay_score = models.FloatField(default=1.0)  # retention strength: 1 fresh, towards 0 decayed
    tier = models.CharField(max_length=8, default="hot")
    created_at = models.DateTimeField(default=timezone.now)
    accessed_at = models.DateTimeField(null=True, blank=True)
    valid_until = models.DateTimeField(null=True, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    origin = models.CharField(max_length=32, choices=Origin.choices, default=Origin.IMPORT)
    # DNA is sticky: once a chunk is DNA no automatic path may decay, expire or delete it.
    is_dna = models.BooleanField(default=False)
    is_deleted = models.BooleanField(default=False)  # a user's soft delete; never exported
    deleted_at = models.DateTimeField(null=True, blank=True)
    suspicious = models.BooleanField(default=False)  # looked like prompt injection on import
    # Looked like a credential on import: [{"rule", "line"}] from MemoryRail's secret scanner
    # (never the value); the Brain page masks those spans (bundles.secrets).
    secret_findings = models.JSONField(default=list, blank=True)
    updated_at = models.DateTimeField(default=timezone.now)  # local change time (scope=since)
    # Imported or entered chunks stand on their own; a chunk created by a mirror (standalone
    # False) is served only while one of its ChunkOrigin rows is active (bundles.mirror).
    standalone = models.BooleanField(default=True)
    # SHA-256 of the record this chunk was imported from, as validated (bundles.imports.
    # chunks): a re-import that carries the very same record need not validate it again.
    import_digest = models.BinaryField(null=True, blank=True, editable=False)
    # A mirror-only chunk (standalone False) that lost its last active origin: since when.
    # Cleared when an origin comes back; bundles.services.prune deletes it after the
    # retention period (MEMORYADMIN_BRAIN_WITHDRAWN_RETENTION_DAYS).
    withdrawn_at = models.DateTimeField(null=True, blank=True)

    objects = ChunkQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["team", "content_hash"], name="chunk_team_hash_unique")
        ]
        indexes = [
            models.Index(fields=["team", "memory_type"], name="chunk_team_type"),
            models.Index(fields=["team", "updated_at"], name="chunk_team_updated"),
            models.Index(fields=["team", "is_dna"], name="chunk_team_dna"),
            # Only mirror-only chunks: imports (standalone) never write this index.
            models.Index(
                fields=["team", "withdrawn_at"],
                name="chunk_mirror_withdrawn",
                condition=models.Q(standalone=False),
            ),
        ]
        ordering = ["-id"]

    def __str__(self) -> str:
        from bundles.secrets import mask_secrets  # what looked like a credential stays hidden

        return f"{self.memory_type}: {mask_secrets(self.content, self.secret_findings)[:60]}"


class OriginKind(models.TextChoices):
    SOURCE = "source", "Source record"
    REPOSITORY = "repository", "Repository memory"


class ChunkOrigin(models.Model):
    """One approved thing (a source record, a repository memory) mirrored into a chunk.

    `ref` is the thing's identity (`source:<id>:<record id>`, `repository:<id>:<memory id>`),
    unique per team; it points at the chunk holding the thing's current text. `active` says
    whether the thing is approved knowledge right now; `expires_at` applies expiry at read time.
    `team` is the chunk's: no constraint of its own, as the chunk's holds it (migration 0015).
    """

    team = models.ForeignKey(Team, models.CASCADE, "+", db_constraint=False, db_index=False)
    chunk = models.ForeignKey(Chunk, models.CASCADE, "origins", db_index=False)
    kind = models.CharField(max_length=16, choices=OriginKind.choices)
    group = models.CharField(max_length=64)  # `source:<id>` / `repository:<id>`: one reconcile
    ref = models.CharField(max_length=600)
    active = models.BooleanField(default=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    metadata = models.JSONField(default=dict, blank=True)  # provenance, written by our code
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["team", "ref"], name="chunkorigin_team_ref_unique")
        ]
        indexes = [
            models.Index(fields=["chunk", "active"], name="chunkorigin_chunk_active"),
            models.Index(fields=["team", "group"], name="chunkorigin_team_group"),
        ]

    def __str__(self) -> str:
        return f"{self.ref} -> {self.chunk_id}{'' if self.active else ' (inactive)'}"


class MemoryEdge(models.Model):
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="memory_edges")
    source = models.ForeignKey(Chunk, on_delete=models.CASCADE, related_name="edges_out")
    target = models.ForeignKey(Chunk, on_delete=models.CASCADE, related_name="edges_in")
    edge_type = models.CharField(max_length=protocol.MAX_EDGE_TYPE_CHARS)
    weight = models.FloatField(default=0.0)
    co_activation_count = models.BigIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["team", "source", "target", "edge_type"], name="edge_team_pair_type_unique"
            )
        ]

    def __str__(self) -> str:
        return f"{self.source_id} -{self.edge_type}-> {self.target_id}"


class Entity(models.Model):
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="entities")
    name = models.CharField(max_length=protocol.MAX_NAME_CHARS)
    frequency = models.BigIntegerField(default=0)
    first_seen = models.DateTimeField(null=True, blank=True)
    last_seen = models.DateTimeField(null=True, blank=True)
    is_dna = models.BooleanField(default=False)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name_plural = "entities"
        constraints = [
            models.UniqueConstraint(fields=["team", "name"], name="entity_team_name_unique")
        ]

    def __str__(self) -> str:
        return self.name


class KeyedRecordModel(models.Model):
    """Opaque, validated JSON stored by a documented natural key (see protocol.validate_keyed)."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+")
    key = models.CharField(max_length=protocol.MAX_KEY_CHARS + 16)
    data = models.JSONField(default=dict)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        abstract = True

    def __str__(self) -> str:
        return self.key


class L2Session(KeyedRecordModel):
    """Inserted once per content hash; never updated."""

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["team", "key"], name="l2session_team_key_unique")
        ]


class MoodState(KeyedRecordModel):
    """Upserted by `key`, else `name`, else record hash."""

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["team", "key"], name="moodstate_team_key_unique")
        ]


class Agent(KeyedRecordModel):
    """Upserted by `name`, else `id`."""

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["team", "key"], name="agent_team_key_unique")
        ]


class JobState(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    SUCCEEDED = "succeeded", "Succeeded"
    FAILED = "failed", "Failed"


class ImportJob(models.Model):
    """A large bundle imported in the background; the upload waits in a scratch file."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="import_jobs")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    token = models.ForeignKey(
        ApiToken, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    actor_label = models.CharField(max_length=200, blank=True)
    state = models.CharField(max_length=16, choices=JobState.choices, default=JobState.QUEUED)
    filename = models.CharField(max_length=255, blank=True)
    scratch_path = models.CharField(max_length=1000, blank=True)
    size_bytes = models.BigIntegerField(default=0)
    keep_embeddings = models.BooleanField(default=True)
    accept_foreign_embeddings = models.BooleanField(default=False)
    # Propose the bundle's DNA chunks to this repository (reviews) after the import.
    propose_to = models.ForeignKey(
        "reviews.Repository", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    records_total = models.BigIntegerField(default=0)
    records_done = models.BigIntegerField(default=0)
    report = models.JSONField(null=True, blank=True)
    error_code = models.CharField(max_length=64, blank=True)
    error_message = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # The lease: last sign of life. Queued: when its task was last sent. Running: the worker's
    # heartbeat. Older than BUNDLE_IMPORT_LEASE_SECONDS, the sweeper sends the job again.
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveIntegerField(default=0)  # claims; a runner owns its attempt

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["team", "-created_at"], name="importjob_team_created"),
            models.Index(fields=["state", "heartbeat_at"], name="importjob_state_heartbeat"),
        ]

    def __str__(self) -> str:
        return f"import #{self.pk} ({self.state})"

    @property
    def is_finished(self) -> bool:
        return self.state in (JobState.SUCCEEDED, JobState.FAILED)


class ProposalState(models.TextChoices):
    PENDING = "pending", "Pending"
    PUSHED = "pushed", "Pushed"
    FAILED = "failed", "Failed"
    EMPTY = "empty", "Nothing to write"


class ImportProposal(models.Model):
    """DNA chunks of one import, written as MemoryRail proposals into one repository.

    The files are rendered (and secret-scanned) when the import lands; a task commits them as
    the importer's agent identity and pushes them under the repository lock.
    """

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+")
    repository = models.ForeignKey("reviews.Repository", on_delete=models.CASCADE, related_name="+")
    token = models.ForeignKey(
        ApiToken, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    actor_label = models.CharField(max_length=200, blank=True)
    author_name = models.CharField(max_length=200)
    author_email = models.CharField(max_length=200)
    # [{"memory_id", "path", "text", "content_hash", "title", "type"}]
    items = models.JSONField(default=list)
    state = models.CharField(
        max_length=8, choices=ProposalState.choices, default=ProposalState.PENDING
    )
    detail = models.TextField(blank=True)
    commit_sha = models.CharField(max_length=40, blank=True)
    attempts = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"proposal #{self.pk} to {self.repository_id} ({self.state})"


class ImportRun(models.Model):
    """One bundle import that wrote to the brain (in the request or as a background job):
    what "undo this import" takes back. Its ImportedChunk rows say which chunks it carried."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+")
    job = models.OneToOneField(
        ImportJob, null=True, blank=True, on_delete=models.SET_NULL, related_name="run"
    )
    actor_label = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    undone_at = models.DateTimeField(null=True, blank=True)
    undone_by = models.CharField(max_length=200, blank=True)
    undo_report = models.JSONField(null=True, blank=True)  # the counts the undo removed/kept

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["team", "-created_at"], name="importrun_team_created")]

    def __str__(self) -> str:
        return f"import run #{self.pk}{' (undone)' if self.undone_at else ''}"


class ImportedChunk(models.Model):
    """A chunk an import carried: `inserted` when that import created it, else it was held
    already (a duplicate) — either way the import holds it, so undoing another keeps it."""

    # No database constraints (checked row by row at commit: ~1 s of a 100k re-import) nor
    # single-column indexes (the two below cover them); Django's CASCADE still deletes rows,
    # and undo skips a row whose chunk went while its import ran (bundles/services/cleanup).
    run = models.ForeignKey(
        ImportRun, on_delete=models.CASCADE, related_name="+", db_constraint=False, db_index=False
    )
    chunk = models.ForeignKey(
        Chunk, on_delete=models.CASCADE, related_name="+", db_constraint=False, db_index=False
    )
    inserted = models.BooleanField(default=False)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["run", "chunk"], name="importedchunk_run_chunk")
        ]
        indexes = [models.Index(fields=["chunk"], name="importedchunk_chunk")]

    def __str__(self) -> str:
        return f"{self.run_id} carried {self.chunk_id}"


# The usage counters and the proposal vectors live in their own modules; imported here so the
# app's models include them.
from bundles.embeddings.models import ProposalVector  # noqa: E402, F401
from bundles.usage.models import UsageCounter, UsageKind  # noqa: E402, F401

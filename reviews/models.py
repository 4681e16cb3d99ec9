"""Repositories under review, the memories indexed from them, and reviewers' decisions."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

from formats.memoryrail.secrets import secrets_mask_field
from memoryadmin.models import ApiToken, Team


class CredentialKind(models.TextChoices):
    NONE = "none", "None (public or local)"
    HTTPS_TOKEN = "https-token", "HTTPS token"
    SSH_KEY = "ssh-key", "SSH deploy key"


class SyncState(models.TextChoices):
    IDLE = "idle", "Idle"
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"


class Repository(models.Model):
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="repositories")
    name = models.CharField(max_length=100)
    # Never holds credentials: validated on input, and they travel separately to git.
    remote_url = models.CharField(max_length=500)
    branch = models.CharField(max_length=200, default="main")
    credential_kind = models.CharField(
        max_length=16, choices=CredentialKind.choices, default=CredentialKind.NONE
    )
    credential_username = models.CharField(max_length=200, blank=True)
    credential_encrypted = models.TextField(blank=True)  # memoryadmin.crypto
    ssh_known_hosts = models.TextField(blank=True)
    push_enabled = models.BooleanField(default=True)
    # A disabled repository is neither synced nor pushed, and raises no sync banner.
    enabled = models.BooleanField(default=True)
    review_mode = models.CharField(max_length=16, blank=True)  # from config.json at last sync
    last_sync_at = models.DateTimeField(null=True, blank=True)
    last_sync_ok = models.BooleanField(null=True)
    head_commit = models.CharField(max_length=40, blank=True)
    last_error = models.TextField(blank=True)  # scrubbed; shown until the next success
    problems = models.JSONField(default=list, blank=True)  # format problems at last sync
    ambiguous_refs = models.JSONField(default=dict, blank=True)
    sync_interval_minutes = models.PositiveIntegerField(default=15)
    # Live progress of the sync task: idle, queued or running (see SyncState).
    sync_state = models.CharField(max_length=8, choices=SyncState.choices, default=SyncState.IDLE)
    sync_requested_at = models.DateTimeField(null=True, blank=True)
    sync_started_at = models.DateTimeField(null=True, blank=True)
    # Reviewer routing (formats.memoryrail.reviewer_rules):
    # [{"pattern": str, "reviewers": [username, ...]}].
    routing_rules = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["team", "name"]
        constraints = [
            models.UniqueConstraint(fields=["team", "name"], name="repository_unique_name")
        ]
        verbose_name_plural = "repositories"

    def __str__(self) -> str:
        return self.name

    @property
    def working_dir(self):  # type: ignore[no-untyped-def]
        return settings.DATA_DIR / "repositories" / str(self.pk)

    @property
    def has_credential(self) -> bool:
        return bool(self.credential_encrypted)

    @property
    def lock_name(self) -> str:
        """The lock that serialises git work on this repository (`reviews.git.WorkingCopy`)."""
        return f"repo:{self.pk}"


class MemoryStatus(models.TextChoices):
    ACTIVE = "active"
    PROPOSED = "proposed"
    SUPERSEDED = "superseded"
    ARCHIVED = "archived"
    RESOLVED = "resolved"


class Memory(models.Model):
    """One memory file as of the repository's last sync."""

    # no index of their own: the queue's index leads with the team, the unique (repository,
    # memory_id) with the repository (two indexes less to keep per memory indexed). The team
    # keeps no constraint either: the repository's key holds it (a memory's team is its
    # repository's), and its check was a fifth of storing an index's rows.
    team = models.ForeignKey(
        Team, on_delete=models.CASCADE, related_name="+", db_index=False, db_constraint=False
    )
    repository = models.ForeignKey(
        Repository, on_delete=models.CASCADE, related_name="memories", db_index=False
    )
    memory_id = models.CharField(max_length=255)
    ref = models.CharField(max_length=8)  # Meta's index: no `LIKE` twin (nothing asks one)
    type = models.CharField(max_length=16)
    title = models.CharField(max_length=1000)
    status = models.CharField(max_length=16, choices=MemoryStatus.choices)
    path = models.CharField(max_length=500)
    blob_sha = models.CharField(max_length=40)  # the file's git blob at last sync
    front_matter = models.JSONField(default=dict)
    body = models.TextField(blank=True)
    supersedes = models.CharField(max_length=255, blank=True)
    superseded_by = models.CharField(max_length=255, blank=True)
    created = models.CharField(max_length=40)
    updated = models.CharField(max_length=40)
    author_name = models.CharField(max_length=200, blank=True)
    author_email = models.CharField(max_length=200, blank=True)
    added_commit = models.CharField(max_length=40, blank=True)
    added_at = models.DateTimeField(null=True, blank=True)
    secret_findings = models.JSONField(default=list, blank=True)
    stale = models.JSONField(default=list, blank=True)
    has_secret = models.BooleanField(default=False)
    is_stale = models.BooleanField(default=False)
    indexed_at = models.DateTimeField(default=timezone.now)
    # Who the repository's routing rules assign this proposal to (recomputed at each sync).
    assigned_reviewers = models.ManyToManyField(
        settings.AUTH_USER_MODEL, blank=True, related_name="+"
    )

    class Meta:
        ordering = ["added_at", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["repository", "memory_id"], name="memory_unique_per_repository"
            )
        ]
        indexes = [
            models.Index(fields=["team", "status", "added_at", "id"]),
            # a short ref is looked up whole (`=`, with the team), never by prefix
            models.Index(fields=["ref"], name="reviews_memory_ref_54f8e917"),
        ]
        verbose_name_plural = "memories"

    def __str__(self) -> str:
        return f"{self.ref} {secrets_mask_field('title', self.title)}"  # admin, logs: masked


class DecisionKind(models.TextChoices):
    APPROVE = "approve", "Approve"
    REJECT = "reject", "Reject"


class PushState(models.TextChoices):
    PENDING = "pending", "Pending"
    PUSHED = "pushed", "Pushed"
    FAILED = "failed", "Failed"
    CONFLICT = "conflict", "Conflict"


class Decision(models.Model):
    """One reviewer action on one or more proposals of one repository: one commit, one push."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+")
    repository = models.ForeignKey(Repository, on_delete=models.CASCADE, related_name="decisions")
    kind = models.CharField(max_length=8, choices=DecisionKind.choices)
    comment = models.TextField(blank=True)
    secret_override_reason = models.TextField(blank=True)
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    token = models.ForeignKey(
        ApiToken, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    actor_label = models.CharField(max_length=200)
    author_name = models.CharField(max_length=200)
    author_email = models.CharField(max_length=200)
    state = models.CharField(max_length=10, choices=PushState.choices, default=PushState.PENDING)
    state_detail = models.TextField(blank=True)  # failure or conflict reason, scrubbed
    commit_sha = models.CharField(max_length=40, blank=True)
    attempts = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["team", "-created_at"]),
            models.Index(fields=["repository", "state", "id"]),
        ]

    def __str__(self) -> str:
        return f"{self.kind} #{self.pk} ({self.state})"


class DecisionItem(models.Model):
    decision = models.ForeignKey(Decision, on_delete=models.CASCADE, related_name="items")
    memory = models.ForeignKey(
        Memory, null=True, blank=True, on_delete=models.SET_NULL, related_name="decision_items"
    )
    memory_key = models.CharField(max_length=255)  # the MemoryRail id
    # The proposal's page id when decided: its old URL (/p/<pk>/) still leads here once the
    # memory is gone from the index (a rejection deletes the file).
    memory_pk = models.BigIntegerField(null=True, blank=True, db_index=True)
    ref = models.CharField(max_length=8)
    title = models.CharField(max_length=1000)
    path = models.CharField(max_length=500)
    blob_sha = models.CharField(max_length=40)  # what the reviewer saw; any other blob = conflict
    supersedes = models.CharField(max_length=255, blank=True)
    # What the reviewer decided on, kept for the decided proposal's page: the type and the
    # body with secrets masked (reviews.services.content.memory_text), as of the decision.
    type = models.CharField(max_length=16, blank=True)
    body = models.TextField(blank=True)
    proposed_at = models.DateTimeField(null=True, blank=True)  # for time-to-decision
    # The first of two approvals, when the team requires two (named in the commit message).
    first_approval = models.ForeignKey(
        "Approval", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # What text was decided, as the brain hashes it (formats.crosswalk.memory_hashes): the file's
    # title and body, and the imported chunk's own hash when the file records a different
    # one. A pushed rejection keeps an import from proposing the same text again.
    content_hash = models.CharField(max_length=64, blank=True)
    proposed_hash = models.CharField(max_length=64, blank=True)
    # A reviewer lifted this rejection: imports may propose the text again (audited).
    reproposal_allowed_at = models.DateTimeField(null=True, blank=True)
    reproposal_allowed_by = models.CharField(max_length=200, blank=True)

    class Meta:
        ordering = ["id"]
        indexes = [
            models.Index(fields=["content_hash"], name="decisionitem_content_hash"),
            models.Index(
                fields=["proposed_hash"],
                name="decisionitem_proposed_hash",
                condition=~models.Q(proposed_hash=""),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.ref} {secrets_mask_field('title', self.title)}"  # admin, logs: masked


class ReviewSettings(models.Model):
    """Team-level review policy, edited by team admins."""

    team = models.OneToOneField(Team, on_delete=models.CASCADE, related_name="review_settings")
    require_two_approvals = models.BooleanField(
        default=False,
        help_text="Constraint and decision proposals need two approvals from different reviewers.",
    )
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name_plural = "review settings"

    def __str__(self) -> str:
        return f"review settings of {self.team}"


TWO_APPROVAL_TYPES = ("constraint", "decision")


class Approval(models.Model):
    """A first approval that waits for a second reviewer; it only counts for the blob it saw."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+")
    memory = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="approvals")
    blob_sha = models.CharField(max_length=40)
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    token = models.ForeignKey(
        ApiToken, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    approver_key = models.CharField(max_length=40)  # "user:<id>" or "token:<id>": one person
    actor_label = models.CharField(max_length=200)
    author_name = models.CharField(max_length=200)
    author_email = models.CharField(max_length=200)
    comment = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["memory", "blob_sha"])]

    def __str__(self) -> str:
        return f"first approval of {self.memory_id} by {self.actor_label}"

"""Core models: teams and roles, API tokens, the append-only audit log."""

from __future__ import annotations

import hashlib

from django.conf import settings
from django.db import models
from django.utils import timezone


class Role(models.TextChoices):
    ADMIN = "admin", "Admin"
    REVIEWER = "reviewer", "Reviewer"
    VIEWER = "viewer", "Viewer"


class Team(models.Model):
    slug = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=200)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.name or self.slug


class Membership(models.Model):
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships"
    )
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=16, choices=Role.choices)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "team"], name="membership_one_role_per_team")
        ]
        ordering = ["team__slug", "user__username"]

    def __str__(self) -> str:
        return f"{self.user} is {self.role} of {self.team}"


class Scope(models.TextChoices):
    BUNDLES_EXPORT = "bundles:export", "Export bundles"
    BUNDLES_IMPORT = "bundles:import", "Import bundles"
    CONTEXT_READ = "context:read", "Read agent context"
    SOURCES_READ = "sources:read", "Read sources"
    SOURCES_MANAGE = "sources:manage", "Add, change, approve, disable and delete sources"
    REVIEWS_READ = "reviews:read", "Read reviews"
    REVIEWS_WRITE = "reviews:write", "Approve and reject proposals"
    REVIEWS_PROPOSE = "reviews:propose", "Propose memories to team repositories (agents)"
    REVIEWS_MANAGE = "reviews:manage", "Add, change, sync, disable and delete review repositories"
    USAGE_READ = "usage:read", "Read usage counts (what agents were served)"
    TEAM_MANAGE = "team:manage", "Manage members, tokens and webhooks"


def token_hash(secret: str) -> str:
    """Tokens carry 256 bits of randomness, so a plain SHA-256 is a safe, fast lookup hash."""
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


class TokenKind(models.TextChoices):
    # A person's token acts for them: never beyond their current role on the team, and refused
    # once they leave it (their removal revokes it). A team token (management command, system)
    # belongs to no person: its commits use the bot identity and it never counts as a reviewer.
    PERSONAL = "personal", "Personal"
    TEAM = "team", "Team"


class ApiToken(models.Model):
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100)
    kind = models.CharField(max_length=16, choices=TokenKind.choices, default=TokenKind.PERSONAL)
    prefix = models.CharField(max_length=16, unique=True, editable=False)
    secret_hash = models.CharField(max_length=64, unique=True, editable=False)
    scopes = models.JSONField(default=list)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    revoked_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @property
    def is_expired(self) -> bool:
        return self.expires_at is not None and self.expires_at <= timezone.now()

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None and not self.is_expired

    @property
    def is_personal(self) -> bool:
        return self.kind != TokenKind.TEAM


class AuditQuerySet(models.QuerySet):
    def update(self, **kwargs):  # type: ignore[override]
        raise AuditImmutableError("audit events cannot be updated")

    def delete(self):  # type: ignore[override]
        raise AuditImmutableError("audit events cannot be deleted")


class AuditImmutableError(RuntimeError):
    """Raised on any attempt to change or remove an audit event."""


class AuditEvent(models.Model):
    """One thing that happened. Append-only: the ORM refuses changes and the database does too."""

    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    team = models.ForeignKey(
        Team, null=True, blank=True, on_delete=models.PROTECT, related_name="audit_events"
    )
    actor_user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    actor_token = models.ForeignKey(
        ApiToken, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    # A snapshot of who acted, kept readable even if the user or token is renamed.
    actor_label = models.CharField(max_length=200)
    action = models.CharField(max_length=64, db_index=True)
    target_type = models.CharField(max_length=64, blank=True)
    target_id = models.CharField(max_length=64, blank=True)
    summary = models.CharField(max_length=500)
    data = models.JSONField(default=dict, blank=True)
    ip_address = models.GenericIPAddressField(null=True, blank=True)
    request_id = models.CharField(max_length=64, blank=True)

    objects = AuditQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["team", "-created_at"])]

    def __str__(self) -> str:
        return f"{self.created_at:%Y-%m-%d %H:%M} {self.actor_label} {self.action}"

    def save(self, *args, **kwargs) -> None:
        if self.pk is not None and not kwargs.get("force_insert"):
            raise AuditImmutableError("audit events cannot be updated")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise AuditImmutableError("audit events cannot be deleted")


class Invitation(models.Model):
    """An e-mailed invitation to join a team with a role; only the link's hash is stored."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="invitations")
    email = models.EmailField()
    role = models.CharField(max_length=16, choices=Role.choices)
    secret_hash = models.CharField(max_length=64, unique=True, editable=False)
    invited_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()
    accepted_at = models.DateTimeField(null=True, blank=True)
    accepted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    revoked_at = models.DateTimeField(null=True, blank=True)
    revoked_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.email} → {self.team.slug} ({self.role})"

    @property
    def state(self) -> str:
        if self.accepted_at is not None:
            return "accepted"
        if self.revoked_at is not None:
            return "revoked"
        if self.expires_at <= timezone.now():
            return "expired"
        return "pending"

    @staticmethod
    def state_q(state: str) -> models.Q:
        """The rows in `state` (pending, accepted, revoked, expired), as `state` decides it."""
        open_ = models.Q(accepted_at__isnull=True, revoked_at__isnull=True)
        now = timezone.now()
        return {
            "accepted": models.Q(accepted_at__isnull=False),
            "revoked": models.Q(accepted_at__isnull=True, revoked_at__isnull=False),
            "expired": open_ & models.Q(expires_at__lte=now),
            "pending": open_ & models.Q(expires_at__gt=now),
        }[state]

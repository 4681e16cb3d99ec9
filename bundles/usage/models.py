"""The usage counters (re-exported by bundles.models, so Django sees them as the brain's)."""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from memoryadmin.models import ApiToken, Team


class UsageKind(models.TextChoices):
    SERVED = "served", "A served thing (record, memory, chunk)"
    ACTIVITY = "activity", "A reader's operations of one kind on one day"


class UsageCounter(models.Model):
    """One counter, bumped by the single upsert of an agent read (bundles.usage.counting).

    `served` rows are keyed by the ref served (`source:<id>:<record id>`,
    `repository:<id>:<memory id>`, `brain:<chunk id>`); `activity` rows by reader, operation
    and UTC day (`activity:token:<id>:<operation>:<YYYY-MM-DD>`), with those three also kept
    in columns. One table, so one statement counts a whole read."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+")
    kind = models.CharField(max_length=16, choices=UsageKind.choices)
    key = models.CharField(max_length=700)
    count = models.PositiveBigIntegerField(default=0)
    first_at = models.DateTimeField(default=timezone.now)
    last_at = models.DateTimeField(default=timezone.now)
    # Who read last: the token (its name is shown, never its secret) or a signed-in user.
    last_token = models.ForeignKey(
        ApiToken, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    last_label = models.CharField(max_length=200, blank=True)
    operation = models.CharField(max_length=32, blank=True)
    day = models.DateField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["team", "key"], name="usagecounter_team_key_unique")
        ]
        indexes = [
            models.Index(fields=["team", "kind", "-count"], name="usagecounter_most_served"),
            models.Index(fields=["team", "kind", "last_at"], name="usagecounter_last_at"),
        ]

    def __str__(self) -> str:
        return f"{self.key}: {self.count}"

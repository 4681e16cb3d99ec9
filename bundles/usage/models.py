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
        ApiToken,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        db_index=False,  # changes when another reader comes: no index, so updates stay HOT
    )
    last_label = models.CharField(max_length=200, blank=True)
    operation = models.CharField(max_length=32, blank=True)
    day = models.DateField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["team", "key"], name="usagecounter_team_key_unique")
        ]
        # No index on a column a read updates (count, last_*): PostgreSQL then updates the row
        # in place (HOT, with the fillfactor of migration 0008) without touching any index,
        # which keeps the read path's upsert cheap; the Usage page scans one team's rows.
        indexes = [
            # `key LIKE 'source:5:%'` (a source's or repository's most served) on PostgreSQL
            # under any collation; other databases ignore the operator class.
            models.Index(
                fields=["key"], name="usagecounter_key_prefix", opclasses=["varchar_pattern_ops"]
            ),
        ]

    def __str__(self) -> str:
        return f"{self.key}: {self.count}"

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from sources.credentials import MAX_SECRET_CHARS, MAX_USERNAME_CHARS
from sources.models import CredentialKind, Problem, Record, RefreshRun, Rejection, Source


class SourceCountsSerializer(serializers.Serializer):
    """Counts of the current snapshot (all zero before the first successful refresh)."""

    entries = serializers.IntegerField()
    records = serializers.IntegerField()
    active = serializers.IntegerField()
    rejected = serializers.IntegerField()
    problems = serializers.IntegerField()


class SourceCredentialSerializer(serializers.Serializer):
    """Whether a credential is stored, its kind and when it last changed; never the secret."""

    kind = serializers.ChoiceField(choices=CredentialKind.choices)
    set = serializers.BooleanField()
    changed_at = serializers.DateTimeField(allow_null=True)


def credential_status(source: Source) -> dict[str, Any]:
    return {
        "kind": source.credential_kind if source.has_credential else CredentialKind.NONE,
        "set": source.has_credential,
        "changed_at": source.credential_changed_at,
    }


class SourceCredentialInputSerializer(serializers.Serializer):
    """A new credential: `bearer` with `token`, `basic` with `username` (and `password`), or
    `none` to clear the stored one."""

    kind = serializers.ChoiceField(choices=CredentialKind.choices)
    token = serializers.CharField(
        required=False, allow_blank=True, max_length=MAX_SECRET_CHARS, write_only=True
    )
    username = serializers.CharField(
        required=False, allow_blank=True, max_length=MAX_USERNAME_CHARS, write_only=True
    )
    password = serializers.CharField(
        required=False,
        allow_blank=True,
        trim_whitespace=False,
        max_length=MAX_SECRET_CHARS,
        write_only=True,
    )


class SourceAddInputSerializer(serializers.Serializer):
    """A new source: an https:// base URL or an absolute directory path, read once for a
    preview and served only once approved."""

    location = serializers.CharField(max_length=1000)
    name = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")
    refresh_minutes = serializers.IntegerField(min_value=1, max_value=10080, default=60)
    credential = SourceCredentialInputSerializer(required=False)


class SourceTestInputSerializer(serializers.Serializer):
    location = serializers.CharField(max_length=1000)
    credential = SourceCredentialInputSerializer(required=False)


class SourceTestSerializer(serializers.Serializer):
    """What the location's manifest lists (nothing was saved)."""

    entries = serializers.IntegerField()
    rejected = serializers.IntegerField()


class SourceUpdateInputSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=200, required=False, allow_blank=True)
    refresh_minutes = serializers.IntegerField(min_value=1, max_value=10080, required=False)


class SourceSerializer(serializers.ModelSerializer):
    name = serializers.CharField(
        read_only=True, help_text="The name an administrator gave, else the manifest's."
    )
    refresh_minutes = serializers.SerializerMethodField()
    counts = serializers.SerializerMethodField()
    credential = serializers.SerializerMethodField()
    retrieved_at = serializers.DateTimeField(
        source="current_snapshot.retrieved_at", default=None, allow_null=True, read_only=True
    )

    class Meta:
        model = Source
        fields = [
            "id",
            "kind",
            "identity",
            "name",
            "state",
            "health",
            "refresh_minutes",
            "approved_at",
            "last_attempt_at",
            "last_success_at",
            "stale_since",
            "denied_since",
            "last_error_code",
            "last_error",
            "retrieved_at",
            "counts",
            "credential",
        ]

    @extend_schema_field(serializers.IntegerField())
    def get_refresh_minutes(self, source: Source) -> int:
        return int(source.refresh_interval.total_seconds() // 60)

    @extend_schema_field(SourceCredentialSerializer)
    def get_credential(self, source: Source) -> dict[str, Any]:
        return SourceCredentialSerializer(credential_status(source)).data

    @extend_schema_field(SourceCountsSerializer)
    def get_counts(self, source: Source) -> dict[str, int]:
        snapshot = source.current_snapshot
        if snapshot is None:
            return {"entries": 0, "records": 0, "active": 0, "rejected": 0, "problems": 0}
        return {
            "entries": snapshot.manifest_entries,
            "records": snapshot.record_count,
            "active": snapshot.active_count,
            "rejected": snapshot.rejected_count,
            "problems": snapshot.problem_count,
        }


class RejectionSerializer(serializers.ModelSerializer):
    id = serializers.CharField(source="record_id")

    class Meta:
        model = Rejection
        fields = ["id", "path", "code", "message", "line"]


class ProblemSerializer(serializers.ModelSerializer):
    ids = serializers.ListField(child=serializers.CharField())

    class Meta:
        model = Problem
        fields = ["code", "ids", "message"]


class RefreshRunSerializer(serializers.ModelSerializer):
    """One refresh of a source: queued, running, then succeeded, failed, denied or skipped."""

    finished = serializers.BooleanField(source="is_finished", read_only=True)

    class Meta:
        model = RefreshRun
        fields = [
            "id",
            "status",
            "finished",
            "trigger",
            "requested_by",
            "requested_at",
            "started_at",
            "finished_at",
            "duration_ms",
            "changed",
            "record_count",
            "active_count",
            "rejected_count",
            "problem_count",
            "error_code",
            "error",
        ]


class SourceDetailSerializer(SourceSerializer):
    rejections = serializers.SerializerMethodField()
    problems = serializers.SerializerMethodField()
    latest_run = serializers.SerializerMethodField()

    class Meta(SourceSerializer.Meta):
        fields = [*SourceSerializer.Meta.fields, "rejections", "problems", "latest_run"]

    @extend_schema_field(RefreshRunSerializer(allow_null=True))
    def get_latest_run(self, source: Source) -> dict[str, Any] | None:
        run = source.runs.order_by("-requested_at", "-id").first()
        return RefreshRunSerializer(run).data if run is not None else None

    @extend_schema_field(RejectionSerializer(many=True))
    def get_rejections(self, source: Source) -> list[dict[str, Any]]:
        if source.current_snapshot is None:
            return []
        return RejectionSerializer(source.current_snapshot.rejections.all(), many=True).data

    @extend_schema_field(ProblemSerializer(many=True))
    def get_problems(self, source: Source) -> list[dict[str, Any]]:
        if source.current_snapshot is None:
            return []
        return ProblemSerializer(source.current_snapshot.problems.all(), many=True).data


class ContextRecordSerializer(serializers.ModelSerializer):
    source = serializers.CharField(source="source.identity")
    source_name = serializers.CharField(source="source.display_name")
    id = serializers.CharField(source="record_id")
    stale = serializers.SerializerMethodField()
    tags = serializers.ListField(child=serializers.CharField())
    supersedes = serializers.ListField(child=serializers.CharField())
    # The snapshot's time: an unchanged refresh stamps the snapshot, not each of its records.
    retrieved_at = serializers.DateTimeField(source="snapshot.retrieved_at", read_only=True)

    class Meta:
        model = Record
        fields = [
            "source",
            "source_name",
            "id",
            "retrieved_at",
            "stale",
            "kind",
            "scope",
            "title",
            "body",
            "tags",
            "provenance",
            "created",
            "updated",
            "expires",
            "supersedes",
        ]

    @extend_schema_field(serializers.BooleanField())
    def get_stale(self, record: Record) -> bool:
        return record.source.health == "stale"

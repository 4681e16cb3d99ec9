from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from reviews.models import Decision, Memory, Repository


class RepositorySerializer(serializers.ModelSerializer):
    problems = serializers.ListField(
        child=serializers.DictField(), help_text="Format problems found at the last sync."
    )
    ambiguous_refs = serializers.DictField(
        child=serializers.ListField(child=serializers.CharField()),
        help_text="Short refs that match more than one memory id.",
    )

    class Meta:
        model = Repository
        fields = [
            "id",
            "name",
            "remote_url",
            "branch",
            "credential_kind",
            "push_enabled",
            "review_mode",
            "last_sync_at",
            "last_sync_ok",
            "head_commit",
            "last_error",
            "problems",
            "ambiguous_refs",
        ]


class ProposalListSerializer(serializers.ModelSerializer):
    repository = serializers.IntegerField(source="repository.id")
    repository_name = serializers.CharField(source="repository.name")
    id = serializers.CharField(source="memory_id")

    class Meta:
        model = Memory
        fields = [
            "pk",
            "id",
            "ref",
            "type",
            "title",
            "status",
            "repository",
            "repository_name",
            "author_name",
            "added_at",
            "supersedes",
            "has_secret",
            "is_stale",
        ]


class ProposalSerializer(ProposalListSerializer):
    class Meta(ProposalListSerializer.Meta):
        fields = [
            *ProposalListSerializer.Meta.fields,
            "path",
            "front_matter",
            "body",
            "added_commit",
            "author_email",
            "secret_findings",
            "stale",
            "blob_sha",
        ]


class DecisionSerializer(serializers.ModelSerializer):
    refs = serializers.SerializerMethodField()
    repository = serializers.IntegerField(source="repository_id")

    class Meta:
        model = Decision
        fields = [
            "id",
            "kind",
            "repository",
            "refs",
            "comment",
            "actor_label",
            "author_name",
            "author_email",
            "state",
            "state_detail",
            "commit_sha",
            "created_at",
            "finished_at",
        ]

    @extend_schema_field(serializers.ListField(child=serializers.CharField()))
    def get_refs(self, decision: Decision) -> list[str]:
        return [item.ref for item in decision.items.all()]


class DecideSerializer(serializers.Serializer):
    comment = serializers.CharField(required=False, allow_blank=True, default="")
    override_reason = serializers.CharField(
        required=False,
        allow_blank=True,
        default="",
        help_text="Required to approve a proposal with secret findings.",
    )


class BatchResultSerializer(serializers.Serializer):
    decisions = DecisionSerializer(many=True)


class BatchSerializer(DecideSerializer):
    action = serializers.ChoiceField(choices=["approve", "reject"])
    proposals = serializers.ListField(
        child=serializers.CharField(max_length=255), min_length=1, max_length=500
    )

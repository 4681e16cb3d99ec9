from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from formats.memoryrail.secrets import secrets_masked
from reviews.models import Approval, CredentialKind, Decision, Memory, Repository
from reviews.services.content import masked_title, memory_text, problems_masked, stale_masked


class RepositorySerializer(serializers.ModelSerializer):
    problems = serializers.ListField(
        child=serializers.DictField(), help_text="Format problems found at the last sync."
    )
    ambiguous_refs = serializers.DictField(
        child=serializers.ListField(child=serializers.CharField()),
        help_text="Short refs that match more than one memory id.",
    )
    routing_rules = serializers.ListField(
        child=serializers.DictField(),
        read_only=True,
        help_text='Reviewer routing: [{"pattern": "src/db/", "reviewers": ["rita"]}, ...].',
    )
    credential_set = serializers.BooleanField(
        source="has_credential", read_only=True, help_text="Whether a secret is stored (never it)."
    )

    class Meta:
        model = Repository
        fields = [
            "id",
            "name",
            "remote_url",
            "branch",
            "credential_kind",
            "credential_set",
            "push_enabled",
            "enabled",
            "review_mode",
            "last_sync_at",
            "last_sync_ok",
            "sync_state",
            "sync_requested_at",
            "sync_started_at",
            "routing_rules",
            "head_commit",
            "last_error",
            "problems",
            "ambiguous_refs",
        ]

    def to_representation(self, instance: Repository) -> dict[str, object]:
        data = super().to_representation(instance)
        data["problems"] = problems_masked(data.get("problems") or [])
        data["last_error"] = secrets_masked(data.get("last_error") or "")
        return data


class RepositoryInputSerializer(serializers.Serializer):
    """A repository's settings. The secret is write-only: on PATCH, leave it out to keep the
    stored one (kind `none` clears it)."""

    name = serializers.CharField(max_length=100)
    remote_url = serializers.CharField(max_length=500)
    branch = serializers.CharField(max_length=200, default="main")
    credential_kind = serializers.ChoiceField(choices=CredentialKind.choices, default="none")
    credential_username = serializers.CharField(
        max_length=200, required=False, allow_blank=True, default=""
    )
    credential_secret = serializers.CharField(
        required=False, allow_blank=True, write_only=True, trim_whitespace=False, default=""
    )
    ssh_known_hosts = serializers.CharField(
        required=False, allow_blank=True, write_only=True, default=""
    )
    push_enabled = serializers.BooleanField(default=True)


class RepositoryTestSerializer(serializers.Serializer):
    head = serializers.CharField(help_text="The branch's head commit on the remote.")


class ProposalListSerializer(serializers.ModelSerializer):
    repository = serializers.IntegerField(source="repository.id")
    repository_name = serializers.CharField(source="repository.name")
    id = serializers.CharField(source="memory_id")
    assigned_reviewers = serializers.SlugRelatedField(
        many=True,
        read_only=True,
        slug_field="username",
        help_text="User names the repository's routing rules assign this proposal to.",
    )
    first_approved_by = serializers.SerializerMethodField(
        help_text="Who gave the first of two approvals (on the current content), if anyone."
    )

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
            "assigned_reviewers",
            "first_approved_by",
        ]

    def to_representation(self, instance: Memory) -> dict[str, object]:
        """Secrets masked (`[secret masked: RULE]`) unless the view passes `reveal` after an
        audited reveal."""
        data = super().to_representation(instance)
        if not self.context.get("reveal"):
            data["title"] = masked_title(instance.title)
        return data

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_first_approved_by(self, memory: Memory) -> str | None:
        if hasattr(memory, "first_approved_by"):  # annotated by selectors.with_review_state
            return memory.first_approved_by
        from reviews.services.approvals import valid_first_approvals

        found = valid_first_approvals([memory]).get(memory.pk)
        return found.actor_label if found else None


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

    def to_representation(self, instance: Memory) -> dict[str, object]:
        data = super().to_representation(instance)
        if not self.context.get("reveal"):
            text = memory_text(instance)
            data["body"], data["front_matter"] = text.body, text.front_matter
            data["stale"] = stale_masked(data.get("stale"))
        return data


class RevealSerializer(serializers.Serializer):
    reason = serializers.CharField(
        required=False,
        allow_blank=True,
        default="",
        max_length=2000,
        help_text="Why you need to see the masked text (required; audited).",
    )


class DecisionSerializer(serializers.ModelSerializer):
    refs = serializers.SerializerMethodField()
    reproposal_allowed = serializers.SerializerMethodField(
        help_text="Rejected proposals (refs) that imports may propose again: a reviewer lifted"
        " the rejection. Empty for approvals."
    )
    repository = serializers.IntegerField(source="repository_id")

    class Meta:
        model = Decision
        fields = [
            "id",
            "kind",
            "repository",
            "refs",
            "reproposal_allowed",
            "comment",
            "actor_label",
            "author_name",
            "author_email",
            "state",
            "state_detail",
            "commit_sha",
            "attempts",
            "created_at",
            "finished_at",
        ]

    @extend_schema_field(serializers.ListField(child=serializers.CharField()))
    def get_refs(self, decision: Decision) -> list[str]:
        return [item.ref for item in decision.items.all()]

    @extend_schema_field(serializers.ListField(child=serializers.CharField()))
    def get_reproposal_allowed(self, decision: Decision) -> list[str]:
        return [item.ref for item in decision.items.all() if item.reproposal_allowed_at]


class ReproposalAllowSerializer(serializers.Serializer):
    refs = serializers.ListField(
        child=serializers.CharField(max_length=255),
        required=False,
        default=list,
        max_length=500,
        help_text="Short refs or MemoryRail ids of the decision's proposals; empty or absent:"
        " all of them.",
    )
    comment = serializers.CharField(
        required=False, allow_blank=True, default="", max_length=2000, help_text="Why (audited)."
    )


class DecideSerializer(serializers.Serializer):
    comment = serializers.CharField(required=False, allow_blank=True, default="")
    override_reason = serializers.CharField(
        required=False,
        allow_blank=True,
        default="",
        help_text="Required to approve a proposal with secret findings.",
    )


class ApprovalSerializer(serializers.ModelSerializer):
    """A first approval of a proposal that needs two: nothing is committed yet."""

    ref = serializers.CharField(source="memory.ref")
    repository = serializers.IntegerField(source="memory.repository_id")
    state = serializers.SerializerMethodField()
    approvals = serializers.SerializerMethodField()
    approvals_required = serializers.SerializerMethodField()

    class Meta:
        model = Approval
        fields = [
            "id",
            "ref",
            "repository",
            "state",
            "approvals",
            "approvals_required",
            "actor_label",
            "comment",
            "created_at",
        ]

    @extend_schema_field(serializers.ChoiceField(choices=["awaiting-second-approval"]))
    def get_state(self, approval: Approval) -> str:
        return "awaiting-second-approval"

    def get_approvals(self, approval: Approval) -> int:
        return 1

    def get_approvals_required(self, approval: Approval) -> int:
        return 2


class BatchResultSerializer(serializers.Serializer):
    decisions = DecisionSerializer(many=True)
    first_approvals = ApprovalSerializer(
        many=True, help_text="Proposals that need a second approval: recorded, not committed."
    )


class BatchSerializer(DecideSerializer):
    action = serializers.ChoiceField(choices=["approve", "reject"])
    proposals = serializers.ListField(
        child=serializers.CharField(max_length=255), min_length=1, max_length=500
    )

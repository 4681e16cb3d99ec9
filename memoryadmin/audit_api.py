"""REST API: the team's audit log (scope `team:manage`, like the Audit page), with the page's
filters and sort (one FilterSet, memoryadmin.filters.AuditFilterSet)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import generics, serializers

from memoryadmin.api import HasScope, TeamFilterBackend, request_team
from memoryadmin.api_errors import AUTH_ERRORS, error_responses
from memoryadmin.filters import AuditFilterSet
from memoryadmin.models import AuditEvent, Scope


class AuditEventSerializer(serializers.ModelSerializer):
    """What the Audit page and its CSV show: never the event's data or the client address."""

    actor = serializers.CharField(source="actor_label")

    class Meta:
        model = AuditEvent
        fields = [
            "id",
            "created_at",
            "actor",
            "action",
            "target_type",
            "target_id",
            "summary",
            "request_id",
        ]
        read_only_fields = fields


@extend_schema_view(
    get=extend_schema(
        summary="The team's audit log",
        description="Newest first. `action` matches a name or its start (`webhook.` finds "
        "every webhook action); `actor`, `target`, `after`, `before`, `q` and `sort` are the "
        "Audit page's filters. A bad value is 400 `invalid-filter`.",
        responses={200: AuditEventSerializer(many=True), **error_responses(*AUTH_ERRORS, 400)},
    )
)
class AuditList(generics.ListAPIView):
    permission_classes = [HasScope]
    required_scopes = {"GET": Scope.TEAM_MANAGE}
    serializer_class = AuditEventSerializer
    queryset = AuditEvent.objects.none()  # the schema's model; get_queryset is the team's
    filter_backends = [TeamFilterBackend]
    filterset_class = AuditFilterSet  # the Audit page's

    def get_queryset(self):  # type: ignore[no-untyped-def]
        return AuditEvent.objects.filter(team=request_team(self.request)).only(
            "id",
            "created_at",
            "actor_label",
            "action",
            "target_type",
            "target_id",
            "summary",
            "request_id",
        )

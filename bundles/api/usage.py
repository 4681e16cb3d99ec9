"""GET /api/usage/: the Usage page as JSON (most served, not served lately, activity per token)."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from bundles.usage.selectors import MAX_DAYS, clean_days, usage_summary
from memoryadmin.api import HasScope, request_team
from memoryadmin.api_errors import AUTH_ERRORS, ApiError, error_responses
from memoryadmin.models import Scope


class ServedUsageSerializer(serializers.Serializer):
    ref = serializers.CharField()
    title = serializers.CharField()
    origin = serializers.CharField(help_text="source, repository, brain or empty")
    count = serializers.IntegerField()
    last_served_at = serializers.DateTimeField(allow_null=True)
    last_served_by = serializers.CharField(
        allow_null=True, help_text="The token's name (never its secret) or the user."
    )
    last_served_by_kind = serializers.ChoiceField(choices=["token", "user"], allow_null=True)


class UsageView(APIView):
    permission_classes = [HasScope]
    required_scopes = {"GET": Scope.USAGE_READ}

    @extend_schema(
        summary="How agents use the team's memory",
        description="Counts kept on every agent read (search, precheck, get, context; REST and "
        "MCP): the most served refs (since counting began), the served records and memories "
        "no agent read in the last `days` days (candidates to archive; `count` and the first "
        "50 by ref) and each reader's reads per operation over those days.",
        parameters=[
            OpenApiParameter("days", OpenApiTypes.INT, description=f"1 to {MAX_DAYS} (default 30).")
        ],
        responses={
            200: inline_serializer(
                "Usage",
                {
                    "days": serializers.IntegerField(),
                    "most_served": ServedUsageSerializer(many=True),
                    "not_served": inline_serializer(
                        "NotServed",
                        {
                            "count": serializers.IntegerField(),
                            "items": ServedUsageSerializer(many=True),
                        },
                    ),
                    "activity": inline_serializer(
                        "ReaderActivity",
                        {
                            "token_id": serializers.IntegerField(allow_null=True),
                            "name": serializers.CharField(),
                            "kind": serializers.ChoiceField(choices=["token", "user"]),
                            "operations": serializers.DictField(
                                child=serializers.IntegerField(),
                                help_text="search, precheck, get, context → reads",
                            ),
                            "total": serializers.IntegerField(),
                            "last_read_at": serializers.DateTimeField(),
                        },
                        many=True,
                    ),
                },
            ),
            **error_responses(400, *AUTH_ERRORS),
        },
    )
    def get(self, request: Request) -> Response:
        days = clean_days(request.query_params.get("days"))
        if days is None:
            raise ApiError(400, "days-invalid", f"days is a whole number from 1 to {MAX_DAYS}.")
        summary = usage_summary(request_team(request), days=days)
        return Response(
            {
                "days": days,
                "most_served": [u.as_dict() for u in summary["most_served"]],
                "not_served": {
                    "count": summary["not_served"]["count"],
                    "items": [u.as_dict() for u in summary["not_served"]["items"]],
                },
                "activity": summary["activity"],
            }
        )

"""REST API: the team's webhook endpoints (list, add, change, rotate the secret, delete).

Everything here needs the `team:manage` scope (a session: the team's admin role)."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from drf_spectacular.utils import OpenApiExample, extend_schema, extend_schema_view
from rest_framework import generics
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memoryadmin.api import TeamFilterBackend
from memoryadmin.api_errors import AUTH_ERRORS, error_responses
from memoryadmin.api_views import (
    CreateByService,
    DestroyByService,
    ShownOnce,
    TeamWriteView,
    UpdateByService,
)
from memoryadmin.models import Scope
from webhooks import selectors
from webhooks.filters import DeliveryFilterSet
from webhooks.models import WebhookDelivery, WebhookEndpoint
from webhooks.serializers import (
    DeliverySerializer,
    EndpointInputSerializer,
    EndpointSerializer,
    EndpointWithSecretSerializer,
    RotateInputSerializer,
    TestSentSerializer,
)
from webhooks.services import endpoints

MANAGE = Scope.TEAM_MANAGE


class EndpointView(TeamWriteView):
    team_objects = WebhookEndpoint
    serializer_class = EndpointSerializer

    def team_queryset(self):  # type: ignore[no-untyped-def]
        return selectors.endpoints_for(self.team)


@extend_schema_view(
    get=extend_schema(
        summary="List the team's webhook endpoints",
        responses={200: EndpointSerializer(many=True), **error_responses(*AUTH_ERRORS)},
    ),
    post=extend_schema(
        summary="Add a webhook endpoint",
        description="HTTPS only (http:// to a loopback host only with the development "
        "setting). The answer carries the signing `secret` this once; it is stored encrypted "
        "and never shown again.",
        request=EndpointInputSerializer,
        responses={201: EndpointWithSecretSerializer, **error_responses(400, *AUTH_ERRORS)},
        examples=[
            OpenApiExample(
                "Two events",
                value={
                    "url": "https://hooks.example.org/memoryadmin",
                    "events": ["proposal.created", "push.failed"],
                    "description": "chat bot",
                },
                request_only=True,
            )
        ],
    ),
)
class EndpointList(CreateByService, EndpointView, generics.ListAPIView):
    required_scopes = {"GET": MANAGE, "POST": MANAGE}
    create_input = EndpointInputSerializer

    def get_queryset(self):  # type: ignore[no-untyped-def]
        return self.team_queryset().order_by("id")

    @transaction.atomic
    def create(self, data: dict[str, Any]) -> ShownOnce:
        endpoint, secret = endpoints.endpoint_create(
            actor=self.actor,
            team=self.team,
            url=data["url"],
            events=data["events"],
            description=data["description"],
        )
        if data.get("active") is False:
            endpoint = endpoints.endpoint_set_active(
                actor=self.actor, endpoint=endpoint, active=False
            )
        return ShownOnce(endpoint, {"secret": secret})


@extend_schema_view(
    get=extend_schema(
        summary="A webhook endpoint",
        responses={200: EndpointSerializer, **error_responses(*AUTH_ERRORS, 404)},
    ),
    patch=extend_schema(
        summary="Change a webhook endpoint",
        description="Any of `url`, `events`, `description`, `active`; what is left out stays.",
        request=EndpointInputSerializer,
        responses={200: EndpointSerializer, **error_responses(400, *AUTH_ERRORS, 404)},
    ),
    delete=extend_schema(
        summary="Delete a webhook endpoint",
        description="Stops its deliveries (retries included) and removes their history and "
        "its secret; the audit log keeps a `webhook.delete` event with its URL.",
        responses={204: None, **error_responses(*AUTH_ERRORS, 404)},
    ),
)
class EndpointDetail(UpdateByService, DestroyByService, EndpointView, generics.RetrieveAPIView):
    required_scopes = {"GET": MANAGE, "PATCH": MANAGE, "DELETE": MANAGE}
    update_input = EndpointInputSerializer

    def get_queryset(self):  # type: ignore[no-untyped-def]
        return self.team_queryset()

    @transaction.atomic
    def update(self, endpoint: WebhookEndpoint, data: dict[str, Any]) -> WebhookEndpoint:
        if {"url", "events", "description"} & set(data):
            endpoint = endpoints.endpoint_update(
                actor=self.actor,
                endpoint=endpoint,
                url=data.get("url", endpoint.url),
                events=data.get("events", endpoint.events),
                description=data.get("description", endpoint.description),
            )
        if "active" in data:
            endpoint = endpoints.endpoint_set_active(
                actor=self.actor, endpoint=endpoint, active=data["active"]
            )
        return endpoint

    def destroy(self, endpoint: WebhookEndpoint) -> None:
        endpoints.endpoint_delete(actor=self.actor, endpoint=endpoint)


class EndpointRotate(EndpointView, APIView):
    required_scopes = {"POST": MANAGE}

    @extend_schema(
        summary="Rotate a webhook endpoint's signing secret",
        description="Answers the new `secret` this once. For `overlap_hours` (default: the "
        "server's MEMORYADMIN_WEBHOOK_SECRET_OVERLAP_HOURS) deliveries also carry "
        "`X-Memoryadmin-Signature-Previous`, signed with the old secret; `0` stops the old one "
        "at once.",
        request=RotateInputSerializer,
        responses={200: EndpointWithSecretSerializer, **error_responses(400, *AUTH_ERRORS, 404)},
    )
    def post(self, request: Request, pk: int) -> Response:
        endpoint = self.team_object()
        data = self.body(RotateInputSerializer)
        endpoint, secret = endpoints.endpoint_rotate_secret(
            actor=self.actor, endpoint=endpoint, overlap_hours=data.get("overlap_hours")
        )
        return self.answer(ShownOnce(endpoint, {"secret": secret}))


class EndpointTest(EndpointView, APIView):
    required_scopes = {"POST": MANAGE}

    @extend_schema(
        summary="Send a test event to a webhook endpoint",
        description="Posts a signed `ping` event now, through the same address guard and "
        "signing as every delivery, and answers what the receiver said (`code`, `status`, "
        "`message`). The delivery is in the endpoint's deliveries; a test is not retried. "
        "A disabled endpoint answers 409 `endpoint-disabled`.",
        request=None,
        responses={200: TestSentSerializer, **error_responses(*AUTH_ERRORS, 404, 409)},
    )
    def post(self, request: Request, pk: int) -> Response:
        sent = endpoints.endpoint_test(actor=self.actor, endpoint=self.team_object())
        body = {
            "succeeded": sent.succeeded,
            "code": sent.code,
            "status": sent.status,
            "message": sent.message,
            "delivery": DeliverySerializer(sent.delivery).data,
        }
        return Response(body)


class EndpointEndOverlap(EndpointView, APIView):
    required_scopes = {"POST": MANAGE}

    @extend_schema(
        summary="End a rotated secret's overlap now",
        description="Drops the previous secret before its overlap ends: from the next delivery "
        "on only the current secret signs (no `X-Memoryadmin-Signature-Previous`). 409 "
        "`no-overlap` when no previous secret is signing.",
        request=None,
        responses={200: EndpointSerializer, **error_responses(*AUTH_ERRORS, 404, 409)},
    )
    def post(self, request: Request, pk: int) -> Response:
        return self.answer(
            endpoints.endpoint_end_overlap(actor=self.actor, endpoint=self.team_object())
        )


@extend_schema_view(
    get=extend_schema(
        summary="A webhook endpoint's deliveries",
        description="Newest first, never the payload or the signature. The endpoint page's "
        "filters: `q` (event, error), `event` (starts with), `state`, `status` (HTTP), "
        "`after`, `before`, `sort`. A bad value is 400 `invalid-filter`.",
        responses={200: DeliverySerializer(many=True), **error_responses(*AUTH_ERRORS, 400, 404)},
    )
)
class DeliveryList(EndpointView, generics.ListAPIView):
    required_scopes = {"GET": MANAGE}
    serializer_class = DeliverySerializer
    queryset = WebhookDelivery.objects.none()  # the schema's model; get_queryset is the team's
    filter_backends = [TeamFilterBackend]
    filterset_class = DeliveryFilterSet  # the endpoint page's

    def get_queryset(self):  # type: ignore[no-untyped-def]
        return selectors.deliveries_for(self.team_object())

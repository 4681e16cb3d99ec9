"""REST API: the team's webhook endpoints (list, add, change, rotate the secret, delete).

Everything here needs the `team:manage` scope (a session: the team's admin role)."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiExample, extend_schema, extend_schema_view
from rest_framework import generics, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memoryadmin.api import HasScope, request_team
from memoryadmin.api_errors import AUTH_ERRORS, error_responses
from memoryadmin.audit import Actor
from memoryadmin.models import Scope
from webhooks import selectors
from webhooks.models import WebhookEndpoint
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


def _endpoint(request: Request, pk: int) -> WebhookEndpoint:
    return get_object_or_404(WebhookEndpoint, pk=pk, team=request_team(request))


def _with_secret(endpoint: WebhookEndpoint, secret: str) -> dict[str, Any]:
    """EndpointWithSecretSerializer's shape: the endpoint and its secret, this once."""
    return {**EndpointSerializer(endpoint).data, "secret": secret}


def _no_store(response: Response) -> Response:
    response["Cache-Control"] = "no-store"  # the answer carries a secret
    return response


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
class EndpointList(generics.ListAPIView):
    permission_classes = [HasScope]
    required_scopes = {"GET": MANAGE, "POST": MANAGE}
    serializer_class = EndpointSerializer

    def get_queryset(self):  # type: ignore[no-untyped-def]
        return selectors.endpoints_for(request_team(self.request)).order_by("id")

    def post(self, request: Request) -> Response:
        body = EndpointInputSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        actor = Actor.from_request(request)
        with transaction.atomic():
            endpoint, secret = endpoints.endpoint_create(
                actor=actor,
                team=request_team(request),
                url=data["url"],
                events=data["events"],
                description=data["description"],
            )
            if data.get("active") is False:
                endpoint = endpoints.endpoint_set_active(
                    actor=actor, endpoint=endpoint, active=False
                )
        return _no_store(Response(_with_secret(endpoint, secret), status=status.HTTP_201_CREATED))


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
class EndpointDetail(generics.RetrieveAPIView):
    permission_classes = [HasScope]
    required_scopes = {"GET": MANAGE, "PATCH": MANAGE, "DELETE": MANAGE}
    serializer_class = EndpointSerializer

    def get_queryset(self):  # type: ignore[no-untyped-def]
        return selectors.endpoints_for(request_team(self.request))

    def patch(self, request: Request, pk: int) -> Response:
        endpoint = _endpoint(request, pk)
        body = EndpointInputSerializer(data=request.data, partial=True)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        actor = Actor.from_request(request)
        with transaction.atomic():
            if {"url", "events", "description"} & set(data):
                endpoint = endpoints.endpoint_update(
                    actor=actor,
                    endpoint=endpoint,
                    url=data.get("url", endpoint.url),
                    events=data.get("events", endpoint.events),
                    description=data.get("description", endpoint.description),
                )
            if "active" in data:
                endpoint = endpoints.endpoint_set_active(
                    actor=actor, endpoint=endpoint, active=data["active"]
                )
        return Response(EndpointSerializer(endpoint).data)

    def delete(self, request: Request, pk: int) -> Response:
        endpoints.endpoint_delete(
            actor=Actor.from_request(request), endpoint=_endpoint(request, pk)
        )
        return Response(status=status.HTTP_204_NO_CONTENT)


class EndpointRotate(APIView):
    permission_classes = [HasScope]
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
        endpoint = _endpoint(request, pk)
        body = RotateInputSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        endpoint, secret = endpoints.endpoint_rotate_secret(
            actor=Actor.from_request(request),
            endpoint=endpoint,
            overlap_hours=body.validated_data.get("overlap_hours"),
        )
        return _no_store(Response(_with_secret(endpoint, secret)))


class EndpointTest(APIView):
    permission_classes = [HasScope]
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
        sent = endpoints.endpoint_test(
            actor=Actor.from_request(request), endpoint=_endpoint(request, pk)
        )
        body = {
            "succeeded": sent.succeeded,
            "code": sent.code,
            "status": sent.status,
            "message": sent.message,
            "delivery": DeliverySerializer(sent.delivery).data,
        }
        return Response(body)


class EndpointEndOverlap(APIView):
    permission_classes = [HasScope]
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
        endpoint = endpoints.endpoint_end_overlap(
            actor=Actor.from_request(request), endpoint=_endpoint(request, pk)
        )
        return Response(EndpointSerializer(endpoint).data)

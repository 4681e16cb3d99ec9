"""The team's review repositories: read, add, change, test, sync, disable, enable, delete."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiExample, extend_schema, extend_schema_view
from rest_framework import generics, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memoryadmin.api_errors import AUTH_ERRORS, error_responses
from memoryadmin.api_views import CreateByService, DestroyByService, TeamWriteView, UpdateByService
from memoryadmin.models import Scope
from reviews.models import Repository
from reviews.serializers import (
    RepositoryInputSerializer,
    RepositorySerializer,
    RepositoryTestSerializer,
)
from reviews.services import repository_admin as admin
from reviews.services.repositories import repository_create, repository_sync_request

MANAGE = Scope.REVIEWS_MANAGE
ADD_EXAMPLE = OpenApiExample(
    "HTTPS with a token",
    value={
        "name": "team-memory",
        "remote_url": "https://git.example.org/team/memory.git",
        "branch": "main",
        "credential_kind": "https-token",
        "credential_secret": "glpat-…",
        "push_enabled": True,
    },
    request_only=True,
)


class RepositoryView(TeamWriteView):
    team_objects = Repository
    serializer_class = RepositorySerializer


@extend_schema_view(
    get=extend_schema(
        summary="List the team's review repositories",
        responses={200: RepositorySerializer(many=True), **error_responses(*AUTH_ERRORS)},
    ),
    post=extend_schema(
        summary="Add a repository",
        description="The remote passes the address guard (HTTPS or SSH on a public address; "
        "`file://` only when local remotes are allowed); its first sync is queued. The secret "
        "is stored encrypted and never returned.",
        request=RepositoryInputSerializer,
        responses={201: RepositorySerializer, **error_responses(400, *AUTH_ERRORS)},
        examples=[ADD_EXAMPLE],
    ),
)
class RepositoryList(CreateByService, RepositoryView, generics.ListAPIView):
    required_scopes = {"GET": Scope.REVIEWS_READ, "POST": MANAGE}
    create_input = RepositoryInputSerializer

    def get_queryset(self):  # type: ignore[no-untyped-def]
        return self.team_queryset().order_by("id")

    def create(self, data: dict[str, Any]) -> Repository:
        return repository_create(actor=self.actor, team=self.team, **data)


@extend_schema_view(
    get=extend_schema(
        summary="A review repository",
        responses={200: RepositorySerializer, **error_responses(*AUTH_ERRORS, 404)},
    ),
    patch=extend_schema(
        summary="Change a repository",
        description="Any of the settings; what is left out stays. Leave out "
        "`credential_secret` to keep the stored secret; `credential_kind: none` clears it. A "
        "new remote or branch queues a sync from scratch.",
        request=RepositoryInputSerializer,
        responses={200: RepositorySerializer, **error_responses(400, *AUTH_ERRORS, 404)},
    ),
    delete=extend_schema(
        summary="Delete a repository",
        description="Removes its index, open proposals, decision history and working copy, and "
        "withdraws what it served from the brain (chunks nothing else holds). The remote is "
        "not touched; the audit log keeps a `repository.delete` event.",
        responses={204: None, **error_responses(*AUTH_ERRORS, 404)},
    ),
)
class RepositoryDetail(UpdateByService, DestroyByService, RepositoryView, generics.RetrieveAPIView):
    required_scopes = {"GET": Scope.REVIEWS_READ, "PATCH": MANAGE, "DELETE": MANAGE}
    update_input = RepositoryInputSerializer

    def get_queryset(self):  # type: ignore[no-untyped-def]
        return self.team_queryset()

    def update(self, repository: Repository, data: dict[str, Any]) -> Repository:
        # What is not given stays (the stored secret included).
        for name in ("name", "remote_url", "branch", "credential_kind", "credential_username"):
            data.setdefault(name, getattr(repository, name))
        data.setdefault("push_enabled", repository.push_enabled)
        data.setdefault("credential_secret", "")
        data.setdefault("ssh_known_hosts", "")
        return admin.repository_update(actor=self.actor, repository=repository, **data)

    def destroy(self, repository: Repository) -> None:
        admin.repository_delete(actor=self.actor, repository=repository)


class RepositorySync(RepositoryView, APIView):
    required_scopes = {"POST": MANAGE}

    @extend_schema(
        summary="Queue a sync of a repository",
        description="Poll the repository's `sync_state` for progress. A disabled repository "
        "answers 409 `repository-disabled`.",
        request=None,
        responses={202: RepositorySerializer, **error_responses(*AUTH_ERRORS, 404, 409)},
    )
    def post(self, request: Request, pk: int) -> Response:
        repository = self.team_object()
        repository_sync_request(actor=self.actor, repository=repository)
        repository.refresh_from_db()
        return self.answer(repository, status_code=status.HTTP_202_ACCEPTED)


class RepositoryEnabled(RepositoryView, APIView):
    """POST disables or enables (the URL's `enabled` says which)."""

    required_scopes = {"POST": MANAGE}
    enabled = False

    @extend_schema(
        summary="Disable or enable a repository",
        description="A disabled repository is neither synced nor pushed and shows no sync "
        "failure; it keeps its index and what it serves in the brain. Enabling queues a sync.",
        request=None,
        responses={200: RepositorySerializer, **error_responses(*AUTH_ERRORS, 404)},
    )
    def post(self, request: Request, pk: int) -> Response:
        repository = admin.repository_set_enabled(
            actor=self.actor, repository=self.team_object(), enabled=self.enabled
        )
        return self.answer(repository)


class RepositoryTest(RepositoryView, APIView):
    required_scopes = {"POST": MANAGE}

    @extend_schema(
        summary="Test a remote before adding a repository",
        description="Runs `git ls-remote` of the branch through the address guard with the "
        "credential given, and saves nothing. 400 `remote-test-failed` says why it failed.",
        request=RepositoryInputSerializer,
        responses={200: RepositoryTestSerializer, **error_responses(400, *AUTH_ERRORS)},
    )
    def post(self, request: Request) -> Response:
        data = self.body(RepositoryInputSerializer)
        data.pop("name"), data.pop("push_enabled")
        return Response({"head": admin.repository_test(**data)})

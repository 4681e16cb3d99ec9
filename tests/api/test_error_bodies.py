"""Domain refusals of the sources and brain APIs, whole: the one error table keeps their bodies."""

from __future__ import annotations

import orjson

from memoryadmin.audit import Actor
from reviews.models import Repository
from sources.services.lifecycle import source_add
from tests.bundles.helpers import chunk, make_bundle


def error(response) -> tuple[int, dict]:  # type: ignore[no-untyped-def]
    return response.status_code, response.json()["error"]


def test_it_names_the_api_fields_and_every_reason_of_a_refused_credential(
    token_client, team, tmp_path
):
    local = source_add(actor=Actor.system(), team=team, location=str(tmp_path))
    api = token_client(team, ["sources:manage"])
    url = f"/api/sources/{local.pk}/credential/"
    response = api.put(url, {"kind": "basic", "username": "a:b", "password": "p\n"}, format="json")
    assert error(response) == (
        400,
        {
            "code": "credential-invalid",
            "message": "At most 200 characters, no colon or control characters."
            " At most 4096 characters, no control characters.",
            "details": {
                "username": ["At most 200 characters, no colon or control characters."],
                "password": ["At most 4096 characters, no control characters."],
            },
        },
    )
    assert error(api.put(url, {"kind": "bearer", "token": "t"}, format="json")) == (
        400,
        {
            "code": "credential-invalid",
            "message": "A local directory takes no credential.",
            "details": {"kind": ["A local directory takes no credential."]},
        },
    )


def test_it_answers_a_propose_to_it_cannot_use_by_what_is_wrong_and_names_the_parameter(
    token_client, team, other_team
):
    bundle = orjson.dumps(make_bundle(chunks=[chunk(1, "Use feature flags.", "decision")]))
    api = token_client(team, ["bundles:import"])
    elsewhere = Repository.objects.create(team=other_team, name="theirs", remote_url="x")
    frozen = Repository.objects.create(team=team, name="frozen", remote_url="x", push_enabled=False)

    def refused(value: object) -> tuple[int, dict]:
        url = f"/v1/brain/import?propose_to={value}"
        return error(api.post(url, data=bundle, content_type="application/json"))

    param = {"param": "propose_to"}
    assert refused("abc") == (
        400,
        {"code": "bad-request", "message": "propose_to must be a repository id", "details": param},
    )
    assert refused(elsewhere.pk) == (
        404,
        {
            "code": "repository-not-found",
            "message": f"This team has no repository with id {elsewhere.pk}.",
            "details": param,
        },
    )
    assert refused(frozen.pk) == (
        422,
        {
            "code": "repository-push-disabled",
            "message": f"Pushing is disabled for repository {frozen.pk}.",
            "details": param,
        },
    )

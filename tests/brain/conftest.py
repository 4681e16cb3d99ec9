"""Real parts for the brain tests: local sources on disk, a TLS server, git remotes over file://."""

from __future__ import annotations

from typing import Any

import orjson

from tests.reviews.conftest import data_dir, remote, repository  # noqa: F401
from tests.sources.conftest import https_server, test_ca  # noqa: F401


def export(client: Any, scope: str = "full") -> dict[str, Any]:
    response = client.post("/v1/brain/export", {"scope": scope}, format="json")
    assert response.status_code == 200
    return orjson.loads(b"".join(response.streaming_content))


def exported(client: Any) -> dict[str, dict[str, Any]]:
    """content -> exported chunk."""
    return {c["content"]: c for c in export(client)["chunks"]}


def stream_contents(client: Any) -> list[str]:
    response = client.post("/v1/brain/export/stream", {"scope": "full"}, format="json")
    assert response.status_code == 200
    lines = [orjson.loads(line) for line in b"".join(response.streaming_content).splitlines()]
    assert lines[-1]["counts_match"] is True
    return [line["record"]["content"] for line in lines if line["kind"] == "chunks"]

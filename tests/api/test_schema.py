"""The OpenAPI schema: valid, warning-free, complete, and served with its docs page offline."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from django.contrib.staticfiles import finders
from django.urls import reverse

from memoryadmin import redoc

ROOT = Path(__file__).resolve().parents[2]

# API paths that must stay documented (any view drf-spectacular cannot describe fails the
# --fail-on-warn run instead, so new endpoints are covered without being listed here).
API_PATHS = {
    "/api/me/": {"get"},
    "/api/sources/": {"get"},
    "/api/sources/{id}/": {"get"},
    "/api/sources/{id}/runs/latest/": {"get"},
    "/api/context/": {"get"},
    "/api/reviews/repositories/": {"get"},
    "/api/reviews/repositories/{id}/": {"get"},
    "/api/reviews/proposals/": {"get"},
    "/api/reviews/proposals/{key}/": {"get"},
    "/api/reviews/proposals/{key}/approve/": {"post"},
    "/api/reviews/proposals/{key}/reject/": {"post"},
    "/api/reviews/batch/": {"post"},
    "/api/reviews/decisions/": {"get"},
    "/api/reviews/decisions/{id}/": {"get"},
    "/api/reviews/decisions/{id}/retry/": {"post"},
    "/api/reviews/decisions/{id}/allow-reproposal/": {"post"},
    "/v1/brain/export": {"post"},
    "/v1/brain/export/stream": {"post"},
    "/v1/brain/import": {"post"},
    "/v1/brain/import/file": {"post"},
    "/v1/brain/import/jobs/{job_id}": {"get"},
    "/v1/spec": {"get"},
}


def generate_schema(tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "LANG": "C.UTF-8",
        "MEMORYADMIN_DEBUG": "true",
        "MEMORYADMIN_DATA_DIR": str(tmp_path / "data"),
    }
    return subprocess.run(
        [
            sys.executable,
            "manage.py",
            "spectacular",
            "--validate",
            "--fail-on-warn",
            "--format",
            "openapi-json",
            "--file",
            str(tmp_path / "schema.json"),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture(scope="module")
def schema(tmp_path_factory) -> dict:  # type: ignore[no-untyped-def]
    tmp_path = tmp_path_factory.mktemp("schema")
    result = generate_schema(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Warning" not in result.stderr and "Error" not in result.stderr, result.stderr
    return json.loads((tmp_path / "schema.json").read_text(encoding="utf-8"))


def test_it_generates_a_valid_schema_without_warnings(schema):
    assert schema["openapi"].startswith("3.")


def test_it_documents_every_api_endpoint(schema):
    documented = {path: set(ops) & {"get", "post"} for path, ops in schema["paths"].items()}
    missing = {path: ops - documented.get(path, set()) for path, ops in API_PATHS.items()}
    assert {path: ops for path, ops in missing.items() if ops} == {}


def test_it_documents_the_bearer_token_scheme_on_every_protected_operation(schema):
    assert schema["components"]["securitySchemes"]["apiToken"] == {
        "type": "http",
        "scheme": "bearer",
    }
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            schemes = {name for item in operation.get("security", []) for name in item}
            if path == "/v1/spec":
                assert schemes == set(), operation.get("security")
            else:
                assert "apiToken" in schemes, (method, path)


def test_it_documents_the_error_shape_on_every_client_error(schema):
    error = schema["components"]["schemas"]["Error"]
    assert error["required"] == ["error"]
    detail = schema["components"]["schemas"]["ErrorDetail"]
    assert set(detail["properties"]) == {"code", "message", "details"}
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            client_errors = {s: r for s, r in operation["responses"].items() if s.startswith("4")}
            if path != "/v1/spec":
                assert "401" in client_errors, (method, path)
            if path not in ("/v1/spec", "/api/me/"):  # /api/me/ needs no scope
                assert "403" in client_errors, (method, path)
            for status, response in client_errors.items():
                body = response["content"]["application/json"]["schema"]
                assert body == {"$ref": "#/components/schemas/Error"}, (method, path, status)


def test_it_documents_the_bundle_limits_and_media_types(schema):
    imports = schema["paths"]["/v1/brain/import"]["post"]
    assert {"400", "413", "415", "422", "200", "202"} <= set(imports["responses"])
    assert "application/json" in imports["requestBody"]["content"]
    upload = schema["paths"]["/v1/brain/import/file"]["post"]
    assert "multipart/form-data" in upload["requestBody"]["content"]
    stream = schema["paths"]["/v1/brain/export/stream"]["post"]
    assert list(stream["responses"]["200"]["content"]) == ["application/x-ndjson"]


def test_it_serves_the_schema_and_an_offline_redoc_page(client):
    response = client.get(reverse("api-schema"), {"format": "json"})
    assert response.status_code == 200
    assert response.json()["info"]["title"] == "memoryadmin API"
    page = client.get(reverse("api-docs")).content.decode()
    script = f"/static/{redoc.STATIC_PATH}"
    assert f'src="{script}"' in page
    assert "cdn" not in page.lower()
    # the layout's icon, so the browser does not ask for a /favicon.ico that is a 404
    assert '<link rel="icon" href="/static/memoryadmin/favicon.svg"' in page
    served = client.get(script)
    assert served.status_code == 200
    body = b"".join(served.streaming_content if served.streaming else [served.content])
    assert body.startswith(b"/* Redoc from drf-spectacular-sidecar") and b"redocly logo" not in body
    assert b"cdn.redoc.ly" not in body
    assert redoc.SOURCE_MAP.search(body.decode()) is None  # we ship no map for it to name


URL_ATTRIBUTE = re.compile(r"""\b(?:src|href|action|poster|data)\s*=\s*["']?([^"'\s>]+)""", re.I)


def test_it_references_no_external_host_from_the_docs_page(client):
    """Every URL the rendered page or its scripts load is our own: no CDN, no font service."""
    page = client.get(reverse("api-docs")).content.decode()
    urls = URL_ATTRIBUTE.findall(page) + re.findall(r"url\(([^)]*)\)", page)
    urls += re.findall(r'data-schema-url="([^"]*)"', page)  # api-docs.js hands it to Redoc
    assert urls, page
    for url in urls:
        parts = urlsplit(url.strip("'\""))
        assert not parts.scheme and not parts.netloc, url  # relative: this host only
    assert "preconnect" not in page and "@import" not in page
    scripts = [url for url in URL_ATTRIBUTE.findall(page) if url.endswith(".js")]
    assert scripts == [f"/static/{redoc.STATIC_PATH}", "/static/memoryadmin/api-docs.js"]
    bundle = Path(finders.find(redoc.STATIC_PATH)).read_text(encoding="utf-8")
    assert redoc.REMOTE_LOAD.search(bundle) is None


def test_it_vendors_the_installed_redoc_without_its_cdn_logo(tmp_path):
    """`make redoc` output: the sidecar's bundle with only the logo element and source map gone."""
    source = (redoc.SIDECAR_DIR / "bundles" / redoc.BUNDLE).read_text(encoding="utf-8")
    assert redoc.REMOTE_LOAD.search(source)  # the upstream bundle does load from the CDN
    target = redoc.vendor(tmp_path)
    patched = target.read_text(encoding="utf-8")
    assert redoc.REMOTE_LOAD.search(patched) is None
    assert "redocly logo" not in patched and redoc.SOURCE_MAP.search(patched) is None
    assert len(source) - len(patched) < 300  # nothing else was cut
    assert (tmp_path / f"{redoc.BUNDLE}.LICENSE.txt").is_file()
    with pytest.raises(redoc.RedocPatchError):
        redoc.bundle_without_cdn("no logo here", sidecar_version="x")

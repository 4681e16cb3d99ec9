"""PostgreSQL drops the request's connection in the middle of a bundle import.

A second connection calls pg_terminate_backend() on the web request's backend while the import
is writing. The request fails (5xx; the database is gone, so there is nothing better to say)
and the all-or-nothing import leaves no row behind.
"""

from __future__ import annotations

import json
import threading
import time

import psycopg
import pytest
from django.db import connection
from rest_framework.test import APIClient

from bundles.models import Chunk
from memoryadmin.models import Scope
from tests.bundles.helpers import chunk, make_bundle

pytestmark = pytest.mark.postgres


def test_it_fails_cleanly_when_the_database_connection_drops(transactional_db, team, make_token):
    if connection.vendor != "postgresql":
        pytest.skip("pg_terminate_backend needs PostgreSQL")
    body = json.dumps(
        make_bundle(chunks=[chunk(i, f"row {i} " + "y" * 100) for i in range(30_000)])
    )
    client = APIClient(raise_request_exception=False)
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {make_token(team, [Scope.BUNDLES_IMPORT])}")
    connection.ensure_connection()
    backend = connection.connection.info.backend_pid
    params = connection.get_connection_params()
    killed = threading.Event()

    def killer() -> None:
        with psycopg.connect(
            **{
                k: v
                for k, v in params.items()
                if k in ("host", "port", "user", "password", "dbname")
            },
            autocommit=True,
        ) as admin:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                row = admin.execute(
                    "select query from pg_stat_activity where pid = %s", [backend]
                ).fetchone()
                if row and "bundles_chunk" in (row[0] or "") and "INSERT" in row[0].upper():
                    admin.execute("select pg_terminate_backend(%s)", [backend])
                    killed.set()
                    return
                time.sleep(0.005)

    thread = threading.Thread(target=killer, daemon=True)
    thread.start()
    response = client.post("/v1/brain/import", body, content_type="application/json")
    thread.join(timeout=60)
    assert killed.is_set(), "the import finished before the connection could be dropped"
    assert response.status_code >= 500
    connection.close()  # the next query opens a fresh connection
    assert Chunk.objects.filter(team=team).count() == 0

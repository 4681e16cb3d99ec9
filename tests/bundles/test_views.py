"""The Brain page, export download, upload, job progress, dashboard card and demo seed."""

from __future__ import annotations

import io

import orjson
import pytest
from django.urls import reverse

from bundles import demo
from bundles.imports import bundle_import
from bundles.models import Chunk, ImportJob, MemoryEdge
from formats import memoryai as protocol
from memoryadmin.audit import Actor
from tests.bundles.helpers import chunk, make_bundle, sample_bundle


@pytest.fixture
def seeded(team):
    bundle_import(team=team, actor=Actor.system(), bundle=sample_bundle())
    bundle_import(
        team=team,
        actor=Actor.system(),
        bundle=make_bundle(chunks=[chunk(i, f"<script>alert({i})</script>") for i in range(40)]),
    )
    return team


def test_it_shows_the_brain_with_escaped_content(
    client, seeded, viewer_user, django_assert_max_num_queries
):
    client.force_login(viewer_user)
    with django_assert_max_num_queries(25):
        response = client.get(reverse("brain", args=[seeded.slug]))
    html = response.content.decode()
    assert response.status_code == 200
    assert "<script>alert(" not in html and "&lt;script&gt;alert(" in html
    assert "preference" in html and "DNA" in html and "Imported" in html
    assert 'name="file"' not in html  # viewers get no upload form
    assert "Page 1 of 2" in html


def test_it_downloads_an_export_from_the_browser(client, seeded, viewer_user):
    client.force_login(viewer_user)
    response = client.post(reverse("brain-export", args=[seeded.slug]), {"scope": "dna_only"})
    assert response.status_code == 200
    assert "attachment" in response["Content-Disposition"]
    bundle = orjson.loads(b"".join(response.streaming_content))
    assert protocol.verify_checksum(bundle).ok and bundle["manifest"]["scope"] == "dna_only"
    response = client.post(reverse("brain-export", args=[seeded.slug]), {"scope": "since"})
    assert response.status_code == 302


def test_it_lets_only_admins_upload(client, team, viewer_user, admin_user):
    upload = io.BytesIO(orjson.dumps(sample_bundle()))
    upload.name = "brain.json"
    client.force_login(viewer_user)
    assert (
        client.post(reverse("brain-import", args=[team.slug]), {"file": upload}).status_code == 403
    )
    client.force_login(admin_user)
    upload.seek(0)
    response = client.post(
        reverse("brain-import", args=[team.slug]),
        {"file": upload, "keep_embeddings": ["false", "true"]},
        follow=True,
    )
    assert "6 chunks inserted" in response.content.decode()
    assert Chunk.objects.filter(team=team).count() == 6


def test_it_queues_a_large_upload_and_shows_progress(client, team, admin_user, settings):
    settings.BUNDLE_SYNC_IMPORT_MAX_BYTES = 64
    upload = io.BytesIO(orjson.dumps(sample_bundle()))
    upload.name = "big.json"
    client.force_login(admin_user)
    # The test transaction never commits, so the on_commit task stays unsent: the job waits.
    response = client.post(reverse("brain-import", args=[team.slug]), {"file": upload}, follow=True)
    assert "runs in the background" in response.content.decode()
    job = ImportJob.objects.get(team=team)
    response = client.get(reverse("brain-job", args=[team.slug, job.pk]), HTTP_HX_REQUEST="true")
    html = response.content.decode()
    assert 'hx-trigger="every 1s"' in html and "<progress" in html
    assert "<html" not in html
    assert "of 0 records" in html or "0 of" in html


def test_it_summarises_the_brain_on_the_dashboard(client, seeded, viewer_user):
    client.force_login(viewer_user)
    html = client.get(reverse("team-home", args=[seeded.slug])).content.decode()
    assert "Brain" in html and "46</strong> chunks" in html


def test_it_seeds_the_demo_once(team, admin_user):
    assert demo.seed(team=team, user=admin_user)
    edges = list(MemoryEdge.objects.filter(team=team).values_list("co_activation_count", flat=True))
    assert demo.seed(team=team, user=admin_user) is None
    assert (
        list(MemoryEdge.objects.filter(team=team).values_list("co_activation_count", flat=True))
        == edges
    )
    second = bundle_import(team=team, actor=Actor.system(), bundle=demo.sample_bundle())
    assert second["report"]["chunks"]["inserted"] == 0


def test_it_drops_an_oversized_browser_upload_while_it_streams(
    client, team, admin_user, settings, tmp_path
):
    settings.BUNDLE_MAX_BYTES = 4096
    settings.FILE_UPLOAD_TEMP_DIR = str(tmp_path)
    # 3 MB: past the in-memory limit, so Django would spool it to a temporary file.
    upload = io.BytesIO(b"[" + b"0," * 1_500_000 + b"0]")
    upload.name = "huge.json"
    client.force_login(admin_user)
    response = client.post(reverse("brain-import", args=[team.slug]), {"file": upload})
    # The upload handler dropped the file mid-stream; the form (CSRF included) still parsed.
    assert response.wsgi_request.upload_too_large is True
    assert "file" not in response.wsgi_request.FILES
    assert list(tmp_path.iterdir()) == []
    page = client.get(response["Location"])
    assert "This file is too large: a bundle may be at most 4.0\xa0KB." in page.content.decode()
    assert not Chunk.objects.filter(team=team).exists()

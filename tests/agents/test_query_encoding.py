"""Query encoding in web processes: torch's threads set for many concurrent short requests, and
the per-process cache of query vectors (the real model)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bundles.embeddings import model as embedding_model

if not embedding_model.installed():
    pytest.skip("the semantic extra is not installed", allow_module_level=True)

ROOT = Path(__file__).resolve().parents[2]
PROBE = """
import json, os
import memoryadmin.wsgi  # what gunicorn loads in each worker process
from bundles.embeddings import model
from memoryadmin.process import process_role
import torch
before = torch.get_num_threads()
model.get_model()
print(json.dumps({"role": process_role(), "threads": torch.get_num_threads(), "before": before}))
"""


def _probe(code: str, **env: str) -> dict:
    environ = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    environ |= {"MEMORYADMIN_DEBUG": "true", "MEMORYADMIN_SEMANTIC_ENABLED": "true", **env}
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=environ, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.timeout(180)
def test_it_encodes_on_one_torch_thread_in_a_web_process():
    found = _probe(PROBE)
    assert found == {"role": "web", "threads": 1, "before": found["before"]}


@pytest.mark.timeout(180)
def test_it_takes_the_configured_thread_count_and_leaves_other_processes_alone():
    assert _probe(PROBE, MEMORYADMIN_SEMANTIC_WEB_THREADS="2")["threads"] == 2
    worker = _probe(
        "import json, django, os\n"
        "os.environ['DJANGO_SETTINGS_MODULE'] = 'memoryadmin.settings'\n"
        "django.setup()\n"
        "import torch\n"
        "from bundles.embeddings import model\n"
        "before = torch.get_num_threads()\n"
        "model.get_model()\n"
        "print(json.dumps({'threads': torch.get_num_threads(), 'before': before}))"
    )
    assert worker["threads"] == worker["before"]  # a worker keeps torch's default


@pytest.fixture
def cache(settings):  # type: ignore[no-untyped-def]
    settings.SEMANTIC_QUERY_CACHE = 3
    embedding_model.query_cache_clear()
    yield
    embedding_model.query_cache_clear()


def test_it_answers_the_same_query_from_the_cache(cache):
    first = embedding_model.encode_one("which  ORM do we use?")
    again = embedding_model.encode_one(" which ORM do we\tuse? ")
    assert again is first  # whitespace does not make another query
    assert not first.flags.writeable
    fresh = embedding_model.encode(["which ORM do we use?"])[0]
    assert float(abs(fresh - first).max()) < 1e-6  # the cached vector is the model's own


def test_it_keeps_at_most_the_configured_number_of_queries(cache):
    vectors = [embedding_model.encode_one(f"query number {n}") for n in range(5)]
    assert embedding_model.query_cache_size() == 3
    assert embedding_model.encode_one("query number 4") is vectors[4]  # recent: kept
    assert embedding_model.encode_one("query number 0") is not vectors[0]  # oldest: evicted


def test_it_caches_nothing_when_the_cache_is_off(settings):
    settings.SEMANTIC_QUERY_CACHE = 0
    embedding_model.query_cache_clear()
    first = embedding_model.encode_one("no cache here")
    assert embedding_model.encode_one("no cache here") is not first
    assert embedding_model.query_cache_size() == 0

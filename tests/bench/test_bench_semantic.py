"""`python -m bench.semantic` runs end to end: the labelled evaluation at full size (it is
small), the speed rows at tiny sizes. Asserts quality (hybrid beats keyword-only on
paraphrases, loses nothing on exact terms, never returns what must not come back), never a
speed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bundles.embeddings.model import installed

ROOT = Path(__file__).resolve().parents[2]


def _database_url(tmp_path: Path) -> str:
    url = os.environ.get("DATABASE_URL", "")
    if url.startswith(("postgres://", "postgresql://")):
        return f"{url.rsplit('/', 1)[0]}/memoryadmin_bench_semantic_{os.getpid()}"
    return f"sqlite:///{tmp_path / 'bench.sqlite3'}"


@pytest.mark.skipif(not installed(), reason="the semantic extra is not installed")
@pytest.mark.timeout(900)
def test_it_scores_the_evaluation_set_and_prints_the_speed_rows(tmp_path):
    out = tmp_path / "results.json"
    command = [
        sys.executable, "-m", "bench.semantic",
        "--embed", "16", "--reembed", "20", "--search", "300", "--queries", "5",
        "--database-url", _database_url(tmp_path), "--json", str(out),
    ]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    env["MEMORYADMIN_DATA_DIR"] = str(tmp_path / "data")
    result = subprocess.run(
        command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=880, check=False
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "| paraphrase | " in result.stdout and "| its vector part" in result.stdout
    evaluation = json.loads(out.read_text())["evaluation"]
    assert evaluation["queries"] >= 60 and evaluation["records"] >= 200
    keyword, hybrid = evaluation["modes"]["keyword"], evaluation["modes"]["hybrid"]
    assert hybrid["paraphrase"]["recall"] > keyword["paraphrase"]["recall"]
    assert hybrid["paraphrase"]["mrr"] > keyword["paraphrase"]["mrr"]
    assert hybrid["exact"]["recall"] >= keyword["exact"]["recall"]
    assert hybrid["exact"]["mrr"] >= keyword["exact"]["mrr"]
    assert all(hybrid[kind]["violations"] == 0 for kind in hybrid)
    assert evaluation["paraphrase_shared_words"] == {}

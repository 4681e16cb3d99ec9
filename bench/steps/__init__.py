"""One measured step per process: `python -m bench.steps <step> '<json arguments>'`.

A fresh process per step keeps peak-memory readings honest: the timed section starts from the
process's current RSS with its high-water mark reset, and prints one `BENCH_RESULT {json}` line.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

from bench.steps.agents import agents_part_vectors, agents_setup, agents_sql
from bench.steps.brain import (
    brain_csv,
    brain_export,
    brain_export_file,
    brain_import,
    export_baseline,
    import_baseline,
)
from bench.steps.limits import (
    index_c_baseline,
    parse_compare,
    reimport_baseline,
    source_c_baseline,
)
from bench.steps.measure import RESULT_PREFIX, Probe
from bench.steps.reviews import (
    index_baseline,
    review_approve,
    review_baseline,
    review_index,
    review_setup,
)
from bench.steps.sources import source_baseline, source_refresh, source_setup
from bench.steps.web import web_client, web_setup

STEPS: dict[str, Callable[[dict[str, Any], Probe], dict[str, Any]]] = {
    "brain_import": brain_import,
    "brain_export": brain_export,
    "brain_csv": brain_csv,
    "brain_export_file": brain_export_file,
    "export_baseline": export_baseline,
    "import_baseline": import_baseline,
    "reimport_baseline": reimport_baseline,
    "source_c_baseline": source_c_baseline,
    "parse_compare": parse_compare,
    "index_c_baseline": index_c_baseline,
    "source_setup": source_setup,
    "source_refresh": source_refresh,
    "source_baseline": source_baseline,
    "review_setup": review_setup,
    "review_index": review_index,
    "index_baseline": index_baseline,
    "review_approve": review_approve,
    "review_baseline": review_baseline,
    "web_setup": web_setup,
    "web_client": web_client,
    "agents_setup": agents_setup,
    "agents_sql": agents_sql,
    "agents_part_vectors": agents_part_vectors,
}


def main(argv: list[str]) -> int:
    name, raw = argv[0], argv[1] if len(argv) > 1 else "{}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.settings")
    import django

    django.setup()
    # as a worker and a web process do once started (memoryadmin/process.py)
    from memoryadmin.process import freeze_startup_objects

    freeze_startup_objects()
    probe = Probe()
    extra = STEPS[name](json.loads(raw), probe)
    result = {
        "seconds": probe.seconds,
        "rss_growth_mb": probe.rss_growth_mb,
        "cpu_seconds": probe.cpu_seconds,
        **extra,
    }
    print(RESULT_PREFIX + json.dumps(result), flush=True)
    return 0

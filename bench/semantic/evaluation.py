"""The labelled evaluation: build the team memory of eval_set.json, ask every query twice
(keyword only, hybrid) through the real search_memory, score recall@5 and MRR by query kind."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from pathlib import Path
from typing import Any

from django.test import override_settings
from django.utils import timezone

DATA = Path(__file__).with_name("eval_set.json")
KINDS = ("paraphrase", "exact", "filtered", "scoped", "must_not")
TOP = 5
GROUP_ID = 1  # the `repository:1` group the mirrored memories belong to


def load() -> dict[str, Any]:
    return json.loads(DATA.read_text(encoding="utf-8"))


def expand_distractors(data: dict[str, Any]) -> list[dict[str, Any]]:
    """Realistic service facts from the templates: every service x every template."""
    spec = data["distractors"]
    records = []
    for i, svc in enumerate(spec["services"]):
        for j, template in enumerate(spec["templates"]):
            text = template["text"].format(
                svc=svc,
                SVC=svc.upper().replace("-", "_"),
                team=spec["teams"][(i + j) % len(spec["teams"])],
                n=2 + (i * 7 + j) % 9,
                port=9100 + i,
                year=2019 + (i + j) % 6,
            )
            origin = ("brain", "source", "repository")[(i + j) % 3]
            records.append(
                {
                    "id": f"d-{svc}-{j}",
                    "text": text[0].upper() + text[1:],
                    "type": template["type"],
                    "origin": origin,
                    "state": "active",
                }
            )
    return records


def _eval_source(team: Any) -> tuple[Any, Any]:
    """An approved, fresh source with a current snapshot: the read model's scope rules
    (sources.selectors.context_records) read its Record rows."""
    from sources.models import Health, Snapshot, Source, SourceKind, SourceState

    source = Source.objects.create(
        team=team,
        kind=SourceKind.LOCAL,
        identity="/srv/eval-source",
        state=SourceState.APPROVED,
        health=Health.FRESH,
    )
    snapshot = Snapshot.objects.create(source=source, manifest_name="Eval", fingerprint="e" * 64)
    source.current_snapshot = snapshot
    source.save(update_fields=["current_snapshot"])
    return source, snapshot


def build_memory(team: Any, records: list[dict[str, Any]]) -> dict[str, str]:
    """Chunks (and mirror origins; source records also as the source's Record rows, with
    their scope) for the records; returns search ref -> record id."""
    from bundles.agents.search import TYPE_FILTERS
    from bundles.models import Chunk, ChunkOrigin
    from formats import memoryai as protocol
    from sources.models import Record

    past = timezone.now() - timedelta(days=3)
    source, snapshot = _eval_source(team)
    groups = {"source": source.pk, "repository": GROUP_ID}
    refs: dict[str, str] = {}
    for record in records:
        kind = record["origin"]
        chunk = Chunk.objects.create(
            team=team,
            content=record["text"],
            content_hash=protocol.content_hash(record["text"]),
            memory_type=TYPE_FILTERS[record["type"]],
            standalone=kind == "brain",
            origin="import" if kind == "brain" else kind,
        )
        if kind == "brain":
            refs[f"brain:{chunk.pk}"] = record["id"]
            continue
        ref = f"{kind}:{groups[kind]}:{record['id']}"
        ChunkOrigin.objects.create(
            team=team,
            chunk=chunk,
            kind=kind,
            group=f"{kind}:{groups[kind]}",
            ref=ref,
            active=record["state"] != "superseded",
            expires_at=past if record["state"] == "expired" else None,
            metadata={"record_id": record["id"]},
        )
        if kind == "source":
            Record.objects.create(
                snapshot=snapshot,
                source=source,
                record_id=record["id"],
                path=f"records/{record['id']}.md",
                kind=record["type"],
                scope=record.get("scope", "user"),
                title=record["text"][:80],
                body=record["text"],
                created=past,
                updated=past,
                expires=past if record["state"] == "expired" else None,
                content_hash=protocol.content_hash(record["text"]),
                retrieved_at=past,
                active=record["state"] != "superseded",
            )
        refs[ref] = record["id"]
    return refs


def _words(text: str) -> set[str]:
    from bundles.agents.ranking import STOPWORDS

    return {w for w in re.findall(r"\w+", text.lower()) if w not in STOPWORDS and len(w) > 2}


def shared_words(query: dict[str, Any], by_id: dict[str, dict[str, Any]]) -> set[str]:
    """Words a paraphrase shares with its answers (the set is written to share none; a crude
    prefix check stands in for stemming)."""
    shared = set()
    for rid in query["relevant"]:
        for a in _words(query["q"]):
            for b in _words(by_id[rid]["text"]):
                if a[:5] == b[:5]:
                    shared.add(a)
    return shared


def _ask(team: Any, query: dict[str, Any], refs: dict[str, str]) -> list[str]:
    from bundles.agents.search import search_memory

    body = search_memory(
        team=team,
        query=query["q"],
        scopes=query.get("scopes") or None,
        types=query["types"] or None,
        origins=query["origin"] or None,
        limit=10,
    )
    return [refs.get(r["ref"], r["ref"]) for r in body["results"]]


def score(team: Any, queries: list[dict[str, Any]], refs: dict[str, str]) -> dict[str, Any]:
    """Per mode and kind: queries, recall@5, MRR, forbidden answers in the top 5."""
    modes: dict[str, dict[str, dict[str, float]]] = {}
    for mode, enabled in (("keyword", False), ("hybrid", True)):
        rows = {kind: {"n": 0, "recall": 0.0, "mrr": 0.0, "violations": 0} for kind in KINDS}
        with override_settings(SEMANTIC_ENABLED=enabled):
            for query in queries:
                found = _ask(team, query, refs)
                row = rows[query["kind"]]
                row["violations"] += sum(1 for rid in query["forbidden"] if rid in found[:TOP])
                if not query["relevant"]:
                    continue
                row["n"] += 1
                wanted = set(query["relevant"])
                row["recall"] += len(wanted & set(found[:TOP])) / len(wanted)
                first = next((i for i, rid in enumerate(found, 1) if rid in wanted), None)
                row["mrr"] += 1.0 / first if first else 0.0
        for row in rows.values():
            if row["n"]:
                row["recall"] /= row["n"]
                row["mrr"] /= row["n"]
        modes[mode] = rows
    return modes


def run_evaluation(team: Any) -> dict[str, Any]:
    from bundles.embeddings.lifecycle import brain_embed

    data = load()
    records = data["records"] + expand_distractors(data)
    refs = build_memory(team, records)
    with override_settings(SEMANTIC_ENABLED=True):
        brain_embed(team_id=team.pk)
    by_id = {r["id"]: r for r in records}
    leaks = {
        q["q"]: sorted(shared_words(q, by_id)) for q in data["queries"] if q["kind"] == "paraphrase"
    }
    return {
        "records": len(records),
        "queries": len(data["queries"]),
        "modes": score(team, data["queries"], refs),
        "paraphrase_shared_words": {q: w for q, w in leaks.items() if w},
    }

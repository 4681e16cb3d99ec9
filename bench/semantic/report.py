"""The semantic benchmark's printed tables."""

from __future__ import annotations

from typing import Any

from bench.semantic.evaluation import KINDS


def _eval_table(evaluation: dict[str, Any]) -> list[str]:
    keyword, hybrid = evaluation["modes"]["keyword"], evaluation["modes"]["hybrid"]
    lines = [
        f"Evaluation: {evaluation['queries']} labelled queries over {evaluation['records']} "
        "records and memories (bench/semantic/eval_set.json)",
        "",
        "| queries | n | recall@5 keyword | recall@5 hybrid | MRR keyword | MRR hybrid "
        "| must-not-return in top 5 (keyword / hybrid) |",
        "|---|---|---|---|---|---|---|",
    ]
    for kind in KINDS:
        k, h = keyword[kind], hybrid[kind]
        lines.append(
            f"| {kind} | {k['n']} | {k['recall']:.2f} | {h['recall']:.2f} | {k['mrr']:.2f} "
            f"| {h['mrr']:.2f} | {k['violations']} / {h['violations']} |"
        )
    if evaluation["paraphrase_shared_words"]:
        lines.append("")
        lines.append(f"paraphrases sharing a word prefix: {evaluation['paraphrase_shared_words']}")
    return lines


def _speed_table(speed: dict[str, Any]) -> list[str]:
    t, r, s = speed["throughput"], speed["reembed"], speed["search"]
    vector_ratio = s["vector"]["p95_ms"] / s["raw"]["p95_ms"] if s["raw"]["p95_ms"] else 0.0
    return [
        "| measure | result | baseline | ratio |",
        "|---|---|---|---|",
        f"| embedding throughput, {t['chunks']:,} chunks, {t.get('rounds', 1)} rounds "
        f"| {t['embed_per_s']:.0f} chunks/s "
        f"| model.encode {t['encode_per_s']:.0f}/s | {t['ratio']:.2f}x (>= 0.8) |",
        f"| re-embed after a model change, {r['full']['chunks']:,} chunks "
        f"| {r['full']['seconds']:.0f} s, peak RSS +{r['full']['rss_mb']:.0f} MB "
        f"| {r['tenth']['chunks']:,} chunks: +{r['tenth']['rss_mb']:.0f} MB "
        f"| {r['full']['rss_mb'] / max(r['tenth']['rss_mb'], 1.0):.2f}x memory for 10x chunks |",
        f"| hybrid search_memory, {s['chunks']:,} chunks ({s['backend']}), one client "
        f"| p50 {s['hybrid']['p50_ms']:.1f} ms, p95 {s['hybrid']['p95_ms']:.1f} ms "
        f"| query encode p50 {s['encode']['p50_ms']:.1f} ms | — |",
        f"| its vector part (filtered nearest 50) | p95 {s['vector']['p95_ms']:.1f} ms "
        f"| raw {'pgvector SQL' if s['backend'] == 'pgvector' else 'numpy in memory'} p95 "
        f"{s['raw']['p95_ms']:.2f} ms | {vector_ratio:.2f}x (<= 2) |",
        *_exact_rows(s),
    ]


def _exact_rows(s: dict[str, Any]) -> list[str]:
    lines = []
    if "exact" in s:
        ratio = s["exact"]["p95_ms"] / s["numpy"]["p95_ms"] if s["numpy"]["p95_ms"] else 0.0
        lines.append(
            f"| exact-scan backend, nearest 50 of {s['chunks']:,} ({s['exact_queries']} queries) "
            f"| p95 {s['exact']['p95_ms']:.1f} ms | numpy over the same vectors in memory p95 "
            f"{s['numpy']['p95_ms']:.2f} ms | {ratio:.1f}x (no target) |"
        )
    notes = [f"search rows: {s.get('vectors', 'model')} vectors, queries interleaved"]
    if s.get("plan"):
        notes.append(f"the vector part's plan: {s['plan']}")
    return [*lines, "", *notes]


def print_report(results: dict[str, Any], args: Any, elapsed: float) -> None:
    lines = [f"python -m bench.semantic{' --quick' if args.quick else ''}: {elapsed / 60:.1f} min"]
    if "evaluation" in results:
        lines += ["", *_eval_table(results["evaluation"])]
    lines += ["", *_speed_table(results["speed"])]
    print("\n".join(lines))

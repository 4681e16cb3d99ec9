"""The bench's printing: rows, their number formats, the machine line, the table, and the
results block written into docs/performance.md."""

from __future__ import annotations

import os
import platform
import subprocess
from dataclasses import dataclass
from pathlib import Path

DOC_BEGIN = "<!-- bench:results:begin -->"
DOC_END = "<!-- bench:results:end -->"


@dataclass
class Row:
    benchmark: str
    size: str
    measured: str
    baseline: str
    ratio: str
    target: str
    holds: bool | None
    memory: str = ""
    earlier: str = ""  # the ratio against the baseline of earlier rounds, where it explains
    seconds: float | None = None  # for the growth factor between sizes of one benchmark
    scale: int | None = None  # the size, as one number (chunks, records, memories)
    cpu: str = ""  # the same comparison in CPU (process, waited children, its backends)


def _seconds(value: float) -> str:
    if value < 0.001:
        return f"{value * 1_000_000:.0f} us"
    return f"{value:.2f} s" if value >= 0.1 else f"{value * 1000:.1f} ms"


def _ratio(value: float, baseline: float) -> float:
    return value / baseline if baseline > 0 else float("inf")


def cpu_ratio(measured: dict, baseline: dict, *, faster: bool = False) -> str:  # type: ignore[type-arg]
    """ "2.1x (1.23 s / 0.58 s)": the measured step's CPU against the baseline's, or "" where
    either was not measured. `faster`: how many times less CPU `measured` took."""
    mine, theirs = measured.get("cpu_seconds"), baseline.get("cpu_seconds")
    if not mine or not theirs:
        return ""
    if faster:
        return f"{theirs / mine:.1f}x faster ({_seconds(mine)} / {_seconds(theirs)})"
    return f"{mine / theirs:.1f}x ({_seconds(mine)} / {_seconds(theirs)})"


def _mb(value: float) -> str:
    return f"+{value:.0f} MB"


# -- output ---------------------------------------------------------------------------------


def machine() -> str:
    model = platform.processor() or "unknown CPU"
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
        for line in out.splitlines():
            if line.startswith("Model name:"):
                model = line.split(":", 1)[1].strip()
    except OSError:
        pass
    memory = ""
    try:
        with open("/proc/meminfo", encoding="ascii") as info:
            kb = int(info.readline().split()[1])
            memory = f", {kb / 1024 / 1024:.0f} GiB"
    except (OSError, ValueError, IndexError):
        pass
    return f"{os.cpu_count()} cores ({model}){memory}, Python {platform.python_version()}"


def growth(rows: list[Row]) -> dict[int, str]:
    """Row index -> "time xT for size xS" against the smallest size of the same benchmark."""
    first: dict[str, Row] = {}
    grown: dict[int, str] = {}
    for index, row in enumerate(rows):
        if row.seconds is None or row.scale is None:
            continue
        base = first.setdefault(row.benchmark, row)
        if base is not row and base.scale and base.seconds:
            grown[index] = f"x{row.seconds / base.seconds:.1f} for x{row.scale / base.scale:g} size"
    return grown


def table(rows: list[Row]) -> str:
    lines = [
        "| benchmark | size | measured | baseline (same run) | ratio | target | holds | "
        "earlier baseline | growth | peak RSS | in CPU |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    grown = growth(rows)
    for index, r in enumerate(rows):
        holds = "—" if r.holds is None else ("yes" if r.holds else "**no**")
        lines.append(
            f"| {r.benchmark} | {r.size} | {r.measured} | {r.baseline} | {r.ratio} | "
            f"{r.target} | {holds} | {r.earlier} | {grown.get(index, '')} | {r.memory} | "
            f"{r.cpu} |"
        )
    return "\n".join(lines)


def write_docs(path: Path, text: str) -> None:
    current = path.read_text(encoding="utf-8") if path.exists() else ""
    block = f"{DOC_BEGIN}\n{text}\n{DOC_END}"
    if DOC_BEGIN in current and DOC_END in current:
        before, rest = current.split(DOC_BEGIN, 1)
        after = rest.split(DOC_END, 1)[1]
        path.write_text(before + block + after, encoding="utf-8")
    else:
        path.write_text(current + ("\n" if current else "") + block + "\n", encoding="utf-8")

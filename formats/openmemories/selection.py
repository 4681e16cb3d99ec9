"""OpenMemories 0.1: which records of one source are active (expiry and replacement).
No Django import."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime

from formats.openmemories.model import Problem, Record, Selection

# ----------------------------------------------------------------------------- selection


def select(records: Iterable[Record], *, now: datetime) -> Selection:
    """Apply expiry and replacement inside one source.

    A record replaced by another one of this source is inactive ("superseded"), even when the
    replacement has itself expired. Targets that are not among the valid records, and every
    replacement inside a cycle, are reported as problems and do not apply. Records of different
    sources never meet here, so no winner is ever chosen across sources by timestamp.
    """
    return select_by_id({record.id: record for record in records}, now=now)


def select_by_id(by_id: Mapping[str, Record], *, now: datetime) -> Selection:
    """`select` over the records by id. A value need only have the record's `supersedes` and
    `is_expired`: a reader may map every plain record (no supersedes, no expiry) to one
    shared value."""
    problems: list[Problem] = []
    # Only records that supersede something have edges (most have none: no list each).
    edges: dict[str, list[str]] = {}
    for record_id, record in by_id.items():
        if not record.supersedes:
            continue
        targets = edges[record_id] = []
        for target in record.supersedes:
            if target not in by_id:
                problems.append(
                    Problem(
                        "supersedes-missing",
                        (record_id, target),
                        f"{record_id!r} supersedes {target!r}, which is not a valid record "
                        "of this source; the replacement does not apply",
                    )
                )
            else:
                targets.append(target)
    in_cycle: dict[str, int] = {}
    for number, component in enumerate(_cycles(edges)):
        for record_id in component:
            in_cycle[record_id] = number
        problems.append(
            Problem(
                "supersedes-cycle",
                tuple(sorted(component)),
                "these records supersede each other in a cycle; none of these replacements "
                "apply: " + ", ".join(sorted(component)),
            )
        )
    superseded: set[str] = set()
    for source_id, targets in edges.items():
        for target in targets:
            same_cycle = source_id in in_cycle and in_cycle.get(target) == in_cycle[source_id]
            if not same_cycle:
                superseded.add(target)
    inactive: dict[str, str] = {}
    for record_id, record in by_id.items():
        if record.is_expired(now):
            inactive[record_id] = "expired"
        elif record_id in superseded:
            inactive[record_id] = "superseded"
    active = frozenset(record_id for record_id in by_id if record_id not in inactive)
    return Selection(active, inactive, tuple(problems))


def _cycles(edges: Mapping[str, list[str]]) -> list[list[str]]:
    """Strongly connected components that contain a cycle (Tarjan, iterative). A node with no
    entry in `edges` has no edge out, so it is in no cycle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    result: list[list[str]] = []
    counter = 0
    for root in edges:
        if root in index:
            continue
        work: list[tuple[str, int]] = [(root, 0)]
        while work:
            node, child = work.pop()
            if child == 0:
                index[node] = low[node] = counter
                counter += 1
                stack.append(node)
                on_stack.add(node)
            targets = edges.get(node, ())
            if child < len(targets):
                work.append((node, child + 1))
                target = targets[child]
                if target not in index:
                    work.append((target, 0))
                elif target in on_stack:
                    low[node] = min(low[node], index[target])
                continue
            if low[node] == index[node]:
                component: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1 or node in edges.get(node, ()):
                    result.append(component)
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return result

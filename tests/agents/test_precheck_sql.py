"""precheck's link match in SQL (PostgreSQL: `?|` over the paths and their directories, plus
the irregular links) gives exactly what the rule in Python gives; the read path's query count
stays flat."""

from __future__ import annotations

import importlib
import itertools

import pytest

from bundles.agents import precheck as module
from bundles.agents.precheck import link_applies, path_ancestors, precheck, valid_links
from reviews.models import Memory
from tests.agents.conftest import add_memories

LINKS = {
    "20260401-dir": ["src/payments"],
    "20260402-file": ["src/settings.py"],
    "20260403-trailing": ["src/queue/"],
    "20260404-dot-prefix": ["./src/payments/webhooks"],
    "20260405-double-slash": ["src//settings.py"],
    "20260406-dot-dot": ["docs/../src/queue/worker.py"],
    "20260407-root": ["."],
    "20260408-string": "src/payments/api.py",
    "20260409-prefix-not-dir": ["src/pay"],
    "20260410-sibling": ["src/settings_local.py"],
    "20260411-two": ["README.md", "src/queue"],
    "20260412-outside": ["../elsewhere/src"],
    "20260413-deep": ["src/payments/webhooks/stripe.py"],
}
PATH_SETS = [
    ["src/payments/webhooks/stripe.py"],
    ["src/settings.py"],
    ["src/queue/worker.py", "README.md"],
    ["src/settings_local.py"],
    ["src/paymentsx/a.py"],
    ["docs/index.md"],
    ["src/payments/api.py", "src/queue/a/b/c.py"],
]


@pytest.fixture
def linked(team, repository, remote):  # type: ignore[no-untyped-def]
    kinds = itertools.cycle(["constraint", "attempt", "gotcha", "decision"])
    add_memories(
        remote,
        repository,
        {
            memory_id: dict(type=next(kinds), title=f"Memory {memory_id}", links=links)
            for memory_id, links in LINKS.items()
        },
    )
    return repository


def _expected(team, paths: list[str]) -> set[str]:  # type: ignore[no-untyped-def]
    """The rule, applied in Python to every candidate: a link is a path or a directory of it."""
    found = set()
    for memory in module.candidate_memories(team, None):
        links = valid_links((memory.front_matter or {}).get("links"))
        if any(link_applies(link, path) for link in links for path in paths):
            found.add(memory.memory_id)
    return found


@pytest.mark.parametrize("paths", PATH_SETS)
def test_it_matches_links_exactly_as_the_rule_says(team, linked, paths):
    answer = precheck(team=team, paths=paths)
    by_link = {m["id"] for m in answer["memories"] if any(w["reason"] == "link" for w in m["why"])}
    assert by_link == _expected(team, paths)
    assert by_link  # every path set above has at least the root link "."


def test_it_reads_only_the_linked_memories_on_postgresql(team, linked):
    rows = list(module.linked_memories(team, None, ["src/settings_local.py"]))
    read = Memory.objects.filter(pk__in=[row[0] for row in rows])
    ids = set(read.values_list("memory_id", flat=True))
    if module.connection.vendor == "postgresql":
        # the sibling's own link, the irregular ones (checked in Python), the pinned key: no more
        assert "20260410-sibling" in ids
        assert "20260401-dir" not in ids and "20260402-file" not in ids
        assert {"20260403-trailing", "20260404-dot-prefix", "20260407-root"} <= ids
    else:
        assert "20260401-dir" in ids  # SQLite reads every memory with links


def test_it_lists_every_directory_above_each_path_once():
    assert path_ancestors(["src/a/b.py", "src/a/c.py", "README.md"]) == [
        "src",
        "src/a",
        "src/a/b.py",
        "src/a/c.py",
        "README.md",
    ]


def test_the_partial_index_predicate_is_the_query_clause_word_for_word():
    migration = importlib.import_module("bundles.migrations.0011_agents_memory_links_index")
    assert module.IRREGULAR_LINKS.replace("reviews_memory.", "") == migration.PREDICATE


def test_one_precheck_costs_a_fixed_number_of_queries(
    world, team, token_client, django_assert_num_queries
):
    client = token_client(team, ["context:read"])
    body = {"plan": "retry the upload queue", "paths": ["src/payments/api.py", "src/settings.py"]}
    client.post("/api/precheck/", body, format="json")  # warm: the token's last use, caches
    with django_assert_num_queries(QUERIES_PRECHECK):
        response = client.post("/api/precheck/", body, format="json")
    assert response.status_code == 200 and response.json()["count"] >= 2


def test_one_search_costs_a_fixed_number_of_queries(
    world, team, token_client, django_assert_num_queries
):
    client = token_client(team, ["context:read"])
    client.get("/api/search/", {"q": "uploader"})
    with django_assert_num_queries(QUERIES_SEARCH):
        response = client.get("/api/search/", {"q": "upload queue"})
    assert response.status_code == 200 and response.json()["count"] >= 1


# PostgreSQL: the token; the answer's one statement (bundles.agents.precheck_sql: the text
# match with its origins' refs, the rows with links matched in SQL, the shared-ref count and the
# provenance); the read log's one statement (audit insert and usage upsert). SQLite: the token;
# the narrow link read, the text match, its origins, the answer's rows, the provenance; the
# read log's usage upsert and audit insert, in their savepoint and its release.
POSTGRESQL = module.connection.vendor == "postgresql"
QUERIES_PRECHECK = 3 if POSTGRESQL else 10
# The token; the keyword ranking, the result rows with (PostgreSQL: in the same statement)
# their origins; the read log as above.
QUERIES_SEARCH = 4 if POSTGRESQL else 8


def test_the_raw_statement_keeps_the_partial_index_predicate_word_for_word():
    from bundles.agents import precheck_sql

    assert precheck_sql._IRREGULAR.replace("m.front_matter", "reviews_memory.front_matter") == (
        module.IRREGULAR_LINKS
    )


PLANS = [
    "",
    "retry the upload queue",
    "Add a retry with sleep to the flaky upload, and move the upload queue",
    "payment webhooks twice",
    "nothing here matches zzzqqq",
    "the and of",  # no significant word
]


@pytest.mark.skipif(not POSTGRESQL, reason="the raw statement is PostgreSQL's")
@pytest.mark.parametrize("paths", [[], *PATH_SETS])
def test_the_raw_statement_answers_as_the_orm_statements_do(world, team, linked, paths):
    """precheck_sql's one statement (rows, text hits and provenance folded in) against the
    ORM's statements and reviews.selectors.memory_provenance, on the same data."""
    from django.utils import timezone

    now = timezone.now()
    matched = 0
    for plan in PLANS:
        if not plan and not paths:
            continue
        for repo in (None, world.repository):
            raw = module.precheck_candidates(team, repo, plan, paths, now, raw=True)
            orm = module.precheck_candidates(team, repo, plan, paths, now, raw=False)
            assert raw[1] == orm[1], (plan, paths)  # the text hits, in order, with scores
            answer = module.precheck_answer(*raw, plan, paths)
            assert answer == module.precheck_answer(*orm, plan, paths), (plan, paths)
            matched += len(raw[1])
            assert answer["memories"]  # the pinned constraint at least
    assert matched or not any(PLANS)

"""Routing rules as text: parsing and matching (no database)."""

from __future__ import annotations

from formats.memoryrail import reviewer_rules as routing


def test_it_parses_rules_and_skips_comments_and_blank_lines():
    rules, errors = routing.parse_rules(
        "# who reviews what\n\ndecision: rita alice\nsrc/db/: bob\n"
    )
    assert errors == []
    assert [(r.pattern, r.reviewers, r.line) for r in rules] == [
        ("decision", ("rita", "alice"), 3),
        ("src/db/", ("bob",), 4),
    ]
    assert rules[0].is_type and not rules[1].is_type
    assert routing.render_rules(rules) == "decision: rita alice\nsrc/db/: bob\n"


def test_it_names_the_line_of_every_malformed_rule():
    _, errors = routing.parse_rules("no colon here\n: rita\nsrc/: \n../x: rita\nok: a b!c\n")
    assert [str(e) for e in errors] == [
        "Line 1: write `pattern-or-type: user1 user2`.",
        "Line 2: write `pattern-or-type: user1 user2`.",
        "Line 3: name at least one reviewer for `src/`.",
        "Line 4: a pattern cannot leave the repository (`..`).",
        "Line 5: not a user name: b!c.",
    ]


def test_it_matches_folders_globs_file_names_and_types():
    assert routing.glob_matches("src/db/", "src/db/schema.sql")
    assert routing.glob_matches("src/db/", "src/db")
    assert not routing.glob_matches("src/db/", "src/dbx/a")
    assert routing.glob_matches("src/db", "src/db/schema.sql")
    assert routing.glob_matches("src/*", "src/db/schema.sql")
    assert routing.glob_matches("*.sql", "src/db/schema.sql")
    assert routing.glob_matches("schema.sql", "deep/er/schema.sql")
    assert routing.glob_matches("/src/db/", "./src/db/x")
    assert not routing.glob_matches("docs/", "src/docs/x")
    rules, _ = routing.parse_rules("constraint: carol\nsrc/db/: bob\n*.md: dan\n")
    paths = routing.memory_paths(".memoryrail/memories/x.md", {"links": ["src/db/t.sql", 3]})
    assert routing.match_reviewers(rules, memory_type="constraint", paths=paths) == [
        "carol",
        "bob",
        "dan",
    ]
    assert routing.match_reviewers(rules, memory_type="decision", paths=["README"]) == []

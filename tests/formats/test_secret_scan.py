"""scan_text tries each rule over the whole text first and only the rules found there line by
line: its findings must be exactly those of trying every rule on every line."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from formats.memoryrail import secrets
from formats.memoryrail.secrets import RULES, SecretFinding, scan_text


def scan_every_line(text: str, *, path: str) -> list[SecretFinding]:
    """The scan as it was: every rule on every line (the reference)."""
    findings: list[SecretFinding] = []
    for number, line in enumerate(text.splitlines(), start=1):
        seen: set[str] = set()
        for rule, pattern in RULES:
            for match in pattern.finditer(line):
                if rule == "credential-assignment" and not secrets._assignment_is_literal(match):
                    continue
                if rule == "url-credentials" and secrets._URL_PLACEHOLDER.search(match.group()):
                    continue
                if rule not in seen:
                    seen.add(rule)
                    findings.append(SecretFinding(rule, path, number))
                break
    return findings


# Every line break str.splitlines() knows, and pieces of every rule, so that matches start and
# end right at a break, span one (which only the whole-text pass can see), or are cut by one.
BREAKS = ["\n", "\r\n", "\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]
PIECES = st.sampled_from(
    [
        *BREAKS,
        "ghp_" + "Zq9Xw8Vu7T" * 3 + "s6Rq5P",
        "AKIAQ7RT3XW2ZP5LMN4K",
        "AKIA",
        "Q7RT3XW2ZP5LMN4K",
        "-----BEGIN PRIVATE KEY-----",
        "-----BEGIN RSA",
        " PRIVATE KEY-----",
        "password",
        "=",
        ": ",
        "token",
        "api_key = '",
        "hunter2Hunter2x",
        "${SECRET}",
        "https://",
        "bob:",
        "user:pass",
        "@",
        "xoxb-1234567890-abcdef",
        "glpat-" + "a" * 20,
        "https://hooks.slack.com/services/T0000/B0000/abcd",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N",
        "sk_live_" + "a1" * 12,
        "sk-" + "b2" * 12,
        "x",
        "7",
        "_",
        "-",
        " ",
        '"',
    ]
)


@settings(max_examples=600, deadline=None)
@given(st.lists(PIECES, max_size=40).map("".join))
def test_the_whole_text_pass_finds_what_every_line_finds(text):
    assert scan_text(text, path="m.md") == scan_every_line(text, path="m.md")


def test_a_secret_right_at_line_breaks_is_found_on_its_line():
    aws = "AKIAQ7RT3XW2ZP5LMN4K"
    text = f"{aws}\u2028x{aws}\r\n{aws}\x85password = hunter2Hunter2x\n"
    found = scan_text(text, path="m.md")
    assert [(f.rule, f.line) for f in found] == [
        ("aws-access-key-id", 1),
        ("aws-access-key-id", 3),
        ("credential-assignment", 4),
    ]
    assert found == scan_every_line(text, path="m.md")


def test_a_match_only_across_a_line_break_is_no_finding():
    # `\s*` spans the break in the whole text; on its own line the value is not assigned
    text = "password\n= hunter2Hunter2x\n"
    assert scan_text(text, path="m.md") == scan_every_line(text, path="m.md") == []


def test_every_rule_but_the_case_insensitive_one_has_its_needles():
    named = set(secrets._NEEDLES) | set(secrets._FOLDED_NEEDLES)
    assert named == {rule for rule, _ in RULES}


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            # the long s, the Kelvin sign, a dotted capital I and a dotless i
            [
                "PASSWORD",
                "Pass",
                "pas\u017fword",
                "Token",
                "to\u212aen",
                "api_KEY",
                "SECRET",
                "\u017fecret",
                "\u0130",
                "\u0131",
                "=",
                ": ",
                "hunter2Hunter2x",
                "\n",
                " ",
                "x",
            ]
        ),
        max_size=20,
    ).map("".join)
)
def test_case_insensitive_assignments_are_found_in_any_case_and_script(text):
    assert scan_text(text, path="m.md") == scan_every_line(text, path="m.md")


def test_a_long_s_assignment_outside_ascii_is_still_found():
    text = "pas\u017fword = hunter2Hunter2x\n"  # a long s: (?i) matches it as an s
    assert [f.rule for f in scan_text(text, path="m.md")] == ["credential-assignment"]

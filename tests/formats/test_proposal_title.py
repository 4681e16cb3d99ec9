"""The short title a proposal drafted from an imported chunk gets (formats.crosswalk)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from formats.crosswalk import PROPOSAL_TITLE, memory_content, proposal_title
from formats.memoryai import content_hash


def test_it_takes_the_first_sentence_of_the_first_line():
    assert proposal_title("Use feature flags. They let us ship dark.\nMore") == "Use feature flags"
    assert proposal_title("\n\n  Deploy on Tuesdays\n\nBecause.") == "Deploy on Tuesdays"
    assert proposal_title("Why? Because.") == "Why?"


def test_it_cuts_a_long_first_sentence_at_a_word():
    title = proposal_title("word " * 40)
    assert len(title) <= PROPOSAL_TITLE and title.endswith("word…")


@given(st.text())
def test_it_never_returns_an_empty_or_long_title(text):
    title = proposal_title(text)
    assert 0 < len(title) <= PROPOSAL_TITLE
    assert "\n" not in title


def test_it_reads_the_whole_chunk_from_the_body_only_when_the_file_records_its_hash():
    text = "Use flags. Always.\n\nDetails."
    recorded = {"x-memoryadmin": {"content_hash": content_hash(text)}}
    assert memory_content(title="Use flags", body=text + "\n", front_matter=recorded) == text
    assert memory_content(title="T", body="B", front_matter=recorded) == "T\n\nB"
    assert memory_content(title="T", body=text, front_matter={}) == f"T\n\n{text}"

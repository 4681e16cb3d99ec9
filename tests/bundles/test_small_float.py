"""encode_record finds orjson's small floats ("0.0000…", "1.5e-7") from a record's few '.'
and '-' instead of substring searches: the same answer as those searches, and the canonical
form Python's json writes."""

from __future__ import annotations

import json
import random
import re

import pytest

from formats.memoryai import checksum
from formats.memoryai.checksum import _small_float

_SMALL = re.compile(rb"[0-9]e-[0-9]")


def _searched(data: bytes) -> bool:
    """The substring searches encode_record made before."""
    return b"0.0000" in data or (b"e-" in data and _SMALL.search(data) is not None)


def test_it_answers_as_the_substring_searches():
    rng = random.Random(18)
    samples = [b"", b".", b"-", b"e-1", b"1e-", b"1e-1", b"0.0000", b".0000", b"x0.000"]
    samples += [
        bytes(rng.choice(b'0e-.5x"{}') for _ in range(rng.randint(0, 40))) for _ in range(20000)
    ]
    # more '.' and '-' than are looked at one by one: the whole-text searches answer
    samples += [
        bytes(rng.choice(b"0e-.") for _ in range(rng.randint(100, 600))) for _ in range(500)
    ]
    samples += [b"." * 200 + b"1e-5", b"-" * 200 + b"1e-5", b"." * 200, b"-" * 200 + b"0.0000"]
    for data in samples:
        assert _small_float(data) == _searched(data), data


@pytest.mark.parametrize(
    "value", [1e-5, 1.5e-7, 0.00012, 1e-4, 0.5, 123.0, 5e-324, -2.5e-9, "1e-5 as text"]
)
def test_the_canonical_form_is_pythons(value):
    record = {"created_at": "2026-01-01T00:00:00Z", "n": [value, {"x": value}], "s": "a.b-c"}
    sent, canonical = checksum.encode_record(record)
    assert json.loads(sent) == record
    assert canonical == checksum.canonical_json(record).encode("utf-8")

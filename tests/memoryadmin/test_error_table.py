"""The one table from domain errors to API statuses (memoryadmin.api_errors._domain_error)."""

from __future__ import annotations

from django.core.exceptions import ValidationError

from formats.memoryai import BundleError
from memoryadmin.api_errors import exception_handler
from memoryadmin.errors import Conflict


class ProposalGone(Conflict):
    code = "proposal-gone"


def _answer(exc: Exception) -> tuple[int, dict]:
    response = exception_handler(exc, {})
    assert response is not None
    return response.status_code, response.data["error"]


def test_it_answers_a_conflict_with_409_and_its_class_code():
    assert _answer(ProposalGone("The proposal was decided.")) == (
        409,
        {
            "code": "proposal-gone",
            "message": "The proposal was decided.",
            "details": ["The proposal was decided."],
        },
    )


def test_it_answers_a_validation_error_with_400_and_its_code():
    status, error = _answer(ValidationError("Bad title.", code="title-invalid"))
    assert (status, error["code"], error["message"]) == (400, "title-invalid", "Bad title.")


def test_it_gives_a_validation_error_without_code_the_invalid_code():
    status, error = _answer(ValidationError({"title": ["Too long."]}))
    assert (status, error["code"], error["details"]) == (400, "invalid", {"title": ["Too long."]})


def test_it_answers_a_bundle_error_with_422_and_where():
    status, error = _answer(BundleError("checksum-mismatch", "The checksum differs.", "manifest"))
    assert (status, error) == (
        422,
        {
            "code": "checksum-mismatch",
            "message": "The checksum differs.",
            "details": {"path": "manifest"},
        },
    )

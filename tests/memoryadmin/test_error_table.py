"""The one table from domain errors to API statuses (memoryadmin.api_errors.DOMAIN_STATUSES)."""

from __future__ import annotations

from django.core.exceptions import ValidationError

from formats.memoryai import BundleError
from memoryadmin.api_errors import exception_handler
from memoryadmin.errors import Conflict, DomainError, Forbidden, NotFound, Unprocessable


class ProposalGone(Conflict):
    code = "proposal-gone"


class TitleMissing(DomainError):
    code = "title-missing"
    details = {"param": "title"}


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
            "details": None,
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


def test_it_answers_each_kind_of_domain_error_with_its_status_and_the_class_code():
    kinds = {Forbidden: 403, NotFound: 404, Conflict: 409, Unprocessable: 422, DomainError: 400}
    for kind, status in kinds.items():
        assert _answer(kind("No.")) == (
            status,
            {"code": kind.code, "message": "No.", "details": None},
        ), kind


def test_it_keeps_a_code_given_at_the_raise_and_field_errors_as_details():
    status, error = _answer(ProposalGone({"proposals": "DEC-1 is decided."}, code="decided"))
    assert (status, error) == (
        409,
        {
            "code": "decided",
            "message": "DEC-1 is decided.",
            "details": {"proposals": ["DEC-1 is decided."]},
        },
    )


def test_it_gives_the_error_its_own_details_and_every_message_when_there_are_several():
    assert _answer(TitleMissing("Give a title.")) == (
        400,
        {"code": "title-missing", "message": "Give a title.", "details": {"param": "title"}},
    )
    status, error = _answer(ValidationError(["Too long.", "No tabs."]))
    assert (status, error["message"], error["details"]) == (
        400,
        "Too long. No tabs.",
        ["Too long.", "No tabs."],
    )


def test_it_renames_field_errors_to_the_body_names_the_view_gives():
    class View:
        error_fields = {"credential_kind": "kind"}

    response = exception_handler(ValidationError({"credential_kind": "Choose."}), {"view": View()})
    assert response is not None
    assert response.data["error"]["details"] == {"kind": ["Choose."]}

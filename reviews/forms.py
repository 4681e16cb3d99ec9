from __future__ import annotations

from django import forms

from memoryadmin.web import CredentialFreeTextInput, SecretTextarea
from reviews.models import CredentialKind


class RepositoryForm(forms.Form):
    name = forms.CharField(max_length=100)
    remote_url = forms.CharField(
        max_length=500,
        label="Remote URL",
        help_text="https://…, ssh://… or git@host:path",
        widget=CredentialFreeTextInput,
    )
    branch = forms.CharField(max_length=200, initial="main")
    credential_kind = forms.ChoiceField(choices=CredentialKind.choices, label="Credential")
    credential_username = forms.CharField(
        max_length=200, required=False, label="HTTPS user name", help_text="x-access-token if empty"
    )
    credential_secret = forms.CharField(
        required=False,
        label="Token or SSH private key",
        widget=SecretTextarea(attrs={"rows": 4}),
        help_text="Stored encrypted and never shown again.",
    )
    ssh_known_hosts = forms.CharField(
        required=False,
        label="SSH known_hosts lines",
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="Required for SSH: host keys are checked strictly.",
    )
    push_enabled = forms.BooleanField(required=False, initial=True, label="Push decisions")


class RepositoryEditForm(RepositoryForm):
    """The same fields; a blank secret keeps the stored one while the credential kind stays."""

    def __init__(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        self.fields[
            "credential_secret"
        ].help_text = "Leave empty to keep the stored one. Stored encrypted and never shown again."
        self.fields[
            "ssh_known_hosts"
        ].help_text = "Leave empty to keep the stored lines. Host keys are checked strictly."


class DecisionForm(forms.Form):
    comment = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3}))
    override_reason = forms.CharField(
        required=False,
        label="Secret override reason",
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text="Only for approving a proposal with a secret finding; recorded in the audit log.",
    )


class BatchForm(DecisionForm):
    action = forms.ChoiceField(choices=[("approve", "Approve"), ("reject", "Reject")])


class RoutingForm(forms.Form):
    rules = forms.CharField(
        required=False,
        max_length=50_000,
        label="Reviewer routing",
        widget=forms.Textarea(attrs={"rows": 6, "spellcheck": "false"}),
        help_text=(
            "One rule per line: `pattern-or-type: user1 user2`. A type (decision, constraint, …)"
            " or a glob on the memory's links and file path (src/db/, *.sql). Reviewers must"
            " have the reviewer or admin role."
        ),
    )


class ReviewSettingsForm(forms.Form):
    require_two_approvals = forms.BooleanField(
        required=False,
        label="Require two approvals for constraint and decision proposals",
        help_text="The first approval is recorded; the second, by a different reviewer, commits.",
    )


class RevealForm(forms.Form):
    reason = forms.CharField(
        required=False,
        max_length=2000,
        label="Why you need to see the masked text",
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text="Shown to you once, in this response; the reason is recorded in the audit log.",
    )

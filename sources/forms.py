from __future__ import annotations

from django import forms
from django.conf import settings

from memoryadmin.web import CredentialFreeTextInput, SecretInput
from sources.credentials import MAX_SECRET_CHARS, MAX_USERNAME_CHARS
from sources.fetchers import Credential
from sources.models import CredentialKind


class CredentialFields(forms.Form):
    """A bearer token or a user and password; the secret fields never render a value back."""

    credential_kind = forms.ChoiceField(
        choices=CredentialKind.choices,
        initial=CredentialKind.NONE,
        label="Credential",
        help_text="For HTTPS sources only. Stored encrypted and never shown again.",
    )
    token = forms.CharField(
        required=False,
        max_length=MAX_SECRET_CHARS,
        widget=SecretInput,
        label="Bearer token",
    )
    username = forms.CharField(required=False, max_length=MAX_USERNAME_CHARS)
    password = forms.CharField(
        required=False,
        strip=False,
        max_length=MAX_SECRET_CHARS,
        widget=SecretInput,
    )

    def clean(self):  # type: ignore[no-untyped-def]
        data = super().clean()
        kind = data.get("credential_kind")
        if kind == CredentialKind.BEARER and not data.get("token"):
            self.add_error("token", "Enter the bearer token.")
        if kind == CredentialKind.BASIC and not data.get("username"):
            self.add_error("username", "Enter the user name.")
        return data

    def credential(self) -> Credential:
        """The credential the valid form describes."""
        data = self.cleaned_data
        return Credential(
            kind=data["credential_kind"],
            token=data["token"],
            username=data["username"],
            password=data["password"],
        )


class SourceAddForm(CredentialFields):
    location = forms.CharField(
        max_length=1000,
        widget=CredentialFreeTextInput,
        label="Directory path or HTTPS URL",
        help_text="An absolute directory path on this server, or an https:// base URL. "
        "Its memories.json manifest is read from there.",
    )
    refresh_minutes = forms.IntegerField(
        min_value=1, max_value=10080, initial=60, label="Refresh every (minutes)"
    )
    field_order = ["location", "credential_kind", "token", "username", "password"]

    def __init__(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        roots = settings.SOURCE_LOCAL_ROOTS
        if roots:
            where = "a directory inside " + ", ".join(roots)
        else:
            where = "a directory path (local directories need a superuser on this server)"
        self.fields[
            "location"
        ].help_text = (
            f"An https:// base URL, or {where}. Its memories.json manifest is read from there."
        )


class SourceEditForm(forms.Form):
    name = forms.CharField(
        max_length=200,
        required=False,
        help_text="Shown instead of the manifest's name; leave empty to use that again.",
    )
    refresh_minutes = forms.IntegerField(
        min_value=1, max_value=10080, label="Refresh every (minutes)"
    )


class SourceCredentialForm(CredentialFields):
    """Replace the credential (choose "None" to clear it)."""

    credential_kind = forms.ChoiceField(
        choices=CredentialKind.choices,
        label="New credential",
        help_text="Replaces the stored one at once; “None” clears it. Never shown again.",
    )

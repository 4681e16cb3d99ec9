from __future__ import annotations

from django import forms

from sources.models import CredentialKind


class SourceAddForm(forms.Form):
    location = forms.CharField(
        max_length=1000,
        label="Directory path or HTTPS URL",
        help_text="An absolute directory path on this server, or an https:// base URL. "
        "Its memories.json manifest is read from there.",
    )
    credential_kind = forms.ChoiceField(
        choices=CredentialKind.choices,
        initial=CredentialKind.NONE,
        label="Credential",
        help_text="For HTTPS sources only. Stored encrypted and never shown again.",
    )
    token = forms.CharField(
        required=False, widget=forms.PasswordInput(render_value=False), label="Bearer token"
    )
    username = forms.CharField(required=False, max_length=200)
    password = forms.CharField(required=False, widget=forms.PasswordInput(render_value=False))
    refresh_minutes = forms.IntegerField(
        min_value=1, max_value=10080, initial=60, label="Refresh every (minutes)"
    )

    def clean(self):  # type: ignore[no-untyped-def]
        data = super().clean()
        kind = data.get("credential_kind")
        if kind == CredentialKind.BEARER and not data.get("token"):
            self.add_error("token", "Enter the bearer token.")
        if kind == CredentialKind.BASIC and not data.get("username"):
            self.add_error("username", "Enter the user name.")
        return data

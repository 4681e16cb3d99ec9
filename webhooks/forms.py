from __future__ import annotations

from django import forms

from memoryadmin.web import CredentialFreeURLInput
from webhooks import events as ev


class EndpointForm(forms.Form):
    url = forms.CharField(
        label="Payload URL",
        max_length=2000,
        widget=CredentialFreeURLInput(
            attrs={"placeholder": "https://example.org/hooks/memoryadmin"}
        ),
    )
    events = forms.MultipleChoiceField(
        choices=[(name, f"{name} — {text}") for name, text in ev.EVENT_DESCRIPTIONS.items()],
        widget=forms.CheckboxSelectMultiple,
        required=False,
        help_text="Leave all unticked to receive every event.",
    )
    description = forms.CharField(max_length=200, required=False)

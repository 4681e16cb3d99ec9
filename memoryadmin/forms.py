from __future__ import annotations

from django import forms

from memoryadmin.models import Scope


class TokenCreateForm(forms.Form):
    name = forms.CharField(max_length=100, help_text="What uses this token, e.g. 'ci-exporter'.")
    scopes = forms.MultipleChoiceField(
        choices=Scope.choices, widget=forms.CheckboxSelectMultiple, required=True
    )
    expires_days = forms.IntegerField(
        min_value=1,
        max_value=3650,
        required=False,
        label="Expires after (days)",
        help_text="Leave empty for a token that does not expire.",
    )

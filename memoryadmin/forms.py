from __future__ import annotations

from django import forms

from memoryadmin.models import Role, Scope


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


class MemberAddForm(forms.Form):
    username = forms.CharField(max_length=150)
    role = forms.ChoiceField(choices=Role.choices, initial=Role.VIEWER)


class MemberRoleForm(forms.Form):
    role = forms.ChoiceField(choices=Role.choices)


class TeamCreateForm(forms.Form):
    slug = forms.SlugField(max_length=64, help_text="Lowercase letters, digits and hyphens.")
    name = forms.CharField(max_length=200)

from __future__ import annotations

from django import forms

from memoryadmin.models import Role, Scope
from memoryadmin.slugs import SLUG_MAX_LENGTH, validate_team_slug


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
    slug = forms.CharField(
        max_length=SLUG_MAX_LENGTH,
        validators=[validate_team_slug],
        help_text="Lowercase letters, digits and hyphens; it becomes the team's address.",
    )
    name = forms.CharField(max_length=200)

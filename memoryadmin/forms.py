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


class InvitationForm(forms.Form):
    email = forms.EmailField(max_length=254, label="E-mail")
    role = forms.ChoiceField(choices=Role.choices, initial=Role.VIEWER)


class InvitationAcceptForm(forms.Form):
    username = forms.CharField(max_length=150, help_text="Letters, digits and @ . + - _ only.")
    password = forms.CharField(
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}), strip=False
    )
    password_again = forms.CharField(
        label="Password again",
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
        strip=False,
    )

    def clean(self):  # type: ignore[no-untyped-def]
        data = super().clean()
        if data.get("password") and data.get("password") != data.get("password_again"):
            self.add_error("password_again", "The two passwords differ.")
        return data

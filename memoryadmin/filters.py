"""The FilterSets of the team lists memoryadmin owns: audit log, members, invitations, tokens."""

from __future__ import annotations

import django_filters
from django import forms
from django.db.models import Q, QuerySet
from django.utils import timezone

from memoryadmin.listing import Column, ListFilterSet, column, date_range, sort_by
from memoryadmin.models import ApiToken, AuditEvent, Invitation, Membership, Role, TokenKind


def _action_groups(team) -> list[tuple[str, str]]:  # type: ignore[no-untyped-def]
    """The audit filter's choices: each area (`source.`) then each action the team's log holds."""
    if team is None:
        return []
    actions = sorted(
        AuditEvent.objects.filter(team=team).values_list("action", flat=True).distinct()
    )
    areas = sorted({a.split(".", 1)[0] for a in actions if "." in a})
    return [(f"{area}.", f"{area}.* (all)") for area in areas] + [(a, a) for a in actions]


class AuditFilterSet(ListFilterSet):
    search_fields = ("summary", "actor_label", "action", "target_type", "target_id")
    action = django_filters.CharFilter(
        method="filter_action",
        label="Action",
        max_length=64,
        help_text="An action (source.approve) or the start of one (source.)",
        widget=forms.TextInput(attrs={"list": "audit-actions"}),
    )
    actor = django_filters.CharFilter(
        field_name="actor_label", lookup_expr="icontains", label="Actor", max_length=200
    )
    target = django_filters.CharFilter(
        field_name="target_type", lookup_expr="iexact", label="Target type", max_length=64
    )
    after, before = date_range("created_at")
    sort = sort_by(("created_at", "when"), ("action", "action"), ("actor_label", "actor"))
    csv_name = "audit"
    csv_columns = (
        column("when", "created_at"),
        column("actor", "actor_label"),
        column("action", "action"),
        column("target_type", "target_type"),
        column("target_id", "target_id"),
        column("summary", "summary"),
        column("request_id", "request_id"),
    )

    class Meta:
        model = AuditEvent
        fields: list[str] = []

    def __init__(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        self.action_choices = _action_groups(self.team)

    def filter_action(self, queryset: QuerySet, name: str, value: str) -> QuerySet:
        # Prefix match: "source" or "source." finds every source action; an exact name itself.
        return queryset.filter(action__istartswith=value.strip())


class MemberFilterSet(ListFilterSet):
    search_fields = ("user__username", "user__email", "user__first_name", "user__last_name")
    role = django_filters.ChoiceFilter(choices=Role.choices, label="Role")
    after, before = date_range("created_at")
    sort = sort_by(("user__username", "user"), ("role", "role"), ("created_at", "since"))
    csv_name = "members"
    csv_columns = (
        column("username", "user.username"),
        column("name", "user.get_full_name"),
        column("email", "user.email"),
        column("role", "role"),
        column("since", "created_at"),
    )

    class Meta:
        model = Membership
        fields: list[str] = []


TOKEN_STATES = (("active", "active"), ("expired", "expired"), ("revoked", "revoked"))


class TokenFilterSet(ListFilterSet):
    search_fields = ("name", "prefix", "created_by__username")
    state = django_filters.ChoiceFilter(choices=TOKEN_STATES, method="filter_state", label="State")
    kind = django_filters.ChoiceFilter(choices=TokenKind.choices, label="Kind")
    scope = django_filters.CharFilter(method="filter_scope", label="Scope", max_length=64)
    after, before = date_range("created_at")
    sort = sort_by(
        ("name", "name"),
        ("created_at", "created"),
        ("expires_at", "expires"),
        ("last_used_at", "used"),
    )
    csv_name = "tokens"
    # Never the secret or its hash: the prefix is what the page shows too.
    csv_columns = (
        column("name", "name"),
        column("prefix", "prefix"),
        column("kind", "kind"),
        column("scopes", "scopes"),
        column("created_by", "created_by.username"),
        column("created", "created_at"),
        column("expires", "expires_at"),
        column("last_used", "last_used_at"),
        column("revoked", "revoked_at"),
    )

    class Meta:
        model = ApiToken
        fields: list[str] = []

    def filter_state(self, queryset: QuerySet, name: str, value: str) -> QuerySet:
        now = timezone.now()
        expired = Q(expires_at__isnull=False, expires_at__lte=now)
        if value == "revoked":
            return queryset.filter(revoked_at__isnull=False)
        if value == "expired":
            return queryset.filter(expired, revoked_at__isnull=True)
        return queryset.filter(revoked_at__isnull=True).exclude(expired)

    def filter_scope(self, queryset: QuerySet, name: str, value: str) -> QuerySet:
        # JSON list containment differs by backend; the token list of a team is small.
        rows = queryset.values_list("id", "scopes")
        ids = [pk for pk, scopes in rows if value.strip() in (scopes or [])]
        return queryset.filter(pk__in=ids)


INVITATION_STATES = (
    ("pending", "pending"),
    ("accepted", "accepted"),
    ("revoked", "revoked"),
    ("expired", "expired"),
)


class InvitationFilterSet(ListFilterSet):
    search_fields = ("email", "invited_by__username")
    state = django_filters.ChoiceFilter(
        choices=INVITATION_STATES, method="filter_state", label="State"
    )
    role = django_filters.ChoiceFilter(choices=Role.choices, label="Role")
    sort = sort_by(("email", "email"), ("created_at", "created"), ("expires_at", "expires"))
    csv_name = "invitations"
    csv_columns = (
        column("email", "email"),
        column("role", "role"),
        column("state", "state"),
        column("invited_by", "invited_by.username"),
        column("created", "created_at"),
        column("expires", "expires_at"),
        Column("accepted_by", lambda i: getattr(i.accepted_by, "username", "")),
    )

    class Meta:
        model = Invitation
        fields: list[str] = []

    def filter_state(self, queryset: QuerySet, name: str, value: str) -> QuerySet:
        return queryset.filter(Invitation.state_q(value))

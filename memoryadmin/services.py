"""Every write to teams, memberships and tokens goes through here."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from django.core.exceptions import ValidationError
from django.db import transaction

from memoryadmin.audit import Actor, audit_record
from memoryadmin.models import AuditEvent, Membership, Role, Team
from memoryadmin.slugs import slug_problem
from memoryadmin.templatetags.memoryadmin_format import counted
from memoryadmin.tokens import _revoke_personal_tokens

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser, Group


@transaction.atomic
def team_create(*, actor: Actor, slug: str, name: str = "") -> Team:
    problem = slug_problem(slug)
    if problem is not None:
        raise ValidationError({"slug": problem})
    if Team.objects.filter(slug=slug).exists():
        raise ValidationError({"slug": f"A team '{slug}' already exists."})
    team = Team.objects.create(slug=slug, name=name or slug)
    audit_record(
        actor=actor, action="team.create", team=team, target=team, summary=f"Created team {slug}"
    )
    return team


@transaction.atomic
def membership_set(*, actor: Actor, team: Team, user: AbstractBaseUser, role: str) -> Membership:
    if role not in Role.values:
        raise ValidationError({"role": f"Role must be one of {', '.join(Role.values)}."})
    if role != Role.ADMIN:
        _keep_an_admin(team=team, leaving=user)
    membership, created = Membership.objects.update_or_create(
        team=team, user=user, defaults={"role": role}
    )
    audit_record(
        actor=actor,
        action="membership.set",
        team=team,
        target=membership,
        summary=f"{user.get_username()} is now {role} of {team.slug}",
        data={"user": user.get_username(), "role": role, "created": created},
    )
    return membership


def _keep_an_admin(*, team: Team, leaving: AbstractBaseUser) -> None:
    """A team must keep at least one admin, or nobody could manage it again from the UI."""
    admins = Membership.objects.select_for_update().filter(team=team, role=Role.ADMIN)
    if not admins.exclude(user=leaving).exists() and admins.filter(user=leaving).exists():
        raise ValidationError(
            {"role": f"{leaving.get_username()} is the last admin of {team.slug}."}
        )


@transaction.atomic
def membership_remove(*, actor: Actor, membership: Membership) -> None:
    """Remove a member; the personal tokens they made for this team are revoked with them."""
    team, username = membership.team, membership.user.get_username()
    _keep_an_admin(team=team, leaving=membership.user)
    _revoke_personal_tokens(
        actor=actor, user=membership.user, teams=[team], reason="member-removed"
    )
    membership.delete()
    audit_record(
        actor=actor,
        action="membership.remove",
        team=team,
        target_type="memoryadmin.membership",
        target_id=username,
        summary=f"Removed {username} from {team.slug}",
        data={"user": username},
    )


ACCOUNT_PROFILE = ("username", "email", "first_name", "last_name")


ACCOUNT_FLAGS = ("is_active", "is_staff", "is_superuser")


@dataclass(frozen=True)
class AccountState:
    """An account as the audit log compares it; the password hash is compared, never recorded."""

    profile: dict[str, Any]
    privileges: dict[str, Any]  # the three flags, group names, "app.codename" permissions
    password_usable: bool
    password_hash: str = field(repr=False)


def account_state(user: Any) -> AccountState:
    permissions = user.user_permissions.values_list("content_type__app_label", "codename")
    return AccountState(
        profile={name: getattr(user, name) for name in ACCOUNT_PROFILE},
        privileges={
            **{name: getattr(user, name) for name in ACCOUNT_FLAGS},
            "groups": sorted(user.groups.values_list("name", flat=True)),
            "user_permissions": sorted(f"{app}.{codename}" for app, codename in permissions),
        },
        password_usable=user.has_usable_password(),
        password_hash=user.password,
    )


def _changes(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """{field: {"before", "after"}} for values, {field: {"added", "removed"}} for lists."""
    changes: dict[str, Any] = {}
    for key, new in after.items():
        old = before.get(key)
        if old == new:
            continue
        if isinstance(new, list):
            changes[key] = {
                "added": sorted(set(new) - set(old or [])),
                "removed": sorted(set(old or []) - set(new)),
            }
        else:
            changes[key] = {"before": old, "after": new}
    return changes


def _describe(changes: dict[str, Any]) -> str:
    parts = []
    for key, change in changes.items():
        if "added" in change:
            signs = [f"+{v}" for v in change["added"]] + [f"-{v}" for v in change["removed"]]
            parts.append(f"{key} {' '.join(signs)}")
        else:
            parts.append(f"{key} {change['before']!r} -> {change['after']!r}")
    return "; ".join(parts)


@transaction.atomic
def user_account_record(
    *, actor: Actor, user: Any, before: AccountState | None, via: str = "Django admin"
) -> list[AuditEvent]:
    """Audit what an edit outside our services did to an account, once it is saved.

    `user.create`, else one event per kind of change: `user.update` (name, email),
    `user.privileges-update` (active, staff, superuser, groups, permissions) and
    `user.password-set` (set, changed or disabled). Never the password or its hash.
    """
    after = account_state(user)
    name = user.get_username()
    base = {"user": name, "user_id": user.pk, "via": via}
    if before is None:
        password = "set" if after.password_usable else "unusable"
        return [
            audit_record(
                actor=actor,
                action="user.create",
                target=user,
                summary=f"Created user {name} ({via}; password {password})",
                data={**base, **after.profile, **after.privileges, "password": password},
            )
        ]
    events = []
    for action, old, new in (
        ("user.update", before.profile, after.profile),
        ("user.privileges-update", before.privileges, after.privileges),
    ):
        changes = _changes(old, new)
        if changes:
            events.append(
                audit_record(
                    actor=actor,
                    action=action,
                    target=user,
                    summary=f"Changed {name} ({via}): {_describe(changes)}",
                    data={**base, "changes": changes},
                )
            )
    if before.password_hash != after.password_hash:
        if not after.password_usable:
            what = "disabled"
        else:
            what = "changed" if before.password_usable else "set"
        events.append(
            audit_record(
                actor=actor,
                action="user.password-set",
                target=user,
                summary=f"Password of {name} {what} ({via})",
                data={**base, "password": what},
            )
        )
    return events


def teams_losing_every_admin(user_ids: Iterable[int]) -> list[Team]:
    """Teams whose admins are all among these users: deleting them would strand the team."""
    ids = set(user_ids)
    others = Membership.objects.filter(role=Role.ADMIN).exclude(user_id__in=ids).values("team_id")
    return list(
        Team.objects.filter(memberships__user_id__in=ids, memberships__role=Role.ADMIN)
        .exclude(pk__in=others)
        .distinct()
        .order_by("slug")
    )


@transaction.atomic
def user_delete(*, actor: Actor, user: Any, via: str = "Django admin") -> None:
    """Delete an account; each team it belonged to gets a `membership.remove` in its own log.

    Refused while it is the last admin of a team. Users who acted are kept by the audit log's
    protected references anyway (deactivate them instead)."""
    admin_of = Membership.objects.filter(user_id=user.pk, role=Role.ADMIN).values("team_id")
    list(Membership.objects.select_for_update().filter(team_id__in=admin_of, role=Role.ADMIN))
    name = user.get_username()
    stranded = teams_losing_every_admin([user.pk])
    if stranded:
        raise ValidationError(
            f"{name} is the last admin of {', '.join(t.slug for t in stranded)}; make someone"
            " else admin first."
        )
    state = account_state(user)
    _revoke_personal_tokens(actor=actor, user=user, teams=None, reason="user-deleted")
    memberships = list(Membership.objects.filter(user_id=user.pk).select_related("team"))
    for membership in memberships:
        audit_record(
            actor=actor,
            action="membership.remove",
            team=membership.team,
            target_type="memoryadmin.membership",
            target_id=name,
            summary=f"Removed {name} from {membership.team.slug}: the account was deleted",
            data={"user": name, "role": membership.role, "reason": "user-deleted", "via": via},
        )
    pk = user.pk
    user.delete()
    audit_record(
        actor=actor,
        action="user.delete",
        target_type="auth.user",
        target_id=pk,
        summary=f"Deleted user {name} ({via})",
        data={
            "user": name,
            "user_id": pk,
            "via": via,
            **state.profile,
            **state.privileges,
            "teams": {m.team.slug: m.role for m in memberships},
        },
    )


def group_state(group: Group) -> dict[str, Any]:
    permissions = group.permissions.values_list("content_type__app_label", "codename")
    return {
        "name": group.name,
        "permissions": sorted(f"{app}.{codename}" for app, codename in permissions),
    }


@transaction.atomic
def group_record(
    *, actor: Actor, group: Group, before: dict[str, Any] | None, via: str = "Django admin"
) -> AuditEvent | None:
    """Audit a group saved outside our services: its permissions are its members' privileges."""
    after = group_state(group)
    members = sorted(group.user_set.values_list("username", flat=True))
    if before is None:
        return audit_record(
            actor=actor,
            action="group.create",
            target=group,
            summary=f"Created group {group.name} ({via})",
            data={**after, "members": members, "via": via},
        )
    changes = _changes(before, after)
    if not changes:
        return None
    return audit_record(
        actor=actor,
        action="group.update",
        target=group,
        summary=f"Changed group {group.name} ({via}): {_describe(changes)}",
        data={"name": group.name, "changes": changes, "members": members, "via": via},
    )


@transaction.atomic
def group_delete(*, actor: Actor, group: Group, via: str = "Django admin") -> None:
    state = group_state(group)
    members = sorted(group.user_set.values_list("username", flat=True))
    pk = group.pk
    group.delete()
    audit_record(
        actor=actor,
        action="group.delete",
        target_type="auth.group",
        target_id=pk,
        summary=f"Deleted group {state['name']} ({via}); {counted(len(members), 'member')} lost it",
        data={**state, "members": members, "via": via},
    )

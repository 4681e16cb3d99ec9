"""Django's user and group admin, driven through the real admin pages: every account change is an
append-only AuditEvent in the same transaction, and no event holds a password or its hash."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django import forms
from django.contrib.auth.models import Group, Permission, User

from memoryadmin.models import AuditEvent, Role

USERS = "/admin/auth/user/"
GROUPS = "/admin/auth/group/"
PASSWORD = "Tr1cky-Passw0rd-Value"


@pytest.fixture
def root(make_user):  # type: ignore[no-untyped-def]
    return make_user("root", is_superuser=True, is_staff=True)


@pytest.fixture
def admin_client(client, root):  # type: ignore[no-untyped-def]
    client.force_login(root)
    return client


def form_data(client, url: str) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    """What the admin's change form would post back unchanged (as a browser submits it)."""
    form = client.get(url).context["adminform"].form
    data: dict[str, Any] = {}
    for name, field in form.fields.items():
        value = form[name].value()
        if isinstance(field, forms.SplitDateTimeField):
            moment = field.widget.decompress(value)
            data[f"{name}_0"], data[f"{name}_1"] = (
                moment[0].isoformat() if moment[0] else "",
                moment[1].isoformat() if moment[1] else "",
            )
        elif isinstance(field, forms.BooleanField):
            if value:
                data[name] = "on"
        elif isinstance(field, forms.ModelMultipleChoiceField):
            data[name] = [str(v) for v in value or []]
        elif value is not None and not field.disabled:
            data[name] = str(value)
    return data


def events(*actions: str) -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(action__in=actions).order_by("id"))


def assert_no_password_in_the_log(*secrets: str) -> None:
    for event in AuditEvent.objects.all():
        text = json.dumps(event.data) + event.summary
        for secret in (PASSWORD, "pbkdf2", "argon2", "bcrypt", *secrets):
            assert secret not in text, (event.action, secret)


def test_it_records_a_user_created_in_the_admin_without_the_password(admin_client, root):
    response = admin_client.post(
        f"{USERS}add/",
        {
            "username": "bob",
            "usable_password": "true",
            "password1": PASSWORD,
            "password2": PASSWORD,
        },
    )
    assert response.status_code == 302, response.context["adminform"].form.errors
    bob = User.objects.get(username="bob")
    (event,) = events("user.create")
    assert event.actor_user == root and event.team is None
    assert (event.target_type, event.target_id) == ("auth.user", str(bob.pk))
    assert event.data["password"] == "set" and event.data["is_superuser"] is False
    assert event.data["via"] == "Django admin" and event.request_id
    assert "Created user bob" in event.summary
    assert_no_password_in_the_log(bob.password)


def test_it_records_privilege_and_profile_changes_with_before_and_after(
    admin_client, root, make_user
):
    bob = make_user("bob")
    operators = Group.objects.create(name="operators")
    url = f"{USERS}{bob.pk}/change/"
    data = form_data(admin_client, url)
    data.update(
        email="robert@example.org",
        is_staff="on",
        is_superuser="on",
        groups=[str(operators.pk)],
        user_permissions=[str(Permission.objects.get(codename="view_auditevent").pk)],
    )
    response = admin_client.post(url, data)
    assert response.status_code == 302, response.context["adminform"].form.errors
    privileges, profile = events("user.privileges-update"), events("user.update")
    assert len(privileges) == 1 and len(profile) == 1
    changes = privileges[0].data["changes"]
    assert changes["is_staff"] == {"before": False, "after": True}
    assert changes["is_superuser"] == {"before": False, "after": True}
    assert changes["groups"] == {"added": ["operators"], "removed": []}
    assert changes["user_permissions"] == {
        "added": ["memoryadmin.view_auditevent"],
        "removed": [],
    }
    assert "is_superuser False -> True" in privileges[0].summary
    assert profile[0].data["changes"] == {
        "email": {"before": "bob@example.org", "after": "robert@example.org"}
    }
    assert privileges[0].actor_user == root

    # Deactivating and leaving the group: one more privileges event; an unchanged save: none.
    data = form_data(admin_client, url)
    data.pop("is_active")
    data["groups"] = []
    admin_client.post(url, data)
    admin_client.post(url, form_data(admin_client, url))
    latest = events("user.privileges-update")
    assert len(latest) == 2 and len(events("user.update")) == 1
    assert latest[1].data["changes"] == {
        "is_active": {"before": True, "after": False},
        "groups": {"added": [], "removed": ["operators"]},
    }
    assert not events("user.password-set")


def test_it_records_a_password_change_and_disabling_without_the_value(admin_client, make_user):
    bob = make_user("bob")
    old_hash = bob.password
    url = f"{USERS}{bob.pk}/password/"
    response = admin_client.post(
        url, {"usable_password": "true", "password1": PASSWORD, "password2": PASSWORD}
    )
    assert response.status_code == 302
    bob.refresh_from_db()
    assert bob.check_password(PASSWORD)
    response = admin_client.post(url, {"usable_password": "false", "unset-password": "1"})
    assert response.status_code == 302
    bob.refresh_from_db()
    assert not bob.has_usable_password()
    response = admin_client.post(
        url, {"usable_password": "true", "password1": PASSWORD, "password2": PASSWORD}
    )
    assert [e.data["password"] for e in events("user.password-set")] == [
        "changed",
        "disabled",
        "set",
    ]
    assert not events("user.update", "user.privileges-update")
    assert_no_password_in_the_log(old_hash, bob.password)


def test_it_records_nothing_when_a_password_form_is_refused(admin_client, make_user):
    bob = make_user("bob")
    response = admin_client.post(
        f"{USERS}{bob.pk}/password/",
        {"usable_password": "true", "password1": PASSWORD, "password2": "different"},
    )
    assert response.status_code == 200
    assert not events("user.password-set")


def test_it_records_a_deletion_with_the_teams_it_left(admin_client, make_user, team, root):
    make_user("alice", team=team, role=Role.ADMIN)
    bob = make_user("bob", team=team, role=Role.REVIEWER)
    response = admin_client.post(f"{USERS}{bob.pk}/delete/", {"post": "yes"})
    assert response.status_code == 302
    assert not User.objects.filter(username="bob").exists()
    (deleted,) = events("user.delete")
    assert deleted.team is None and deleted.target_id == str(bob.pk)
    assert deleted.data["teams"] == {"alpha": "reviewer"} and deleted.data["user"] == "bob"
    (removed,) = AuditEvent.objects.filter(action="membership.remove", team=team)
    assert removed.data == {
        "user": "bob",
        "role": "reviewer",
        "reason": "user-deleted",
        "via": "Django admin",
    }
    assert removed.actor_user == root


def test_it_refuses_to_delete_the_last_admin_of_a_team(admin_client, make_user, team):
    alice = make_user("alice", team=team, role=Role.ADMIN)
    page = admin_client.get(f"{USERS}{alice.pk}/delete/").content.decode()
    assert "Team alpha: these users are its only admins" in page
    response = admin_client.post(f"{USERS}{alice.pk}/delete/", {"post": "yes"})
    assert response.status_code == 200
    assert User.objects.filter(pk=alice.pk).exists()
    assert not events("user.delete", "membership.remove")


def test_it_records_each_user_of_a_bulk_delete_and_refuses_to_strand_a_team(
    admin_client, make_user, team
):
    alice = make_user("alice", team=team, role=Role.ADMIN)
    amos = make_user("amos", team=team, role=Role.ADMIN)
    carol, dave = make_user("carol"), make_user("dave")
    action = {"action": "delete_selected", "post": "yes"}
    response = admin_client.post(
        USERS, {**action, "_selected_action": [str(alice.pk), str(amos.pk)]}
    )
    assert response.status_code == 200  # the confirmation page lists the stranded team
    assert "Team alpha" in response.content.decode()
    assert User.objects.filter(pk__in=[alice.pk, amos.pk]).count() == 2
    response = admin_client.post(
        USERS, {**action, "_selected_action": [str(carol.pk), str(dave.pk), str(amos.pk)]}
    )
    assert response.status_code == 302
    assert sorted(e.data["user"] for e in events("user.delete")) == ["amos", "carol", "dave"]
    assert [e.data["user"] for e in events("membership.remove")] == ["amos"]


def test_it_keeps_the_change_and_its_event_in_one_transaction(admin_client, make_user, monkeypatch):
    """If the audit event cannot be written, the admin's change is rolled back with it."""
    from memoryadmin import services

    bob = make_user("bob")
    url = f"{USERS}{bob.pk}/change/"
    data = {**form_data(admin_client, url), "is_superuser": "on"}

    def broken(**kwargs: Any) -> None:
        raise RuntimeError("audit log unavailable")

    monkeypatch.setattr(services, "audit_record", broken)
    with pytest.raises(RuntimeError, match="audit log unavailable"):
        admin_client.post(url, data)
    bob.refresh_from_db()
    assert bob.is_superuser is False


def test_it_records_group_permission_changes_and_deletion(admin_client, make_user):
    view_audit = Permission.objects.get(codename="view_auditevent")
    response = admin_client.post(
        f"{GROUPS}add/", {"name": "auditors", "permissions": [str(view_audit.pk)]}
    )
    assert response.status_code == 302
    group = Group.objects.get(name="auditors")
    make_user("bob").groups.add(group)
    (created,) = events("group.create")
    assert created.data["permissions"] == ["memoryadmin.view_auditevent"]
    view_token = Permission.objects.get(codename="view_apitoken")
    admin_client.post(f"{GROUPS}{group.pk}/change/", {"name": "auditors", "permissions": []})
    admin_client.post(
        f"{GROUPS}{group.pk}/change/", {"name": "auditors", "permissions": [str(view_token.pk)]}
    )
    updates = events("group.update")
    assert [u.data["changes"]["permissions"] for u in updates] == [
        {"added": [], "removed": ["memoryadmin.view_auditevent"]},
        {"added": ["memoryadmin.view_apitoken"], "removed": []},
    ]
    assert updates[0].data["members"] == ["bob"]
    response = admin_client.post(f"{GROUPS}{group.pk}/delete/", {"post": "yes"})
    assert response.status_code == 302
    (deleted,) = events("group.delete")
    assert deleted.data["members"] == ["bob"] and deleted.data["name"] == "auditors"


def test_it_shows_account_events_in_the_audit_admin(admin_client, make_user):
    bob = make_user("bob")
    url = f"{USERS}{bob.pk}/change/"
    admin_client.post(url, {**form_data(admin_client, url), "is_staff": "on"})
    listing = admin_client.get("/admin/memoryadmin/auditevent/?action=user.privileges-update")
    assert [e.target_id for e in listing.context["cl"].queryset] == [str(bob.pk)]

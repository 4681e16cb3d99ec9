from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from memoryadmin.models import AuditEvent, Membership, Role, Team


@pytest.fixture(autouse=True)
def scratch_data_dir(settings, tmp_path, monkeypatch):  # type: ignore[no-untyped-def]
    # The apps' demo seeds write sample files and repositories under DATA_DIR.
    settings.DATA_DIR = tmp_path
    settings.LOCK_DIR = tmp_path / "locks"
    monkeypatch.delenv("MEMORYADMIN_ADMIN_PASSWORD", raising=False)
    monkeypatch.delenv("MEMORYADMIN_ADMIN_PASSWORD_FILE", raising=False)


def seed() -> str:
    out = StringIO()
    call_command("seed_demo", stdout=out)
    return out.getvalue()


def test_it_seeds_once_however_often_it_runs(db, monkeypatch):
    password = "correct-horse-battery-staple-42"
    monkeypatch.setenv("MEMORYADMIN_ADMIN_PASSWORD", password)
    first = seed()
    second = seed()
    assert password not in first and password not in second
    assert "(from MEMORYADMIN_ADMIN_PASSWORD)" in first
    assert "Demo ready" in second and "with password" not in second
    # Every run says how to set a new admin password (the first run's is shown only once).
    assert "python manage.py changepassword admin" in first
    assert "python manage.py changepassword admin" in second

    assert list(Team.objects.values_list("slug", flat=True)) == ["demo"]
    admins = get_user_model().objects.filter(username="admin")
    assert admins.count() == 1
    admin = admins.get()
    assert admin.is_superuser and admin.is_staff
    assert admin.check_password(password)
    assert Membership.objects.get(user=admin).role == Role.ADMIN
    assert AuditEvent.objects.filter(action="team.create").count() == 1


def test_it_prints_a_generated_password_once_when_none_is_given(db):
    first = seed()
    line = next(line for line in first.splitlines() if "with password:" in line)
    generated = line.split("with password:")[1].split()[0]
    assert get_user_model().objects.get(username="admin").check_password(generated)
    assert generated not in seed()


def test_it_reads_the_admin_password_from_a_file(db, monkeypatch, tmp_path):
    (tmp_path / "pw").write_text("from-a-secret-file-77\n", encoding="utf-8")
    monkeypatch.setenv("MEMORYADMIN_ADMIN_PASSWORD_FILE", str(tmp_path / "pw"))
    output = seed()
    assert "from-a-secret-file-77" not in output
    assert get_user_model().objects.get(username="admin").check_password("from-a-secret-file-77")

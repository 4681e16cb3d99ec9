from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

from memoryadmin.env import (
    ConfigError,
    env_bool,
    env_int,
    env_list,
    env_required,
    env_str,
)

ROOT = Path(__file__).resolve().parents[2]
NAME = "MEMORYADMIN_TEST_ONLY_VALUE"


@pytest.fixture(autouse=True)
def clean(monkeypatch):  # type: ignore[no-untyped-def]
    monkeypatch.delenv(NAME, raising=False)
    monkeypatch.delenv(f"{NAME}_FILE", raising=False)


@pytest.mark.parametrize(
    ("value", "expected"), [("true", True), ("false", False), ("TRUE", True), ("False", False)]
)
def test_it_reads_true_and_false(monkeypatch, value, expected):
    monkeypatch.setenv(NAME, value)
    assert env_bool(NAME, not expected) is expected


@pytest.mark.parametrize(
    "value", ["1", "0", "yes", "no", "on", "off", "t", " true", "true ", "flase"]
)
def test_it_rejects_every_other_boolean_spelling(monkeypatch, value):
    monkeypatch.setenv(NAME, value)
    with pytest.raises(ConfigError, match=NAME):
        env_bool(NAME, False)


@pytest.mark.parametrize("default", [True, False])
def test_it_uses_the_default_when_unset_or_empty(monkeypatch, default):
    assert env_bool(NAME, default) is default
    monkeypatch.setenv(NAME, "")
    assert env_bool(NAME, default) is default
    assert env_str(NAME, "d") == "d"


def test_it_reads_integers_strictly(monkeypatch):
    assert env_int(NAME, 7) == 7
    monkeypatch.setenv(NAME, "42")
    assert env_int(NAME, 7) == 42
    monkeypatch.setenv(NAME, "4.2")
    with pytest.raises(ConfigError, match="integer"):
        env_int(NAME, 7)


def test_it_refuses_an_integer_below_its_minimum(monkeypatch):
    monkeypatch.setenv(NAME, "0")
    assert env_int(NAME, 7, minimum=0) == 0
    monkeypatch.setenv(NAME, "-1")
    with pytest.raises(ConfigError, match="at least 0, not -1"):
        env_int(NAME, 7, minimum=0)


def test_it_reads_comma_separated_lists(monkeypatch):
    assert env_list(NAME, ["a"]) == ["a"]
    monkeypatch.setenv(NAME, " x.example , ,y.example,")
    assert env_list(NAME, []) == ["x.example", "y.example"]


def test_it_requires_a_required_value(monkeypatch):
    with pytest.raises(ConfigError, match=f"{NAME} must be set"):
        env_required(NAME)
    monkeypatch.setenv(NAME, "v")
    assert env_required(NAME) == "v"


def test_it_reads_a_value_from_a_file(monkeypatch, tmp_path):
    secret_file = tmp_path / "secret"
    secret_file.write_text("from-a-file\n", encoding="utf-8")
    monkeypatch.setenv(f"{NAME}_FILE", str(secret_file))
    assert env_str(NAME) == "from-a-file"
    secret_file.write_text("true\n", encoding="utf-8")
    assert env_bool(NAME, False) is True


def test_it_refuses_a_value_and_a_file_together(monkeypatch, tmp_path):
    (tmp_path / "s").write_text("x", encoding="utf-8")
    monkeypatch.setenv(f"{NAME}_FILE", str(tmp_path / "s"))
    monkeypatch.setenv(NAME, "y")
    with pytest.raises(ConfigError, match="not both"):
        env_str(NAME)


def test_it_reports_an_unreadable_file_as_a_config_error(monkeypatch, tmp_path):
    monkeypatch.setenv(f"{NAME}_FILE", str(tmp_path / "missing"))
    with pytest.raises(ConfigError, match=f"{NAME}_FILE"):
        env_str(NAME)


# --- the settings module in a fresh process ----------------------------------------------


def run_python(args: list[str], tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """Run with a clean environment: only what the test names, plus PATH and a scratch DATA_DIR."""
    clean_env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "LANG": "C.UTF-8"}
    clean_env["MEMORYADMIN_DATA_DIR"] = str(tmp_path / "data")
    clean_env.update(env)
    return subprocess.run(
        [sys.executable, *args],
        cwd=ROOT,
        env=clean_env,
        capture_output=True,
        text=True,
        timeout=120,
    )


IMPORT_SETTINGS = ["-c", "import memoryadmin.settings as s; print(s.DEBUG, len(s.SECRET_KEY))"]


def test_it_refuses_to_start_without_a_secret_key_in_production(tmp_path):
    result = run_python(IMPORT_SETTINGS, tmp_path)
    assert result.returncode != 0
    assert "ConfigError: MEMORYADMIN_SECRET_KEY must be set" in result.stderr


def test_it_starts_without_a_secret_key_only_in_debug(tmp_path):
    result = run_python(IMPORT_SETTINGS, tmp_path, MEMORYADMIN_DEBUG="true")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split()[0] == "True"


def test_it_refuses_a_malformed_debug_flag(tmp_path):
    result = run_python(IMPORT_SETTINGS, tmp_path, MEMORYADMIN_DEBUG="yes")
    assert result.returncode != 0
    assert "MEMORYADMIN_DEBUG must be 'true' or 'false'" in result.stderr


def test_it_refuses_a_negative_brain_retention_at_start(tmp_path):
    env = {"MEMORYADMIN_DEBUG": "true"}
    result = run_python(
        IMPORT_SETTINGS, tmp_path, **env, MEMORYADMIN_BRAIN_WITHDRAWN_RETENTION_DAYS="-3"
    )
    assert result.returncode != 0
    assert "MEMORYADMIN_BRAIN_WITHDRAWN_RETENTION_DAYS must be at least 0" in result.stderr


def test_it_reads_the_secret_key_from_a_file(tmp_path):
    key = secrets.token_urlsafe(50)
    (tmp_path / "key").write_text(key + "\n", encoding="utf-8")
    result = run_python(
        IMPORT_SETTINGS, tmp_path, MEMORYADMIN_SECRET_KEY_FILE=str(tmp_path / "key")
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["False", str(len(key))]


PRODUCTION = {
    "MEMORYADMIN_DEBUG": "false",
    "MEMORYADMIN_SECRET_KEY": secrets.token_urlsafe(50),
    "MEMORYADMIN_ALLOWED_HOSTS": "memory.example.org",
}


@pytest.fixture(scope="module")
def collected(tmp_path_factory) -> Path:  # type: ignore[no-untyped-def]
    """A STATIC_ROOT that `collectstatic` filled, with production settings."""
    tmp = tmp_path_factory.mktemp("static")
    result = run_python(
        ["manage.py", "collectstatic", "--noinput", "-v0"],
        tmp,
        **PRODUCTION,
        MEMORYADMIN_STATIC_ROOT=str(tmp / "static"),
    )
    assert result.returncode == 0, result.stderr
    return tmp / "static"


def test_it_passes_check_deploy_with_production_settings(tmp_path, collected):
    result = run_python(
        ["manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        tmp_path,
        **PRODUCTION,
        MEMORYADMIN_STATIC_ROOT=str(collected),
    )
    output = result.stdout + result.stderr
    issues = [line for line in output.splitlines() if line.startswith("?: (") or ": (" in line]
    # drf-spectacular reports schema warnings through this check too: none are tolerated.
    assert issues == [], output
    assert result.returncode == 0, output
    assert "System check identified no issues" in result.stdout


def test_it_fails_check_deploy_when_security_is_turned_off(tmp_path):
    result = run_python(
        ["manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        tmp_path,
        MEMORYADMIN_SECRET_KEY=secrets.token_urlsafe(50),
        MEMORYADMIN_ALLOWED_HOSTS="memory.example.org",
        MEMORYADMIN_SECURE_SSL_REDIRECT="false",
        MEMORYADMIN_SECURE_COOKIES="false",
    )
    assert result.returncode != 0
    assert "security.W008" in result.stderr and "security.W012" in result.stderr


WSGI_IMPORT = ["-c", "import memoryadmin.wsgi; print('started')"]


def test_a_production_server_without_collectstatic_refuses_to_start_saying_why(tmp_path):
    static_root = tmp_path / "never-collected"
    env = {**PRODUCTION, "MEMORYADMIN_STATIC_ROOT": str(static_root)}
    result = run_python(WSGI_IMPORT, tmp_path, **env)
    assert result.returncode != 0
    assert "ImproperlyConfigured: Static files are not collected" in result.stderr
    assert "python manage.py collectstatic --noinput" in result.stderr
    check = run_python(["manage.py", "check", "--deploy"], tmp_path, **env)
    assert check.returncode != 0 and "memoryadmin.E001" in check.stderr
    # migrate and collectstatic itself are not held up by it.
    plain = run_python(["manage.py", "check"], tmp_path, **env)
    assert plain.returncode == 0, plain.stderr


def test_a_production_server_starts_from_a_collected_static_root(tmp_path, collected):
    result = run_python(WSGI_IMPORT, tmp_path, **PRODUCTION, MEMORYADMIN_STATIC_ROOT=str(collected))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "started"
    assert (collected / "memoryadmin" / "favicon.svg").is_file()


def test_debug_needs_no_collectstatic(tmp_path):
    env = {"MEMORYADMIN_DEBUG": "true", "MEMORYADMIN_STATIC_ROOT": str(tmp_path / "none")}
    result = run_python(WSGI_IMPORT, tmp_path, **env)
    assert result.returncode == 0, result.stderr


# --- one slug rule: the form, the service and the command agree ---------------------------


@pytest.mark.parametrize(
    ("slug", "ok"),
    [
        ("team-42", True),
        ("a", True),
        ("Team", False),
        ("team_42", False),
        ("-a", False),
        ("a--b", False),
        ("a" * 64, True),
        ("a" * 65, False),
    ],
)
def test_the_form_and_the_service_apply_the_same_slug_rule(slug, ok, db):
    from django.core.exceptions import ValidationError

    from memoryadmin.audit import Actor
    from memoryadmin.forms import TeamCreateForm
    from memoryadmin.services import team_create

    form = TeamCreateForm({"slug": slug, "name": "N"})
    assert form.is_valid() is ok, form.errors
    try:
        team_create(actor=Actor.system(), slug=slug, name="N")
    except ValidationError:
        created = False
    else:
        created = True
    assert created is ok


# --- the README's settings table matches the code ------------------------------------------


def test_every_setting_read_from_the_environment_has_a_readme_row():
    import re

    read = set(
        re.findall(r'"(MEMORYADMIN_[A-Z_]+)"', (ROOT / "memoryadmin/settings.py").read_text())
    )
    rows = set(re.findall(r"^\| `(MEMORYADMIN_[A-Z_]+)`", (ROOT / "README.md").read_text(), re.M))
    assert read - rows == set()


def test_the_readme_gives_the_bot_identity_the_code_uses():
    import re

    from django.conf import settings

    row = re.search(
        r"^\| `MEMORYADMIN_REVIEW_BOT_IDENTITY` \| `([^`]+)`",
        (ROOT / "README.md").read_text(),
        re.M,
    )
    assert row is not None
    assert row.group(1) == settings.REVIEW_BOT_IDENTITY  # the tests leave the default alone

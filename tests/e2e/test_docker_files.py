"""The deployment files agree with each other and with docs/deployment.md (no browser, no engine).

`docker-compose config` validates docker/compose.yaml without a Docker engine (Debian's
docker-compose package); the test is skipped without it unless
MEMORYADMIN_REQUIRE_DOCKER_COMPOSE=true.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
from ruamel.yaml import YAML

ROOT = Path(__file__).resolve().parent.parent.parent
COMPOSE = ROOT / "docker" / "compose.yaml"
DOCKERFILE = ROOT / "docker" / "Dockerfile"
DEPLOYMENT_DOC = ROOT / "docs" / "deployment.md"
WORKERS = ("worker", "worker-sources", "worker-git", "worker-webhooks")
PROCESSES = ("migrate", "web", *WORKERS, "beat")


def documented_commands() -> dict[str, list[str]]:
    """The one ```procfile block of docs/deployment.md, as {process: argv}."""
    blocks = re.findall(r"^```procfile\n(.*?)^```$", DEPLOYMENT_DOC.read_text(), re.M | re.S)
    assert len(blocks) == 1, "docs/deployment.md must have exactly one ```procfile block"
    commands = {}
    for line in blocks[0].splitlines():
        if line.strip():
            name, command = line.split(":", 1)
            commands[name.strip()] = shlex.split(command)
    return commands


def service_commands(compose: dict) -> dict[str, list[str]]:  # type: ignore[type-arg]
    commands = {}
    for name in PROCESSES:
        command = compose["services"][name]["command"]
        commands[name] = shlex.split(command) if isinstance(command, str) else list(command)
    return commands


def load_compose_file() -> dict:  # type: ignore[type-arg]
    return YAML(typ="safe", pure=True).load(COMPOSE.read_text())


def test_it_documents_exactly_the_commands_compose_runs() -> None:
    documented = documented_commands()
    assert sorted(documented) == sorted(PROCESSES)
    assert service_commands(load_compose_file()) == documented


def test_it_makes_web_the_images_default_command() -> None:
    cmd_lines = [line for line in DOCKERFILE.read_text().splitlines() if line.startswith("CMD ")]
    assert len(cmd_lines) == 1
    assert json.loads(cmd_lines[0].removeprefix("CMD ")) == documented_commands()["web"]


def test_it_runs_web_and_workers_only_after_migrate_completes() -> None:
    services = load_compose_file()["services"]
    for name in ("web", *WORKERS, "beat"):
        assert services[name]["depends_on"]["migrate"] == {
            "condition": "service_completed_successfully"
        }
        assert "app-data:/data" in services[name]["volumes"]
    assert services["migrate"]["restart"] == "no"
    assert services["web"]["healthcheck"]["test"] == ["CMD", "python", "/app/docker/healthcheck.py"]


def _compose_env(**extra: str) -> dict[str, str]:
    # Only what compose needs: variables from the test session must not leak into interpolation.
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/")}
    env.update(extra)
    return env


def _docker_compose() -> str:
    found = shutil.which("docker-compose")
    if found is None:
        if os.environ.get("MEMORYADMIN_REQUIRE_DOCKER_COMPOSE", "").lower() == "true":
            pytest.fail("docker-compose is missing and MEMORYADMIN_REQUIRE_DOCKER_COMPOSE=true")
        pytest.skip("docker-compose is not installed (apt-get install docker-compose)")
    return found


def test_it_passes_docker_compose_config() -> None:
    result = subprocess.run(
        [_docker_compose(), "-f", str(COMPOSE), "config"],
        env=_compose_env(MEMORYADMIN_SECRET_KEY="k" * 50, POSTGRES_PASSWORD="pw"),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    resolved = YAML(typ="safe", pure=True).load(result.stdout)
    assert service_commands(resolved) == documented_commands()
    web_env = resolved["services"]["web"]["environment"]
    assert web_env["MEMORYADMIN_SECRET_KEY"] == "k" * 50
    assert web_env["DATABASE_URL"] == "postgres://memoryadmin:pw@postgres:5432/memoryadmin"
    assert web_env["REDIS_URL"] == "redis://redis:6379/0"
    assert web_env["MEMORYADMIN_DATA_DIR"] == "/data"


def test_it_refuses_compose_without_a_secret_key() -> None:
    result = subprocess.run(
        [_docker_compose(), "-f", str(COMPOSE), "config"],
        env=_compose_env(POSTGRES_PASSWORD="pw"),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode != 0
    assert "MEMORYADMIN_SECRET_KEY" in result.stderr


def test_it_runs_one_worker_for_each_queue_group_covering_every_queue() -> None:
    from memoryadmin.celery import queue_names

    consumed: list[str] = []
    for name in WORKERS:
        argv = documented_commands()[name]
        assert argv[:4] == ["celery", "-A", "memoryadmin", "worker"], argv
        assert "-Q" in argv, f"{name} must name its queues (one worker per queue group)"
        consumed += argv[argv.index("-Q") + 1].split(",")
    assert sorted(consumed) == sorted(queue_names("memoryadmin"))  # each queue exactly once

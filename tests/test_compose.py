"""compose.yaml, checked without Docker: the services a scaled-out deployment needs, their
health checks and volumes, and the settings each replica gets (every one a real setting)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from taskwire.settings import Settings

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return yaml.safe_load((REPO / "compose.yaml").read_text())


@pytest.fixture(scope="module")
def replicas(compose: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The taskwire services: those built from this repository's Dockerfile."""
    return {name: spec for name, spec in compose["services"].items() if spec.get("build") == "."}


def env(spec: dict[str, Any]) -> dict[str, Any]:
    return spec.get("environment") or {}


def volume_names(spec: dict[str, Any]) -> dict[str, str]:
    """Named volumes of a service, by mount point."""
    mounts = {}
    for entry in spec.get("volumes", []):
        source, target = entry.split(":")[:2]
        if not source.startswith((".", "/")):
            mounts[target] = source
    return mounts


def test_there_are_a_load_balancer_two_replicas_postgres_and_redis(compose, replicas) -> None:
    services = compose["services"]
    assert {"lb", "postgres", "redis"} <= set(services)
    assert len(replicas) >= 2
    assert services["postgres"]["image"].startswith("postgres:")
    assert services["redis"]["image"].startswith("redis:")
    assert services["lb"]["image"].startswith("nginx:")


def test_every_service_has_a_health_check(compose) -> None:
    for name, spec in compose["services"].items():
        test = spec.get("healthcheck", {}).get("test")
        assert test and test[0] in ("CMD", "CMD-SHELL"), f"{name} has no health check"


def test_replicas_are_ready_only_when_store_and_bus_are(replicas) -> None:
    for name, spec in replicas.items():
        assert any("/ready" in part for part in spec["healthcheck"]["test"]), name


def test_each_replica_gets_the_scale_out_settings(compose, replicas) -> None:
    postgres = compose["services"]["postgres"]["environment"]
    for name, spec in replicas.items():
        settings = env(spec)
        database = settings["OH_DATABASE_URL"]
        assert database.startswith("postgresql://") and "@postgres:5432/" in database, name
        assert database.endswith("/" + postgres["POSTGRES_DB"]) and postgres["POSTGRES_USER"] in database
        assert postgres["POSTGRES_PASSWORD"] in database  # the same default and variable
        assert settings["OH_REDIS_URL"].startswith("redis://redis:6379"), name
        assert settings["OH_HOST"] == "0.0.0.0" and settings["OH_PORT"] == "8000", name
        # Binding every interface needs API keys; compose refuses to start without them.
        assert re.fullmatch(r"\$\{OH_SESSION_API_KEYS:\?.+\}", settings["OH_SESSION_API_KEYS"]), name
        assert float(settings["OH_LEASE_SECONDS"]) > 0
    ids = [env(spec)["OH_REPLICA_ID"] for spec in replicas.values()]
    assert len(set(ids)) == len(ids), "replica ids must differ: they name lease owners"


def test_replicas_get_the_same_settings_but_their_id(replicas) -> None:
    shared = [{k: v for k, v in env(spec).items() if k != "OH_REPLICA_ID"} for spec in replicas.values()]
    assert all(settings == shared[0] for settings in shared)


def test_every_setting_given_is_a_real_setting(compose, replicas) -> None:
    known = {f"OH_{name.upper()}" for name in Settings.model_fields}
    for name, spec in replicas.items():
        unknown = set(env(spec)) - known
        assert not unknown, f"{name} sets unknown settings {sorted(unknown)}"


def test_replicas_share_the_workspace_and_the_databases_keep_theirs(compose, replicas) -> None:
    declared = set(compose.get("volumes") or {})
    workspaces = set()
    for name, spec in replicas.items():
        mounts = volume_names(spec)
        workspace = mounts.get(env(spec)["OH_WORKSPACE_PATH"])
        assert workspace in declared, f"{name}'s workspace is not on a declared volume"
        workspaces.add(workspace)
    assert len(workspaces) == 1, "a replica taking a conversation over needs its files"
    assert volume_names(compose["services"]["postgres"]).get("/var/lib/postgresql/data") in declared
    for spec in compose["services"].values():
        assert set(volume_names(spec).values()) <= declared


def test_start_order_follows_health(compose, replicas) -> None:
    for name, spec in replicas.items():
        for dependency in ("postgres", "redis"):
            assert spec["depends_on"][dependency]["condition"] == "service_healthy", name
    lb = compose["services"]["lb"]["depends_on"]
    assert set(lb) == set(replicas) and all(d["condition"] == "service_healthy" for d in lb.values())


def test_the_load_balancer_reaches_every_replica_and_passes_websockets(compose, replicas) -> None:
    mounts = [entry.split(":") for entry in compose["services"]["lb"]["volumes"]]
    config_file = next(REPO / source for source, target, *_ in mounts if target.startswith("/etc/nginx/"))
    config = config_file.read_text()
    upstreams = set(re.findall(r"^\s*server\s+([\w.-]+):8000\b", config, re.MULTILINE))
    assert upstreams == set(replicas)
    assert re.search(r"proxy_set_header\s+Upgrade\s+\$http_upgrade;", config)
    assert re.search(r"proxy_set_header\s+Connection\s+\$connection_upgrade;", config)
    assert re.search(r"proxy_http_version\s+1\.1;", config)
    assert re.search(r"proxy_read_timeout\s+\d+h;", config)  # sockets outlive a minute of quiet
    port = compose["services"]["lb"]["ports"][0].rsplit(":", 1)[1]
    assert re.search(rf"listen\s+{port};", config)


def test_the_image_serves_on_the_port_the_replicas_are_told(replicas) -> None:
    dockerfile = (REPO / "Dockerfile").read_text()
    assert re.search(r'^CMD \["taskwire", "serve"\]', dockerfile, re.MULTILINE)
    assert re.search(r"^EXPOSE 8000$", dockerfile, re.MULTILINE)
    assert "/ready" in dockerfile  # the image alone is health-checked the same way

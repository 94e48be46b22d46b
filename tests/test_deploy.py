"""Lint the deployment files as data, with no Docker: compose.yml, redis.conf, the App
manifest, .env.example, the Dockerfiles, Flower's Celery settings, and the Celery
configuration the workers run with.

Each test pins one promise of deploy/README.md that an edit could silently break: a GPU
worker holds no GitHub credential, Redis never evicts, every setting is documented, the
App asks for no more than it needs, and a running GPU job is never handed to a second
worker.
"""

from __future__ import annotations

import html
import json
import re
import runpy
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource

from triagebot.settings import Settings, load_settings
from triagebot.workers.app import celery_config

ROOT = Path(__file__).resolve().parents[1]
DEPLOY = ROOT / "deploy"
SERVICES = {"api", "triage", "gpu-h100-0", "redis", "flower"}
GPU_SERVICE = re.compile(r"^gpu-([a-z0-9][a-z0-9-]*)-([0-9]+)$")
# What a GPU worker may be given: queue and runner settings, its GPU and the model cache.
GPU_SETTINGS = {
    "redis_url", "namespace", "job_time_limit_s", "visibility_timeout_s", "max_attempts",
    "lock_ttl_s", "heartbeat_s", "worker_heartbeat_max_age_s", "job_ttl_s", "gpu_kinds",
    "default_gpu", "progress_interval_s", "data_dir", "env_cache_dir", "run_local",
    "silence_limit_s", "escalate", "bisect_index", "bisect_find_links",
    "bisect_commits_wait_s", "docs_url",
}
# The modules a runner (GPU or cpu worker) runs: every setting they read must reach it.
RUNNER_SOURCES = [ROOT / "triagebot" / "workers" / "runner.py",
                  ROOT / "triagebot" / "workers" / "runner_bisect.py",
                  *sorted((ROOT / "triagebot" / "bisect").glob("*.py")),
                  *sorted((ROOT / "triagebot" / "run").glob("*.py"))]
# Read by runners but never passed: their value is the same everywhere (or fixed above).
RUNNER_FIXED = {"namespace"}
GPU_OTHER_ENV = {"CUDA_VISIBLE_DEVICES", "HF_HOME", "HF_HUB_OFFLINE"}
CREDENTIAL = re.compile(r"GITHUB|APP_|WEBHOOK|TOKEN|PRIVATE_KEY|SECRET")
INTERPOLATION = re.compile(r"\$\{([A-Z0-9_]+)(?::?-([^}]*))?\}")
ENV_LINE = re.compile(r"^(#?)(TRIAGEBOT_[A-Z0-9_]+)=(.*)$")
# Values that differ from the settings' defaults on purpose: compose's Redis host.
COMPOSE_ONLY_DEFAULTS = {"TRIAGEBOT_REDIS_URL"}


class IsolatedSettings(Settings):
    """Settings from keyword arguments only: this machine's environment and .env are not
    what the deploy files are checked against."""

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings,)


def _field(env_name: str) -> str:
    assert env_name.startswith("TRIAGEBOT_"), env_name
    return env_name.removeprefix("TRIAGEBOT_").lower()


def _validated(env_name: str, value: str) -> Any:
    field = _field(env_name)
    return getattr(IsolatedSettings(**{field: value}), field)


def _default(env_name: str) -> Any:
    return getattr(IsolatedSettings(), _field(env_name))


def _seconds(duration: str) -> float:
    match = re.fullmatch(r"(?:(\d+)m)?(?:(\d+)s)?", duration)
    assert match is not None and duration, f"unreadable duration {duration!r}"
    return int(match[1] or 0) * 60 + int(match[2] or 0)


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    data = yaml.safe_load((DEPLOY / "compose.yml").read_text())
    assert isinstance(data, dict)
    return data


@pytest.fixture(scope="module")
def services(compose: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return dict(compose["services"])


def _env(service: dict[str, Any]) -> dict[str, str]:
    raw = service.get("environment") or {}
    if isinstance(raw, list):
        pairs = (item.split("=", 1) if "=" in item else (item, "") for item in raw)
        return {k: v for k, v in pairs}
    return {str(k): str(v) for k, v in raw.items()}


def _gpu_services(services: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {name: svc for name, svc in services.items() if GPU_SERVICE.match(name)}


def _option(command: list[str], flag: str) -> str:
    assert flag in command, f"{flag} missing from {command}"
    return command[command.index(flag) + 1]


# --- compose: the services ------------------------------------------------------------------


def test_compose_has_the_five_services_and_nothing_else_by_default(services):
    assert set(services) >= SERVICES
    # Anything else (the model fetch step) runs only when asked for by profile.
    for name in set(services) - SERVICES:
        assert services[name].get("profiles"), f"{name} would start with `compose up`"


def test_api_serves_the_webhook_app_on_8000_with_a_healthcheck(services):
    api = services["api"]
    assert api["command"] == ["serve"]
    env = _env(api)
    assert env["TRIAGEBOT_HOST"] == "0.0.0.0"
    assert env["TRIAGEBOT_PORT"] == "8000"
    assert any(str(p).endswith("8000:8000") for p in api["ports"])
    check = " ".join(api["healthcheck"]["test"])
    assert "http://127.0.0.1:8000/healthz" in check


def test_only_the_triage_worker_holds_the_private_key(compose, services):
    holders = {name for name, svc in services.items() if svc.get("secrets")}
    assert holders == {"triage"}
    (secret,) = services["triage"]["secrets"]
    assert secret in compose["secrets"]
    assert compose["secrets"][secret]["file"]
    assert _env(services["triage"])["TRIAGEBOT_APP_PRIVATE_KEY_FILE"] == f"/run/secrets/{secret}"
    assert _option(services["triage"]["command"], "--queues") == "triage"


def test_gpu_workers_reserve_one_gpu_each_and_serve_its_queue(services):
    gpus = _gpu_services(services)
    assert gpus, "no gpu-<kind>-<N> service"
    kinds = IsolatedSettings().gpu_kinds
    for name, svc in gpus.items():
        match = GPU_SERVICE.match(name)
        assert match is not None
        kind, index = match[1], match[2]
        (device,) = svc["deploy"]["resources"]["reservations"]["devices"]
        assert device["driver"] == "nvidia"
        assert device["device_ids"] == [index]
        assert "gpu" in device["capabilities"]
        # Inside the container the one reserved GPU is index 0, whichever it is on the host.
        assert _env(svc)["CUDA_VISIBLE_DEVICES"] == "0"
        assert kind in kinds
        assert _option(svc["command"], "--queues") == f"gpu-{kind}"
        assert _option(svc["command"], "-n") == f"{name}@%h"
        assert "--concurrency" not in svc["command"]


def test_gpu_workers_hold_no_github_credentials(services):
    for name, svc in _gpu_services(services).items():
        assert "env_file" not in svc, f"{name} would receive the whole .env"
        assert not svc.get("secrets"), name
        env = _env(svc)
        for key, value in env.items():
            assert not CREDENTIAL.search(key), f"{name}: {key}"
            for ref, _ in INTERPOLATION.findall(value):
                assert not CREDENTIAL.search(ref), f"{name}: {key} reads {ref}"
        settings = {_field(k) for k in env if k.startswith("TRIAGEBOT_")}
        assert settings <= GPU_SETTINGS, f"{name}: {settings - GPU_SETTINGS}"
        assert set(env) - {f"TRIAGEBOT_{s.upper()}" for s in settings} <= GPU_OTHER_ENV
    image = (DEPLOY / "Dockerfile.gpu").read_text()
    assert not CREDENTIAL.search(image)


def _settings_read_by_runners() -> set[str]:
    found: set[str] = set()
    for path in RUNNER_SOURCES:
        found |= set(re.findall(r"\bsettings\.([a-z_][a-z0-9_]*)\b", path.read_text()))
    return found & set(Settings.model_fields)


def test_every_setting_a_runner_reads_reaches_every_runner(services):
    # Issue 41, item 5: the bisect settings were missing, so the acknowledgement counted
    # steps from the configured index while runners walked PyPI.
    read = _settings_read_by_runners()
    assert {"bisect_index", "bisect_find_links", "bisect_commits_wait_s"} <= read
    runners = {**_gpu_services(services), "runner-cpu-0": services["runner-cpu-0"]}
    for name, svc in runners.items():
        passed = {_field(k) for k in _env(svc) if k.startswith("TRIAGEBOT_")}
        missing = read - passed - RUNNER_FIXED
        assert not missing, f"{name} is not given {sorted(missing)}"


def test_gpu_workers_read_models_offline_from_a_read_only_cache(services):
    for name, svc in _gpu_services(services).items():
        env = _env(svc)
        assert env["HF_HUB_OFFLINE"] == "1"
        mounts = [str(v) for v in svc["volumes"]]
        assert f"hf-cache:{env['HF_HOME']}:ro" in mounts, name
        for target in (env["TRIAGEBOT_ENV_CACHE_DIR"], env["TRIAGEBOT_DATA_DIR"]):
            assert any(m.split(":")[1] == target and not m.endswith(":ro") for m in mounts)


def test_workers_stop_with_a_soft_shutdown_that_fits_the_grace_period(services):
    soft = celery_config(load_settings())["worker_soft_shutdown_timeout"]
    for name in ["triage", *_gpu_services(services)]:
        svc = services[name]
        # SIGTERM would start Celery's warm shutdown, which waits for a job of hours.
        assert svc["stop_signal"] == "SIGQUIT", name
        assert _seconds(svc["stop_grace_period"]) > soft, name


def test_compose_defaults_are_the_settings_defaults():
    text = (DEPLOY / "compose.yml").read_text()
    found = INTERPOLATION.findall(text)
    assert found
    for name, default in found:
        if not name.startswith("TRIAGEBOT_"):
            continue
        assert _field(name) in Settings.model_fields, name
        if name not in COMPOSE_ONLY_DEFAULTS:
            assert _validated(name, default) == _default(name), name


# --- Redis and Flower -----------------------------------------------------------------------


def _redis_conf() -> dict[str, str]:
    conf: dict[str, str] = {}
    for line in (DEPLOY / "redis.conf").read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            key, _, value = line.partition(" ")
            conf[key.lower()] = value.strip()
    return conf


def test_redis_persists_every_second_and_never_evicts(services):
    redis = services["redis"]
    assert str(redis["image"]).startswith("redis:7")
    command = redis["command"]
    flags = dict(zip(command[2::2], command[3::2], strict=True))
    conf = _redis_conf()
    for source in (flags, {f"--{k}": v for k, v in conf.items()}):
        assert source["--appendonly"] == "yes"
        assert source["--appendfsync"] == "everysec"
        assert source["--maxmemory-policy"] == "noeviction"
    # The file Redis is started with is the one compose mounts.
    assert command[:2] == ["redis-server", "/usr/local/etc/redis/redis.conf"]
    assert "./redis.conf:/usr/local/etc/redis/redis.conf:ro" in redis["volumes"]
    assert any(str(v).endswith(f":{conf['dir']}") for v in redis["volumes"])
    assert "ports" not in redis


def test_flower_listens_on_loopback_only(services):
    flower = services["flower"]
    assert str(flower["image"]).startswith("mher/flower:")
    assert flower["ports"]
    assert all(str(p).startswith("127.0.0.1:") for p in flower["ports"])


def test_flower_uses_the_workers_key_prefix_and_visibility_timeout(services, monkeypatch):
    # Non-default values, so a config that ignored the variables would fail.
    settings = IsolatedSettings(namespace="deploy-lint", job_time_limit_s=4000,
                                visibility_timeout_s=4321, redis_url="redis://example:6379/3")
    env = _env(services["flower"])
    for name in ("TRIAGEBOT_REDIS_URL", "TRIAGEBOT_NAMESPACE", "TRIAGEBOT_VISIBILITY_TIMEOUT_S"):
        assert name in env
        monkeypatch.setenv(name, str(getattr(settings, _field(name))))
    module = env["PYTHONPATH"]
    assert f"./flower:{module}:ro" in services["flower"]["volumes"]
    flower = runpy.run_path(str(DEPLOY / "flower" / "celeryconfig.py"))
    workers = celery_config(settings)
    assert flower["broker_url"] == workers["broker_url"]
    assert flower["visibility_timeout"] == workers["visibility_timeout"]
    for key in ("visibility_timeout", "global_keyprefix"):
        assert flower["broker_transport_options"][key] == workers["broker_transport_options"][key]


# --- .env.example ---------------------------------------------------------------------------


def _env_example() -> list[tuple[bool, str, str]]:
    """(set, name, value) for every setting line; other lines must be comments."""
    found: list[tuple[bool, str, str]] = []
    for number, line in enumerate((DEPLOY / ".env.example").read_text().splitlines(), 1):
        match = ENV_LINE.match(line)
        if match:
            found.append((not match[1], match[2], match[3]))
        else:
            assert line in ("", "#") or line.startswith("# "), f"line {number}: {line!r}"
    return found


def test_env_example_names_exactly_the_settings():
    names = [name for _, name, _ in _env_example()]
    assert len(names) == len(set(names)), "a setting is listed twice"
    assert set(names) == {f"TRIAGEBOT_{field.upper()}" for field in Settings.model_fields}


def test_env_example_values_are_valid_settings():
    values = {_field(name): value for is_set, name, value in _env_example() if is_set}
    # The example secret is a placeholder on purpose: a service must refuse to start with it.
    with pytest.raises(ValueError, match="placeholder"):
        IsolatedSettings(**values)
    values["webhook_secrets"] = "a-real-secret-0123456789abcdef"
    settings = IsolatedSettings(**values)
    settings.require_webhook()
    assert settings.app_private_key is None, "the key belongs in the secret file"
    assert settings.github_token is None, "the service acts as the App, with no token"


def test_env_example_values_are_the_defaults_unless_it_says_otherwise():
    # Issue 27, item 13: the file said its values were the defaults; PUBLIC_URL was not.
    comment: list[str] = []
    for line in (DEPLOY / ".env.example").read_text().splitlines():
        match = ENV_LINE.match(line)
        if match is None:
            comment = [*comment, line] if line.startswith("#") else []
            continue
        said = "Not the default" in " ".join(comment)
        comment = []
        if match[1]:
            continue  # left unset on purpose
        name, value = match[2], match[3]
        try:
            same = _validated(name, value) == _default(name)
        except ValueError:
            same = False
        assert same != said, (f"{name}={value} is {'' if same else 'not '}the default, "
                              f"and its comment {'says' if said else 'does not say'} so")


def test_env_example_agrees_with_compose_defaults():
    example = {name: value for is_set, name, value in _env_example() if is_set}
    text = (DEPLOY / "compose.yml").read_text()
    for name, default in INTERPOLATION.findall(text):
        if name in example:
            assert _validated(name, example[name]) == _validated(name, default), name


# --- the GitHub App manifest ----------------------------------------------------------------


def test_manifest_asks_for_the_minimum():
    manifest = json.loads((DEPLOY / "github-app-manifest.json").read_text())
    # members: read only for [access] teams (register_app.py --teams asks for it).
    assert manifest["default_permissions"] == {
        "issues": "write",
        "pull_requests": "write",
        "contents": "read",
        "metadata": "read",
    }
    assert sorted(manifest["default_events"]) == ["issue_comment", "issues", "pull_request"]
    assert manifest["hook_attributes"]["url"].endswith("/webhook")
    for key in ("name", "url", "redirect_url", "public"):
        assert key in manifest


def test_the_registration_page_posts_the_manifest_aimed_at_the_host(capsys):
    # Issue 27, item 13: GitHub takes a manifest only as a form POST from the browser;
    # "Settings -> Developer settings -> New GitHub App" has no place for one.
    register = runpy.run_path(str(DEPLOY / "register_app.py"))
    assert register["main"](["--host", "bot.example.org", "--org", "acme", "--teams"]) == 0
    page = capsys.readouterr().out
    form = re.search(r'<form action="([^"]+)" method="post">', page)
    assert form is not None
    assert form[1].startswith("https://github.com/organizations/acme/settings/apps/new?state=")
    value = re.search(r'<input type="hidden" name="manifest" value="([^"]+)">', page)
    assert value is not None
    manifest = json.loads(html.unescape(value[1]))
    assert manifest["hook_attributes"]["url"] == "https://bot.example.org/webhook"
    assert manifest["url"] == "https://bot.example.org"
    assert manifest["redirect_url"] == "https://bot.example.org/"
    assert manifest["default_permissions"]["members"] == "read"
    plain = register["manifest_for"]("bot.example.org")
    assert "members" not in plain["default_permissions"]
    assert register["form_url"]("https://github.com", None) == (
        "https://github.com/settings/apps/new")
    with pytest.raises(ValueError):
        register["manifest_for"]("bot.example.org/evil")


def test_readmes_register_the_app_the_way_that_works():
    main = (ROOT / "README.md").read_text()
    deploy = (DEPLOY / "README.md").read_text()
    assert "register_app.py" in deploy and "app-manifests/" in deploy
    # One place tells how: the main README points there rather than repeat it.
    assert "deploy/README.md" in main and "app-manifests/" not in main
    assert "Apps → New" not in main


# --- the cpu runner -----------------------------------------------------------------------


def test_the_cpu_runner_is_set_up_then_serves_its_queue_without_credentials(services):
    setup, runner = services["cpu-setup"], services["runner-cpu-0"]
    for svc in (setup, runner):
        assert svc["profiles"] == ["cpu"]
        assert "env_file" not in svc and not svc.get("secrets")
        assert svc["build"]["dockerfile"] == "deploy/Dockerfile.cpu"
        env = _env(svc)
        assert not any(CREDENTIAL.search(k) for k in env)
        assert {_field(k) for k in env if k.startswith("TRIAGEBOT_")} <= GPU_SETTINGS
        assert "deploy" not in svc  # no GPU reserved
    assert setup["command"][:3] == ["runner", "setup", "cpu"]
    assert _option(setup["command"], "--cache") == _env(setup)["TRIAGEBOT_ENV_CACHE_DIR"]
    assert runner["command"] == ["worker", "--queues", "gpu-cpu", "-n", "runner-cpu-0@%h"]
    assert runner["stop_signal"] == "SIGQUIT"
    # What the set-up builds is what the runner reads.
    assert set(setup["volumes"]) == set(runner["volumes"])
    assert any(v.startswith("standins:") for v in runner["volumes"])


# --- images ---------------------------------------------------------------------------------


def _wheel_inputs() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    wheel = project["tool"]["hatch"]["build"]["targets"]["wheel"]
    return {"pyproject.toml", "uv.lock", project["project"]["readme"], *wheel["packages"],
            *wheel.get("force-include", {})}


@pytest.mark.parametrize("dockerfile", ["Dockerfile", "Dockerfile.gpu", "Dockerfile.cpu"])
def test_images_run_triagebot_as_a_non_root_user(dockerfile):
    text = (DEPLOY / dockerfile).read_text()
    users = re.findall(r"^USER\s+(\S+)", text, flags=re.M)
    assert users and users[-1] not in {"root", "0"}
    assert re.search(r'^ENTRYPOINT \["triagebot"\]$', text, flags=re.M)
    if dockerfile in ("Dockerfile", "Dockerfile.cpu"):
        assert re.search(r"^FROM python:3\.11-slim\b", text, flags=re.M)
    else:
        assert re.search(r"^ARG CUDA_IMAGE=nvidia/cuda:[0-9.]+-runtime-", text, flags=re.M)
        assert re.search(r"^ARG PYTHON_VERSION=3\.11$", text, flags=re.M)
    # Installs come from the committed lock, never from a fresh resolve.
    assert re.search(r"uv sync --locked --no-editable", text)
    assert "pip install" not in text and "uv pip install" not in text
    # What the wheel is built from, and the lock, get into the build context; nothing else.
    ignore = (DEPLOY / f"{dockerfile}.dockerignore").read_text().splitlines()
    assert "*" in ignore
    allowed = {line[1:].rstrip("/") for line in ignore if line.startswith("!")}
    # The cpu runner's stand-ins need torch's CPU build, which only .wheels/ holds.
    extra = {".wheels"} if dockerfile == "Dockerfile.cpu" else set()
    assert allowed == _wheel_inputs() | extra


# --- Celery ---------------------------------------------------------------------------------


@pytest.mark.parametrize("overrides", [{}, {"job_time_limit_s": 100, "visibility_timeout_s": 130}])
def test_celery_config_keeps_long_gpu_jobs_on_one_worker(overrides):
    settings = load_settings(**overrides)
    conf = celery_config(settings)
    assert conf["worker_concurrency"] == 1
    assert conf["worker_prefetch_multiplier"] == 1
    assert conf["task_acks_late"] is True
    vt = conf["visibility_timeout"]
    assert vt == settings.visibility_timeout_s
    assert conf["broker_transport_options"]["visibility_timeout"] == vt
    assert conf["result_backend_transport_options"]["visibility_timeout"] == vt
    assert vt > conf["task_time_limit"] == settings.job_time_limit_s
    assert 0 < conf["task_soft_time_limit"] < conf["task_time_limit"]
    assert conf["result_expires"] >= 7 * 24 * 3600

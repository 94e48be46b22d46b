"""Provisioning: the current interpreter, venv builds from a local wheel, stamps, locks.

Nothing here reaches a package index: builds install a tiny wheel written to tmp_path.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import sys
import threading
import zipfile
from pathlib import Path

import pytest

from triagebot.run.provision import ProvisionError, install_commands, provision

# The package exports the function `provision`, which hides the module of the same name
# from attribute access; import_module returns the module itself.
prov = importlib.import_module("triagebot.run.provision")

SHA = "4ba787ec9" + "0" * 31


def _wheel(where: Path, name: str = "vllm", version: str = "0.0.1",
           module: str | None = None) -> Path:
    """A pure-Python wheel whose module prints nothing and holds only a version."""
    where.mkdir(parents=True, exist_ok=True)
    module = module or name.replace("-", "_")
    info = f"{name.replace('-', '_')}-{version}.dist-info"
    files = {
        f"{module}/__init__.py": f'__version__ = "{version}"\n',
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\n"
                         "Tag: py3-none-any\n",
    }
    files[f"{info}/RECORD"] = "".join(f"{path},,\n" for path in [*files, f"{info}/RECORD"])
    path = where / f"{name.replace('-', '_')}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as zf:
        for arc, text in files.items():
            zf.writestr(arc, text)
    return path


def test_transformers_without_version_uses_this_interpreter(tmp_path: Path) -> None:
    env = provision("transformers", None, cache_dir=tmp_path, local=False)
    assert env.kind == "local" and env.python == sys.executable
    assert env.installed_version == importlib.metadata.version("transformers")
    assert not any(tmp_path.iterdir())  # nothing built


def test_missing_engine_package_names_it_and_how_to_install(tmp_path: Path) -> None:
    with pytest.raises(ProvisionError) as err:
        provision("sglang", None, cache_dir=tmp_path, local=True)
    text = str(err.value)
    assert text.startswith("provisioning failed")
    assert "sglang" in text and "pip install sglang" in text and sys.executable in text


@pytest.mark.parametrize(("engine", "version", "says"), [
    ("vllm", "4ba787ec9", "40-character"),
    ("sglang", SHA, "no per-commit wheels"),
    ("vllm", "0.11.0; rm -rf /", "neither a release"),
    ("vllm", None, "needs a version"),
    ("tensorrt", "1.0.0", "unknown engine"),
])
def test_refused_requests(tmp_path: Path, engine: str, version: str | None, says: str) -> None:
    with pytest.raises(ProvisionError, match=says):
        provision(engine, version, cache_dir=tmp_path, local=False)
    assert not (tmp_path / f"{engine}-{version}").exists()


def test_command_lines() -> None:
    env = Path("/cache/vllm-0.11.0")
    py = "/cache/vllm-0.11.0/bin/python"
    assert install_commands("vllm", "0.11.0", env, uv="uv", base_python="/usr/bin/python3") == [
        ["uv", "venv", "--python", "/usr/bin/python3", str(env)],
        ["uv", "pip", "install", "--python", py, "vllm==0.11.0"],
    ]
    commit = install_commands("vllm", SHA, Path("/c/e"), uv="uv", base_python="p")
    assert commit[1][-4:] == ["--extra-index-url", f"https://wheels.vllm.ai/{SHA}",
                              "--torch-backend=auto", "vllm"]
    assert install_commands("transformers", "4.57.1", env, uv=None, base_python="p") == [
        ["p", "-m", "venv", "--without-pip", str(env)],
        ["p", "-m", "pip", "--python", py, "install", "--disable-pip-version-check",
         "transformers==4.57.1", "torch"],
    ]
    no_pip = install_commands("sglang", "0.5.23", env, uv=None, base_python="p",
                              base_has_pip=False, find_links=Path("/w"))
    assert no_pip[0] == ["p", "-m", "venv", str(env)]
    assert no_pip[1] == [py, "-m", "pip", "install", "--disable-pip-version-check",
                         "--no-index", "--find-links", "/w", "sglang==0.5.23"]
    with pytest.raises(ProvisionError, match="needs uv"):
        install_commands("vllm", SHA, env, uv=None, base_python="p")


def test_build_reuse_and_rebuild_of_a_half_built_env(tmp_path: Path) -> None:
    wheels, cache = tmp_path / "wheels", tmp_path / "cache"
    wheel = _wheel(wheels)
    env = provision("vllm", "0.0.1", cache_dir=cache, local=False, find_links=wheels)
    env_dir = cache / "vllm-0.0.1"
    assert env.kind == "venv" and env.path == str(env_dir)
    assert env.installed_version == "0.0.1" and Path(env.python).exists()
    assert (env_dir / prov.STAMP).exists()

    # Reuse needs no installer: with the wheel gone, a rebuild could not succeed.
    wheel.unlink()
    marker = env_dir / "marker"
    marker.write_text("kept")
    assert provision("vllm", "0.0.1", cache_dir=cache, local=False, find_links=wheels) == env
    assert marker.exists()

    # No stamp: an interrupted build. It is thrown away and built again.
    (env_dir / prov.STAMP).unlink()
    _wheel(wheels)
    again = provision("vllm", "0.0.1", cache_dir=cache, local=False, find_links=wheels)
    assert again == env and not marker.exists() and (env_dir / prov.STAMP).exists()


def test_installer_failure_carries_its_output(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    _wheel(wheels, version="0.0.1")
    with pytest.raises(ProvisionError) as err:
        provision("vllm", "0.0.2", cache_dir=tmp_path / "cache", local=False,
                  find_links=wheels)
    assert str(err.value).startswith("provisioning failed")
    assert "0.0.2" in err.value.output_tail
    assert not (tmp_path / "cache" / "vllm-0.0.2" / prov.STAMP).exists()


def test_package_that_does_not_import_is_refused(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    _wheel(wheels, module="not_vllm")
    with pytest.raises(ProvisionError, match="did not import"):
        provision("vllm", "0.0.1", cache_dir=tmp_path / "cache", local=False,
                  find_links=wheels)


def test_two_builders_share_one_build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    wheels = tmp_path / "wheels"
    _wheel(wheels)
    calls: list[list[str]] = []
    real = prov.run_installer

    def counting(argv: list[str], log_path: Path) -> None:
        calls.append(argv)
        real(argv, log_path)

    monkeypatch.setattr(prov, "run_installer", counting)
    results: list[object] = []

    def build() -> None:
        results.append(provision("vllm", "0.0.1", cache_dir=tmp_path / "cache",
                                 local=False, find_links=wheels))

    threads = [threading.Thread(target=build) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 2 and results[0] == results[1]
    assert len(calls) == 2  # one venv, one install: the second builder reused the first's


def test_commit_and_release_checks_after_install() -> None:
    prov._check_installed("vllm", SHA, "0.33.1rc1.dev5+g4ba787ec9")
    with pytest.raises(ProvisionError, match="not a build of that commit"):
        prov._check_installed("vllm", SHA, "0.33.0")
    prov._check_installed("vllm", "0.11", "0.11.0")
    prov._check_installed("vllm", "0.11.0", "0.11.0+cu129")
    with pytest.raises(ProvisionError, match="was installed"):
        prov._check_installed("vllm", "0.11.0", "0.11.2")


def test_installer_gets_no_worker_secrets() -> None:
    env = prov._installer_env({"PATH": "/bin", "GITHUB_TOKEN": "x", "HF_TOKEN": "y",
                               "TRIAGEBOT_APP_KEY": "z", "PIP_INDEX_URL": "http://i"})
    assert env == {"PATH": "/bin", "PIP_INDEX_URL": "http://i"}

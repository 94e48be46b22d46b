"""vllm-mlx on MLX's Linux CPU backend as the engine environment of the `cpu` runner.

Each release we run has a lock committed in `triagebot/engines/locks/vllm-mlx-X.txt`
(written by `write_lock`, the version set and its reasons in
`triagebot.engines.vllm_mlx_cpu`), and an environment is exactly that lock, installed
with `uv pip sync --require-hashes` from PyPI into `<cache>/vllm-mlx-X`, built once and
reused; a changed lock is a rebuilt environment. Nothing else is downloaded: the
stand-in is built here (`build_standin`) and `run_env` keeps Hugging Face offline.

The stand-in is trained inside that environment (`triagebot/run/mlx_train.py`), because
MLX, mlx-lm's Qwen3-Next and vllm-mlx's own MTP module live there; the tokenizer and the
corpus are the project's (`triagebot.run.standins`), made here.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from triagebot.engines import mlx_standin
from triagebot.engines import vllm_mlx_cpu as locks
from triagebot.engines.mlx_standin import STANDIN, MlxRecipe, MlxVlRecipe
from triagebot.run.provision import (
    STAMP,
    ProvisionedEnv,
    ProvisionError,
    check_modules,
    discard,
    lock_digest,
    require_uv,
    reuse_or_build,
    run_installer,
    tail,
)

ENGINE = "vllm-mlx"
TRAIN_SCRIPT = Path(__file__).with_name("mlx_train.py")


def lock_path(version: str) -> Path:
    path = locks.lock_path(version)
    if not path.exists():
        raise ProvisionError(f"there is no lock for vllm-mlx {version}; locked: "
                             f"{', '.join(locks.locked_releases()) or 'none'}")
    return path


def env_dir(cache_dir: Path, version: str) -> Path:
    return cache_dir / f"vllm-mlx-{version}"


def install_commands(target: Path, lock: Path, *, uv: str) -> list[list[str]]:
    python = str(target / "bin" / "python")
    return [[uv, "venv", "--quiet", "--python", locks.PYTHON, str(target)],
            [uv, "pip", "sync", "--python", python, "--require-hashes", str(lock)]]


def provision(version: str, *, cache_dir: Path, uv: str | None = None) -> ProvisionedEnv:
    """The environment for vllm-mlx `version`, built from its lock where missing."""
    lock = lock_path(version)
    target = env_dir(cache_dir, version)
    return reuse_or_build(cache_dir / f"vllm-mlx-{version}.lock",
                          lambda: _reuse(target, version, lock),
                          lambda: _build(target, version, lock, uv=uv or require_uv("vllm-mlx")))




def _env(target: Path, version: str, installed: str | None) -> ProvisionedEnv:
    return ProvisionedEnv(python=str(target / "bin" / "python"), engine=ENGINE,
                          version=version, kind="venv", path=str(target),
                          installed_version=installed)


def _reuse(target: Path, version: str, lock: Path) -> ProvisionedEnv | None:
    try:
        stamp = json.loads((target / STAMP).read_text())
    except (OSError, json.JSONDecodeError):
        return None
    if stamp.get("lock") != lock_digest(lock) or not os.access(target / "bin" / "python",
                                                           os.X_OK):
        return None  # the lock changed: the environment is rebuilt to match it
    return _env(target, version, stamp.get("installed_version"))


def _build(target: Path, version: str, lock: Path, *, uv: str) -> ProvisionedEnv:
    if target.exists():
        discard(target)  # no stamp: a half-built environment
    log = target.with_name(target.name + ".install.log")
    log.unlink(missing_ok=True)
    started = time.monotonic()
    for argv in install_commands(target, lock, uv=uv):
        run_installer(argv, log)
    python = str(target / "bin" / "python")
    found = check_modules(python, ("vllm_mlx", "mlx_lm", "mlx"), do_import=True)
    if found.get("vllm_mlx") is None:
        raise ProvisionError(f"vllm_mlx did not import after installing vllm-mlx {version} "
                             f"in {target}", output_tail=tail(log.read_text(errors="replace")))
    installed = found["vllm_mlx"] or ""
    if installed != version:
        raise ProvisionError(f"asked for vllm-mlx {version} but {installed} was installed")
    stamp = {"engine": ENGINE, "version": version, "installed_version": installed,
             "mlx_lm": found.get("mlx_lm"), "lock": lock_digest(lock), "python": python,
             "install_s": round(time.monotonic() - started, 1),
             "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    (target / STAMP).write_text(json.dumps(stamp, indent=2))
    return _env(target, version, installed)


def write_lock(version: str, *, uv: str | None = None, out_dir: Path | None = None) -> Path:
    """Resolve vllm-mlx `version` with its MLX CPU backend and the overrides
    `triagebot.engines.vllm_mlx_cpu` names into a hashed lock (network: PyPI)."""
    target = (out_dir or locks.lock_path(version).parent) / f"vllm-mlx-{version}.txt"
    with tempfile.TemporaryDirectory(prefix="triagebot-lock-") as tmp:
        wanted = Path(tmp) / "requirements.in"
        wanted.write_text("\n".join(locks.requirements(version)) + "\n")
        override = Path(tmp) / "overrides.txt"
        override.write_text("\n".join(locks.overrides(version)) + "\n")
        argv = [uv or require_uv("vllm-mlx"), "pip", "compile", "--quiet", str(wanted),
                "--override", str(override), "--python-version", locks.PYTHON, "--python-platform",
                locks.PLATFORM, "--generate-hashes", "--no-header", "-o", str(target)]
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=1200,
                              check=False)
    if proc.returncode != 0:
        raise ProvisionError(f"could not lock vllm-mlx {version}",
                             output_tail=tail(proc.stdout + proc.stderr))
    why = "".join(f"# {pin}: {reason}.\n"
                  for pin, reason in locks.OVERRIDES.get(version, {}).items())
    header = (f"# vllm-mlx {version} with {locks.MLX} for Python {locks.PYTHON} on x86_64 "
              "Linux, written by triagebot.run.vllm_mlx.write_lock.\n" + why +
              f"# {' and '.join(locks.LEFT_OUT)} are left out on purpose (see "
              "triagebot/engines/vllm_mlx_cpu.py).\n")
    target.write_text(header + target.read_text())
    return target


# --- the stand-in ---------------------------------------------------------------------------


def build_standin(env: ProvisionedEnv, cache_dir: Path,
                  recipe: MlxRecipe | MlxVlRecipe = STANDIN,
                  log: Callable[[str], None] | None = None) -> Path:
    """The stand-in's folder under `cache_dir`, trained in `env` where missing; built
    under a temporary name and renamed into place when complete."""
    from triagebot.run import standins

    def write(tmp: Path) -> dict[str, Any]:
        tokenizer = standins.train_tokenizer(recipe.corpus)
        tokens: dict[str, int] = {}
        if isinstance(recipe, MlxVlRecipe):
            tokenizer.add_special_tokens(
                {"additional_special_tokens": list(mlx_standin.VL_TOKENS)})
            tokenizer.chat_template = mlx_standin.VL_CHAT
            tokens = {t: tokenizer.convert_tokens_to_ids(t) for t in mlx_standin.VL_TOKENS}
            (tmp / "preprocessor_config.json").write_text(
                json.dumps(recipe.preprocessor(), indent=2))
        tokenizer.save_pretrained(tmp)
        ids: list[int] = []
        for line in standins.corpus_lines(recipe.corpus):
            ids += tokenizer.encode(" " + line, add_special_tokens=False)
        spec = {"folder": str(tmp), "ids": str(tmp / "ids.json"), "arch": recipe.ARCH,
                "config": recipe.config(len(tokenizer), tokens),
                "body": recipe.body.model_dump(), "mtp": recipe.mtp.model_dump()}
        (tmp / "ids.json").write_text(json.dumps(ids))
        (tmp / "spec.json").write_text(json.dumps(spec, indent=2))
        train_log = cache_dir / f"{recipe.folder}.train.log"
        train_log.unlink(missing_ok=True)
        # -I: this folder must not come first on sys.path, where `vllm_mlx` would be
        # triagebot's module of that name instead of the engine.
        run_installer([env.python, "-I", str(TRAIN_SCRIPT), str(tmp / "spec.json")],
                      train_log)
        (tmp / "ids.json").unlink()
        (tmp / "spec.json").unlink()
        losses = train_log.read_text(errors="replace").strip().splitlines()[-1]
        return {"recipe": recipe.model_dump(mode="json"), "model_id": recipe.model_id,
                "trained": json.loads(losses), "engine_version": env.version}

    return standins.build_once(cache_dir, recipe.folder,
                               f"{recipe.model_id} in vllm-mlx {env.version}", write,
                               log or (lambda _m: None))


# --- running ---------------------------------------------------------------------------------


def run_env() -> dict[str, str]:
    """Variables every vllm-mlx script of the cpu runner runs with."""
    return {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
            "TOKENIZERS_PARALLELISM": "false"}


def prepare(version: str, out_dir: Path, *, cache_dir: Path, standins_dir: Path,
            models: set[str] | None = None,
            log: Callable[[str], None] | None = None) -> tuple[ProvisionedEnv, dict[str, str]]:
    """Everything a vllm-mlx cpu plan needs before its first cell: the locked
    environment, the stand-ins among `models` (the text one where none is named; built
    where missing, linked into `out_dir`) and the variables its scripts run with."""
    from triagebot.run import standins

    env = provision(version, cache_dir=cache_dir)
    wanted = [mlx_standin.RECIPES[m] for m in sorted(models or {STANDIN.model_id})
              if m in mlx_standin.RECIPES]
    for recipe in wanted:
        build_standin(env, standins_dir, recipe, log=log)
    standins.link_into(out_dir, standins_dir)
    return env, run_env()


@contextlib.contextmanager
def per_run_dirs() -> Iterator[dict[str, str]]:
    """A home and temp folder for one server: vllm-mlx saves its prefix cache under
    ~/.cache/vllm-mlx at shutdown and loads it at start, which would carry one cell's
    cache into the next; each run starts from none and leaves nothing behind."""
    folder = Path(tempfile.mkdtemp(prefix="tb-mlx-"))
    try:
        (folder / "tmp").mkdir()
        yield {"HOME": str(folder), "TMPDIR": str(folder / "tmp")}
    finally:
        shutil.rmtree(folder, ignore_errors=True)

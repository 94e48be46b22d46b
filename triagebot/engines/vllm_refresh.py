"""Maintenance side of the vLLM release catalog: wheels in, key tables out.

`refresh()` fetches (or reuses) one PyPI wheel per vLLM release, reads the few config
modules straight out of the zip with `ast` and writes the table that
`vllm_catalog` ships. vLLM is never imported: the wheels need CUDA and torch, and
importing a release is not the same as reading what it declares.

This is an edge module (network, subprocess, disk). Everything that looks at source
text is a plain function of bytes, so tests drive it with a tiny hand-made wheel.
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
import subprocess
import sys
import zipfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from triagebot.engines.vllm_catalog import (
    ReleaseInfo,
    ReleaseTable,
    WheelProvenance,
    version_key,
)

# The maintenance command's defaults: every final release of these minors, plus the
# releases tests and the issue name exactly (listed so a PyPI hiccup shows up as a
# recorded failure rather than a missing row).
MINORS = range(9, 34)
EXACT_RELEASES = ("0.8.5", "0.10.0", "0.10.1.1", "0.11.0", "0.17.1", "0.20.2", "0.33.0")

# What `triagebot engines refresh-vllm` writes and where it keeps wheels by default.
SHIPPED_TABLE = Path(__file__).resolve().parent / "data" / "vllm_releases.json"
DEFAULT_CACHE = Path.home() / ".cache" / "triagebot" / "vllm-wheels"  # ~16 GB for 0.8.5-0.33

# Where each class lived over time (engines.md §7): newest layout first.
SPEC_FILES = ("vllm/config/speculative.py", "vllm/config/__init__.py", "vllm/config.py")
COMPILATION_FILES = ("vllm/config/compilation.py", "vllm/config/__init__.py", "vllm/config.py")
ENGINE_ARGS_FILES = ("vllm/engine/arg_utils.py",)
ENVS_FILE = "vllm/envs.py"
VERSION_FILE = "vllm/_version.py"
MM_PROCESSOR_BENCH = "vllm/benchmarks/mm_processor.py"
ENUMS = ("CUDAGraphMode", "CompilationMode", "CompilationLevel")

_RELEASE_RE = re.compile(r"^\d+(\.\d+)*$")
_WHEEL_RE = re.compile(r"^vllm-(?P<version>[^-]+)-(?:\d[^-]*-)?[^-]+-[^-]+-[^-]+\.whl$")

Runner = Callable[[list[str]], subprocess.CompletedProcess[str]]


class ExtractError(Exception):
    """A wheel lacks something the table needs; recorded per release, never fatal."""


# ---------------------------------------------------------------------------------------
# Top level


def refresh(
    versions: list[str] | None,
    out: Path,
    cache: Path,
    *,
    offline: bool = False,
    keep_wheels: bool = True,
    merge: bool = True,
    runner: Runner | None = None,
    log: Callable[[str], None] | None = None,
) -> ReleaseTable:
    """Build the release table for `versions` and write it to `out`.

    `versions` holds release strings ("0.17.1") or paths to local wheels; None means the
    default set (`default_versions`). Wheels are looked up in `cache` first and
    downloaded into it unless `offline`. With `merge`, releases already in `out` that
    were not refreshed are kept, so adding one release does not need every wheel.
    """
    run = runner or _run
    say = log or (lambda _msg: None)
    cache.mkdir(parents=True, exist_ok=True)
    wanted = versions if versions is not None else default_versions(cache, offline, run)
    releases: dict[str, ReleaseInfo] = dict(_load_existing(out).releases) if merge else {}
    for item in wanted:
        info = _refresh_one(item, cache, offline, keep_wheels, run)
        say(f"{info.version}: " + ("ok" if info.ok else f"FAILED ({info.error})"))
        releases[info.version] = info
    table = ReleaseTable(
        generated_by="triagebot engines refresh-vllm",
        releases=releases,
    )
    write_table(table, out)
    return table


def default_versions(cache: Path, offline: bool, run: Runner | None = None) -> list[str]:
    """Every final release of minors 0.9..0.33, plus `EXACT_RELEASES` (0.8.5 is the oldest
    release vLLM's CPU build has, so the oldest triagebot can provision).

    Every patch, not just the newest per minor: `resolve_release` only falls back to a
    lower release of the same minor, so a report on 0.17.0 needs 0.17.0 in the table.
    Online the candidates come from PyPI's index; offline from the cache's wheel names.
    A minor with no release at all is still listed (as X.Y.0) so the table records it
    as missing instead of silently skipping it.
    """
    available = _cached_versions(cache) if offline else _pypi_versions(run or _run)
    if not available and not offline:
        available = _cached_versions(cache)
    chosen = set(EXACT_RELEASES)
    for minor in MINORS:
        in_minor = [v for v in available if _is_release(v) and version_key(v)[:2] == (0, minor)]
        chosen.update(in_minor or [f"0.{minor}.0"])
    return sorted(chosen, key=version_key)


def write_table(table: ReleaseTable, out: Path) -> None:
    """Sorted keys, two-space indent, trailing newline: diffs show real changes only."""
    out.parent.mkdir(parents=True, exist_ok=True)
    data = table.model_dump(mode="json")
    out.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")


# ---------------------------------------------------------------------------------------
# One release: find or fetch a wheel, then extract


def _refresh_one(
    item: str, cache: Path, offline: bool, keep_wheels: bool, run: Runner
) -> ReleaseInfo:
    local = Path(item)
    if item.endswith(".whl") and local.is_file():
        version, wheel, origin = _wheel_version(local), local, "local"
        if not version:
            return _failed(item, "cannot read a vllm version from the wheel's file name")
    else:
        version = item.removeprefix("v")
        if not _is_release(version):
            return _failed(version, f"not a release version: {item!r}")
        found = _find_cached(cache, version)
        origin = "cache"
        if found is None and offline:
            return _failed(version, "no wheel in cache (offline)")
        if found is None:
            found, error = _download(version, cache, run)
            origin = "pypi"
            if found is None:
                return _failed(version, error)
        wheel = found
    try:
        info = extract_release(wheel, version=version)
    except Exception as exc:  # one unreadable release must not cost the whole table
        info = _failed(version, f"{type(exc).__name__}: {exc}")
    if not keep_wheels and origin != "local":
        wheel.unlink(missing_ok=True)
    return info


def _failed(version: str, error: str) -> ReleaseInfo:
    return ReleaseInfo(version=version, ok=False, error=error)


def _run(cmd: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=1800, check=False)


def _pip() -> list[str]:
    return [sys.executable, "-m", "pip"]


def _pypi_versions(run: Runner) -> list[str]:
    try:
        proc = run([*_pip(), "index", "versions", "vllm"])
    except (OSError, subprocess.SubprocessError):
        return []  # the caller falls back to the cache
    match = re.search(r"Available versions:\s*(.+)", proc.stdout)
    return [v.strip() for v in match.group(1).split(",")] if match else []


def _download(version: str, cache: Path, run: Runner) -> tuple[Path | None, str]:
    cmd = [*_pip(), "download", f"vllm=={version}", "--no-deps", "--only-binary=:all:"]
    try:
        proc = run([*cmd, "-d", str(cache)])
    except (OSError, subprocess.SubprocessError) as exc:
        return None, f"pip download failed: {type(exc).__name__}: {exc}"
    found = _find_cached(cache, version)
    if found is not None:
        return found, ""
    tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
    if "No matching distribution" in (proc.stderr or ""):
        return None, f"not on PyPI as a wheel: {tail[0]}"
    return None, f"pip download failed (rc={proc.returncode}): {tail[0]}"


def _find_cached(cache: Path, version: str) -> Path | None:
    # Build tags exist ("vllm-0.21.0-1-cp38-..."), so match the parsed version exactly.
    hits = sorted(p for p in cache.glob("vllm-*.whl") if _wheel_version(p) == version)
    return hits[0] if hits else None


def _cached_versions(cache: Path) -> list[str]:
    return sorted({_wheel_version(p) for p in cache.glob("vllm-*.whl")} - {""}, key=version_key)


def _wheel_version(path: Path) -> str:
    match = _WHEEL_RE.match(path.name)
    return match.group("version") if match else ""


def _is_release(version: str) -> bool:
    return bool(_RELEASE_RE.match(version))


def _load_existing(out: Path) -> ReleaseTable:
    if not out.is_file():
        return ReleaseTable(generated_by="", releases={})
    return ReleaseTable.model_validate_json(out.read_text(encoding="utf-8"))


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


# ---------------------------------------------------------------------------------------
# Extraction: zip members -> ast -> key names


def extract_release(wheel: Path, *, version: str | None = None) -> ReleaseInfo:
    """Read one wheel's declared config surface. Raises ExtractError if a class is missing."""
    with zipfile.ZipFile(wheel) as zf:
        src = _Sources(zf)
        spec_path, spec_mod, spec_cls = src.find_class("SpeculativeConfig", SPEC_FILES)
        comp_path, comp_mod, comp_cls = src.find_class("CompilationConfig", COMPILATION_FILES)
        args_path, args_mod, args_cls = src.find_class("EngineArgs", ENGINE_ARGS_FILES)
        spec_env, comp_env = _module_env(spec_mod), _module_env(comp_mod)
        spec_methods = _closed_literals(spec_cls, spec_env, spec_mod).get("method", [])
        info = ReleaseInfo(
            version=version or _wheel_version(wheel),
            ok=True,
            wheel=WheelProvenance(
                filename=wheel.name,
                sha256=_sha256(wheel),
                size=wheel.stat().st_size,
                commit=src.commit_id(),
            ),
            source_files={
                "SpeculativeConfig": spec_path,
                "CompilationConfig": comp_path,
                "EngineArgs": args_path,
            },
            spec_config_keys=_init_fields(spec_cls, spec_mod),
            spec_literals=_closed_literals(spec_cls, spec_env, spec_mod),
            mtp_model_types=_mtp_model_types(spec_mod, spec_env),
            mtp_model_type_aliases=_model_type_rewrites(spec_cls),
            mtp_method_by_model_type=_mtp_methods(spec_cls, spec_mod, spec_env, spec_methods),
            compilation_config_keys=_init_fields(comp_cls, comp_mod),
            compilation_literals=_closed_literals(comp_cls, comp_env, comp_mod),
            enums=_enums(src, comp_mod),
            engine_arg_keys=_init_fields(args_cls, args_mod),
            env_vars=_env_vars(src.module(ENVS_FILE)),
            has_mm_processor_bench=src.has(MM_PROCESSOR_BENCH),
        )
    if not info.spec_config_keys or not info.compilation_config_keys or not info.engine_arg_keys:
        raise ExtractError("a config class was found but declares no init fields")
    return info


class _Sources:
    """Lazily parsed zip members; only the handful of modules we need are read."""

    def __init__(self, zf: zipfile.ZipFile) -> None:
        self._zf = zf
        self._names = set(zf.namelist())
        self._parsed: dict[str, ast.Module] = {}

    def has(self, name: str) -> bool:
        return name in self._names

    def module(self, name: str) -> ast.Module | None:
        if name not in self._names:
            return None
        if name not in self._parsed:
            text = self._zf.read(name).decode("utf-8")
            self._parsed[name] = ast.parse(text, filename=name)
        return self._parsed[name]

    def find_class(
        self, class_name: str, candidates: Iterable[str]
    ) -> tuple[str, ast.Module, ast.ClassDef]:
        for name in candidates:
            mod = self.module(name)
            cls = _class_def(mod, class_name) if mod is not None else None
            if mod is not None and cls is not None:
                return name, mod, cls
        raise ExtractError(f"class {class_name} not found in any of {list(candidates)}")

    def commit_id(self) -> str | None:
        mod = self.module(VERSION_FILE)
        value = _module_constant(mod, "__commit_id__") if mod is not None else None
        # Wheels write "g<sha>" (git describe style); keep the bare short sha.
        return value.removeprefix("g") if isinstance(value, str) and value else None


def _class_def(mod: ast.Module, name: str) -> ast.ClassDef | None:
    for node in mod.body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            return node
    return None


def _module_constant(mod: ast.Module, name: str) -> object:
    for node in mod.body:
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Constant)
            and any(isinstance(t, ast.Name) and t.id == name for t in node.targets)
        ):
            return node.value.value
    return None


def _init_fields(cls: ast.ClassDef, mod: ast.Module) -> list[str]:
    """Names a dataclass accepts in __init__, including same-module base classes."""
    names: set[str] = set()
    for base in cls.bases:
        base_cls = _class_def(mod, base.id) if isinstance(base, ast.Name) else None
        if base_cls is not None and base_cls is not cls:
            names.update(_init_fields(base_cls, mod))
    for node, name in _annotated_fields(cls):
        if _is_init_field(node):
            names.add(name)
    return sorted(names)


def _annotated_fields(cls: ast.ClassDef) -> Iterator[tuple[ast.AnnAssign, str]]:
    for node in cls.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            yield node, node.target.id


def _is_init_field(node: ast.AnnAssign) -> bool:
    name = node.target.id if isinstance(node.target, ast.Name) else ""
    if name.startswith("_") or "ClassVar" in ast.unparse(node.annotation):
        return False
    value = node.value
    # 0.8.x declared CompilationConfig as a pydantic model whose private state is
    # `x: T = PrivateAttr` (or `PrivateAttr(...)`): not a constructor argument.
    if (isinstance(value, ast.Name) and value.id == "PrivateAttr") or (
            isinstance(value, ast.Call) and _call_name(value) == "PrivateAttr"):
        return False
    if isinstance(value, ast.Call) and _call_name(value) in {"field", "Field"}:
        for kw in value.keywords:
            if kw.arg == "init" and isinstance(kw.value, ast.Constant) and not kw.value.value:
                return False
    return True


def _call_name(call: ast.Call) -> str:
    func = call.func
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""


# --- Literal types --------------------------------------------------------------------


def _module_env(mod: ast.Module) -> dict[str, ast.expr]:
    """Module-level `Name = <expr>` bindings, for resolving Literal aliases."""
    env: dict[str, ast.expr] = {}
    for node in ast.walk(mod):
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name):
                env.setdefault(target.id, node.value)
        elif (
            isinstance(node, ast.AnnAssign)
            and node.value is not None
            and isinstance(node.target, ast.Name)
            and "TypeAlias" in ast.unparse(node.annotation)
        ):
            env.setdefault(node.target.id, node.value)
    return env


def _literal_values(
    node: ast.expr, env: dict[str, ast.expr], seen: frozenset[str]
) -> tuple[list[str], bool]:
    """String members of a Literal annotation, following aliases, unions and Optional.

    The flag says the type is open (a bare `str` in the union): then any string passes
    and listing the Literal members would wrongly reject valid values.
    """
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        # A string annotation is a forward reference: parse it and look inside.
        try:
            inner = ast.parse(node.value, mode="eval").body
        except SyntaxError:
            return [], False
        return _literal_values(inner, env, seen)
    if isinstance(node, ast.Name):
        if node.id == "str":
            return [], True
        if node.id in env and node.id not in seen:
            return _literal_values(env[node.id], env, seen | {node.id})
        return [], False
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _merge(_literal_values(node.left, env, seen), _literal_values(node.right, env, seen))
    if isinstance(node, ast.Subscript):
        head = node.value.attr if isinstance(node.value, ast.Attribute) else ast.unparse(node.value)
        parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if head == "Literal":
            return _literal_members(parts, env, seen), False
        if head in {"Optional", "Union"}:
            result: tuple[list[str], bool] = ([], False)
            for part in parts:
                result = _merge(result, _literal_values(part, env, seen))
            return result
    return [], False


def _literal_members(
    parts: list[ast.expr], env: dict[str, ast.expr], seen: frozenset[str]
) -> list[str]:
    values: list[str] = []
    for part in parts:
        if isinstance(part, ast.Constant) and isinstance(part.value, str):
            values.append(part.value)
        else:  # a nested alias such as `EagleModelTypes` inside `SpeculativeMethod`
            values.extend(_literal_values(part, env, seen)[0])
    return values


def _merge(a: tuple[list[str], bool], b: tuple[list[str], bool]) -> tuple[list[str], bool]:
    return a[0] + b[0], a[1] or b[1]


def _closed_literals(
    cls: ast.ClassDef, env: dict[str, ast.expr], mod: ast.Module
) -> dict[str, list[str]]:
    """Init fields whose type is a closed set of strings -> those strings."""
    fields = set(_init_fields(cls, mod))
    result: dict[str, list[str]] = {}
    for node, name in _annotated_fields(cls):
        if name not in fields:
            continue
        values, open_ = _literal_values(node.annotation, env, frozenset())
        if values and not open_:
            result[name] = sorted(set(values))
    return result


# --- MTP: which model types exist and what each release calls their method ------------------


def _mtp_model_types(mod: ast.Module, env: dict[str, ast.expr]) -> list[str]:
    """`MTPModelTypes` (Literal, 0.12+) or `MTP_MODEL_TYPES` (tuple, 0.11); [] before."""
    for name in ("MTPModelTypes", "MTP_MODEL_TYPES"):
        node = env.get(name)
        if node is None:
            continue
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            return sorted(_strings_in(node, {}))
        return sorted(set(_literal_values(node, env, frozenset({name}))[0]))
    return []


def _mtp_methods(
    cls: ast.ClassDef, mod: ast.Module, env: dict[str, ast.expr], methods: list[str]
) -> dict[str, str]:
    """Draft model_type -> the `method` value this release resolves it to.

    From 0.11 every MTP type becomes "mtp". Before that the auto-detection in
    `__post_init__` (`if ...model_type in (...): self.method = "deepseek_mtp"`) is the
    only record of it, so read those branches.
    """
    mapping: dict[str, str] = {}
    for model_types, assigned in _model_type_branches(cls, env):
        for method in assigned.get("method", []):
            if method.endswith("_mtp") or method == "mtp":
                for mt in model_types:
                    mapping.setdefault(mt, method)
    if "mtp" in methods:
        mapping.update({mt: "mtp" for mt in _mtp_model_types(mod, env)})
    for method in methods:
        if method.endswith("_mtp"):
            mapping.setdefault(method, "mtp" if "mtp" in methods else method)
    return dict(sorted(mapping.items()))


def _model_type_rewrites(cls: ast.ClassDef) -> dict[str, str]:
    """Target model_type -> MTP draft model_type (`hf_config_override`), e.g.
    deepseek_v3 -> deepseek_mtp, so a plan that knows only the target can pick a method."""
    mapping: dict[str, str] = {}
    for model_types, assigned in _model_type_branches(cls, {}):
        for draft in assigned.get("model_type", []):
            for mt in model_types:
                if mt != draft and draft.endswith("_mtp"):
                    mapping.setdefault(mt, draft)
    return dict(sorted(mapping.items()))


def _model_type_branches(
    cls: ast.ClassDef, env: dict[str, ast.expr]
) -> Iterator[tuple[list[str], dict[str, list[str]]]]:
    """(model types tested, {attribute: constants assigned}) for each `if` on model_type."""
    for node in ast.walk(cls):
        if not isinstance(node, ast.If):
            continue
        tested = _tested_model_types(node.test, env)
        if not tested:
            continue
        assigned: dict[str, list[str]] = {}
        for stmt in node.body:
            if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Constant):
                for target in stmt.targets:
                    if isinstance(target, ast.Attribute) and isinstance(stmt.value.value, str):
                        assigned.setdefault(target.attr, []).append(stmt.value.value)
        yield tested, assigned


def _tested_model_types(test: ast.expr, env: dict[str, ast.expr]) -> list[str]:
    found: list[str] = []
    for node in ast.walk(test):
        if not isinstance(node, ast.Compare) or "model_type" not in ast.unparse(node.left):
            continue
        for comparator in node.comparators:
            found.extend(_strings_in(comparator, env))
    return found


def _strings_in(node: ast.expr, env: dict[str, ast.expr]) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return [
            e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)
        ]
    if isinstance(node, ast.Name) and node.id in env:
        return _strings_in(env[node.id], {})
    return []


# --- Enums and environment variables -----------------------------------------------------


def _enums(src: _Sources, comp_mod: ast.Module) -> dict[str, list[str]]:
    """Member names in declaration order (order carries meaning: level N == mode N)."""
    result: dict[str, list[str]] = {}
    modules = [comp_mod] + [m for f in COMPILATION_FILES if (m := src.module(f)) is not None]
    for enum_name in ENUMS:
        for mod in modules:
            cls = _class_def(mod, enum_name)
            if cls is not None:
                result[enum_name] = _enum_members(cls)
                break
    return result


def _enum_members(cls: ast.ClassDef) -> list[str]:
    members: list[str] = []
    for node in cls.body:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name) and target.id.isupper():
                    members.append(target.id)
    return members


def _env_vars(mod: ast.Module | None) -> list[str]:
    """Keys of `environment_variables = {...}` in vllm/envs.py: what vLLM reads."""
    if mod is None:
        return []
    for node in mod.body:
        target: ast.expr | None = None
        if isinstance(node, ast.AnnAssign):
            target = node.target
        elif isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
        value = node.value if isinstance(node, ast.Assign | ast.AnnAssign) else None
        named = isinstance(target, ast.Name) and target.id == "environment_variables"
        if named and isinstance(value, ast.Dict):
            keys = [k.value for k in value.keys if isinstance(k, ast.Constant)]
            return sorted({k for k in keys if isinstance(k, str)})
    return []

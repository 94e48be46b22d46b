"""One vLLM wheel's declared config surface, read with `ast` from the zip: speculative and
compilation config keys, their Literal values, MTP method names per model type, enums,
engine arguments and environment variables. A plain function of bytes: vLLM is never
imported."""

from __future__ import annotations

import ast
import hashlib
import re
import zipfile
from collections.abc import Iterable, Iterator
from pathlib import Path

from triagebot.engines.vllm_catalog import (
    ReleaseInfo,
    WheelProvenance,
)

# Where each class lived over time (engines.md §7): newest layout first.
SPEC_FILES = ("vllm/config/speculative.py", "vllm/config/__init__.py", "vllm/config.py")
COMPILATION_FILES = ("vllm/config/compilation.py", "vllm/config/__init__.py", "vllm/config.py")
ENGINE_ARGS_FILES = ("vllm/engine/arg_utils.py",)
ENVS_FILE = "vllm/envs.py"
VERSION_FILE = "vllm/_version.py"
MM_PROCESSOR_BENCH = "vllm/benchmarks/mm_processor.py"
ENUMS = ("CUDAGraphMode", "CompilationMode", "CompilationLevel")
_WHEEL_RE = re.compile(r"^vllm-(?P<version>[^-]+)-(?:\d[^-]*-)?[^-]+-[^-]+-[^-]+\.whl$")


class ExtractError(Exception):
    """A wheel lacks something the table needs; recorded per release, never fatal."""


def wheel_version(path: Path) -> str:
    match = _WHEEL_RE.match(path.name)
    return match.group("version") if match else ""


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
            version=version or wheel_version(wheel),
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
        values, open_ended = _literal_values(node.annotation, env, frozenset())
        if values and not open_ended:
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

"""The pure core and the bot's pure modules import no edge library.

Each is imported in a fresh interpreter, one after another, and any of redis, celery,
fastapi, github (PyGithub) or httpx that shows up in `sys.modules` is charged to the
module whose import brought it in.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

EDGE_LIBRARIES = ("redis", "celery", "fastapi", "github", "httpx")

PURE = (
    "triagebot.model",
    "triagebot.request_model",
    "triagebot.plan_model",
    "triagebot.run_result",
    "triagebot.frozen",
    "triagebot.errors",
    "triagebot.overrides",
    "triagebot.parse",
    "triagebot.plan",
    "triagebot.render",
    "triagebot.run",
    "triagebot.analyze",
    "triagebot.report",
    "triagebot.watch",
    "triagebot.sentinel.models",
    "triagebot.engines",
    "triagebot.commands",
    "triagebot.decisions",
    "triagebot.repo_config",
    "triagebot.links",
    "triagebot.jobs.record",
    "triagebot.github.events",
    "triagebot.github.models",
    "triagebot.workers.task_queues",
)

_PROBE = """
import importlib, json, sys
edges = {edges!r}
charged = {{}}
for name in {modules!r}:
    before = {{e for e in edges if e in sys.modules}}
    importlib.import_module(name)
    new = sorted(e for e in edges if e in sys.modules and e not in before)
    if new:
        charged[name] = new
print(json.dumps(charged))
"""


def test_pure_modules_load_no_edge_library() -> None:
    probe = _PROBE.format(edges=EDGE_LIBRARIES, modules=PURE)
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {}


def test_the_probe_sees_an_edge_import() -> None:
    # The same probe on an edge module must charge it, or the test above proves nothing.
    probe = _PROBE.format(edges=EDGE_LIBRARIES, modules=("triagebot.jobs.store",))
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"triagebot.jobs.store": ["redis"]}


def test_no_module_or_class_outgrows_a_room() -> None:
    # Issue 18's limits: a module over 500 lines or a class over 200 is a sign that it
    # holds more than one job.
    root = Path(__file__).resolve().parents[1] / "triagebot"
    big: list[str] = []
    for path in sorted(root.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if text.count("\n") > 500:
            big.append(f"{path.relative_to(root)}: {text.count(chr(10))} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ClassDef) and node.end_lineno is not None:
                size = node.end_lineno - node.lineno + 1
                if size > 200:
                    big.append(f"{path.relative_to(root)}::{node.name}: {size} lines")
    assert not big, big


# --- the layers -------------------------------------------------------------------------------
#
# docs/architecture.md states these in words. From the top down: a module may import from
# its own layer and from the layers below it, never from one above; no two modules import
# each other, however long the loop; no module takes a private (underscore) name from
# another; no class inherits from a private class defined in another file.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("cli",),                                                   # the command line
    ("web",),                                                   # the webhook ingress, pages
    ("workers",),                                               # Celery: triage, GPU runner
    ("decisions",),                                             # what each command does
    ("bisect",),                                                # good..bad -> where it flips
    ("jobs", "links"),                                          # job records; their links
    ("run", "report"),                                          # scripts run; the report
    ("analyze", "plan", "render", "watch", "sentinel"),         # findings; cells; scripts
    ("parse", "engines", "commands", "repo_config", "github"),  # readers of what comes in
    ("overrides",),                                             # key=value options
    ("model", "request_model", "plan_model", "run_result",      # each stage's contract,
     "frozen", "errors", "settings", "templating",              # what everyone shares,
     "progress", "step_profile"),                               # progress events
)

ROOT = Path(__file__).resolve().parents[1]


class Import(NamedTuple):
    source: str  # the importing module
    path: str  # its file, from the package's parent folder
    line: int
    target: str  # the imported module (a submodule where `from pkg import mod` names one)
    names: tuple[str, ...]  # what `from target import ...` took; () for `import target`


def _module_name(root: Path, path: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_module(root: Path, dotted: str) -> bool:
    base = root.joinpath(*dotted.split("."))
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def package_imports(root: Path, package: str) -> list[Import]:
    """Every import of `package`'s own modules by its modules (type-only and function-local
    ones too: they tie the files together as much as any)."""
    found: list[Import] = []
    for path in sorted((root / package).rglob("*.py")):
        source = _module_name(root, path)
        where = str(path.relative_to(root))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found += [Import(source, where, node.lineno, alias.name, ())
                          for alias in node.names
                          if alias.name.split(".")[0] == package]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0 \
                    and node.module.split(".")[0] == package:
                plain: list[str] = []
                for alias in node.names:
                    sub = f"{node.module}.{alias.name}"
                    if _is_module(root, sub):
                        found.append(Import(source, where, node.lineno, sub, ()))
                    else:
                        plain.append(alias.name)
                if plain:
                    found.append(Import(source, where, node.lineno, node.module, tuple(plain)))
    return found


def _unit(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def upward_imports(imports: list[Import], layers: tuple[tuple[str, ...], ...]) -> list[str]:
    """Imports from a lower layer up to a higher one, and units that stand on no layer."""
    floor = {unit: len(layers) - i for i, row in enumerate(layers) for unit in row}
    wrong: list[str] = []
    for imp in imports:
        src, dst = _unit(imp.source), _unit(imp.target)
        if src is None or dst is None or src == dst:
            continue
        for unit in (src, dst):
            if unit not in floor:
                wrong.append(f"{imp.path}:{imp.line}: {unit} stands on no layer")
        if src in floor and dst in floor and floor[dst] > floor[src]:
            wrong.append(f"{imp.path}:{imp.line}: {src} imports {imp.target}, a layer above")
    return sorted(set(wrong))


def import_cycles(imports: list[Import]) -> list[list[str]]:
    """Every set of modules that import one another in a loop (Tarjan's components)."""
    graph: dict[str, set[str]] = {}
    for imp in imports:
        graph.setdefault(imp.source, set()).add(imp.target)
        graph.setdefault(imp.target, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group: list[str] = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                group.append(top)
                if top == node:
                    break
            if len(group) > 1 or node in graph[node]:
                cycles.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(cycles)


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def private_imports(imports: list[Import]) -> list[str]:
    """Private names taken from another module (a dunder such as `__version__` is public)."""
    return [f"{imp.path}:{imp.line}: {name} from {imp.target}"
            for imp in imports if imp.target != imp.source
            for name in imp.names if _private(name)]


def private_bases(root: Path, package: str) -> list[str]:
    """Classes whose base is a private class defined in another file."""
    found: list[str] = []
    for path in sorted((root / package).rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imported = {alias.asname or alias.name: alias.name for node in ast.walk(tree)
                    if isinstance(node, ast.ImportFrom) for alias in node.names}
        for node in ast.walk(tree):
            if not isinstance(node, ast.ClassDef):
                continue
            for base in node.bases:
                name = (imported.get(base.id) if isinstance(base, ast.Name)
                        else base.attr if isinstance(base, ast.Attribute) else None)
                if name is not None and _private(name):
                    found.append(f"{path.relative_to(root)}:{node.lineno}: {node.name}({name})")
    return found


def test_every_import_points_down_the_layers() -> None:
    assert upward_imports(package_imports(ROOT, "triagebot"), LAYERS) == []


def test_every_unit_stands_on_one_layer() -> None:
    units = {p.stem for p in (ROOT / "triagebot").iterdir()
             if (p.suffix == ".py" and p.stem != "__init__")
             or (p / "__init__.py").is_file()}
    listed = [unit for row in LAYERS for unit in row]
    assert sorted(listed) == sorted(set(listed)), "a unit on two layers"
    assert units == set(listed)


def test_no_import_cycle() -> None:
    assert import_cycles(package_imports(ROOT, "triagebot")) == []


def test_no_private_name_imported_from_another_module() -> None:
    assert private_imports(package_imports(ROOT, "triagebot")) == []


def test_no_class_inherits_a_private_class_from_another_file() -> None:
    assert private_bases(ROOT, "triagebot") == []


# --- the checks above can fail: each one run over a small package made for it ----------------


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in {"__init__.py": "", **files}.items():
        path = tmp_path / "pkg" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return tmp_path


def test_an_upward_import_is_found(tmp_path: Path) -> None:
    root = _package(tmp_path, {"low.py": "from pkg.high import thing\n",
                               "high.py": "from pkg import low\nthing = 1\n"})
    found = upward_imports(package_imports(root, "pkg"), (("high",), ("low",)))
    assert found == ["pkg/low.py:1: low imports pkg.high, a layer above"]
    assert upward_imports(package_imports(root, "pkg"), (("low",), ("high",))) != []
    assert upward_imports(package_imports(root, "pkg"), (("high",),)) == [
        "pkg/high.py:1: low stands on no layer", "pkg/low.py:1: low stands on no layer"]


def test_a_cycle_is_found(tmp_path: Path) -> None:
    root = _package(tmp_path, {
        "a.py": "from pkg.b import x\n",
        "b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.c import y\n",
        "c.py": "def f():\n    import pkg.a\n",
        "d.py": "from pkg import a\n"})
    assert import_cycles(package_imports(root, "pkg")) == [["pkg.a", "pkg.b", "pkg.c"]]


def test_a_private_import_is_found(tmp_path: Path) -> None:
    root = _package(tmp_path, {"a.py": "from pkg.b import _hidden, shown, __version__\n",
                               "b.py": "_hidden = shown = __version__ = 1\n"})
    assert private_imports(package_imports(root, "pkg")) == ["pkg/a.py:1: _hidden from pkg.b"]


def test_a_private_base_from_another_file_is_found(tmp_path: Path) -> None:
    root = _package(tmp_path, {
        "a.py": "from pkg.b import _Base as Base\nfrom pkg import b\n\n\n"
                "class One(Base):\n    pass\n\n\nclass Two(b._Base):\n    pass\n",
        "b.py": "class _Base:\n    pass\n\n\nclass Own(_Base):\n    pass\n"})
    assert private_bases(root, "pkg") == ["pkg/a.py:5: One(_Base)", "pkg/a.py:9: Two(_Base)"]


# Functions over the parameter cap that other work owns, each to be given a context
# object there; an entry that no longer exceeds the cap fails below, so the list only
# shrinks.
MAX_PARAMETERS = 8


def over_the_cap(root: Path) -> dict[str, int]:
    """Functions taking more than MAX_PARAMETERS parameters (positional and keyword-only,
    self and cls not counted), as 'path:name' -> count. A Typer command is left out: each
    of its options is a parameter because Typer reads the options from the signature."""
    found: dict[str, int] = {}
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            if any(isinstance(d, ast.Call) and isinstance(d.func, ast.Attribute)
                   and d.func.attr == "command" for d in node.decorator_list):
                continue
            args = node.args
            names = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)
                     if a.arg not in ("self", "cls")]
            if len(names) > MAX_PARAMETERS:
                found[f"{path.relative_to(root)}:{node.name}"] = len(names)
    return found


def test_no_function_takes_more_than_eight_parameters() -> None:
    found = over_the_cap(ROOT / "triagebot")
    assert found == {}, "take a context object instead"


def test_the_parameter_count_leaves_out_self_and_typer_commands(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(
        "class A:\n    def ok(self, a, b, c, d, e, f, g, h): ...\n"
        "def wide(a, b, c, d, e, f, g, *, h, i): ...\n"
        "@app.command()\ndef cli(a, b, c, d, e, f, g, h, i): ...\n")
    assert over_the_cap(tmp_path) == {"m.py:wide": 9}

"""Python pasted into issue text, read with `ast` into calls, kwargs and assignments.

Finds Python in ``` fences, in scraped pages whose fences were lost, and in one-line
snippets in prose. Code is only ever parsed, never run: values are read node by node
(`ast.literal_eval` on literal leaves), names are resolved to module-level constants the
text defines, and anything else becomes the string `"<expr: source>"`.

Never raises: invalid Python is trimmed to the parts that parse, and the total amount
of text handed to the parser is capped so that a 5 MB paste stays cheap.

`regions` finds the Python and parses it with salvage; `values` reads literal values
from the trees; `_Reader` below collects the calls and assignments.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any

from triagebot.parse.document import Layout, read_layout
from triagebot.parse.python.regions import ParseBudget, find_regions, inline_snippets, parse_region
from triagebot.parse.python.values import (
    MAX_EXPR_CHARS,
    NOISE_CALLS,
    Scope,
    ValueReader,
    dotted_name,
    is_environ,
    source_of,
)

# Caps that keep a hostile paste cheap; `regions` and `values` hold the ones they apply.
MAX_CALL_TEXT = 500
_PARSE_BUDGET_FACTOR = 4  # total parsed chars <= factor * document chars + slack
_PARSE_BUDGET_SLACK = 2_000_000


@dataclass(frozen=True)
class PyCall:
    """A call with a dotted-name callee: `LLM(...)`, `sgl.Engine(...)`, `llm.generate(...)`.

    `args` holds positional arguments (`LLM("org/model")`), read like kwargs.
    """

    func: str
    kwargs: dict[str, Any]
    starstar: tuple[str, ...]
    line: int
    text: str
    args: tuple[Any, ...] = ()


@dataclass(frozen=True)
class PyAssign:
    """`NAME = value` (also `os.environ["X"] = "1"` as name `env:X`)."""

    name: str
    value: Any
    line: int


@dataclass(frozen=True)
class PyFacts:
    calls: tuple[PyCall, ...]
    assigns: tuple[PyAssign, ...]
    blocks: int  # Python regions found (fenced or not)
    invalid_blocks: int  # ... of which some part did not parse


def extract_python(lines: list[str], layout: Layout | None = None) -> PyFacts:
    """Every call and assignment in the Python the document contains. `layout` says where
    the fenced code is (read from `lines` when not given)."""
    lines = [x if isinstance(x, str) else "" for x in (lines or [])]
    try:
        return _extract(lines, layout or read_layout(lines))
    except (RecursionError, MemoryError):  # defensive: hostile input must not crash
        return PyFacts((), (), 0, 0)


def _extract(lines: list[str], layout: Layout) -> PyFacts:
    chars = sum(len(x) + 1 for x in lines)
    budget = ParseBudget(_PARSE_BUDGET_FACTOR * chars + _PARSE_BUDGET_SLACK)
    modules: list[tuple[ast.Module, list[str], int]] = []
    covered = bytearray(len(lines))
    blocks = invalid = 0
    for region in find_regions(lines, layout):
        parsed, ok = parse_region(region, budget)
        if not parsed and not region.required:
            continue  # an unlabeled fence or a run of lines that was not Python after all
        blocks += 1
        invalid += 0 if ok else 1
        for module, src, first in parsed:
            modules.append((module, src, first))
        for k in range(region.start, region.start + len(region.lines)):
            covered[k] = 1
    reader = _Reader()
    reader.collect_constants([(module, first) for module, _src, first in modules])
    for module, src, first in modules:
        reader.read(module, src, first)
    for module, src, first in inline_snippets(lines, covered, budget):
        reader.read(module, src, first)
    return PyFacts(tuple(reader.calls), tuple(reader.assigns), blocks, invalid)


@dataclass
class _Reader(ValueReader):
    """Calls and assignments that configure an engine, with their values."""

    calls: list[PyCall] = field(default_factory=list)
    assigns: list[PyAssign] = field(default_factory=list)

    # -- walking

    def read(self, module: ast.Module, src: list[str], first: int) -> None:
        self._body(module.body, src, first, Scope())

    def _body(self, body: list[ast.stmt], src: list[str], first: int, scope: Scope) -> None:
        for stmt in body:
            self._stmt(stmt, src, first, scope)

    def _stmt(self, stmt: ast.stmt, src: list[str], first: int, scope: Scope) -> None:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
            a = stmt.args
            names = {x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs)}
            names |= {x.arg for x in (a.vararg, a.kwarg) if x is not None}
            self._exprs_in(stmt.args, src, first, scope)
            self._body(stmt.body, src, first, Scope(scope.params | names))
            return
        if isinstance(stmt, ast.Assign | ast.AnnAssign):
            self._assign(stmt, src, first, scope)
        for child in ast.iter_child_nodes(stmt):
            if isinstance(child, ast.stmt):
                self._stmt(child, src, first, scope)
            elif isinstance(child, ast.expr):
                self._exprs_in(child, src, first, scope)
            elif not isinstance(child, ast.expr_context):
                for sub in ast.iter_child_nodes(child):
                    if isinstance(sub, ast.stmt):
                        self._stmt(sub, src, first, scope)
                    elif isinstance(sub, ast.expr):
                        self._exprs_in(sub, src, first, scope)

    def _exprs_in(self, node: ast.AST, src: list[str], first: int, scope: Scope) -> None:
        stack = [node]
        while stack:
            cur = stack.pop()
            if isinstance(cur, ast.Call):
                self._call(cur, src, first, scope)
            if isinstance(cur, ast.Lambda):
                continue
            stack.extend(reversed(list(ast.iter_child_nodes(cur))))

    def _assign(self, stmt: ast.Assign | ast.AnnAssign, src: list[str], first: int,
                scope: Scope) -> None:  # fmt: skip
        if stmt.value is None:
            return
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        line = first + stmt.lineno
        for target in targets:
            if isinstance(target, ast.Subscript) and is_environ(target.value):
                key = self.value(target.slice, src, line, scope)
                if isinstance(key, str) and not key.startswith("<expr"):
                    self.assigns.append(
                        PyAssign(f"env:{key}", self.value(stmt.value, src, line, scope), line)
                    )
                continue
            if isinstance(target, ast.Name | ast.Subscript | ast.Attribute):
                name = target.id if isinstance(target, ast.Name) else source_of(target, src)
                value = self.value(stmt.value, src, line, scope)
                self.assigns.append(PyAssign(name[:200], value, line))

    def _call(self, node: ast.Call, src: list[str], first: int, scope: Scope) -> None:
        func = dotted_name(node.func)
        if func is None or func in NOISE_CALLS:
            return
        line = first + node.lineno
        kwargs: dict[str, Any] = {}
        starstar: list[str] = []
        for kw in node.keywords:
            if kw.arg is None:
                if isinstance(kw.value, ast.Dict):  # `**{"model": "x"}` is plain kwargs
                    merged = self.value(kw.value, src, line, scope)
                    if isinstance(merged, dict) and all(isinstance(k, str) for k in merged):
                        kwargs.update(merged)
                        continue
                starstar.append(source_of(kw.value, src)[:MAX_EXPR_CHARS])
            else:
                kwargs[kw.arg] = self.value(kw.value, src, line, scope)
        args = tuple(
            f"<expr: *{source_of(a.value, src)}>"[: MAX_EXPR_CHARS + 9]
            if isinstance(a, ast.Starred)
            else self.value(a, src, line, scope)
            for a in node.args
        )
        text = " ".join(source_of(node, src, MAX_CALL_TEXT * 2).split())[:MAX_CALL_TEXT]
        self.calls.append(PyCall(func, kwargs, tuple(starstar), line, text, args))
        if func.endswith("environ.setdefault") or func in ("os.putenv", "putenv"):
            self._env_call(node, src, line, scope)
        elif func.endswith("environ.update"):
            self._env_update(node, src, line, scope)

    def _env_call(self, node: ast.Call, src: list[str], line: int, scope: Scope) -> None:
        if len(node.args) >= 2:
            key = self.value(node.args[0], src, line, scope)
            if isinstance(key, str) and not key.startswith("<expr"):
                self.assigns.append(
                    PyAssign(f"env:{key}", self.value(node.args[1], src, line, scope), line)
                )

    def _env_update(self, node: ast.Call, src: list[str], line: int, scope: Scope) -> None:
        pairs: dict[Any, Any] = {}
        if node.args:
            first = self.value(node.args[0], src, line, scope)
            if isinstance(first, dict):
                pairs.update(first)
        for kw in node.keywords:
            if kw.arg is not None:
                pairs[kw.arg] = self.value(kw.value, src, line, scope)
        for key, val in pairs.items():
            if isinstance(key, str) and not key.startswith(("<expr", "**")):
                self.assigns.append(PyAssign(f"env:{key}", val, line))

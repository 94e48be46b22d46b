"""Values in a Python tree without running it: literals, names bound only to literals,
dotted names, and the source text of a node."""

from __future__ import annotations

import ast
import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

MAX_EXPR_CHARS = 80  # "<expr: ...>" text is cut at this length
MAX_VALUE_DEPTH = 40  # nested literals deeper than this become "<expr: ...>"

# --- reading the tree ----------------------------------------------------------------

NOISE_CALLS = {
    "print", "len", "range", "enumerate", "zip", "sum", "min", "max", "sorted", "isinstance",
    "str", "int", "float", "bool", "list", "tuple", "set", "open", "format", "repr", "super",
    "getattr", "setattr", "hasattr", "type", "id", "iter", "next", "any", "all", "abs",
    "round", "map", "filter", "reversed", "vars", "dir", "callable", "hash",
}  # fmt: skip
_MISSING = object()


def dotted_name(node: ast.expr) -> str | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    if isinstance(node, ast.Call):  # `LLM(...).generate(...)`
        inner = dotted_name(node.func)
        if inner is not None:
            parts.append(inner + "()")
            return ".".join(reversed(parts))
    return None


def is_environ(node: ast.expr) -> bool:
    """`os.environ` or `environ` (after `from os import environ`)."""
    name = dotted_name(node)
    return name in ("os.environ", "environ")


@dataclass
class Scope:
    params: frozenset[str] = frozenset()


@dataclass
class ValueReader:
    """Literal values of expressions, with the names bound only to literals."""

    # name -> [(line, value)] of literal assignments anywhere, in line order
    constants: dict[str, list[tuple[int, Any]]] = field(default_factory=dict)
    poisoned: set[str] = field(default_factory=set)

    # -- constants

    def collect_constants(self, modules: list[tuple[ast.Module, int]]) -> None:
        """Names bound only to literals (which may use earlier such names).

        A name also bound to anything else (a loop variable, a call result, `+=`) or
        to an empty container that code fills later is never resolved.
        """
        simple: list[tuple[int, str, ast.expr]] = []
        for module, first in modules:
            for node in ast.walk(module):
                if isinstance(node, ast.Assign) and len(node.targets) == 1:
                    target, value = node.targets[0], node.value
                elif isinstance(node, ast.AnnAssign) and node.value is not None:
                    target, value = node.target, node.value
                else:
                    self.poisoned.update(_bound_names(node))
                    continue
                if isinstance(target, ast.Name):
                    simple.append((first + node.lineno, target.id, value))
                else:
                    self.poisoned.update(_bound_names(node))
        simple.sort(key=lambda t: t[0])
        for line, name, value in simple:
            literal = self._literal(value, 0, line)
            if literal is _MISSING or literal in ([], {}, ()):
                self.poisoned.add(name)
            else:
                self.constants.setdefault(name, []).append((line, literal))

    def _resolve(self, name: str, line: int) -> Any:
        """The latest literal value bound to `name` before `line` (else the first one)."""
        found = self.constants.get(name)
        if not found or name in self.poisoned:
            return _MISSING
        before = [v for ln, v in found if ln <= line]
        if before:
            return before[-1]
        return found[0][1] if len(found) == 1 else _MISSING

    def _literal(self, node: ast.expr, depth: int, line: int = -1) -> Any:
        """Literal value of `node`, or _MISSING. With `line`, names bound to constants
        before it resolve (`SPEC = {"model": DRAFT}`)."""
        if depth > MAX_VALUE_DEPTH:
            return _MISSING
        if isinstance(node, ast.Name) and line >= 0 and node.id not in self.poisoned:
            return self._resolve(node.id, line)
        if isinstance(node, ast.Constant | ast.UnaryOp):
            try:
                return ast.literal_eval(node)
            except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
                return _MISSING
        if isinstance(node, ast.Dict):
            out: dict[Any, Any] = {}
            for k, v in zip(node.keys, node.values, strict=True):
                if k is None:
                    return _MISSING
                key, val = self._literal(k, depth + 1, line), self._literal(v, depth + 1, line)
                if key is _MISSING or val is _MISSING:
                    return _MISSING
                try:
                    out[key] = val
                except TypeError:
                    return _MISSING
            return out
        if isinstance(node, ast.List | ast.Tuple):
            items = [self._literal(e, depth + 1, line) for e in node.elts]
            if any(x is _MISSING for x in items):
                return _MISSING
            return items if isinstance(node, ast.List) else tuple(items)
        return _MISSING

    # -- values

    def value(
        self, node: ast.expr, src: list[str], line: int, scope: Scope, depth: int = 0
    ) -> Any:
        """A kwarg / assignment value: literals, resolved names, else "<expr: ...>"."""
        if depth > MAX_VALUE_DEPTH:
            return _expr(node, src)
        if isinstance(node, ast.Constant | ast.UnaryOp):
            lit = self._literal(node, depth)
            return _expr(node, src) if lit is _MISSING else lit
        if isinstance(node, ast.Name):
            if node.id not in scope.params:
                resolved = self._resolve(node.id, line)
                if resolved is not _MISSING:
                    return resolved
            return _expr(node, src)
        if isinstance(node, ast.Dict):
            out: dict[Any, Any] = {}
            for k, v in zip(node.keys, node.values, strict=True):
                if k is None:  # `{**base, "k": 1}`
                    out[f"**{source_of(v, src)}"[:MAX_EXPR_CHARS]] = _expr(v, src)
                    continue
                key = self.value(k, src, line, scope, depth + 1)
                try:
                    out[key] = self.value(v, src, line, scope, depth + 1)
                except TypeError:
                    out[str(key)] = self.value(v, src, line, scope, depth + 1)
            return out
        if isinstance(node, ast.List | ast.Tuple | ast.Set):
            items = [self.value(e, src, line, scope, depth + 1) for e in node.elts]
            return tuple(items) if isinstance(node, ast.Tuple) else items
        if isinstance(node, ast.Call) and dotted_name(node.func) == "dict" and not node.args:
            return {
                kw.arg: self.value(kw.value, src, line, scope, depth + 1)
                for kw in node.keywords
                if kw.arg is not None
            }
        return _expr(node, src)


def _bound_names(node: ast.AST) -> Iterator[str]:
    """Names a non-literal binding statement assigns (loop targets, `+=`, `with as`)."""
    targets: list[ast.AST] = []
    if isinstance(node, ast.Assign):
        targets = list(node.targets)
    elif isinstance(node, ast.AugAssign | ast.AnnAssign | ast.For | ast.AsyncFor):
        targets = [node.target]
    elif isinstance(node, ast.withitem) and node.optional_vars is not None:
        targets = [node.optional_vars]
    elif isinstance(node, ast.comprehension | ast.NamedExpr):
        targets = [node.target]
    for t in targets:
        for sub in ast.walk(t):
            if isinstance(sub, ast.Name):
                yield sub.id


def source_of(node: ast.AST, src: list[str], limit: int = 4000) -> str:
    """Source text of `node` from the lines it was parsed from (unparse as a fallback)."""
    try:
        lineno, end_lineno = node.lineno, node.end_lineno  # type: ignore[attr-defined]
        col, end_col = node.col_offset, node.end_col_offset  # type: ignore[attr-defined]
    except AttributeError:
        return ""
    if end_lineno is None or end_col is None or not 0 < lineno <= len(src):
        with contextlib.suppress(Exception):
            return ast.unparse(node)[:limit]
        return ""
    if lineno == end_lineno:
        line: str = src[lineno - 1]
        return line[col:end_col][:limit]
    parts = [src[lineno - 1][col:]]
    size = len(parts[0])
    for k in range(lineno, min(end_lineno - 1, len(src))):
        if size > limit:
            break
        parts.append(src[k])
        size += len(src[k])
    if end_lineno <= len(src) and size <= limit:
        parts.append(src[end_lineno - 1][:end_col])
    return "\n".join(parts)[:limit]


def _expr(node: ast.AST, src: list[str]) -> str:
    text = " ".join(source_of(node, src, MAX_EXPR_CHARS * 4).split())
    return f"<expr: {text[:MAX_EXPR_CHARS]}>"

"""Python pasted into issue text, read with `ast` into calls, kwargs and assignments.

Finds Python in ``` fences, in scraped pages whose fences were lost, and in one-line
snippets in prose. Code is only ever parsed, never run: values are read node by node
(`ast.literal_eval` on literal leaves), names are resolved to module-level constants the
text defines, and anything else becomes the string `"<expr: source>"`.

Never raises: invalid Python is trimmed to the parts that parse, and the total amount
of text handed to the parser is capped so that a 5 MB paste stays cheap.
"""

from __future__ import annotations

import ast
import contextlib
import re
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from triagebot.parse.brackets import OPENERS, brackets

MAX_BLOCK_LINES = 3000  # a region longer than this is parsed in pieces
MAX_EXPR_CHARS = 80  # "<expr: ...>" text is cut at this length
MAX_VALUE_DEPTH = 40  # nested literals deeper than this become "<expr: ...>"
MAX_CALL_TEXT = 500
MAX_SALVAGE_TRIES = 40  # parse attempts on one invalid region
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


def extract_python(lines: list[str]) -> PyFacts:
    """Every call and assignment in the Python the document contains."""
    try:
        return _extract([x if isinstance(x, str) else "" for x in (lines or [])])
    except (RecursionError, MemoryError):  # defensive: hostile input must not crash
        return PyFacts((), (), 0, 0)


def _extract(lines: list[str]) -> PyFacts:
    budget = _Budget(_PARSE_BUDGET_FACTOR * sum(len(x) + 1 for x in lines) + _PARSE_BUDGET_SLACK)
    modules: list[tuple[ast.Module, list[str], int]] = []
    covered = bytearray(len(lines))
    blocks = invalid = 0
    for region in _regions(lines):
        parsed, ok = _parse_region(region, budget)
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
    for module, src, first in _inline_snippets(lines, covered, budget):
        reader.read(module, src, first)
    return PyFacts(tuple(reader.calls), tuple(reader.assigns), blocks, invalid)


# --- finding Python ------------------------------------------------------------------

_FENCE = re.compile(r"[ \t]{0,12}(`{3,}|~{3,})[ \t]*([\w+.#-]*)")
_PY_LABELS = {"python", "py", "python3", "ipython", "pycon", "ipython3", "python2"}
_UNLABELED = {"", "text", "txt", "plain", "plaintext", "code"}
_STRONG = re.compile(
    r"[ \t]*(?:import[ \t]+\w|from[ \t]+[\w.]+[ \t]+import[ \t]|def[ \t]+\w+[ \t]*\(|"
    r"class[ \t]+\w+[ \t]*[(:]|async[ \t]+def[ \t]|@\w|if[ \t]+__name__|"
    r"[A-Za-z_][\w.]{0,100}(?:\[[^\]\n]{0,100}\])?[ \t]*(?::[^=\n]{1,60})?=[ \t]*[^=\s]|"
    r"[A-Za-z_][\w.]{0,100}\()"
)
_WEAK = re.compile(
    r"[ \t]+\S|\.\.\.[ \t]|[ \t]*(?:[)\]}]|#|[\"'].{0,200}[\"'][ \t]*:|\w+=|return\b|"
    r"for[ \t]|while[ \t]|"
    r"if[ \t]|elif[ \t]|else\b|try\b|except\b|finally\b|with[ \t]|print\(|pass\b|raise\b|"
    r"assert\b|del[ \t]|global[ \t]|yield\b|\"\"\"|''')"
)
_SHELLISH = re.compile(r"(?:^|[ \t])--[A-Za-z][\w-]*|[ \t]\\[ \t]*$|^[ \t]*\$[ \t]")
# An unindented sentence ending in punctuation ends a run even if it looked like code.
_PROSE_END = re.compile(r"[A-Za-z][^=(){}\[\]#]*[.:!?]$")
_KEYWORD_START = re.compile(
    r"(?:for|if|elif|else|try|except|finally|with|while|def|class|async|return|import|from)\b"
)
_REPL = re.compile(r"(?:>>>|\.\.\.)(?: |$)")
_QUOTE = re.compile(r"[ \t]{0,12}(?:>[ \t]?){1,4}(?!>)")


@dataclass
class _Region:
    start: int  # 0-based index of the first line
    lines: list[str]
    required: bool  # a ```python fence: counts as a block even when nothing parses


def _line_kind(line: str) -> str:
    """ "strong" starts Python, "weak" may continue it, "shell"/"prose" end it."""
    if not line.strip():
        return "blank"
    head = line[:400]
    if _SHELLISH.search(head) and not _quoted_flags(head):
        return "shell"
    if _STRONG.match(head):
        return "strong"
    if _WEAK.match(head):
        return "weak"
    return "prose"


def _quoted_flags(head: str) -> bool:
    """`parser.add_argument("--model")` has flags only inside string literals."""
    return bool(re.search(r"[\"']--?[A-Za-z]", head)) and "(" in head


def _regions(lines: list[str]) -> Iterator[_Region]:
    i, n = 0, len(lines)
    while i < n:
        fm = _FENCE.match(lines[i])
        if fm:
            end = _fence_end(lines, i + 1, fm.group(1))
            label = fm.group(2).lower()
            body = lines[i + 1 : end]
            if label in _PY_LABELS:
                yield from _split_big(_Region(i + 1, body, True))
            elif end == n:
                i += 1  # an unclosed non-Python fence hides nothing: read on
                continue
            elif label in _UNLABELED and _looks_python(body):
                yield from _split_big(_Region(i + 1, body, False))
            i = end + 1
            continue
        if _line_kind(_unquote(lines[i])) == "strong":
            end = _run_end(lines, i)
            if end - i >= 1:
                yield from _split_big(_Region(i, lines[i:end], False))
            i = max(end, i + 1)
            continue
        i += 1


def _fence_end(lines: list[str], j: int, marker: str) -> int:
    """Index of the closing fence; an unclosed fence runs to the end of the document."""
    char = marker[0]
    for k in range(j, len(lines)):
        s = lines[k].lstrip(" \t>")
        if s.startswith(char * len(marker)) and not s.strip(char + " \t"):
            return k
    return len(lines)


def _looks_python(body: list[str]) -> bool:
    kinds = [_line_kind(x) for x in body[:200]]
    strong = kinds.count("strong")
    bad = kinds.count("shell") + kinds.count("prose")
    return strong >= 1 and bad * 3 <= strong + kinds.count("weak")


def _run_end(lines: list[str], i: int) -> int:
    """End of a run of Python-looking lines outside fences (scraped pages lose them)."""
    j, n = i + 1, len(lines)
    blanks = 0
    last = i + 1
    while j < n and j - i < MAX_BLOCK_LINES * 4:
        if _FENCE.match(lines[j]):
            break
        kind = _line_kind(_unquote(lines[j]))
        if kind == "blank":
            blanks += 1
            if blanks > 3:
                break
        elif kind in ("strong", "weak") and not _sentence(_unquote(lines[j])):
            blanks = 0
            last = j + 1
        else:
            break
        j += 1
    return last


def _sentence(line: str) -> bool:
    if line[:1] in (" ", "\t") or _KEYWORD_START.match(line):
        return False
    return bool(_PROSE_END.match(line.strip()[:300]))


def _split_big(region: _Region) -> Iterator[_Region]:
    if len(region.lines) <= MAX_BLOCK_LINES:
        yield region
        return
    for k in range(0, len(region.lines), MAX_BLOCK_LINES):
        yield _Region(region.start + k, region.lines[k : k + MAX_BLOCK_LINES], region.required)


def _unquote(line: str) -> str:
    m = _QUOTE.match(line)
    return line[m.end() :] if m else line


# --- parsing with salvage ------------------------------------------------------------


class _Budget:
    def __init__(self, chars: int) -> None:
        self.left = chars

    def take(self, n: int) -> bool:
        self.left -= n
        return self.left >= 0


def _clean(lines: list[str]) -> list[str]:
    """Drop REPL prompts or quote markers, then the common indentation."""
    if any(x.lstrip().startswith(">>>") for x in lines[:50]):
        out = [_unprompt(x) for x in lines]
    else:
        out = [_unquote(x).rstrip("\r") for x in lines]
    widths = [len(x) - len(x.lstrip(" \t")) for x in out if x.strip()]
    cut = min(widths) if widths else 0
    return [x[cut:] if x[:cut].strip() == "" else x.lstrip() for x in out]


def _unprompt(line: str) -> str:
    s = line.lstrip().rstrip("\r")
    if _REPL.match(s):
        return s[4:]
    return s[3:] if s in (">>>", "...") else _unquote(line).rstrip("\r")


def _try_parse(src: str, budget: _Budget) -> ast.Module | SyntaxError | None:
    if not budget.take(len(src)):
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escapes in pasted strings
            return ast.parse(src)
    except SyntaxError as e:
        return e
    except (ValueError, MemoryError, RecursionError, OverflowError):
        return None


def _top_level(line: str) -> bool:
    """A line that can start a top-level statement (used to cut invalid code)."""
    return (
        bool(line)
        and line[0] not in " \t)]}#"
        and not line.startswith(("else", "elif", "except", "finally"))
    )


def _parse_region(
    region: _Region, budget: _Budget
) -> tuple[list[tuple[ast.Module, list[str], int]], bool]:
    """Parse what can be parsed of a region: [(module, source lines, first line index)].

    On a syntax error the code before the failing top-level statement is kept, the
    failing statement skipped, and the rest parsed again (bounded tries and budget).
    """
    src = _clean(region.lines)
    out: list[tuple[ast.Module, list[str], int]] = []
    ok = True
    start, tries = 0, 0
    while start < len(src) and tries < MAX_SALVAGE_TRIES:
        tries += 1
        chunk = src[start:]
        res = _try_parse("\n".join(chunk), budget)
        if isinstance(res, ast.Module):
            out.append((res, chunk, region.start + start))
            break
        ok = False
        if res is None:
            break
        err = min(max((res.lineno or 1) - 1, 0), len(chunk) - 1)
        cut = err
        while cut > 0 and not _top_level(chunk[cut]):
            cut -= 1
        if cut > 0:
            prefix = _try_parse("\n".join(chunk[:cut]), budget)
            if isinstance(prefix, ast.Module):
                out.append((prefix, chunk[:cut], region.start + start))
        nxt = err + 1
        while nxt < len(chunk) and not _top_level(chunk[nxt]):
            nxt += 1
        start += nxt
    return [m for m in out if m[0].body], ok


# --- one-line snippets in prose -------------------------------------------------------

_INLINE_CALL = re.compile(
    r"(?<![\w.])((?:[A-Za-z_]\w{0,60}\.){0,3}(?:LLM|SamplingParams|Engine|GenerationConfig|"
    r"from_pretrained|generate|chat|EngineArgs|AsyncEngineArgs|SpeculativeConfig|"
    r"CompilationConfig))\("
)
_INLINE_ASSIGN = re.compile(r"`([A-Za-z_]\w{0,60}[ \t]*=[ \t]*[^`\n]{1,2000})`")


def _inline_snippets(
    lines: list[str], covered: bytearray, budget: _Budget
) -> Iterator[tuple[ast.Module, list[str], int]]:
    for idx, line in enumerate(lines):
        if covered[idx] or ("(" not in line and "`" not in line):
            continue
        for count, m in enumerate(_INLINE_CALL.finditer(line)):
            if count >= 20:
                break
            end = _close_paren(line, m.end() - 1)
            if end < 0:
                continue
            snippet = line[m.start() : end]
            res = _try_parse(snippet, budget)
            if isinstance(res, ast.Module) and res.body:
                yield res, [snippet], idx
        for count, am in enumerate(_INLINE_ASSIGN.finditer(line)):
            if count >= 20:
                break
            res = _try_parse(am.group(1), budget)
            if isinstance(res, ast.Module) and res.body and isinstance(res.body[0], ast.Assign):
                yield res, [am.group(1)], idx


def _close_paren(s: str, i: int, limit: int = 5000) -> int:
    depth = 0
    for j, c in brackets(s, i, i + limit):
        if c in OPENERS:
            depth += 1
        else:
            depth -= 1
            if depth == 0:
                return j + 1
    return -1


# --- reading the tree ----------------------------------------------------------------

_NOISE_CALLS = {
    "print", "len", "range", "enumerate", "zip", "sum", "min", "max", "sorted", "isinstance",
    "str", "int", "float", "bool", "list", "tuple", "set", "open", "format", "repr", "super",
    "getattr", "setattr", "hasattr", "type", "id", "iter", "next", "any", "all", "abs",
    "round", "map", "filter", "reversed", "vars", "dir", "callable", "hash",
}  # fmt: skip
_MISSING = object()


def _dotted(node: ast.expr) -> str | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    if isinstance(node, ast.Call):  # `LLM(...).generate(...)`
        inner = _dotted(node.func)
        if inner is not None:
            parts.append(inner + "()")
            return ".".join(reversed(parts))
    return None


def _environ_target(node: ast.expr) -> bool:
    """`os.environ` or `environ` (after `from os import environ`)."""
    name = _dotted(node)
    return name in ("os.environ", "environ")


@dataclass
class _Scope:
    params: frozenset[str] = frozenset()


@dataclass
class _Reader:
    calls: list[PyCall] = field(default_factory=list)
    assigns: list[PyAssign] = field(default_factory=list)
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
        self, node: ast.expr, src: list[str], line: int, scope: _Scope, depth: int = 0
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
                    out[f"**{_source(v, src)}"[:MAX_EXPR_CHARS]] = _expr(v, src)
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
        if isinstance(node, ast.Call) and _dotted(node.func) == "dict" and not node.args:
            return {
                kw.arg: self.value(kw.value, src, line, scope, depth + 1)
                for kw in node.keywords
                if kw.arg is not None
            }
        return _expr(node, src)

    # -- walking

    def read(self, module: ast.Module, src: list[str], first: int) -> None:
        self._body(module.body, src, first, _Scope())

    def _body(self, body: list[ast.stmt], src: list[str], first: int, scope: _Scope) -> None:
        for stmt in body:
            self._stmt(stmt, src, first, scope)

    def _stmt(self, stmt: ast.stmt, src: list[str], first: int, scope: _Scope) -> None:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
            a = stmt.args
            names = {x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs)}
            names |= {x.arg for x in (a.vararg, a.kwarg) if x is not None}
            self._exprs_in(stmt.args, src, first, scope)
            self._body(stmt.body, src, first, _Scope(scope.params | names))
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

    def _exprs_in(self, node: ast.AST, src: list[str], first: int, scope: _Scope) -> None:
        stack = [node]
        while stack:
            cur = stack.pop()
            if isinstance(cur, ast.Call):
                self._call(cur, src, first, scope)
            if isinstance(cur, ast.Lambda):
                continue
            stack.extend(reversed(list(ast.iter_child_nodes(cur))))

    def _assign(self, stmt: ast.Assign | ast.AnnAssign, src: list[str], first: int,
                scope: _Scope) -> None:  # fmt: skip
        if stmt.value is None:
            return
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        line = first + stmt.lineno
        for target in targets:
            if isinstance(target, ast.Subscript) and _environ_target(target.value):
                key = self.value(target.slice, src, line, scope)
                if isinstance(key, str) and not key.startswith("<expr"):
                    self.assigns.append(
                        PyAssign(f"env:{key}", self.value(stmt.value, src, line, scope), line)
                    )
                continue
            if isinstance(target, ast.Name | ast.Subscript | ast.Attribute):
                name = target.id if isinstance(target, ast.Name) else _source(target, src)
                value = self.value(stmt.value, src, line, scope)
                self.assigns.append(PyAssign(name[:200], value, line))

    def _call(self, node: ast.Call, src: list[str], first: int, scope: _Scope) -> None:
        func = _dotted(node.func)
        if func is None or func in _NOISE_CALLS:
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
                starstar.append(_source(kw.value, src)[:MAX_EXPR_CHARS])
            else:
                kwargs[kw.arg] = self.value(kw.value, src, line, scope)
        args = tuple(
            f"<expr: *{_source(a.value, src)}>"[: MAX_EXPR_CHARS + 9]
            if isinstance(a, ast.Starred)
            else self.value(a, src, line, scope)
            for a in node.args
        )
        text = " ".join(_source(node, src, MAX_CALL_TEXT * 2).split())[:MAX_CALL_TEXT]
        self.calls.append(PyCall(func, kwargs, tuple(starstar), line, text, args))
        if func.endswith("environ.setdefault") or func in ("os.putenv", "putenv"):
            self._env_call(node, src, line, scope)
        elif func.endswith("environ.update"):
            self._env_update(node, src, line, scope)

    def _env_call(self, node: ast.Call, src: list[str], line: int, scope: _Scope) -> None:
        if len(node.args) >= 2:
            key = self.value(node.args[0], src, line, scope)
            if isinstance(key, str) and not key.startswith("<expr"):
                self.assigns.append(
                    PyAssign(f"env:{key}", self.value(node.args[1], src, line, scope), line)
                )

    def _env_update(self, node: ast.Call, src: list[str], line: int, scope: _Scope) -> None:
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


def _source(node: ast.AST, src: list[str], limit: int = 4000) -> str:
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
    text = " ".join(_source(node, src, MAX_EXPR_CHARS * 4).split())
    return f"<expr: {text[:MAX_EXPR_CHARS]}>"

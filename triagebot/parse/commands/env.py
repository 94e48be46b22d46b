"""The command scanner's state, and its reading of environment settings: `export`, `set`,
`$env:`, Dockerfile `ENV`, compose / Kubernetes `env:` blocks."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from triagebot.parse.commands.invocation import MAX_LIST_LINES, Invocation
from triagebot.parse.commands.jsonish import parse_json_value
from triagebot.parse.commands.lines import indent_of, strip_prefixes, yaml_scalar
from triagebot.parse.commands.programs import LLAMA_PROGRAM, PYTHON_PROGRAM, SHELL_WORDS, basename
from triagebot.parse.commands.words import ASSIGN, tokenize
from triagebot.parse.document import Layout

_ASSIGN_LINE = re.compile(
    r"[ \t]*(?:export|declare[ \t]+-x|local|readonly|typeset)?[ \t]*[A-Za-z_]\w{0,100}="
)
_EXPORT_NAME = re.compile(r"[ \t]*export[ \t]+([A-Za-z_]\w*(?:[ \t]+[A-Za-z_]\w*)*)[ \t]*$")
_SET_LINE = re.compile(
    r"[ \t]*(?:set|SET)[ \t]+"
    r"(?:\"([A-Za-z_]\w{0,100})=([^\"\n]*)\"|([A-Za-z_]\w{0,100})=(\S*))[ \t]*$"
)
# Lines that set one variable, its name in group 1 and its value in group 2: PowerShell's
# `$env:NAME = value` and Dockerfile `ENV NAME value` (or `ENV NAME=value`).
_ONE_SETTING_LINES = (
    re.compile(r"[ \t]*\$env:([A-Za-z_]\w{0,100})[ \t]*=[ \t]*(.*)$"),
    re.compile(r"[ \t]*ENV[ \t]+([A-Z_][A-Z0-9_]{0,100})(?:=|[ \t]+)(.*)$"),
)
_NAME_ITEM = re.compile(r"name[ \t]*:[ \t]*[\"']?([A-Za-z_]\w*)[\"']?[ \t]*$")
_VALUE_ITEM = re.compile(r"value[ \t]*:[ \t]*(.*)$")
_FLOW_PAIR = re.compile(
    r"\{[ \t]*name[ \t]*:[ \t]*[\"']?([A-Za-z_]\w*)[\"']?[ \t]*,"
    r"[ \t]*value[ \t]*:[ \t]*(.*?)[ \t]*\}"
)


@dataclass
class ScanResult:
    invocations: list[Invocation] = field(default_factory=list)
    env: list[tuple[str, str, int]] = field(default_factory=list)


class ScanState:
    """What every part of the scan shares: the lines, `$VAR` values, what was found so far."""

    def __init__(self, lines: list[str], layout: Layout) -> None:
        self.lines = lines
        self.layout = layout
        self.vars: dict[str, str] = {}
        self.out = ScanResult()
        self.in_fence = False
        self.py_fence = False  # inside ```python: only argument lists are looked for
        self.skip_until = -1  # list lines already consumed by a `command:` + `args:` pair

    @staticmethod
    def _known_word(word: str) -> bool:
        base = basename(word)
        return bool(
            base in ("vllm", "vllm-mlx", "sglang", "docker", "podman", "nvidia-docker")
            or PYTHON_PROGRAM.fullmatch(base)
            or LLAMA_PROGRAM.fullmatch(base)
            or base.startswith(("mlx_lm.", "trtllm-"))
            or base.endswith(".py")
        )

    def _plausible(self, word: str, prompt: bool) -> bool:
        if self._known_word(word):
            return True
        base = basename(word)
        return (self.in_fence or prompt) and base not in SHELL_WORDS and base[:1].islower()


class EnvReader(ScanState):
    """Environment settings, whatever syntax sets them."""

    def _env_line(self, i: int, head: str, body: str) -> bool:
        """Assignment lines: shell variables, exports, `set`, `$env:`, Dockerfile ENV."""
        line = i + 1
        sm = _SET_LINE.match(body[:20_000])
        if sm:
            name, val = (sm.group(1), sm.group(2)) if sm.group(1) else (sm.group(3), sm.group(4))
            self._set_env(name, val, line)
            return True
        for rx in _ONE_SETTING_LINES:
            m = rx.match(body[:20_000])
            if m:
                self._set_env(m.group(1), yaml_scalar(m.group(2)), line)
                return True
        em = _EXPORT_NAME.match(head)
        if em:
            for name in em.group(1).split():
                if name in self.vars:
                    self.out.env.append((name, self.vars[name], line))
            return True
        if not _ASSIGN_LINE.match(head):
            return False
        words = tokenize(body[:100_000], self.vars)
        exported = bool(words) and words[0].text in ("export", "declare", "typeset")
        names = [w for w in words if w.kind == "word" and w.text not in ("export", "local",
                 "readonly", "declare", "typeset", "-x")]  # fmt: skip
        pairs = [ASSIGN.fullmatch(w.text) for w in names]
        if not pairs or not all(pairs) or any(w.kind == "op" for w in words):
            return False  # a command with prefix assignments, or prose
        for pm in pairs:
            assert pm is not None
            self.vars[pm.group(1)] = pm.group(2)
            if exported:
                self.out.env.append((pm.group(1), pm.group(2), line))
        return True

    def _env_block(self, i: int, body: str, em: re.Match[str]) -> int:
        indent, value = len(em.group(1)), em.group(3).strip()
        if value:
            self._env_flow(i, value)
            return i + 1
        j, n = i + 1, len(self.lines)
        pending: tuple[str, int] | None = None
        entry_indent: int | None = None  # where entries (or `- ` items) of this block sit
        item_indent: int | None = None  # where the keys inside a `- name:` item sit
        while j < n and j - i < MAX_LIST_LINES:
            line = strip_prefixes(self.lines[j])[0]
            stripped = line.strip()
            if not stripped or stripped.startswith("#"):
                j += 1
                continue
            ind = indent_of(line)
            if ind < indent or (ind == indent and not stripped.startswith("- ")):
                break
            if entry_indent is None:
                entry_indent = ind
            is_item = stripped.startswith("- ") and ind == entry_indent
            if is_item:
                item_indent = ind + 2 + len(stripped[2:]) - len(stripped[2:].lstrip())
            elif ind != (item_indent if item_indent is not None else entry_indent):
                j += 1  # nested deeper (`valueFrom:` / `secretKeyRef:`): not a variable
                continue
            entry = stripped[2:].strip() if is_item else stripped
            pending = self._env_entry(entry, j + 1, pending, is_item, item_indent is not None)
            j += 1
        return j

    def _env_entry(
        self, entry: str, line: int, pending: tuple[str, int] | None, item: bool, listed: bool
    ) -> tuple[str, int] | None:
        nm = _NAME_ITEM.match(entry)
        if nm:
            return nm.group(1), line
        vm = _VALUE_ITEM.match(entry)
        if vm and pending is not None:
            self._add_env(pending[0], yaml_scalar(vm.group(1)), line)
            return None
        fm = _FLOW_PAIR.search(entry)
        if fm:
            self._add_env(fm.group(1), yaml_scalar(fm.group(2)), line)
            return None
        if item:
            am = ASSIGN.fullmatch(yaml_scalar(entry))
            if am:
                self._add_env(am.group(1), am.group(2), line)
            return pending
        key, sep, val = entry.partition(":")
        if sep and not listed and re.fullmatch(r"[\"']?[A-Za-z_]\w*[\"']?", key.strip()):
            self._add_env(key.strip().strip("\"'"), yaml_scalar(val), line)
        return pending

    def _env_flow(self, i: int, value: str) -> None:
        parsed = parse_json_value(value)
        if isinstance(parsed, dict):
            for k, v in parsed.items():
                self._add_env(str(k), str(v), i + 1)
        elif isinstance(parsed, list):
            for item in parsed:
                if isinstance(item, dict) and "name" in item and "value" in item:
                    self._add_env(str(item["name"]), str(item["value"]), i + 1)
                elif isinstance(item, str) and ASSIGN.fullmatch(item):
                    name, _, val = item.partition("=")
                    self._add_env(name, val, i + 1)

    def _set_env(self, name: str, value: str, line: int) -> None:
        self.vars[name] = value
        self.out.env.append((name, value, line))

    def _add_env(self, name: str, value: str, line: int) -> None:
        self.vars.setdefault(name, value)
        self.out.env.append((name, value, line))

"""Command lines pasted into issue text, read into programs, flags and environment.

Reports paste commands in every shape: shell lines with `\\`, `^` or backtick
continuations, prompts and quote markers in front, JSON configs with broken quoting,
docker runs, and Kubernetes / docker-compose argument lists. This module reads them
faithfully into `Invocation`s; deciding what a flag *means* is the caller's job.

Issue text is hostile: nothing here executes anything, every scan is linear in the
input, and no input makes these functions raise.
"""

from __future__ import annotations

import ast
import contextlib
import json
import re
from bisect import bisect_right
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

# Caps that keep a hostile or enormous paste cheap to read.
MAX_VALUE_CHARS = 200_000  # one flag value is cut at this length
MAX_JSON_CHARS = 1_000_000  # parse_json_value gives up above this
MAX_JSON_DEPTH = 64  # ... or above this nesting
MAX_JOIN_LINES = 400  # physical lines joined into one command
MAX_LIST_LINES = 400  # lines read for one YAML / JSON argument list
MAX_WORDS = 5_000  # words read from one command; real ones have a few hundred
TEXT_CHARS = 2000  # Invocation.text is cut at this length
_HEAD_CHARS = 400  # how much of a line is looked at to decide if it starts a command
_BRACKET_STACK_CAP = 10_000


@dataclass(frozen=True)
class Arg:
    """One argument: `--flag value`, `--flag=value`, a boolean `--flag`, or a positional."""

    flag: str | None
    value: str | None
    line: int


@dataclass(frozen=True)
class Invocation:
    """One command as the reporter ran it.

    `program` is normalised (`vllm serve`, `sglang.launch_server`, `docker run`, ...).
    For `docker run`, `inner` names the program the image runs and `args` are that
    program's arguments (docker's own options are dropped, its `-e` go to `env`).
    `source` says where it was read from: `shell`, `list` (YAML/JSON argument list)
    or `inline` (a backtick span in prose).
    """

    program: str
    line: int
    text: str
    args: tuple[Arg, ...]
    env: dict[str, str]
    inner: str | None = None
    image: str | None = None
    source: str = "shell"

    @property
    def engine_program(self) -> str:
        """The program that does the work: the image's program for `docker run`."""
        return self.inner or self.program

    def values(self, *flags: str) -> list[str | None]:
        """Values of every occurrence of any of `flags`, in order."""
        return [a.value for a in self.args if a.flag in flags]

    def value(self, *flags: str) -> str | None:
        """The last value given for any of `flags` (the one argparse keeps)."""
        found = self.values(*flags)
        return found[-1] if found else None

    def has(self, *flags: str) -> bool:
        return any(a.flag in flags for a in self.args)

    def positionals(self) -> list[str]:
        return [a.value for a in self.args if a.flag is None and a.value is not None]


# --- public entry points -------------------------------------------------------------


def find_invocations(lines: list[str]) -> list[Invocation]:
    """Every command invocation in the document, in line order."""
    return list(_scan(lines).invocations)


def find_env_assignments(lines: list[str]) -> list[tuple[str, str, int]]:
    """(NAME, value, line) for environment variables the document sets.

    Sources: `export X=1`, `X=1 cmd ...` prefixes, `docker run -e X=1`, compose/k8s
    `env:` / `environment:` blocks, Dockerfile `ENV`, Windows `set`, PowerShell `$env:`.
    Plain shell variables (`X=1` on a line of its own) are not environment variables
    and are not listed; they are still used to resolve `$X` in commands.
    """
    return list(_scan(lines).env)


# The parser asks for invocations and env assignments of the same document: one scan.
_LAST: list[tuple[tuple[str, ...], _Result]] = []


def _scan(lines: list[str]) -> _Result:
    key = tuple(lines or ())
    if _LAST and _LAST[0][0] == key:
        return _LAST[0][1]
    result = _Scanner(list(key)).run()
    _LAST[:] = [(key, result)]
    return result


def parse_json_value(text: str) -> dict[str, Any] | list[Any] | None:
    """Tolerantly read a JSON-ish config value (`--speculative-config` and friends).

    Accepts JSON, Python literals (single quotes, True/False/None), surrounding shell
    quotes, trailing commas, missing closing brackets and bare YAML-flow words
    (`{method: mtp}`). Returns None for anything else, for values over
    MAX_JSON_CHARS, or nested deeper than MAX_JSON_DEPTH.
    """
    if not isinstance(text, str):
        return None
    t = text.strip()
    if len(t) > MAX_JSON_CHARS:
        return None
    t = _strip_outer_quotes(t)
    if not t or t[0] not in "{[":
        return None
    depth, closers = _nesting(t)
    if depth > MAX_JSON_DEPTH:
        return None
    for candidate in _json_candidates(t, closers):
        value = _loads(candidate)
        if isinstance(value, dict | list):
            return value
    return None


# --- JSON-ish values -----------------------------------------------------------------


def _strip_outer_quotes(t: str) -> str:
    while len(t) >= 2 and t[0] == t[-1] and t[0] in "'\"" and t[1:2] in ("{", "["):
        t = t[1:-1].strip()
    # A value cut from a broken quote may keep only one of its quotes.
    if t[:1] in "'\"" and t[1:2] in ("{", "["):
        t = t[1:]
    if t[-1:] in "'\"" and t[-2:-1] in ("}", "]"):
        t = t[:-1]
    return t


def _nesting(t: str) -> tuple[int, str]:
    """Maximum bracket depth and the closers needed to balance `t` (strings skipped)."""
    stack: list[str] = []
    deepest = 0
    in_str: str | None = None
    i, n = 0, len(t)
    while i < n:
        c = t[i]
        if in_str:
            if c == "\\":
                i += 2
                continue
            if c == in_str:
                in_str = None
        elif c in "\"'":
            in_str = c
        elif c in "{[":
            stack.append("}" if c == "{" else "]")
            deepest = max(deepest, len(stack))
            if deepest > MAX_JSON_DEPTH:
                return deepest, ""
        elif c in "}]" and stack:
            stack.pop()
        i += 1
    return deepest, "".join(reversed(stack))


_TRAILING_COMMA = re.compile(r",(\s*[}\]])")
_BARE_KEY = re.compile(r"([{,]\s*)([A-Za-z_][\w.\-]*)\s*:")
_BARE_VALUE = re.compile(r"(:\s*)([A-Za-z_][\w.\-/]*)(\s*[,}\]])")
_JSON_WORDS = {"true", "false", "null", "True", "False", "None"}


def _json_candidates(t: str, closers: str) -> Iterator[str]:
    yield t
    if '\\"' in t:  # escaped quotes left from a double-quoted shell word
        t = t.replace('\\"', '"')
        closers = _nesting(t)[1]
        yield t
    fixed = _TRAILING_COMMA.sub(r"\1", t + closers)
    if fixed != t:
        yield fixed
    bare = _BARE_KEY.sub(r'\1"\2":', fixed)
    bare = _BARE_VALUE.sub(
        lambda m: (
            m.group(0) if m.group(2) in _JSON_WORDS else f'{m.group(1)}"{m.group(2)}"' + m.group(3)
        ),
        bare,
    )
    if bare != fixed:
        yield bare


def _loads(s: str) -> object:
    try:
        return json.loads(s)
    except (ValueError, RecursionError):
        pass
    if len(s) > 100_000:  # ast.literal_eval is slower; JSON-sized configs only
        return None
    try:
        return ast.literal_eval(s)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None


# --- shell words ---------------------------------------------------------------------

_STOP = frozenset(" \t\r\n|&;<>")
_PLAIN = re.compile(r"[^\s|&;<>'\"\\$\[{]+")
_VAR = re.compile(r"\$(?:\{([A-Za-z_]\w*)(?:(:?[-=+?])([^}]*))?\}|([A-Za-z_]\w*))")
_REDIR = re.compile(r"\d*(?:&>>?|>>?|<<?)(&\d*-?)?")
_OPS = ("&&", "||", "|&", "|", ";", "&")
_ASSIGN = re.compile(r"([A-Za-z_]\w*)=(.*)", re.DOTALL)


@dataclass
class _Word:
    text: str
    pos: int
    kind: str = "word"  # "word" | "op" | "redir"


def _expand_var(m: re.Match[str], env: Mapping[str, str], depth: int = 0) -> str:
    """`$X`, `${X}`, `${X:-d}`, `${X:=d}`: known value, else the default, else as written."""
    name = m.group(1) or m.group(4)
    op, default = m.group(2), m.group(3)
    if name in env and not (op and op.startswith(":") and env[name] == ""):
        if op in (":+", "+"):
            return default or ""
        return env[name]
    if op in (":-", "-", ":=", "="):
        return _expand_plain(default or "", env, depth + 1)
    return m.group(0)


def _expand_plain(s: str, env: Mapping[str, str], depth: int = 0) -> str:
    """Expand variables in text that is not shell-quoted (YAML items, defaults)."""
    if "$" not in s or depth > 3:
        return s
    return _VAR.sub(lambda m: _expand_var(m, env, depth), s)


def _match_brackets(s: str, i: int, strings: bool = True, budget: list[int] | None = None) -> int:
    """Index just past the bracket that closes the one at `s[i]`, or -1.

    JSON strings are skipped when `strings` is set so that a `}` inside a value does
    not end the object early.
    """
    if budget is not None and budget[0] <= 0:
        return -1  # this command already spent its scanning budget: stay linear
    stack: list[str] = []
    n = len(s)
    start = i
    in_str = False
    while i < n:
        c = s[i]
        if in_str:
            if c == "\\":
                i += 2
                continue
            if c == '"':
                in_str = False
        elif c == '"' and strings:
            in_str = True
        elif c in "{[":
            if len(stack) >= _BRACKET_STACK_CAP:
                break
            stack.append("}" if c == "{" else "]")
        elif c in "}]":
            if not stack or stack.pop() != c:
                break
            if not stack:
                return i + 1
        i += 1
    if budget is not None:
        budget[0] -= i - start
    return -1


_NEXT_FLAG = re.compile(r"\s-{1,2}[A-Za-z]")


def _recover_end(s: str, i: int) -> int:
    """End of an unbalanced JSON value: the next ` --flag`, else the end of the text."""
    m = _NEXT_FLAG.search(s, i)
    return m.start() if m else len(s)


def _eol(s: str, i: int) -> int:
    j = s.find("\n", i)
    return len(s) if j < 0 else j


def _read_dquote(s: str, i: int, env: Mapping[str, str]) -> tuple[str | None, int]:
    """Bash double quotes from `s[i] == '"'`: (content, index past the close) or None."""
    out: list[str] = []
    j, n = i + 1, len(s)
    while j < n:
        c = s[j]
        if c == '"':
            return "".join(out), j + 1
        if c == "\\" and j + 1 < n and s[j + 1] in '"\\$`\n':
            if s[j + 1] != "\n":
                out.append(s[j + 1])
            j += 2
            continue
        if c == "$":
            m = _VAR.match(s, j)
            if m:
                out.append(_expand_var(m, env))
                j = m.end()
                continue
        out.append(c)
        j += 1
    return None, n


def _starts_json(text: str) -> bool:
    return text[:1] in ("{", "[")


def _balanced(content: str) -> bool:
    body = content.rstrip()
    return _match_brackets(body, 0) == len(body)


def _read_json_word(s: str, i: int, quote: str, budget: list[int]) -> tuple[str, int]:
    """A JSON value starting at `s[i]` whose quoting is broken: match brackets instead."""
    j = _match_brackets(s, i, quote != '"', budget)
    if j < 0:
        j = _recover_end(s, i)
        text = s[i:j].rstrip().rstrip("'\"")
    else:
        text = s[i:j]
        if j < len(s) and s[j] == quote:
            j += 1
    if quote == '"':
        text = text.replace('\\"', '"')
    return text, j


def _read_word(s: str, i: int, env: Mapping[str, str], budget: list[int]) -> tuple[str, int]:
    n = len(s)
    buf: list[str] = []
    size = 0
    while i < n and s[i] not in _STOP:
        c = s[i]
        m = _PLAIN.match(s, i)
        if m:
            buf.append(m.group(0))
            i = m.end()
        elif c in "{[":
            at_value = not buf or buf[-1].endswith("=")
            j = _match_brackets(s, i, True, budget) if at_value else -1
            if j > 0:
                buf.append(s[i:j])
                i = j
            elif at_value and c == "{":
                text, i = _read_json_word(s, i, "", budget)
                buf.append(text)
            else:
                buf.append(c)
                i += 1
        elif c == "'":
            j = s.find("'", i + 1)
            content = s[i + 1 : j] if j >= 0 else None
            if content is not None and (not _starts_json(content) or _balanced(content)):
                buf.append(content)
                i = j + 1
            elif s[i + 1 : i + 2] in ("{", "["):
                text, i = _read_json_word(s, i + 1, "'", budget)
                buf.append(text)
            else:  # unclosed quote: the rest of this physical line
                e = _eol(s, i + 1)
                buf.append(s[i + 1 : e])
                i = e
        elif c == '"':
            dq, j = _read_dquote(s, i, env)
            if dq is not None and (not _starts_json(dq) or _balanced(dq)):
                buf.append(dq)
                i = j
            elif s[i + 1 : i + 2] in ("{", "["):
                text, i = _read_json_word(s, i + 1, '"', budget)
                buf.append(text)
            else:
                e = _eol(s, i + 1)
                buf.append(s[i + 1 : e])
                i = e
        elif c == "\\":
            if i + 1 < n and s[i + 1] != "\n":
                buf.append(s[i + 1])
            i += 2
        else:  # "$"
            vm = _VAR.match(s, i)
            if vm:
                buf.append(_expand_var(vm, env))
                i = vm.end()
            elif s.startswith("$(", i):
                j = s.find(")", i)
                j = n if j < 0 else j + 1
                buf.append(s[i:j])
                i = j
            else:
                buf.append(c)
                i += 1
        size += len(buf[-1]) if buf else 0
        if size > MAX_VALUE_CHARS:
            # Keep reading to the end of the word but stop storing it.
            while i < n and s[i] not in _STOP:
                i += 1
            break
    return "".join(buf)[:MAX_VALUE_CHARS], i


def _tokenize(s: str, env: Mapping[str, str]) -> list[_Word]:
    """Split one logical command into shell words, operators and redirections."""
    out: list[_Word] = []
    i, n = 0, len(s)
    budget = [2 * n + 100_000]  # bracket scanning allowed for this command
    while i < n and len(out) < MAX_WORDS:
        c = s[i]
        if c in " \t\r\n":
            i += 1
            continue
        if c == "#":  # a comment runs to the end of its physical line
            i = _eol(s, i)
            continue
        op = next((o for o in _OPS if s.startswith(o, i)), None)
        if op and not (op == "&" and s.startswith("&>", i)):
            out.append(_Word(op, i, "op"))
            i += len(op)
            continue
        rm = _REDIR.match(s, i)
        if rm and rm.end() > i and s[rm.start() : rm.end()].lstrip("0123456789")[:1] in "<>&":
            start = i
            i = rm.end()
            if not rm.group(1):  # `> file`: the target is not an argument
                while i < n and s[i] in " \t":
                    i += 1
                _, i = _read_word(s, i, env, budget)
            out.append(_Word(s[start:i], start, "redir"))
            continue
        start = i
        text, i = _read_word(s, i, env, budget)
        if i == start:  # defensive: never loop without progress
            i += 1
            continue
        out.append(_Word(text, start))
    return out


# --- programs ------------------------------------------------------------------------

_VLLM_BENCH = {"serve", "throughput", "latency", "mm-processor", "startup", "sweep", "forward"}
_VLLM_SUBS = {"serve", "bench", "collect-env", "chat", "complete", "run-batch"}
_PY_MODULES = {
    "vllm.entrypoints.openai.api_server": "vllm serve",
    "vllm.entrypoints.api_server": "vllm serve",
    "sglang.launch_server": "sglang.launch_server",
    "sglang.bench_serving": "sglang.bench_serving",
    "sglang.benchmark.serving": "sglang.bench_serving",
    "sglang.bench_one_batch": "sglang.bench_one_batch",
    "sglang.bench_one_batch_server": "sglang.bench_one_batch_server",
    "sglang.bench_offline_throughput": "sglang.bench_offline_throughput",
    "mlx_lm.server": "mlx_lm.server",
    "mlx_lm.generate": "mlx_lm.generate",
    "vllm_mlx.cli": "vllm-mlx serve",
    "vllm_mlx.server": "vllm-mlx serve",
}
_OLD_BENCH_SCRIPTS = {
    "benchmark_serving.py": "vllm bench serve",
    "benchmark_throughput.py": "vllm bench throughput",
    "benchmark_latency.py": "vllm bench latency",
}
_PYTHON = re.compile(r"python(?:\d(?:\.\d+)?)?w?|py")
_PY_VALUE_OPTS = {"-X", "-W", "-Q"}
_DOCKER = {"docker", "podman", "nvidia-docker"}
_MLX_SUBS = {"serve", "bench", "chat", "download"}
_SHELLS = {"sh", "bash", "zsh", "dash"}
_DASH_C = {"-c", "-lc", "-ec", "-xc", "-cl"}
_WRAPPERS = {"sudo", "nohup", "time", "exec", "command", "stdbuf", "nice", "env"}
_RUNNERS = {"uv", "poetry", "pipenv", "pdm", "hatch", "rye"}
_LLAMA = re.compile(r"llama-[\w-]+|llama_[\w-]+")
_SHELL_WORDS = {
    "echo", "cd", "ls", "cat", "export", "set", "if", "then", "fi", "for", "do", "done",
    "while", "else", "source", "wait", "sleep", "kill", "pip", "pip3", "git", "mkdir", "rm",
    "cp", "mv", "grep", "tail", "head", "tee", "chmod", "which", "conda", "apt", "apt-get",
}  # fmt: skip


def _basename(word: str) -> str:
    base = word.replace("\\", "/").rsplit("/", 1)[-1]
    return base[:-4] if base.lower().endswith(".exe") else base


@dataclass
class _Program:
    name: str
    next: int  # index of the first argument word
    known: bool
    inner: str | None = None
    image: str | None = None
    env: list[tuple[str, str, int]] = field(default_factory=list)
    arg_words: list[_Word] | None = None  # docker: the image's arguments


def _program_at(words: list[_Word], k: int) -> _Program | None:
    w = words[k].text
    base = _basename(w)
    nxt = words[k + 1].text if k + 1 < len(words) else ""
    if base == "vllm":
        return _vllm_program(words, k + 1)
    if _PYTHON.fullmatch(base):
        return _python_program(words, k + 1)
    if base == "vllm-mlx":
        sub = nxt if nxt in _MLX_SUBS else ""
        return _Program(f"vllm-mlx {sub}".strip(), k + 2 if sub else k + 1, True)
    if base in _DOCKER and nxt == "run":
        return _docker_program(words, k + 2)
    if base in _DOCKER and nxt == "container" and k + 2 < len(words) and words[k + 2].text == "run":
        return _docker_program(words, k + 3)
    if base == "sglang" and nxt == "serve":
        return _Program("sglang.launch_server", k + 2, True)
    if _LLAMA.fullmatch(base) or base.startswith(("mlx_lm.", "trtllm-")):
        return _Program(base, k + 1, True)
    if base.endswith(".py"):  # ./script.py
        return _Program(_script_program(base), k + 1, True)
    return _Program(base, k + 1, False)


def _vllm_program(words: list[_Word], k: int) -> _Program:
    sub = words[k].text if k < len(words) else ""
    if sub == "bench" and k + 1 < len(words) and words[k + 1].text in _VLLM_BENCH:
        return _Program(f"vllm bench {words[k + 1].text}", k + 2, True)
    if sub in _VLLM_SUBS:
        return _Program(f"vllm {sub}", k + 1, True)
    return _Program("vllm", k, True)


def _script_program(base: str) -> str:
    return _OLD_BENCH_SCRIPTS.get(base, f"python {base}")


def _python_program(words: list[_Word], k: int) -> _Program | None:
    while k < len(words) and words[k].text.startswith("-") and words[k].text not in ("-m", "-c"):
        k += 2 if words[k].text in _PY_VALUE_OPTS else 1
    if k >= len(words):
        return None
    w = words[k].text
    if w == "-m" and k + 1 < len(words):
        module = words[k + 1].text
        if module in ("vllm.entrypoints.cli.main", "vllm"):
            return _vllm_program(words, k + 2)
        return _Program(_PY_MODULES.get(module, module), k + 2, True)
    if w == "-c":
        return _Program("python -c", k + 2, True)
    if w.endswith(".py"):
        return _Program(_script_program(_basename(w)), k + 1, True)
    return None


_DOCKER_VALUE_OPTS = {
    "-e", "--env", "-p", "--publish", "-v", "--volume", "--name", "--gpus", "--shm-size",
    "--ipc", "--runtime", "--network", "--net", "--entrypoint", "-w", "--workdir",
    "--env-file", "--device", "-u", "--user", "--ulimit", "--cpus", "--memory", "-m",
    "--mount", "--platform", "--label", "-l", "--log-driver", "--log-opt", "--restart",
    "--cap-add", "--cap-drop", "--security-opt", "--hostname", "-h", "--add-host", "--pid",
    "--cgroupns", "--group-add", "--tmpfs", "--memory-swap", "--cpuset-cpus", "--stop-signal",
    "--health-cmd", "--pull", "--dns", "--expose", "--link", "--uts", "--userns",
}  # fmt: skip


def _image_program(image: str) -> str | None:
    """The program an engine image runs when given only arguments."""
    name = image.lower().split("@", 1)[0]
    repo = name.rsplit(":", 1)[0] if ":" in name.rsplit("/", 1)[-1] else name
    if "vllm" in repo and "mlx" not in repo and "ascend" not in repo:
        return "vllm serve"
    if "llama.cpp" in repo or "llama-cpp" in repo:
        return "llama-server" if "server" in name else None
    return None


def _docker_program(words: list[_Word], k: int) -> _Program:
    env: list[tuple[str, str, int]] = []
    n = len(words)
    while k < n and words[k].text.startswith("-"):
        opt = words[k].text
        name, eq, val = opt.partition("=")
        if not eq and name in _DOCKER_VALUE_OPTS and k + 1 < n:
            val = words[k + 1].text
            k += 2
        else:
            k += 1
        if name in ("-e", "--env"):
            am = _ASSIGN.fullmatch(val)
            if am:
                env.append((am.group(1), am.group(2), words[k - 1].pos))
    prog = _Program("docker run", n, True, env=env, arg_words=[])
    if k >= n:
        return prog
    prog.image = words[k].text
    rest = words[k + 1 :]
    inner = _program_at(rest, 0) if rest else None
    if inner is not None and inner.known and not rest[0].text.startswith("-"):
        prog.inner = inner.name
        prog.arg_words = rest[inner.next :]
    else:
        prog.inner = _image_program(prog.image)
        prog.arg_words = rest
    return prog


# --- arguments -----------------------------------------------------------------------

_BOOLEAN_FLAGS = {
    "--enforce-eager", "--enable-expert-parallel", "-ep", "--trust-remote-code",
    "--ignore-eos", "--save-result", "--append-result", "--save-detailed",
    "--enable-prefix-caching", "--no-enable-prefix-caching", "--enable-chunked-prefill",
    "--no-enable-chunked-prefill", "--disable-log-stats", "--disable-log-requests",
    "--use-v2-block-manager", "--disable-custom-all-reduce", "--enable-lora",
    "--async-scheduling", "--no-async-scheduling", "--enable-mtp", "--mtp-optimistic",
    "--continuous-batching", "--mllm", "--default-mllm-draft", "--disable-cuda-graph",
    "--disable-radix-cache", "--enable-torch-compile", "--enable-dp-attention",
    "--disable-overlap-schedule", "--enable-metrics", "--skip-server-warmup",
    "--speculative-use-rejection-sampling", "--disable-ignore-eos", "--output-details",
    "--apply-chat-template", "--skip-tokenizer-init", "--enable-auto-tool-choice",
    "--disable-frontend-multiprocessing", "--enable-eplb", "--enable-dbo",
    "--cont-batching", "--no-cont-batching", "--no-mmap", "--mlock", "--jinja",
    "--verbose", "-v", "--help", "-h", "--version", "--disable-tqdm", "--profile",
    "--streaming", "--return-hidden-states", "--enable-return-hidden-states",
    "--enable-sleep-mode", "--enforce-cuda-graph", "--no-enforce-eager",
}  # fmt: skip
_BOOL_WORDS = {"true", "false", "1", "0", "True", "False", "on", "off", "yes", "no"}
_FLAG = re.compile(r"--?[A-Za-z][\w.\-]*")
_NUMBER = re.compile(r"-\.?\d")


def _is_flag(text: str) -> bool:
    head = text.split("=", 1)[0]
    return bool(_FLAG.fullmatch(head)) and not _NUMBER.match(text)


def _takes_no_value(flag: str, nxt: str) -> bool:
    """Boolean flags take no value, but an explicit `true`/`0` after one is kept."""
    if flag in _BOOLEAN_FLAGS or flag.startswith(("--no-", "--disable-", "--enable-")):
        return nxt not in _BOOL_WORDS
    return False


def _split_list_item(text: str) -> list[str]:
    """`"--tensor-parallel-size 4"` as one list item means flag and value."""
    head, _, rest = text.partition(" ")
    if rest.strip() and _is_flag(head) and "=" not in head:
        return [head, rest.strip()]
    return [text]


def _parse_args(words: list[_Word], line_of: _LineMap) -> tuple[Arg, ...]:
    args: list[Arg] = []
    k, n = 0, len(words)
    while k < n:
        w = words[k]
        if w.kind != "word":
            k += 1
            continue
        line = line_of(w.pos)
        text = w.text
        if text == "--":
            k += 1
            continue
        if _is_flag(text):
            flag, eq, val = text.partition("=")
            if eq:
                args.append(Arg(flag, val, line))
                k += 1
                continue
            nxt = words[k + 1] if k + 1 < n else None
            if (
                nxt is not None
                and nxt.kind == "word"
                and not _is_flag(nxt.text)
                and not _takes_no_value(flag, nxt.text)
            ):
                args.append(Arg(flag, nxt.text, line))
                k += 2
                continue
            args.append(Arg(flag, None, line))
        else:
            args.append(Arg(None, text, line))
        k += 1
    return tuple(args)


# --- line handling -------------------------------------------------------------------

_QUOTE_PREFIX = re.compile(r"[ \t]{0,12}(?:>[ \t]?){1,8}")
_PROMPTS = (
    re.compile(
        r"[ \t]{0,12}(?:\([\w.\-]{1,64}\)[ \t]*)?"
        r"(?:[\w.\-]{1,64}@[\w.\-]{1,64}:[^\s$#]{0,200})?[$%][ \t]+"
    ),
    re.compile(r"[ \t]{0,12}PS [^>\n]{0,200}>[ \t]*"),
    re.compile(r"[ \t]{0,12}[A-Za-z]:\\[^>\n]{0,200}>[ \t]*"),
)  # fmt: skip
_BULLET = re.compile(r"[ \t]{0,12}(?:\d{1,3}[.)]|[-*+•])[ \t]+")
_FENCE = re.compile(r"[ \t]{0,12}(`{3,}|~{3,})")
_PY_LABELS = {"python", "py", "python3", "pycon", "ipython"}
_COMMENT = re.compile(r"[ \t]*#")
_FLAG_LINE = re.compile(r"[ \t]*--?[A-Za-z]")
_CMD_HEAD = re.compile(
    r"[ \t]*(?:(?:[A-Za-z_]\w{0,100}=(?:'[^'\n]{0,500}'|\"[^\"\n]{0,500}\"|[^\s'\"]{0,500})"
    r"|sudo(?:[ \t]+-[A-Za-z]{1,4})*|env|nohup|time|exec|command|(?:uv|poetry|pipenv)[ \t]+run)"
    r"[ \t]+){0,12}([\w./~\\:+\-]{1,200})(?:[ \t]|$)"
)
_INLINE_CODE = re.compile(r"`([^`\n]{4,4000})`")


def _strip_prefixes(line: str) -> tuple[str, bool]:
    """Drop markdown quote markers and shell prompts; True when a prompt was seen."""
    m = _QUOTE_PREFIX.match(line)
    if m:
        line = line[m.end() :]
    for rx in _PROMPTS:
        pm = rx.match(line)
        if pm and pm.end() < len(line):
            return line[pm.end() :], True
    return line, False


class _LineMap:
    """Offset in a joined logical command -> 1-based document line."""

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.lines: list[int] = []

    def add(self, offset: int, line: int) -> None:
        self.starts.append(offset)
        self.lines.append(line)

    def __call__(self, pos: int) -> int:
        idx = bisect_right(self.starts, pos) - 1
        return self.lines[max(idx, 0)] if self.lines else 0


def _cut_continuation(body: str) -> tuple[str, bool]:
    """Drop a trailing `\\`, Windows `^` or PowerShell backtick (and a comment after `\\`)."""
    t = body.rstrip()
    if t.endswith("\\"):
        return t[:-1], True
    if t[-1:] in ("^", "`") and t[-2:-1] in (" ", "\t"):
        return t[:-1], True
    b = t.rfind("\\")
    if b >= 0 and t[b + 1 :].lstrip(" \t").startswith("#"):  # `--tp 2 \\  # why`
        return t[:b], True
    return body, False


class _QuoteState:
    """Tracks, line by line, whether a quoted JSON value is still open (multi-line JSON)."""

    def __init__(self) -> None:
        self.quote: str | None = None
        self.depth = 0

    def feed(self, text: str) -> bool:
        if self.quote is None and "'" not in text and '"' not in text:
            return False
        for c in text:
            if self.quote is None:
                if c in ("'", '"'):
                    self.quote, self.depth = c, 0
            elif c == self.quote:
                self.quote = None
            elif c in ("{", "["):
                self.depth += 1
            elif c in ("}", "]"):
                self.depth -= 1
        return self.quote is not None and self.depth > 0


# --- the scanner ---------------------------------------------------------------------

_ASSIGN_LINE = re.compile(
    r"[ \t]*(?:export|declare[ \t]+-x|local|readonly|typeset)?[ \t]*[A-Za-z_]\w{0,100}="
)
_EXPORT_NAME = re.compile(r"[ \t]*export[ \t]+([A-Za-z_]\w*(?:[ \t]+[A-Za-z_]\w*)*)[ \t]*$")
_SET_LINE = re.compile(
    r"[ \t]*(?:set|SET)[ \t]+"
    r"(?:\"([A-Za-z_]\w{0,100})=([^\"\n]*)\"|([A-Za-z_]\w{0,100})=(\S*))[ \t]*$"
)
_PS_ENV = re.compile(r"[ \t]*\$env:([A-Za-z_]\w{0,100})[ \t]*=[ \t]*(.*)$")
_DOCKERFILE_ENV = re.compile(r"[ \t]*ENV[ \t]+([A-Z_][A-Z0-9_]{0,100})(?:=|[ \t]+)(.*)$")
_LIST_KEY = re.compile(
    r"([ \t]*)(?:-[ \t]+)?[\"']?(command|args|entrypoint|cmd|Cmd|Entrypoint)[\"']?"
    r"[ \t]*:[ \t]*(.*)$"
)
_ENV_KEY = re.compile(r"([ \t]*)(?:-[ \t]+)?[\"']?(env|environment)[\"']?[ \t]*:[ \t]*(.*)$")
_IMAGE_KEY = re.compile(r"[ \t]*(?:-[ \t]+)?[\"']?image[\"']?[ \t]*:[ \t]*[\"']?([^\s\"']+)")
_FOLLOW = {"command": ("args",), "cmd": ("args",), "entrypoint": ("command", "args")}
_ITEM = re.compile(r"([ \t]*)-[ \t]+(.*)$")
_INLINE_LIST = re.compile(
    r"\[[ \t]*[\"'](?:vllm|vllm-mlx|python3?|sglang|llama-server|trtllm-serve|docker)[\"']"
)
_NAME_ITEM = re.compile(r"name[ \t]*:[ \t]*[\"']?([A-Za-z_]\w*)[\"']?[ \t]*$")
_VALUE_ITEM = re.compile(r"value[ \t]*:[ \t]*(.*)$")
_FLOW_PAIR = re.compile(
    r"\{[ \t]*name[ \t]*:[ \t]*[\"']?([A-Za-z_]\w*)[\"']?[ \t]*,"
    r"[ \t]*value[ \t]*:[ \t]*(.*?)[ \t]*\}"
)


@dataclass
class _Result:
    invocations: list[Invocation] = field(default_factory=list)
    env: list[tuple[str, str, int]] = field(default_factory=list)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def _yaml_scalar(text: str) -> str:
    """A YAML scalar as written in a list item or mapping value."""
    t = text.strip()
    if t[:1] == '"':
        end = _dquote_end(t)
        if end > 0:
            try:
                val = json.loads(t[:end])
                return val if isinstance(val, str) else t[1 : end - 1]
            except ValueError:
                return t[1 : end - 1]
        return t[1:]
    if t[:1] == "'":
        end = t.find("'", 1)
        while end > 0 and t[end + 1 : end + 2] == "'":
            end = t.find("'", end + 2)
        return (t[1:end] if end > 0 else t[1:]).replace("''", "'")
    hash_at = t.find(" #")
    return (t[:hash_at] if hash_at >= 0 else t).strip()


def _bracket_delta(text: str) -> int:
    return text.count("[") + text.count("{") - text.count("]") - text.count("}")


def _dquote_end(t: str) -> int:
    i = 1
    while i < len(t):
        if t[i] == "\\":
            i += 2
            continue
        if t[i] == '"':
            return i + 1
        i += 1
    return -1


def _flow_items(s: str, base: int) -> list[tuple[str, int]]:
    """Items of a YAML/JSON flow list `s` (starting with `[`), with their offsets."""
    end = _match_brackets(s, 0)
    body_end = end - 1 if end > 0 else len(s)
    try:
        parsed = json.loads(s[:end]) if end > 0 else None
    except (ValueError, RecursionError):
        parsed = None
    items: list[tuple[str, int]] = []
    i = 1
    while i < body_end:
        while i < body_end and s[i] in " \t\r\n,":
            i += 1
        if i >= body_end:
            break
        start = i
        if s[i] in "\"'":
            j = _dquote_end(s[i:body_end]) if s[i] == '"' else s.find("'", i + 1) + 1 - i
            j = body_end - i if j <= 0 else j
            raw = s[i : i + j]
            i += j
        else:
            j = i
            while j < body_end and s[j] != ",":
                if s[j] in "{[":
                    k = _match_brackets(s, j)  # unbalanced: the rest is one item (linear)
                    j = k if 0 < k <= body_end else body_end
                else:
                    j += 1
            raw = s[i:j]
            i = j
        items.append((_yaml_scalar(raw), base + start))
    if isinstance(parsed, list) and len(parsed) == len(items):
        items = [
            (str(v) if not isinstance(v, str) else v, pos)
            for v, (_, pos) in zip(parsed, items, strict=True)
        ]
    return items


class _Scanner:
    """One linear pass over the document collecting commands, lists and env settings."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = [x if isinstance(x, str) else "" for x in (lines or [])]
        self.vars: dict[str, str] = {}
        self.out = _Result()
        self.in_fence = False
        self.py_fence = False  # inside ```python: only argument lists are looked for
        self.skip_until = -1  # list lines already consumed by a `command:` + `args:` pair

    def run(self) -> _Result:
        with contextlib.suppress(RecursionError):  # defensive: never take the parser down
            self._run()
        self.out.env.sort(key=lambda t: t[2])
        return self.out

    def _run(self) -> None:
        i, n = 0, len(self.lines)
        while i < n:
            line = self.lines[i]
            fm = _FENCE.match(line)
            if fm:
                self.in_fence = not self.in_fence
                label = line[fm.end() :].strip().lower()
                self.py_fence = self.in_fence and label in _PY_LABELS
                i += 1
                continue
            if i < self.skip_until:
                i += 1
                continue
            i = self._line(i)

    def _line(self, i: int) -> int:
        """Handle the line at index i; return the index of the next unread line."""
        raw = self.lines[i]
        if not raw.strip():
            return i + 1
        if self.py_fence:
            self._inline(i, raw)
            return i + 1
        body, prompt = _strip_prefixes(raw)
        head = body[:_HEAD_CHARS]
        km = _LIST_KEY.match(head)
        if km:
            nxt = self._list_key(i, body, km)
            if nxt is not None:
                return nxt
        em = _ENV_KEY.match(head)
        if em:
            return self._env_block(i, body, em)
        if self._env_line(i, head, body):
            return i + 1
        cm = _CMD_HEAD.match(head)
        if cm is None or not self._known_word(cm.group(1)):
            bm = _BULLET.match(head)  # "1. vllm serve ..." / "- python -m ..."
            bullet = _CMD_HEAD.match(head, bm.end()) if bm else None
            if bm and bullet and self._known_word(bullet.group(1)):
                cm, body, head = bullet, body[bm.end() :], head[bm.end() :]
        prose_code = "`" in head and not (self.in_fence or prompt)  # `cmd` quoted in prose
        if cm is not None and not prose_code and self._plausible(cm.group(1), prompt):
            nxt = self._command(i, body, prompt)
            if nxt is not None:
                return nxt
        self._inline(i, raw)
        return i + 1

    # -- commands

    @staticmethod
    def _known_word(word: str) -> bool:
        base = _basename(word)
        return bool(
            base in ("vllm", "vllm-mlx", "sglang", "docker", "podman", "nvidia-docker")
            or _PYTHON.fullmatch(base)
            or _LLAMA.fullmatch(base)
            or base.startswith(("mlx_lm.", "trtllm-"))
            or base.endswith(".py")
        )

    def _plausible(self, word: str, prompt: bool) -> bool:
        if self._known_word(word):
            return True
        base = _basename(word)
        return (self.in_fence or prompt) and base not in _SHELL_WORDS and base[:1].islower()

    def _gather(self, i: int, body: str) -> tuple[list[tuple[int, str, str]], int]:
        """Physical lines of the command starting at line i: (line, code, shown text)."""
        segs: list[tuple[int, str, str]] = []
        n = len(self.lines)
        j = i
        cur = body
        quotes = _QuoteState()
        while True:
            code, cont = _cut_continuation(cur)
            segs.append((j + 1, code, cur))
            j += 1
            open_json = quotes.feed(code)
            if len(segs) >= MAX_JOIN_LINES or j >= n:
                break
            if cont or open_json:
                while j < n and _COMMENT.match(_strip_prefixes(self.lines[j])[0]):
                    j += 1  # comment lines inside a continued command are skipped
                if j < n and self.lines[j].strip() and not _FENCE.match(self.lines[j]):
                    cur = _strip_prefixes(self.lines[j])[0]
                    continue
                break
            nb = _strip_prefixes(self.lines[j])[0] if j < n else ""
            if _FLAG_LINE.match(nb) and not _ITEM.match(nb):  # flags pasted without `\`
                cur = nb
                continue
            break
        return segs, j

    def _command(self, i: int, body: str, prompt: bool) -> int | None:
        segs, nxt = self._gather(i, body)
        lmap = _LineMap()
        parts: list[str] = []
        offset = 0
        for line_no, code, _ in segs:
            lmap.add(offset, line_no)
            parts.append(code)
            offset += len(code) + 1
        logical = "\n".join(parts)
        words = _tokenize(logical, self.vars)
        shown = "\n".join(s[2] for s in segs)
        found = False
        for seg in _split_ops(words):
            inv = self._invocation(seg, lmap, shown, prompt or len(segs) > 1, "shell")
            if inv is not None:
                found = True
        return nxt if found else None

    def _invocation(
        self,
        seg: list[_Word],
        lmap: _LineMap,
        shown: str,
        strong: bool,
        source: str,
    ) -> Invocation | None:
        env: list[tuple[str, str, int]] = []
        k = 0
        while k < len(seg):
            t = seg[k].text
            am = _ASSIGN.fullmatch(t)
            if am and seg[k].kind == "word":
                env.append((am.group(1), am.group(2), lmap(seg[k].pos)))
                k += 1
            elif t in _WRAPPERS:
                k += 1
                while k < len(seg) and seg[k].text.startswith("-") and t != "env":
                    k += 1
            elif t in _RUNNERS and k + 1 < len(seg) and seg[k + 1].text == "run":
                k += 2
            elif t == "timeout":
                k += 2 if k + 1 < len(seg) and seg[k + 1].text[:1].isdigit() else 1
            else:
                break
        if k >= len(seg):
            return None
        if _basename(seg[k].text) in _SHELLS and k + 2 < len(seg) and seg[k + 1].text in _DASH_C:
            return self._shell_script(seg[k + 2], lmap, shown, source)
        prog = _program_at(seg, k)
        if prog is None:
            return None
        arg_words = prog.arg_words if prog.arg_words is not None else seg[prog.next :]
        args = _parse_args(arg_words, lmap)
        if not self._accept(prog, args, strong):
            return None
        env.extend((name, val, lmap(pos)) for name, val, pos in prog.env)
        inv = Invocation(
            program=prog.name,
            line=lmap(seg[k].pos),
            text=shown[:TEXT_CHARS],
            args=args,
            env={name: val for name, val, _ in env},
            inner=prog.inner,
            image=prog.image,
            source=source,
        )
        self.out.invocations.append(inv)
        self.out.env.extend(env)
        return inv

    def _shell_script(
        self, script: _Word, lmap: _LineMap, shown: str, source: str
    ) -> Invocation | None:
        """`bash -c "vllm serve ..."` (compose and k8s love it): read the script."""
        inner = _LineMap()
        inner.add(0, lmap(script.pos))
        found = None
        for seg in _split_ops(_tokenize(script.text, self.vars)):
            found = self._invocation(seg, inner, shown, True, source) or found
        return found

    def _accept(self, prog: _Program, args: tuple[Arg, ...], strong: bool) -> bool:
        """Tell a command from prose that happens to start with a program's name."""
        has_flag = any(a.flag for a in args)
        if not prog.known:
            return has_flag and (strong or self.in_fence)
        if strong or self.in_fence or has_flag:
            return True
        if prog.name == "docker run":
            return any(c in (prog.image or "") for c in "/:")
        pos = [a.value or "" for a in args if a.flag is None]
        return bool(pos) and ("/" in pos[0] or pos[0].endswith((".py", ".gguf")))

    def _inline(self, i: int, raw: str) -> None:
        """Commands quoted in prose: "... run `vllm serve X --tp 2` and ..."."""
        if "`" not in raw:
            lm = _INLINE_LIST.search(raw[:100_000])
            if lm:
                self._flow_list(i, raw, lm.start())
            return
        for count, m in enumerate(_INLINE_CODE.finditer(raw)):
            if count >= 50:
                break
            span = m.group(1)
            cm = _CMD_HEAD.match(span)
            if not cm or not self._known_word(cm.group(1)):
                continue
            lmap = _LineMap()
            lmap.add(0, i + 1)
            for seg in _split_ops(_tokenize(span, self.vars)):
                self._invocation(seg, lmap, span, False, "inline")

    # -- YAML / JSON argument lists

    def _list_key(self, i: int, body: str, km: re.Match[str]) -> int | None:
        indent, key, value = len(km.group(1)), km.group(2).lower(), km.group(3).strip()
        items, nxt = self._list_items(i, body, km, indent, value)
        if items is None:
            return None
        follow = _FOLLOW.get(key)
        if follow:
            extra, after = self._following_args(nxt, indent, follow)
            if extra is not None:
                items += extra
                self.skip_until = after
        if not items:
            return nxt
        self._list_invocation(i, items)
        return nxt

    def _list_items(
        self, i: int, body: str, km: re.Match[str], indent: int, value: str
    ) -> tuple[list[tuple[str, int]] | None, int]:
        if value.startswith("["):
            start = km.start(3)
            return self._flow_at(i, body, start)
        if value in ("", "|", ">", "|-", ">-") or value.startswith(("#", "|", ">")):
            if value[:1] in ("|", ">"):
                return self._folded(i, indent)
            return self._block_items(i + 1, indent)
        # `command: vllm serve x --tp 2` / `command: --model x`: a shell-like string.
        text = _yaml_scalar(value)
        if not (_is_flag(text.split(" ", 1)[0]) or self._known_word(text.split(" ", 1)[0])):
            return None, i + 1
        return [(w.text, i + 1) for w in _tokenize(text, self.vars) if w.kind == "word"], i + 1

    def _flow_at(self, i: int, body: str, start: int) -> tuple[list[tuple[str, int]], int]:
        lmap = _LineMap()
        lmap.add(0, i + 1)
        parts = [body[start:]]
        size = len(parts[0]) + 1
        # Bracket balance counted line by line (strings ignored) keeps this linear.
        depth = _bracket_delta(parts[0])
        j = i + 1
        while depth > 0 and j < len(self.lines):
            if j - i > MAX_LIST_LINES or size > MAX_VALUE_CHARS:
                break
            lmap.add(size, j + 1)
            parts.append(_strip_prefixes(self.lines[j])[0])
            size += len(parts[-1]) + 1
            depth += _bracket_delta(parts[-1])
            j += 1
        items = _flow_items("\n".join(parts), 0)
        return [(_expand_plain(t, self.vars), lmap(pos)) for t, pos in items], j

    def _block_items(self, j: int, indent: int) -> tuple[list[tuple[str, int]], int]:
        items: list[tuple[str, int]] = []
        n = len(self.lines)
        while j < n and len(items) < MAX_LIST_LINES:
            line = _strip_prefixes(self.lines[j])[0]
            if not line.strip() or line.strip().startswith("#"):
                j += 1
                continue
            im = _ITEM.match(line)
            if not im or len(im.group(1)) < indent:
                break
            items.append((_expand_plain(_yaml_scalar(im.group(2)), self.vars), j + 1))
            j += 1
        return items, j

    def _folded(self, i: int, indent: int) -> tuple[list[tuple[str, int]], int]:
        items: list[tuple[str, int]] = []
        j = i + 1
        while j < len(self.lines) and j - i < MAX_LIST_LINES:
            line = self.lines[j]
            if line.strip() and _indent(line) <= indent:
                break
            code, _ = _cut_continuation(line)
            items.extend((w.text, j + 1) for w in _tokenize(code, self.vars) if w.kind == "word")
            j += 1
        return items, j

    def _following_args(
        self, j: int, indent: int, follow: tuple[str, ...]
    ) -> tuple[list[tuple[str, int]] | None, int]:
        """k8s puts `args:` after `command:` (compose: `command:` after `entrypoint:`);
        together they are one argument vector."""
        for k in range(j, min(j + 15, len(self.lines))):
            body = _strip_prefixes(self.lines[k])[0]
            km = _LIST_KEY.match(body[:_HEAD_CHARS])
            if km and km.group(2).lower() in follow and len(km.group(1)) == indent:
                items, nxt = self._list_items(k, body, km, indent, km.group(3).strip())
                return items, nxt
            if body.strip() and _indent(body) < indent:
                break
        return None, j

    def _flow_list(self, i: int, raw: str, start: int) -> None:
        items, _ = self._flow_at(i, raw, start)
        if items:
            self._list_invocation(i, items)

    def _list_invocation(self, i: int, items: list[tuple[str, int]]) -> None:
        lmap = _LineMap()
        words: list[_Word] = []
        for text, line in items:
            for piece in _split_list_item(text):
                lmap.add(len(words), line)
                words.append(_Word(piece, len(words)))
        shown = "\n".join(self.lines[i : min(i + 40, len(self.lines))])[:TEXT_CHARS]
        first = _basename(words[0].text) if words else ""
        if (first in _SHELLS or self._known_word(first)) and self._invocation(
            words, lmap, shown, True, "list"
        ):
            return
        image = self._nearby_image(i)
        program = (_image_program(image) if image else None) or "unknown"
        self.out.invocations.append(
            Invocation(
                program=program,
                line=items[0][1],
                text=shown,
                args=_parse_args(words, lmap),
                env={},
                image=image,
                source="list",
            )
        )

    def _nearby_image(self, i: int) -> str | None:
        """The `image:` of the same compose service / k8s container (same indentation
        block), looking up first since it usually comes before `command:`."""
        indent = _indent(_strip_prefixes(self.lines[i])[0])
        for step in (-1, 1):
            k = i + step
            while 0 <= k < len(self.lines) and abs(k - i) <= 30:
                body = _strip_prefixes(self.lines[k])[0]
                if body.strip():
                    m = _IMAGE_KEY.match(body[:_HEAD_CHARS])
                    if m and _indent(body) == indent:
                        return m.group(1)
                    if _indent(body) < indent:
                        break
                k += step
        return None

    # -- environment

    def _env_line(self, i: int, head: str, body: str) -> bool:
        """Assignment lines: shell variables, exports, `set`, `$env:`, Dockerfile ENV."""
        line = i + 1
        sm = _SET_LINE.match(body[:20_000])
        if sm:
            name, val = (sm.group(1), sm.group(2)) if sm.group(1) else (sm.group(3), sm.group(4))
            self._set_env(name, val, line)
            return True
        for rx in (_PS_ENV, _DOCKERFILE_ENV):
            m = rx.match(body[:20_000])
            if m:
                self._set_env(m.group(1), _yaml_scalar(m.group(2)), line)
                return True
        em = _EXPORT_NAME.match(head)
        if em:
            for name in em.group(1).split():
                if name in self.vars:
                    self.out.env.append((name, self.vars[name], line))
            return True
        if not _ASSIGN_LINE.match(head):
            return False
        words = _tokenize(body[:100_000], self.vars)
        exported = bool(words) and words[0].text in ("export", "declare", "typeset")
        names = [w for w in words if w.kind == "word" and w.text not in ("export", "local",
                 "readonly", "declare", "typeset", "-x")]  # fmt: skip
        pairs = [_ASSIGN.fullmatch(w.text) for w in names]
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
            line = _strip_prefixes(self.lines[j])[0]
            stripped = line.strip()
            if not stripped or stripped.startswith("#"):
                j += 1
                continue
            ind = _indent(line)
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
            self._add_env(pending[0], _yaml_scalar(vm.group(1)), line)
            return None
        fm = _FLOW_PAIR.search(entry)
        if fm:
            self._add_env(fm.group(1), _yaml_scalar(fm.group(2)), line)
            return None
        if item:
            am = _ASSIGN.fullmatch(_yaml_scalar(entry))
            if am:
                self._add_env(am.group(1), am.group(2), line)
            return pending
        key, sep, val = entry.partition(":")
        if sep and not listed and re.fullmatch(r"[\"']?[A-Za-z_]\w*[\"']?", key.strip()):
            self._add_env(key.strip().strip("\"'"), _yaml_scalar(val), line)
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
                elif isinstance(item, str) and _ASSIGN.fullmatch(item):
                    name, _, val = item.partition("=")
                    self._add_env(name, val, i + 1)

    def _set_env(self, name: str, value: str, line: int) -> None:
        self.vars[name] = value
        self.out.env.append((name, value, line))

    def _add_env(self, name: str, value: str, line: int) -> None:
        self.vars.setdefault(name, value)
        self.out.env.append((name, value, line))


def _split_ops(words: list[_Word]) -> Iterator[list[_Word]]:
    """Commands joined by `&&`, `;`, `|`, `&` are separate invocations."""
    seg: list[_Word] = []
    for w in words:
        if w.kind == "op":
            if seg:
                yield seg
            seg = []
        else:
            seg.append(w)
    if seg:
        yield seg

"""Which program a command runs (vLLM, SGLang, vllm-mlx, llama.cpp, through python -m,
docker, shells and wrappers) and its arguments read into flags and values."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from triagebot.parse.commands.invocation import Arg
from triagebot.parse.commands.lines import LineMap
from triagebot.parse.commands.words import ASSIGN, Word

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
PYTHON_PROGRAM = re.compile(r"python(?:\d(?:\.\d+)?)?w?|py")
_PY_VALUE_OPTS = {"-X", "-W", "-Q"}
_DOCKER = {"docker", "podman", "nvidia-docker"}
_MLX_SUBS = {"serve", "bench", "chat", "download"}
SHELLS = {"sh", "bash", "zsh", "dash"}
DASH_C = {"-c", "-lc", "-ec", "-xc", "-cl"}
WRAPPERS = {"sudo", "nohup", "time", "exec", "command", "stdbuf", "nice", "env"}
RUNNERS = {"uv", "poetry", "pipenv", "pdm", "hatch", "rye"}
LLAMA_PROGRAM = re.compile(r"llama-[\w-]+|llama_[\w-]+")
SHELL_WORDS = {
    "echo", "cd", "ls", "cat", "export", "set", "if", "then", "fi", "for", "do", "done",
    "while", "else", "source", "wait", "sleep", "kill", "pip", "pip3", "git", "mkdir", "rm",
    "cp", "mv", "grep", "tail", "head", "tee", "chmod", "which", "conda", "apt", "apt-get",
}  # fmt: skip


def basename(word: str) -> str:
    base = word.replace("\\", "/").rsplit("/", 1)[-1]
    return base[:-4] if base.lower().endswith(".exe") else base


@dataclass
class Program:
    name: str
    next: int  # index of the first argument word
    known: bool
    inner: str | None = None
    image: str | None = None
    env: list[tuple[str, str, int]] = field(default_factory=list)
    arg_words: list[Word] | None = None  # docker: the image's arguments


def program_at(words: list[Word], k: int) -> Program | None:
    w = words[k].text
    base = basename(w)
    nxt = words[k + 1].text if k + 1 < len(words) else ""
    if base == "vllm":
        return _vllm_program(words, k + 1)
    if PYTHON_PROGRAM.fullmatch(base):
        return _python_program(words, k + 1)
    if base == "vllm-mlx":
        sub = nxt if nxt in _MLX_SUBS else ""
        return Program(f"vllm-mlx {sub}".strip(), k + 2 if sub else k + 1, True)
    if base in _DOCKER and nxt == "run":
        return _docker_program(words, k + 2)
    if base in _DOCKER and nxt == "container" and k + 2 < len(words) and words[k + 2].text == "run":
        return _docker_program(words, k + 3)
    if base == "sglang" and nxt == "serve":
        return Program("sglang.launch_server", k + 2, True)
    if LLAMA_PROGRAM.fullmatch(base) or base.startswith(("mlx_lm.", "trtllm-")):
        return Program(base, k + 1, True)
    if base.endswith(".py"):  # ./script.py
        return Program(_script_program(base), k + 1, True)
    return Program(base, k + 1, False)


def _vllm_program(words: list[Word], k: int) -> Program:
    sub = words[k].text if k < len(words) else ""
    if sub == "bench" and k + 1 < len(words) and words[k + 1].text in _VLLM_BENCH:
        return Program(f"vllm bench {words[k + 1].text}", k + 2, True)
    if sub in _VLLM_SUBS:
        return Program(f"vllm {sub}", k + 1, True)
    return Program("vllm", k, True)


def _script_program(base: str) -> str:
    return _OLD_BENCH_SCRIPTS.get(base, f"python {base}")


def _python_program(words: list[Word], k: int) -> Program | None:
    while k < len(words) and words[k].text.startswith("-") and words[k].text not in ("-m", "-c"):
        k += 2 if words[k].text in _PY_VALUE_OPTS else 1
    if k >= len(words):
        return None
    w = words[k].text
    if w == "-m" and k + 1 < len(words):
        module = words[k + 1].text
        if module in ("vllm.entrypoints.cli.main", "vllm"):
            return _vllm_program(words, k + 2)
        return Program(_PY_MODULES.get(module, module), k + 2, True)
    if w == "-c":
        return Program("python -c", k + 2, True)
    if w.endswith(".py"):
        return Program(_script_program(basename(w)), k + 1, True)
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


def image_program(image: str) -> str | None:
    """The program an engine image runs when given only arguments."""
    name = image.lower().split("@", 1)[0]
    repo = name.rsplit(":", 1)[0] if ":" in name.rsplit("/", 1)[-1] else name
    if "vllm" in repo and "mlx" not in repo and "ascend" not in repo:
        return "vllm serve"
    if "llama.cpp" in repo or "llama-cpp" in repo:
        return "llama-server" if "server" in name else None
    return None


def _docker_program(words: list[Word], k: int) -> Program:
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
            am = ASSIGN.fullmatch(val)
            if am:
                env.append((am.group(1), am.group(2), words[k - 1].pos))
    prog = Program("docker run", n, True, env=env, arg_words=[])
    if k >= n:
        return prog
    prog.image = words[k].text
    rest = words[k + 1 :]
    inner = program_at(rest, 0) if rest else None
    if inner is not None and inner.known and not rest[0].text.startswith("-"):
        prog.inner = inner.name
        prog.arg_words = rest[inner.next :]
    else:
        prog.inner = image_program(prog.image)
        prog.arg_words = rest
    return prog


# --- arguments ---------------------------------------------------------------------------

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


def is_flag(text: str) -> bool:
    head = text.split("=", 1)[0]
    return bool(_FLAG.fullmatch(head)) and not _NUMBER.match(text)


def _takes_no_value(flag: str, nxt: str) -> bool:
    """Boolean flags take no value, but an explicit `true`/`0` after one is kept."""
    if flag in _BOOLEAN_FLAGS or flag.startswith(("--no-", "--disable-", "--enable-")):
        return nxt not in _BOOL_WORDS
    return False


def split_list_item(text: str) -> list[str]:
    """`"--tensor-parallel-size 4"` as one list item means flag and value."""
    head, _, rest = text.partition(" ")
    if rest.strip() and is_flag(head) and "=" not in head:
        return [head, rest.strip()]
    return [text]


def parse_args(words: list[Word], line_of: LineMap) -> tuple[Arg, ...]:
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
        if is_flag(text):
            flag, eq, val = text.partition("=")
            if eq:
                args.append(Arg(flag, val, line))
                k += 1
                continue
            nxt = words[k + 1] if k + 1 < n else None
            if (
                nxt is not None
                and nxt.kind == "word"
                and not is_flag(nxt.text)
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

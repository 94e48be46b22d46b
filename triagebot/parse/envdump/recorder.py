"""What an environment dump states, recorded: engine versions and settings, GPUs (from
`collect_env` and `nvidia-smi`), and packages (from `pip list`, `pip freeze` and the
dump's own lists)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from triagebot.request_model import Environment

# Longest line we look at. Dump lines are short; a megabyte-long line is noise and
# would only cost time.
MAX_LINE = 4000
# A dump key is a short label; anything longer before the first colon is prose or code.
MAX_KEY = 48


@dataclass
class EnvDump:
    """What the environment text says, with the line each value came from."""

    environment: Environment = field(default_factory=Environment)
    # field name (or `package:<name>`) -> (1-based line, line text)
    evidence: dict[str, tuple[int, str]] = field(default_factory=dict)
    gpu_count: int | None = None
    # Which tool produced the dump, when it can be told: "vllm" (collect_env with a
    # vLLM Version line) or "sglang" (check_env). Used by callers to weigh engine hints.
    engine: str | None = None


# Normalised key -> Environment field. Keys are lower-cased with runs of spaces folded.
SCALAR_KEYS: dict[str, str] = {
    "os": "os",
    "python version": "python",
    "python": "python",
    "pytorch version": "torch",
    "pytorch": "torch",
    "torch": "torch",
    "cuda used to build pytorch": "cuda_build",
    "cuda runtime version": "cuda_runtime",
    "nvidia driver version": "driver",
    "cuda driver version": "driver",
    "driver version": "driver",
    "vllm version": "engine_version",
}

# Keys that on their own show that a block is an environment dump.
ANCHOR_KEYS = frozenset(
    {
        "pytorch version",
        "is debug build",
        "cuda used to build pytorch",
        "rocm used to build pytorch",
        "python version",
        "python platform",
        "is cuda available",
        "cuda runtime version",
        "gpu models and configuration",
        "nvidia driver version",
        "cudnn version",
        "vllm version",
        "vllm build flags",
        "versions of relevant libraries",
        "cuda available",
        "cuda driver version",
        "cuda_home",
        "nvcc",
        "sglang",
        "sgl_kernel",
        "nvidia topology",
        "libc version",
        "gcc version",
    }
)

# SGLang check_env prints its own package versions as `name: version` rows.
SGLANG_MARKERS = frozenset({"sglang", "sgl_kernel", "cuda_home", "nvcc", "cuda driver version"})

_NULL_VALUES = frozenset({"", "n/a", "na", "none", "could not collect", "not set", "unknown"})

BANNER = re.compile(r"^\s*={5,}\s*$")
_GPU_LINE = re.compile(r"^\s*GPU ((?:\d+\s*,\s*)*\d+)\s*:\s*(\S.*?)\s*$")
_UUID_TAIL = re.compile(r"\s*\(UUID:[^)]*\)\s*$")
_PIP_BRACKET = re.compile(r"^\s*\[(pip3?|conda)\]\s+(\S+)(?:\s*==\s*|\s+)(\S+)")
_FREEZE = re.compile(r"^\s*([A-Za-z][A-Za-z0-9._-]*)(?:\[[A-Za-z0-9,._-]*\])?==(\d[\w.+!-]*)\s*$")
PKG_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9._-]*$")
VERSION_RE = re.compile(r"^v?\d+(?:\.\d+)*[\w.+!-]*$")
_VERSION_IN = re.compile(r"\d+(?:\.\d+)+[\w.+-]*")
GIT_SHA = re.compile(r"git sha:\s*([0-9a-fA-F]{7,40})\b")
ENV_VAR = re.compile(r"^[A-Z][A-Z0-9_]*=")
_SMI_ROW = re.compile(r"^\s*(\d{1,2})\s+(\S.*?)\s+(?:On|Off)\s*$")
_SMI_BUS = re.compile(r"[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.\d|N/A")
_PIP_LIST_HEADER = re.compile(r"^\s*Package\s+Version\b")
_PIP_LIST_RULE = re.compile(r"^\s*-{3,}\s+-{3,}")
_PIP_LIST_ROW = re.compile(r"^\s*([A-Za-z][A-Za-z0-9._-]*)(\s+)(v?\d+\.[\w.+!-]*)(?:\s+\S.*)?$")
HARD_END = re.compile(r"^\s*(?:```|~~~|</details>|#{1,6}\s)")


def norm_key(key: str) -> str:
    return " ".join(key.strip().strip("*`_").split()).lower()


def split_kv(line: str) -> tuple[str, str] | None:
    """`Key : value` / `Key: value` → (raw key, value) when the key looks like a label."""
    pos = line.find(":")
    if pos <= 0 or pos > MAX_KEY + 8:
        return None
    key = line[:pos].strip().strip("*`").strip()
    if not key or len(key) > MAX_KEY or not key[0].isalpha():
        return None
    if any(c in key for c in "\"'{}[]=<>;`$\\"):
        return None
    return key, line[pos + 1 :].strip()


def _package_name(name: str) -> str:
    return name.strip().lower().replace("_", "-")


class Recorder:
    """The dump being read, and the recording of each thing it states."""
    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.out = EnvDump()
        self.env = self.out.environment
        self.gpu_names: dict[int, str] = {}
        self.in_dump = False
        self.section = "Environment"
        self.skip = 0  # lines already consumed by a look-ahead (a banner's title and rule)
        self.continuation = False  # inside a multi-line item (GPU Topology, Build Flags)
        self.pip_list = False  # inside a `pip list` table
        self.sglang = False
        self.freeze_run: list[tuple[int, str, str, str]] = []

    def _scalar(self, n: int, line: str, target: str, value: str) -> None:
        if value.strip().lower() in _NULL_VALUES:
            return
        if target == "engine_version":
            self._engine_version(n, line, value, "vllm")
            return
        if target == "python":
            match = _VERSION_IN.search(value)
            value = match.group(0) if match else value
        self._set(n, line, target, value)

    def _engine_version(self, n: int, line: str, value: str, engine: str) -> None:
        head = value.split("(", 1)[0].strip().split(" ")[0]
        if head[:1] in "vV" and head[1:2].isdigit():
            head = head[1:]
        is_version = bool(head) and head[0].isdigit()
        if is_version and self._set(n, line, "engine_version", head) and self.out.engine is None:
            self.out.engine = engine
        sha = GIT_SHA.search(value)
        if sha:
            self._set(n, line, "engine_commit", sha.group(1))

    def _set(self, n: int, line: str, target: str, value: str) -> bool:
        if getattr(self.env, target) is not None:
            return False  # first statement wins; a re-pasted dump repeats the same values
        setattr(self.env, target, value)
        self.out.evidence[target] = (n, line)
        return True

    # -- GPUs ---------------------------------------------------------------------------

    def _gpu(self, n: int, line: str, inline: bool = False) -> bool:
        text = line
        if inline or "GPU models and configuration" in line:
            pos = text.find("GPU ", text.find(":") + 1)
            if pos < 0:
                return False
            text = text[pos:]
        if "GPU" not in text[:12]:
            return False
        match = _GPU_LINE.match(text)
        if match is None:
            return False
        name = _UUID_TAIL.sub("", match.group(2))
        if not any(c.isalpha() for c in name) or ":" in name:
            return False
        for index in match.group(1).split(","):
            self._add_gpu(n, line, int(index), name)
        return True

    def _smi(self, n: int, line: str) -> bool:
        if not line.startswith("|") or line.count("|") < 3:
            return False
        cells = line.strip().strip("|").split("|")
        if len(cells) < 2 or not _SMI_BUS.search(cells[1]):
            return False
        match = _SMI_ROW.match(cells[0][:200])
        if match is None:
            return False
        name = match.group(2).strip()
        if not any(c.isalpha() for c in name):
            return False
        self._add_gpu(n, line, int(match.group(1)), name)
        return True

    def _add_gpu(self, n: int, line: str, index: int, name: str) -> None:
        if index in self.gpu_names:
            return  # the same device again: a second paste of the dump, or smi + collect_env
        self.gpu_names[index] = name
        self.out.evidence.setdefault("gpus", (n, line))
        self.out.evidence.setdefault("gpu_count", (n, line))

    # -- packages -----------------------------------------------------------------------

    def _package(self, n: int, line: str, name: str, version: str) -> None:
        key = _package_name(name)
        if not key or key in self.env.packages:
            return
        self.env.packages[key] = version
        self.out.evidence[f"package:{key}"] = (n, line)
        if self.in_dump:
            section = self.env.sections.setdefault(self.section, {})
            section.setdefault(name, version)

    def _bracket_pkg(self, n: int, line: str) -> bool:
        if "[" not in line[:12]:
            return False
        match = _PIP_BRACKET.match(line)
        if match is None or not VERSION_RE.match(match.group(3)):
            return False
        self._package(n, line, match.group(2), match.group(3))
        return True

    def _freeze(self, n: int, line: str, stripped: str) -> bool:
        # A line that is exactly `name==version` is a freeze entry; prose and code never
        # consist of that alone (`pip install x==1` has the command in front).
        if "==" not in stripped:
            return False
        match = _FREEZE.match(stripped)
        if match is None:
            return False
        self.freeze_run.append((n, line, match.group(1), match.group(2)))
        return True

    def _flush_freeze(self) -> None:
        for n, line, name, version in self.freeze_run:
            self._package(n, line, name, version)
        self.freeze_run = []

    def _pip_list(self, n: int, line: str, stripped: str) -> bool:
        if _PIP_LIST_HEADER.match(line):
            self.pip_list = True
            return True
        if self.pip_list and _PIP_LIST_RULE.match(line):
            return True
        match = _PIP_LIST_ROW.match(line) if len(stripped) < 300 else None
        if match is None:
            self.pip_list = False
            return False
        # Outside a `pip list` table only a padded row (two spaces or more, as pip prints
        # it) counts: "vllm 0.10" in a sentence is not a package listing.
        if not self.pip_list and len(match.group(2)) < 2:
            return False
        if self.in_dump and not self.pip_list:
            return False  # inside a dump, `Key   value` rows are dump fields (lscpu etc.)
        version = match.group(3)
        version = version[1:] if version[:1] in "vV" else version
        self._package(n, line, match.group(1), version)
        return True

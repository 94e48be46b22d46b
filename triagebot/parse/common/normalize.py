"""Canonical spellings for the values the parser extracts: the words `ReproRequest`'s
fields use (`triagebot/model.py`), whatever an engine or a reporter wrote."""

from __future__ import annotations

import re
from typing import get_args

from triagebot.request_model import SpecMethod

SPEC_METHODS: frozenset[str] = frozenset(get_args(SpecMethod))

# Names people and engines use for the same method. Every `*_mtp` name folds to `mtp`
# by rule (see canonical_method), so only the irregular ones are listed here.
_METHOD_ALIASES: dict[str, str] = {
    "eagle-3": "eagle3",
    "eagle_3": "eagle3",
    "eagle-1": "eagle",
    "eagle1": "eagle",
    "eagle_1": "eagle",
    "nextn": "mtp",
    "next_n": "mtp",
    "draft": "draft_model",
    "draft-model": "draft_model",
    "draftmodel": "draft_model",
    "standalone": "draft_model",
    "small_model": "draft_model",
    "[ngram]": "ngram",
    "n-gram": "ngram",
    "n_gram": "ngram",
    "ngram_gpu": "ngram",
    "prompt_lookup": "ngram",
    "prompt-lookup": "ngram",
    "lookup": "ngram",
    "suffix_decoding": "suffix",
    "arctic": "suffix",
    "d-flash": "dflash",
    "mlp_speculator": "medusa",
}


def canonical_method(raw: object) -> str | None:
    """Fold an engine's or a reporter's method name to the one `spec_method` uses."""
    if raw is None:
        return None
    text = str(raw).strip().strip("'\"`").lower()
    if not text:
        return None
    text = _METHOD_ALIASES.get(text, text)
    if text.endswith("_mtp") or text.endswith("-mtp") or text == "mtp":
        return "mtp"
    if text.startswith(("ngram", "n-gram")):  # llama.cpp's ngram-cache, ngram-simple...
        return "ngram"
    return text if text in SPEC_METHODS else None


# A release as Python packages write it: 0.17.1, 0.10.1.1, 0.4.6.post1, 0.5.3rc0,
# 0.23.1rc1.dev1302+ge765bbc97. The prose extractor searches text with the same pattern.
# Pre-releases as projects write them: `0.11.0rc1`, `0.18.rc1`, `0.26.0-b1`.
VERSION_PATTERN = (r"\d+\.\d+(?:\.\d+){0,2}(?:\.post\d+)?(?:[-.]?(?:rc|a|b)\d+)?(?:\.dev\d*)?"
                   r"(?:\+[0-9A-Za-z.]+)?")
_VERSION_RE = re.compile(r"^v?(" + VERSION_PATTERN + r")$")
_BUILD_TAG_RE = re.compile(r"^b\d{3,6}$")


def canonical_version(raw: object) -> str | None:
    """A release string as written, without the leading `v`; None for commits and `main`."""
    if raw is None:
        return None
    text = str(raw).strip().strip("'\"`()[],;:")
    if _BUILD_TAG_RE.match(text):  # llama.cpp build tags are versions
        return text
    m = _VERSION_RE.match(text)
    return m.group(1) if m else None


def version_key(version: str) -> tuple[int, ...]:
    """Sort key for comparing releases: numeric parts, with dev/rc builds before the release."""
    nums = [int(n) for n in re.findall(r"\d+", version.split("+", 1)[0])[:3]]
    while len(nums) < 3:
        nums.append(0)
    pre = 0 if re.search(r"(rc|dev|a\d|b\d)", version) else 1
    return (*nums, pre)


_GPU_PREFIXES = ("nvidia ", "geforce ", "amd ", "apple ", "tesla ", "radeon ", "huawei ",
                 "ascend ", "ascend")


def canonical_gpu(raw: str) -> str:
    """A device name as written, without vendor words (`NVIDIA GeForce RTX 4090` → `RTX 4090`)."""
    text = " ".join(raw.split())
    changed = True
    while changed:
        changed = False
        for prefix in _GPU_PREFIXES:
            if text.lower().startswith(prefix) and text.lower() != "apple silicon":
                text = text[len(prefix):]
                changed = True
    return text.strip(" ,.;:()")


# Organisations whose name may sit one directory above a model inside a local path.
KNOWN_ORGS: frozenset[str] = frozenset(
    org.lower()
    for org in (
        "deepseek-ai", "Qwen", "meta-llama", "zai-org", "THUDM", "openai", "mistralai",
        "google", "microsoft", "nvidia", "RedHatAI", "neuralmagic", "nm-testing", "lmsys",
        "yuhuili", "moonshotai", "XiaomiMiMo", "baidu", "tencent", "ibm-granite", "allenai",
        "HuggingFaceTB", "unsloth", "mlx-community", "Intel", "amd", "BAAI", "internlm",
        "01-ai", "tiiuae", "facebook", "bigcode", "stabilityai", "MiniMaxAI", "inclusionAI",
        "AngelSlim", "z-lab", "lmstudio-community", "bartowski", "TheBloke", "Snowflake",
        "ByteDance-Seed", "stepfun-ai", "LGAI-EXAONE", "CohereForAI", "CohereLabs",
    )
)

# A first path component that names a local directory, not an organisation.
_LOCAL_DIRS = frozenset({"models", "model", "weights", "checkpoints", "ckpt", "ckpts", "data",
                         "home", "root", "mnt", "workspace", "tmp", "opt", "srv", "cache",
                         "hf_models", "llm", "llms", "local"})
_WEIGHT_FILES = (".gguf", ".safetensors", ".bin", ".pt", ".pth", ".ggml")
_HF_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,95}/[A-Za-z0-9][A-Za-z0-9_.+-]{0,95}$")
_HF_CACHE_RE = re.compile(r"models--([A-Za-z0-9_.-]+)--([A-Za-z0-9_.+-]+)")
# Strings shaped like `a/b` that are not checkpoints: a git branch (`feature/x`), a source
# file (`common/speculative.cpp`), a source tree's directory (`src/...`).
_BRANCH_PREFIXES = frozenset({"feature", "feat", "fix", "bugfix", "hotfix", "release", "wip",
                              "chore", "refactor", "perf", "topic", "branch", "origin",
                              "upstream", "src", "common", "tools", "tests", "examples",
                              "include", "csrc", "docs", "benchmarks", "scripts"})
_SOURCE_FILES = (".cpp", ".cc", ".c", ".h", ".hpp", ".cu", ".cuh", ".py", ".rs", ".go", ".md",
                 ".sh", ".txt", ".json", ".yaml", ".yml", ".toml", ".log", ".ipynb", ".m",
                 ".metal", ".swift", ".js", ".ts")
_VAR_DIR_RE = re.compile(r"^\$(?:\{\w+\}|\w+)/")
_PLACEHOLDER_RE = re.compile(r"^(<.*>|\$.*|\{.*\}|/?path/to/.*|your[-_].*|xxx.*|\.+)$", re.I)


def canonical_model(raw: object) -> str | None:
    """A model as `ReproRequest` names it: an HF id, or a local path reduced to its name."""
    if raw is None:
        return None
    text = str(raw).strip().strip("'\"`,;()[]")
    if not text or len(text) > 200 or any(c.isspace() for c in text):
        return None
    if text.lower().startswith(("http://", "https://")):
        m = re.match(r"https?://(?:www\.)?(?:huggingface\.co|hf\.co|modelscope\.cn/models)/"
                     r"([^/\s?#]+/[^/\s?#]+)", text)
        return m.group(1) if m else None
    var = _VAR_DIR_RE.match(text)
    if var and len(text) > var.end():
        # `$MODELS/DeepSeek-R1`, `${DIR}/x`: a directory held in a variable, then the name.
        text = "./" + text[var.end():]
    cache = _HF_CACHE_RE.search(text)
    if cache:
        return f"{cache.group(1)}/{cache.group(2)}"
    if _PLACEHOLDER_RE.match(text) or (text.upper() == text and "_" in text):
        return None  # `$MODEL`, `<model>`, `MODEL_PATH`: names of values, not values
    first = text.split("/", 1)[0].lower()
    if text.lower().endswith(_SOURCE_FILES) or ("/" in text and first in _BRANCH_PREFIXES):
        return None
    if text.startswith(("/", "~", "./", "../")) or text.count("/") > 1 or (
            "/" in text and (first in _LOCAL_DIRS or text.lower().endswith(_WEIGHT_FILES))):
        parts = [p for p in text.rstrip("/").split("/") if p and p not in (".", "..", "~")]
        if not parts:
            return None
        if len(parts) >= 2 and parts[-2].lower() in KNOWN_ORGS:
            return f"{parts[-2]}/{parts[-1]}"
        return parts[-1] if _looks_like_model_name(parts[-1]) else None
    if _HF_ID_RE.match(text):
        return text
    return text if _looks_like_model_name(text) else None


def _looks_like_model_name(name: str) -> bool:
    if not re.match(r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$", name) or len(name) < 3:
        return False
    if re.fullmatch(r"[\d.]+", name):
        return False
    # A model file or directory name carries a digit (size, version) or a format suffix.
    return bool(re.search(r"\d", name) or name.lower().endswith((".gguf", "-hf", "-instruct")))


def canonical_mode(raw: str) -> str | None:
    """cudagraph_mode values → our mode names (`FULL_AND_PIECEWISE` counts as `full`)."""
    text = raw.strip().strip("'\"`").upper()
    if text.startswith("CUDAGRAPHMODE."):
        text = text.split(".", 1)[1]
    if text == "NONE":
        return "eager"
    if text == "PIECEWISE":
        return "piecewise"
    if text.startswith("FULL"):
        return "full"
    return None

"""Engines and their versions named in sentences and titles: "vLLM 0.17.1",
`vllm/vllm-openai:v0.10.1`, "upgraded from 0.8.5 to 0.9.2", `pip show vllm` output."""

from __future__ import annotations

import re

from triagebot.parse.common import VERSION_PATTERN, Facts, canonical_version
from triagebot.parse.prose.lines import Line

ENGINE_WORDS: dict[str, str] = {
    "vllm-mlx": "vllm-mlx",
    "vllm_mlx": "vllm-mlx",
    "vllm-ascend": "vllm-ascend",
    "vllm_ascend": "vllm-ascend",
    "vllm": "vllm",
    "sglang": "sglang",
    "llama.cpp": "llama.cpp",
    "llama-server": "llama.cpp",
    "llama-cli": "llama.cpp",
    "tensorrt-llm": "tensorrt-llm",
    "tensorrt_llm": "tensorrt-llm",
    "trt-llm": "tensorrt-llm",
    "trtllm": "tensorrt-llm",
}
_ENGINE_RE = re.compile(
    r"(?<![\w/.-])(vllm[-_]mlx|vllm[-_]ascend|vllm|sglang|llama\.cpp|llama-server|llama-cli|"
    r"tensorrt[-_]llm|trt-?llm)(?![\w-])",
    re.I,
)
_VER = r"v?(" + VERSION_PATTERN + r")"
# "vLLM 0.17.1", "vllm==0.10.1", "vLLM version: 0.9.2", "VLLM is 0.5.0", "sglang v0.4.6.post1"
_ENGINE_VERSION_RE = re.compile(
    r"(?<![\w/.-])(vllm[-_]mlx|vllm[-_]ascend|vllm|sglang|llama\.cpp|tensorrt[-_]llm|trt-?llm)"
    r"(?![\w-])[\s:=*`'\"]{0,4}(?:(?:nightly|dev build|main)\b(?: build| wheel)?"
    r"[\s:=*`'\"(]{0,4})?(?:(?:version|release|ver\.?)s?\b[\s:=*`'\"(]{0,4})?"
    r"(?:(?:is|was|of|on|at)\s+)?(?:==|>=|~=|@|-)?\s?" + _VER + r"(?!\w|\.\w)",
    re.I,
)
# Container images tagged with the release: `vllm/vllm-openai:v0.10.1.1`,
# `lmsysorg/sglang:v0.4.9.post2-cu126`.
# Any image whose name carries the engine's (`org/some-runtime-vllm:0.26.0-b1`) runs it.
_IMAGE_TAG_RE = re.compile(r"(?<![\w.-])((?:[\w.-]+/)+[\w.-]*?(vllm|sglang)[\w.-]*)\s*:\s*" + _VER +
                           r"(?=$|[\s`'\"),;-])", re.I)
_LLAMA_BUILD_RE = re.compile(r"(?:llama[.-](?:cpp|server|cli|bench)|\bbuild|\bggml)\W{0,3}"
                             r"(?:build\W{0,3})?(?:version\W{0,3})?(b\d{4,5})\b", re.I)
# `version: v0.10.0` as an environment list writes it, no package named before the word,
# and `version: 9330 (328874d05)` as `llama-server --version` prints its build.
_VERSION_LABEL_RE = re.compile(r"^\W*(?:version|release)\s*[:=]\s*[`'\"]?(v?\d[\w.+]*)"
                               r"(?:\s|$|[`'\"(])", re.I)
_PIP_NAME_RE = re.compile(r"^\s*Name:\s*\S", re.I)
_VERSION_HINT_RE = re.compile(r"\d\.\d|\bb\d{4}|version\s*[:=]\s*[`'\"]?v?\d")
_UPGRADE_WORD_RE = re.compile(r"upgrad|updat|version|release")
_BUILD_TAG_RE = re.compile(r"\bb\d{4}")
_V_DIGIT_RE = re.compile(r"v\d")
_BARE_V_VERSION_RE = re.compile(r"(?<![\w.=/-])v(\d+\.\d+\.\d+(?:(?:rc)\d+)?)(?!\w|\.\w)")
_FROM_TO_RE = re.compile(r"(?:\bfrom|\bupgrad\w*|\bupdat\w*)\s+(?:vllm\s+|sglang\s+)?"
                         + _VER + r"\s+(?:to|->|→)\s+" + _VER + r"(?!\w|\.\w)", re.I)
_LATEST_RE = re.compile(r"\blatest(?:\s+version)?\s*\(?\s*" + _VER + r"(?!\w|\.\w)", re.I)
_LIST_VERSION_RE = re.compile(_VER + r"(?!\w|\.\w)")
_OTHER_PACKAGE_RE = re.compile(
    r"(torch|pytorch|cuda|cudnn|python|transformers|triton|flashinfer|driver|nccl|xformers|"
    r"numpy|ubuntu|gcc|rocm|jax|mlx|macos|qwen|llama|glm|deepseek|mistral|gemma|phi|"
    r"kimi|mimo|gpt|eagle|node)[\s:=v-]*$",
    re.I,
)


def _names_an_engine(low: str) -> bool:
    return "vllm" in low or "sglang" in low or "llama" in low or "trt" in low \
        or "tensorrt" in low


_GIT_ENGINES = {"vllm-project/vllm": "vllm", "vllm-project/vllm-ascend": "vllm-ascend",
                "sgl-project/sglang": "sglang", "ggml-org/llama.cpp": "llama.cpp",
                "waybarrios/vllm-mlx": "vllm-mlx", "nvidia/tensorrt-llm": "tensorrt-llm"}
_GIT_INSTALL_RE = re.compile(r"git\+https?://github\.com/(" + "|".join(
    re.escape(k) for k in _GIT_ENGINES) + r")(?:\.git)?(?![\w-])", re.I)


def _image_engine(image: str) -> str:
    low = image.lower()
    return "vllm-ascend" if "ascend" in low else "sglang" if "sglang" in low else "vllm"


def engine_mentions(lines: list[Line], facts: Facts) -> None:
    for no, text, kind in lines:
        if not _names_an_engine(text.lower()):
            continue
        # An engine installed from its repository: `pip install git+https://.../sglang.git`.
        for m in (_GIT_INSTALL_RE.finditer(text) if "git+" in text else ()):
            facts.add("engine_mention", _GIT_ENGINES[m.group(1).lower()], no, text, "prose", kind)
        # An engine named only inside a container image's name.
        for m in (_IMAGE_TAG_RE.finditer(text) if "/" in text and ":" in text else ()):
            if not _ENGINE_RE.search(m.group(1)):
                facts.add("engine_mention", _image_engine(m.group(1)), no, text, "prose", kind)
        for m in _ENGINE_RE.finditer(text):
            name = ENGINE_WORDS.get(m.group(1).lower().replace("_", "-"),
                                    ENGINE_WORDS.get(m.group(1).lower()))
            if name:
                facts.add("engine_mention", name, no, text, "prose", kind)


def versions(lines: list[Line], facts: Facts) -> None:
    """Engine versions written next to an engine's name, or in upgrade statements."""
    package_above = False  # `pip show X` prints `Name: X` above `Version:`
    for no, text, kind in lines:
        if not _VERSION_HINT_RE.search(text):
            package_above = bool(_PIP_NAME_RE.match(text))
            continue  # every form below has "1.2" or a build tag "b1234" in it
        low = text.lower()
        for m in _ENGINE_VERSION_RE.finditer(text) if _names_an_engine(low) else ():
            engine = ENGINE_WORDS.get(m.group(1).lower().replace("_", "-"), "vllm")
            version = canonical_version(m.group(2))
            if version:
                facts.add("version", (engine, version), no, text, "prose", kind)
            # "vLLM versions (0.6.2 and latest 0.7.3)": the rest of the clause lists more.
            tail = text[m.end():m.end() + 60].split(".  ")[0]
            if re.match(r"\s*(and|,|or|/|\bvs\.?)", tail):
                for v in _LIST_VERSION_RE.finditer(tail):
                    if not _OTHER_PACKAGE_RE.search(tail[:v.start()][-14:]):
                        ver = canonical_version(v.group(1))
                        if ver:
                            facts.add("version", (engine, ver), no, text, "prose", kind)
        for m in (_IMAGE_TAG_RE.finditer(text) if "/" in text and ":" in text else ()):
            engine = _image_engine(m.group(1))
            version = canonical_version(m.group(3))
            if version:
                facts.add("version", (engine, version), no, text, "prose", kind)
        for m in _LLAMA_BUILD_RE.finditer(text) if _BUILD_TAG_RE.search(text) else ():
            facts.add("version", ("llama.cpp", m.group(1)), no, text, "prose", kind)
        # "after upgrading from 0.8.5 to 0.9.2": the newer one is where the problem shows.
        if kind == "title" or _UPGRADE_WORD_RE.search(low):
            for m in _FROM_TO_RE.finditer(text):
                new = canonical_version(m.group(2))
                if new:
                    facts.add("version_upgrade", new, no, text, "prose", kind)
        for m in _LATEST_RE.finditer(text) if "latest" in low else ():
            if "version" in low or "upgrad" in low:
                ver = canonical_version(m.group(1))
                if ver:
                    facts.add("version_upgrade", ver, no, text, "prose", kind)
        label = _VERSION_LABEL_RE.match(text) if kind != "title" and not package_above else None
        if label:
            facts.add("version_label", label.group(1), no, text, "prose", kind)
        package_above = bool(_PIP_NAME_RE.match(text))
        for m in _BARE_V_VERSION_RE.finditer(text) if _V_DIGIT_RE.search(text) else ():
            before = text[max(0, m.start() - 16):m.start()]
            if not _OTHER_PACKAGE_RE.search(before):
                facts.add("version_bare", m.group(1), no, text, "prose", kind)


_PIP_SHOW_NAME_RE = re.compile(r"^\s*Name:\s*(vllm|sglang|vllm-mlx|vllm_mlx)\s*$", re.I)
_PIP_SHOW_VERSION_RE = re.compile(r"^\s*Version:\s*" + _VER + r"\s*$", re.I)
_VERSION_CMD_RE = re.compile(r"\b(vllm|sglang)\s+(?:--version|-v)\b|import (vllm|sglang)\W.*"
                             r"__version__", re.I)
_BARE_VERSION_LINE_RE = re.compile(r"^\s*" + _VER + r"\s*$")


def printed_versions(lines: list[Line], facts: Facts) -> None:
    """A version a tool printed: `pip show vllm` (Name:, then Version:), or the line
    after `vllm --version` / `print(vllm.__version__)`."""
    engine: str | None = None
    for no, text, kind in lines:
        if kind == "title":
            continue
        if engine:
            m = _PIP_SHOW_VERSION_RE.match(text) or _BARE_VERSION_LINE_RE.match(text)
            version = canonical_version(m.group(1)) if m else None
            if version:
                facts.add("version", (engine, version), no, text, "prose", kind)
            if m or not text.strip().startswith(("Summary:", "$", ">")):
                engine = None
        low = text.lower()
        name = None
        if "name:" in low or "version" in low or " -v" in low:
            name = _PIP_SHOW_NAME_RE.match(text) or _VERSION_CMD_RE.search(text)
        if name:
            word = (name.group(1) or name.group(name.lastindex or 1)).lower()
            engine = ENGINE_WORDS.get(word.replace("_", "-"), word)

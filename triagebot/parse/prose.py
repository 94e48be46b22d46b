"""Facts stated in sentences and titles rather than in commands or code.

Prose is the weakest evidence: each pattern here asks for an explicit statement
("TP=4", "vLLM 0.17.1", "8x H200") and never infers from loose words.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from triagebot.parse.facts import Facts
from triagebot.parse.normalize import (
    KNOWN_ORGS,
    VERSION_PATTERN,
    canonical_gpu,
    canonical_model,
    canonical_version,
)
from triagebot.parse.vocabulary import FLAGS

Line = tuple[int, str, str]  # (line number, text, kind: "title" | "prose")

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
    r"(?![\w-])[\s:=*`'\"]{0,4}(?:(?:version|release|ver\.?)s?\b[\s:=*`'\"(]{0,4})?"
    r"(?:(?:is|was|of|on|at)\s+)?(?:==|>=|~=|@|-)?\s?" + _VER + r"(?!\w|\.\w)",
    re.I,
)
# Container images tagged with the release: `vllm/vllm-openai:v0.10.1.1`,
# `lmsysorg/sglang:v0.4.9.post2-cu126`.
_IMAGE_TAG_RE = re.compile(r"\b(vllm/vllm-openai|lmsysorg/sglang)\s*:\s*" + _VER +
                           r"(?=$|[\s`'\"),;-])", re.I)
_LLAMA_BUILD_RE = re.compile(r"(?:llama\.cpp|\bbuild)\W{0,3}(?:build\W{0,3})?(?:version\W{0,3})?"
                             r"(b\d{4,5})\b", re.I)
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


def engine_mentions(lines: list[Line], facts: Facts) -> None:
    for no, text, kind in lines:
        for m in _ENGINE_RE.finditer(text):
            name = ENGINE_WORDS.get(m.group(1).lower().replace("_", "-"),
                                    ENGINE_WORDS.get(m.group(1).lower()))
            if name:
                facts.add("engine_mention", name, no, text, "prose", kind)


def versions(lines: list[Line], facts: Facts) -> None:
    """Engine versions written next to an engine's name, or in upgrade statements."""
    for no, text, kind in lines:
        low = text.lower()
        for m in _ENGINE_VERSION_RE.finditer(text):
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
            engine = "sglang" if "sglang" in m.group(1).lower() else "vllm"
            version = canonical_version(m.group(2))
            if version:
                facts.add("version", (engine, version), no, text, "prose", kind)
        for m in _LLAMA_BUILD_RE.finditer(text):
            facts.add("version", ("llama.cpp", m.group(1)), no, text, "prose", kind)
        # "after upgrading from 0.8.5 to 0.9.2": the newer one is where the problem shows.
        if kind == "title" or re.search(r"upgrad|updat|version|release", low):
            for m in _FROM_TO_RE.finditer(text):
                new = canonical_version(m.group(2))
                if new:
                    facts.add("version_upgrade", new, no, text, "prose", kind)
        for m in _LATEST_RE.finditer(text):
            if "version" in low or "upgrad" in low:
                ver = canonical_version(m.group(1))
                if ver:
                    facts.add("version_upgrade", ver, no, text, "prose", kind)
        for m in _BARE_V_VERSION_RE.finditer(text):
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
        name = _PIP_SHOW_NAME_RE.match(text) or _VERSION_CMD_RE.search(text)
        if name:
            word = (name.group(1) or name.group(name.lastindex or 1)).lower()
            engine = ENGINE_WORDS.get(word.replace("_", "-"), word)


_HF_LINK_RE = re.compile(
    r"https?://(?:www\.)?(?:huggingface\.co|hf\.co)/(?!datasets/|spaces/|docs/|blog/|papers/)"
    r"([A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.+-]*)"
)
_BACKTICK_ID_RE = re.compile(r"`([A-Za-z0-9][\w.-]{0,60}/[A-Za-z0-9][\w.+-]{0,80})`")
_LABELLED_MODEL_RE = re.compile(
    r"\b(target|draft|speculative|base|main|eagle|assistant)?[ _-]?models?\b\**\s*[:=]\**\s*"
    r"`?([A-Za-z0-9][\w./+-]{2,120})`?",
    re.I,
)
_FAMILIES = (
    "meta-llama|qwen|llama|deepseek|glm|gpt-oss|mistral|mixtral|gemma|phi|yi|internlm|minicpm|kimi|mimo|"
    "ernie|hunyuan|smollm|vicuna|opt|falcon|baichuan|chatglm|nemotron|granite|olmo|eagle|"
    "medusa|codellama|starcoder|seed-oss|minimax|step|exaone|command-r|dots|pangu"
)
_FAMILY_TOKEN_RE = re.compile(
    r"(?<![\w/.-])((?:" + _FAMILIES + r")[\w.]*(?:-[\w.]+)+)(?![\w/-])", re.I
)
_BARE_ID_RE = re.compile(r"(?<![\w/.:@-])([A-Za-z0-9][\w.-]{1,60}/[A-Za-z0-9][\w.+-]{1,90}?)"
                         r"[.,;:)]?(?![\w/.+-])")
# Method names the family pattern also matches ("EAGLE-3", "Medusa-2"): not checkpoints.
_METHOD_NAME_RE = re.compile(r"(?:eagle|medusa|mtp|dflash)[-_]?\d?", re.I)
_NOT_MODEL_ORGS = frozenset({"vllm-project", "sgl-project", "pytorch", "huggingface", "github",
                             "ggml-org", "nvidia-smi", "usr", "etc", "tmp", "home", "dev"})
_FILE_SUFFIXES = (".py", ".md", ".json", ".yaml", ".yml", ".txt", ".sh", ".cpp", ".cu", ".h",
                  ".log", ".toml", ".cfg", ".ipynb")
_DRAFT_NAME_RE = re.compile(r"eagle|draft|speculator|medusa|dflash|assistant|-spec\b", re.I)
_DRAFT_CONTEXT_RE = re.compile(r"\b(draft|speculat\w*|eagle\w*|assistant|medusa)\b", re.I)


def models(lines: list[Line], facts: Facts) -> None:
    """Model ids the reporter names: HF links, backticked ids, `Model: X`, titles."""
    for no, text, kind in lines:
        low = text.lower()
        found: list[tuple[str, int]] = []
        found += [(m.group(1), m.start()) for m in _HF_LINK_RE.finditer(text)]
        for m in _BACKTICK_ID_RE.finditer(text):
            org = m.group(1).split("/")[0].lower()
            if org not in ("vllm-project", "sgl-project", "pytorch", "huggingface") and \
                    "github" not in low[max(0, m.start() - 30):m.start()]:
                found.append((m.group(1), m.start()))
        for m in _LABELLED_MODEL_RE.finditer(text):
            role = (m.group(1) or "").lower()
            facts_field = "draft_prose" if role in ("draft", "speculative", "eagle",
                                                    "assistant") else None
            name = canonical_model(m.group(2))
            if name:
                facts.add(facts_field or "model_prose", name, no, text, "prose", kind)
        if kind == "title" or "model" in low or "testing" in low:
            found += [(m.group(1), m.start()) for m in _FAMILY_TOKEN_RE.finditer(text)]
        # A link's text without its URL (a scraped page): a bare `org/name` in a sentence
        # about models, or under an organisation that publishes them.
        if "/" in text and "http" not in low:
            for m in _BARE_ID_RE.finditer(text):
                org, name = m.group(1).split("/", 1)
                if org.lower() in _NOT_MODEL_ORGS or name.lower().endswith(_FILE_SUFFIXES):
                    continue
                if org.lower() in KNOWN_ORGS or ("model" in low and len(name) > 3
                                                 and re.search(r"\d", name)):
                    found.append((m.group(1), m.start()))
        for raw, pos in found:
            name = canonical_model(raw.rstrip(".,)"))
            if not name or _METHOD_NAME_RE.fullmatch(name):
                continue
            context = low[max(0, pos - 40):pos]
            is_draft = bool(_DRAFT_NAME_RE.search(name)) or bool(
                re.search(r"(draft|speculat\w*|assistant)\s+(model|head)?\s*(is|:|=|-)?\s*"
                          r"\[?$", context))
            facts.add("draft_prose" if is_draft else "model_prose", name, no, text, "prose",
                      kind)


_GPU_RE = re.compile(
    r"(?:(?<![\w-])|(?<=\d[x×*]))((?:NVIDIA\s+|GeForce\s+|AMD\s+|Instinct\s+)*"
    r"(?:GB\d{2,3}|[ABHL]\d{2,3}[A-Z]?|H20|L4|L40S?|T4|V100|P100|A6000|RTX\s?(?:PRO\s?)?\d{4}"
    r"(?:\s?Ti|\s?Ada)?|RTX\s?A\d{4}|MI\d{3}X?|M[1-5]\s(?:Pro|Max|Ultra)|Gaudi\s?\d?)"
    r"(?:[- ](?:SXM\d?|PCIe|NVL|HBM3e?|\d{2,3}\s?GB|80G|40G|Ti))*)(?![\w])"
)
_GPU_COUNT_RE = re.compile(
    r"(?<![\w.])(\d{1,2})\s?[x×*]\s?(?=(?:NVIDIA\s+)?(?:GB\d|[ABHL]\d|H20|RTX|MI\d|V100|T4|A6000))",
    re.I,
)
_GPU_N_RE = re.compile(r"(?<![\w.])(\d{1,2})\s?(?:x\s?)?GPUs?\b", re.I)
# "two H20 GPUs", "four A100 cards": a count in words right before a device and its noun.
_COUNT_WORDS = {"two": 2, "three": 3, "four": 4, "six": 6, "eight": 8, "sixteen": 16}
_GPU_WORD_COUNT_RE = re.compile(
    r"\b(two|three|four|six|eight|sixteen)\s+(?:NVIDIA\s+)?(?:GB\d{2,3}|[ABHL]\d{2,3}[A-Z]?|H20|"
    r"L4|L40S?|RTX\s?\d{4}|MI\d{3}X?)\w*(?:\s\w+)?\s+(?:GPUs?|cards?|devices?)\b", re.I)
# Words that make an A/B/H/L-number token something other than a GPU.
_NOT_GPU_CONTEXT = re.compile(r"(\w-|A3B|layer|head|step|size)$", re.I)


def gpus(lines: list[Line], facts: Facts) -> None:
    for no, text, kind in lines:
        for m in _GPU_RE.finditer(text):
            raw = m.group(1)
            before = text[max(0, m.start() - 6):m.start()]
            if _NOT_GPU_CONTEXT.search(before) or re.fullmatch(r"[ABL]\d{2}", raw.strip()):
                continue  # "A3B", "-A10" inside model names; bare "B200" checked below
            name = canonical_gpu(raw)
            if re.fullmatch(r"[ABHL]\d{2,3}[A-Z]?", name) and not _gpu_context(text):
                continue
            facts.add("gpu", name, no, text, "prose", kind)
        for m in _GPU_COUNT_RE.finditer(text):
            facts.add("gpu_count", int(m.group(1)), no, text, "prose", kind)
        low = text.lower()
        if "gpu" in low or "card" in low or "device" in low:  # the pattern's noun: cheap gate
            for m in _GPU_WORD_COUNT_RE.finditer(text):
                facts.add("gpu_count", _COUNT_WORDS[m.group(1).lower()], no, text, "prose",
                          kind)
        for m in _GPU_N_RE.finditer(text):
            n = int(m.group(1))
            if 0 < n <= 64:
                facts.add("gpu_count", n, no, text, "prose", kind)


def _gpu_context(text: str) -> bool:
    return bool(re.search(r"gpu|nvidia|cuda|machine|card|node|\b(?:on|with|using)\s+"
                          r"(?:an?\s+|one\s+|a single\s+|single\s+|\d+\s+)?[ABHL]\d|"
                          r"\d\s?[x×*]\s?[ABHL]\d|hardware|device|sxm|hbm|pcie", text, re.I))


_INT = r"(\d{1,6})"
_TP_RE = re.compile(r"(?<![\w-])(?:TP|tp)\s?(?:=|:|\s)\s?" + _INT + r"\b|\bTP" + _INT + r"\b|"
                    r"tensor[- ]parallel(?:ism|[- ]size)?\s*(?:of|=|:)?\s*" + _INT + r"\b",
                    re.I)
_DP_RE = re.compile(r"(?<![\w-])(?:DP|dp)\s?(?:=|:)\s?" + _INT + r"\b|"
                    r"data[- ]parallel(?:ism|[- ]size)?\s*(?:of|=|:)\s*" + _INT + r"\b", re.I)
_K_RE = re.compile(
    r"\bnum_speculative_tokens[\"']?\s*(?:=|:)\s*" + _INT + r"\b|"
    r"\b(?:num[_-])?spec(?:ulative)?[_-]?(?:tokens|len|k)\s*(?:=|:)\s*" + _INT + r"\b|"
    r"(?<![\w-])MTP-?" + r"([1-9])\b|"
    r"(?<![\w-])[kK]\s?=\s?" + r"([1-9]\d?)\b|"
    r"\b(?:requested_)?draft_tokens\s*(?:=|:)\s*" + _INT + r"\b|"
    r"\b([1-9]\d?)\s+(?:requested\s+)?(?:speculative|draft|spec)\s+tokens\b",
    re.I,
)
_TEMP_RE = re.compile(r"\btemp(?:erature)?\b\s*(?:=|:|of|is|set to)?\s*(\d(?:\.\d+)?)\b", re.I)
_CONC_RE = re.compile(
    r"\b(?:max[-_ ]?)?concurrency\s*(?:=|:|of)?\s*" + _INT + r"\b|"
    r"(?<!max )(?<!max_)(?<!max-)\bbatch[-_ ]size\s*(?:=|:|of)?\s*" + _INT + r"\b|"
    r"\bbs\s?=\s?" + _INT + r"\b|"
    r"\b(single[- ]stream|single request|one request at a time)\b",
    re.I,
)
_MAXTOK_RE = re.compile(r"\bmax_(?:new_)?tokens\s*(?:=|:)\s*" + _INT + r"\b", re.I)
_COMMIT_RE = re.compile(
    r"(?:\bcommit\b|\bsha\b|\bhash\b|\bmain\s?@|\bmaster\s?@|\bHEAD\s?@)[\s:*`'\"@]{0,6}"
    r"(?:is\s+)?([0-9a-f]{7,40})\b",
    re.I,
)


_SPEC_TOKEN_FLAG_RE = re.compile(
    r"(?<![\w-])(?:" + "|".join(re.escape(f) for f, name in FLAGS.items()
                                 if name == "num_speculative_tokens" and f.startswith("--"))
    + r")[ =]\s?([1-9]\d?)\b", re.I)


def numbers(lines: list[Line], facts: Facts) -> None:
    """TP, DP, k, temperature, concurrency, max tokens and commits stated in words."""
    for no, text, kind in lines:
        for m in _TP_RE.finditer(text):
            facts.add("tp", int(next(g for g in m.groups() if g)), no, text, "prose", kind)
        for m in _DP_RE.finditer(text):
            facts.add("dp", int(next(g for g in m.groups() if g)), no, text, "prose", kind)
        for m in _K_RE.finditer(text):
            k = int(next(g for g in m.groups() if g))
            if 0 < k <= 64:
                facts.add("num_speculative_tokens", k, no, text, "prose", kind)
        for m in _SPEC_TOKEN_FLAG_RE.finditer(text.replace("_", "-")):
            facts.add("num_speculative_tokens", int(m.group(1)), no, text, "prose", kind)
        for m in _TEMP_RE.finditer(text):
            value = float(m.group(1))
            if value <= 2.0:
                facts.add("temperature", value, no, text, "prose", kind)
        for m in _CONC_RE.finditer(text):
            g = next(g for g in m.groups() if g)
            facts.add("concurrency", 1 if not g.isdigit() else int(g), no, text, "prose", kind)
        for m in _MAXTOK_RE.finditer(text):
            facts.add("max_tokens", int(m.group(1)), no, text, "prose", kind)
        for m in _COMMIT_RE.finditer(text):
            if re.search(r"[a-f]", m.group(1)) and re.search(r"\d", m.group(1)):
                facts.add("commit", m.group(1), no, text, "prose", kind)


_K_HEADER_RE = re.compile(r"^\s*(?:spec[_ -]?len|k|num[_ ]spec(?:ulative)?[_ ]tokens|"
                          r"(?:num[_ ])?draft[_ ]tokens|mtp[_ ]?(?:tokens|k)?|gamma|"
                          r"speculative[_ ]tokens|n[_ ]?spec)\s*$", re.I)


def _table_rows(lines: list[Line]) -> Iterator[tuple[int, str, str, list[str], list[str]]]:
    """(line, text, kind, header cells, row cells) for every row of every table, markdown
    or pasted from a spreadsheet, the header being the table's first line."""
    header: list[str] | None = None
    sep = "|"
    for no, text, kind in lines:
        if kind == "title":
            continue
        cells = _cells(text)
        if cells is None:
            header = None
        elif header is None:
            header, sep = cells, ("|" if "|" in text else "\t")
        elif cells and sep in text:
            yield no, text, kind, header, cells


def table_spec_tokens(lines: list[Line], facts: Facts) -> None:
    """k values in a table column headed `spec_len`, `k`, `num_speculative_tokens`..."""
    for no, text, kind, header, cells in _table_rows(lines):
        column = next((i for i, c in enumerate(header) if _K_HEADER_RE.match(c)), None)
        if column is not None and column < len(cells):
            m = re.match(r"\s*([1-9]\d?)\b", cells[column])
            if m:
                facts.add("num_speculative_tokens", int(m.group(1)), no, text, "prose", kind)


_ID_CELL_RE = re.compile(r"^`?([A-Za-z0-9][\w.-]{0,60}/[A-Za-z0-9][\w.+-]{0,80})`?$")
_DRAFT_HEADER_RE = re.compile(r"draft|eagle|spec|assistant|head|medusa|dflash", re.I)


def table_models(lines: list[Line], facts: Facts) -> None:
    """Model ids that fill a table cell of their own (one row per target, or a target and
    its draft per row); a column headed `draft`/`EAGLE head` holds drafts."""
    for no, text, kind, header, cells in _table_rows(lines):
        for i, cell in enumerate(cells):
            m = _ID_CELL_RE.match(cell)
            name = canonical_model(m.group(1)) if m else None
            if not name or "/" not in name:
                continue
            head = header[i] if i < len(header) else ""
            is_draft = bool(_DRAFT_HEADER_RE.search(head) or _DRAFT_NAME_RE.search(name))
            facts.add("draft_prose" if is_draft else "model_prose", name, no, text, "prose",
                      kind)


def _cells(text: str) -> list[str] | None:
    if "|" in text:
        stripped = text.strip().strip("|")
        if set(stripped.replace("|", "").strip()) <= set("-: "):
            return []  # the |---|---| rule keeps the table open
        return [c.strip() for c in stripped.split("|")]
    if "\t" in text:
        return [c.strip() for c in text.split("\t")]
    return None


def iter_lines(title: str | None, body: list[str]) -> Iterator[Line]:
    if title:
        yield (0, title, "title")
    for i, text in enumerate(body, start=1):
        if text:
            yield (i, text, "prose")

"""Model and draft checkpoints named in sentences, links, titles and table cells."""

from __future__ import annotations

import re

from triagebot.parse.common import KNOWN_ORGS, Facts, canonical_model
from triagebot.parse.prose.lines import Line, table_rows

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
# An id followed by `:tag` is a container image (`org/engine-image:1.2`), not a checkpoint.
_BARE_ID_RE = re.compile(r"(?<![\w/.:@-])([A-Za-z0-9][\w.-]{1,60}/[A-Za-z0-9][\w.+-]{1,90}?)"
                         r"(?!:[\w.])[.,;:)]?(?![\w/.+-])")
# Method names the family pattern also matches ("EAGLE-3", "Medusa-2"): not checkpoints.
_METHOD_NAME_RE = re.compile(r"(?:eagle|medusa|mtp|dflash)[-_]?\d?", re.I)
_NOT_MODEL_ORGS = frozenset({"vllm-project", "sgl-project", "pytorch", "huggingface", "github",
                             "ggml-org", "nvidia-smi", "usr", "etc", "tmp", "home", "dev"})
_FILE_SUFFIXES = (".py", ".md", ".json", ".yaml", ".yml", ".txt", ".sh", ".cpp", ".cu", ".h",
                  ".log", ".toml", ".cfg", ".ipynb")
_DRAFT_NAME_RE = re.compile(r"eagle|draft|speculator|medusa|dflash|assistant|-spec\b", re.I)
# A markdown link: its text is what the reporter wrote, its URL may point elsewhere
# (`[meta-llama/Meta-Llama-3.1-70B-Instruct](https://huggingface.co/.../Llama-3.1-70B-...)`).
_LINK_RE = re.compile(r"\[\s*`?([^\]\n`]{1,200}?)`?\s*\]\((https?://[^)\s]{1,500})\)")
# A family token names a checkpoint when it carries a size ("-8B", "-0.8B", "-A10B",
# "-135M") or a release suffix; "Qwen3-VL" or "InternVL3" alone name a family.
_SIZE_RE = re.compile(r"(?:^|[-_.])(?:\d+(?:\.\d+)?[BbMm]|A\d+(?:\.\d+)?B|\d+x\d+B)(?=[-_.]|$)")
_RELEASE_RE = re.compile(r"(?:^|[-_.])(?:instruct|chat|base|hf|fp8|fp16|bf16|int[48]|awq|gptq|"
                         r"gguf|nvfp4|mxfp4|w\d+a\d+|thinking|it|air|flash)(?=[-_.]|$)", re.I)
# Dtypes and quantisations that `a/b` pairs of look like an `org/name` id.
_DTYPES = frozenset({"bf16", "fp16", "fp32", "fp8", "fp4", "int4", "int8", "nvfp4", "mxfp4",
                     "float16", "bfloat16", "float32", "awq", "gptq", "w4a16", "w8a8", "w4a4",
                     "fp8-dynamic", "fp8_dynamic", "dense", "moe"})
# A model named beside an issue or PR number is someone else's ("following #38061 (X)").
_XREF_RE = re.compile(r"#\d{3,}\W{0,4}$|\b(?:following|see|like|as in)\s+#?\d*\W{0,4}$", re.I)
_DRAFT_CONTEXT_RE = re.compile(r"\b(draft|speculat\w*|eagle\w*|assistant|medusa)\b", re.I)


def models(lines: list[Line], facts: Facts) -> None:
    """Model ids the reporter names: HF links, backticked ids, `Model: X`, titles."""
    for no, text, kind in lines:
        found: list[tuple[str, int]] = []
        if "](" in text:
            text, found = _link_texts(text)
        low = text.lower()
        if "/" not in text and "model" not in low and (kind != "title" and not (
                "-" in text and _DIGIT_RE.search(text))):
            continue  # ids have a "/", labels say "model", family tokens "-" and a digit
        if "hf.co" in low or "huggingface" in low:
            found += [(m.group(1), m.start()) for m in _HF_LINK_RE.finditer(text)]
        for m in _BACKTICK_ID_RE.finditer(text) if "`" in text else ():
            org = m.group(1).split("/")[0].lower()
            if org not in ("vllm-project", "sgl-project", "pytorch", "huggingface") and \
                    "github" not in low[max(0, m.start() - 30):m.start()]:
                found.append((m.group(1), m.start()))
        for m in _LABELLED_MODEL_RE.finditer(text) if "model" in low else ():
            role = (m.group(1) or "").lower()
            facts_field = "draft_prose" if role in ("draft", "speculative", "eagle",
                                                    "assistant") else None
            name = canonical_model(m.group(2))
            if name:
                facts.add(facts_field or "model_prose", name, no, text, "prose", kind)
        about_models = kind == "title" or "model" in low or "testing" in low
        for m in _FAMILY_TOKEN_RE.finditer(text) if "-" in text else ():
            token = m.group(1)
            named = _SIZE_RE.search(token) or (about_models and _RELEASE_RE.search(token))
            if named and not _XREF_RE.search(text[max(0, m.start() - 30):m.start()]):
                found.append((token, m.start()))
        # A link's text without its URL (a scraped page): a bare `org/name` in a sentence
        # about models, or under an organisation that publishes them.
        if "/" in text and "http" not in low:
            for m in _BARE_ID_RE.finditer(text):
                org, name = m.group(1).split("/", 1)
                if org.lower() in _NOT_MODEL_ORGS or name.lower().endswith(_FILE_SUFFIXES) \
                        or org.lower() in _DTYPES or name.lower() in _DTYPES:
                    continue
                if org.lower() in KNOWN_ORGS or ("model" in low and len(name) > 3
                                                 and _DIGIT_RE.search(name)) or (
                        _DIGIT_RE.search(name) and _DRAFT_NAME_RE.search(name)
                        and not _SUGGESTION_RE.search(low)):
                    found.append((m.group(1), m.start()))
        for raw, pos in found:
            name = canonical_model(raw.rstrip(".,)"))
            if not name or _METHOD_NAME_RE.fullmatch(name):
                continue
            context = low[max(0, pos - 40):pos]
            end = text.find(raw, pos) + len(raw) if raw in text[pos:] else pos
            after = text[end:end + 40]
            is_draft = bool(_DRAFT_NAME_RE.search(name) or _DRAFT_BEFORE_RE.search(context)
                            or _AS_DRAFT_RE.match(after))
            facts.add("draft_prose" if is_draft else "model_prose", name, no, text, "prose",
                      kind)


_DIGIT_RE = re.compile(r"\d")
# A checkpoint someone proposes is not one that ran.
_SUGGESTION_RE = re.compile(r"suggest|\btry|trying|\bcould\b|\bmight\b|\bmaybe\b|recommend|"
                            r"instead|should")
# "`org/x` as the draft model", "using X as draft": a role stated after the name.
_AS_DRAFT_RE = re.compile(r"^\W{0,3}\s*(?:as|for) (?:the |a |our )?(?:draft|speculator|"
                          r"assistant)\b", re.I)
_DRAFT_BEFORE_RE = re.compile(r"(draft|speculat\w*|assistant)\s+(model|head)?[\s*]*(is|:|=|-)?"
                              r"[\s*`\[]*$")


def _link_texts(text: str) -> tuple[str, list[tuple[str, int]]]:
    """Model ids written as a link's text, and the line with those links' URLs blanked:
    the text is what the reporter named, the URL may be another spelling or repository."""
    found: list[tuple[str, int]] = []

    def keep_text(m: re.Match[str]) -> str:
        label = m.group(1).strip()
        if "/" in label and canonical_model(label) and "://" not in label:
            found.append((label, m.start()))
            return f"[{m.group(1)}]"
        return m.group(0)

    return _LINK_RE.sub(keep_text, text), found


_ID_CELL_RE = re.compile(r"^`?([A-Za-z0-9][\w.-]{0,60}/[A-Za-z0-9][\w.+-]{0,80})`?$")
_DRAFT_HEADER_RE = re.compile(r"draft|eagle|spec|assistant|head|medusa|dflash", re.I)


def table_models(lines: list[Line], facts: Facts) -> None:
    """Model ids that fill a table cell of their own (one row per target, or a target and
    its draft per row); a column headed `draft`/`EAGLE head` holds drafts."""
    for no, text, kind, header, cells in table_rows(lines):
        for i, cell in enumerate(cells):
            m = _ID_CELL_RE.match(cell)
            name = canonical_model(m.group(1)) if m else None
            if not name or "/" not in name:
                continue
            head = header[i] if i < len(header) else ""
            is_draft = bool(_DRAFT_HEADER_RE.search(head) or _DRAFT_NAME_RE.search(name))
            facts.add("draft_prose" if is_draft else "model_prose", name, no, text, "prose",
                      kind)

"""The speculative method under study and its tokens per step."""

from __future__ import annotations

import re
from collections import Counter

from triagebot.parse.common import Fact, as_int, canonical_method
from triagebot.parse.decide.assembler import Assembler
from triagebot.parse.decide.words import negated

_NATIVE_MTP_MODEL_RE = re.compile(r"deepseek-(?:v3|r1)|qwen3[.-]?next|glm-4\.[5-9]|glm-5|mimo|"
                                  r"ernie-4\.5|kimi-k2|longcat|step-?3", re.I)
# "Draft model" alone is what every method calls its drafter; the method it names is one
# with a separate small model ("a draft model", "draft-model speculation", "standalone").
_METHOD_WORD = (r"eagle[-_ ]?3|eagle[-_ ]?1?|[a-z0-9]+(?:_[a-z0-9]+)*_mtp|mtp\d?|nextn|n-?gram|"
                r"prompt[-_ ]lookup|"
                r"draft[-_ ]model (?:speculat\w*|decoding|method)|(?:a|separate|small|smaller|"
                r"standalone|independent) draft[-_ ]model|medusa|dflash|suffix decoding|"
                # "Tokens/sec (with draft)": a draft model named by its role alone
                r"with(?:out)? (?:a |the )?draft(?![-_ ]?(?:tokens?|len|n|max|acceptance))")
_PROSE_METHOD_RE = re.compile(r"(?<![\w-])(" + _METHOD_WORD + r")(?![\w-])", re.I)
# A method value quoted in a sentence: (`method="draft_model"`), `"method": "mtp"`.
_QUOTED_METHOD_RE = re.compile(r"""\bmethod["']?\s*[=:]\s*["'`]?([\w-]+)""", re.I)
_MODEL_SIZE_RE = re.compile(r"\d(?:\.\d+)?[BbMm](?![a-z])")
_EAGLE_ONE_RE = re.compile(r"(?<![\w-])eagle[-_ ]?1(?![\w.-])|\bE1\b", re.I)
# "EAGLE 3 is expected to be faster than EAGLE 1": the subject is the method under study.
_SUBJECT_RE = re.compile(
    r"(?<![\w-])(" + _METHOD_WORD + r")(?![\w-])[^.\n]{0,80}?\b(?:faster|slower|better|worse|"
    r"vs\.?|versus|compared (?:to|with)|over|than)\b[^.\n]{0,40}?(?<![\w-])(" + _METHOD_WORD +
    r")(?![\w-])", re.I)


def decide_method(a: Assembler) -> None:
    """What the runs configured wins over what the prose says. In prose, a title naming one
    method decides (a body naming its variant refines it: "EAGLE" then "EAGLE-3"); a title
    naming two ("eagle/MTP") decides nothing. When methods tie, the subject of a comparison
    ("X is slower than Y") is the one under study; with none, the field stays null."""
    found = _configured(a)
    if found and all(m == "draft_model" and f.source != "prose" and not a.values("method")
                     for m, f in found):
        # A draft checkpoint with no method key says only "a separate model": a method the
        # reporter names ("MTP" for a model's assistant drafter) says which.
        named = [(m, f) for m, f in _in_prose(a) if m != "draft_model"]
        if len({m for m, _ in named}) == 1:
            found = named
    if not found:
        found = _in_prose(a)
    if not found:
        return
    if {m for m, _ in found} >= {"eagle", "eagle3"} and not any(
            _EAGLE_ONE_RE.search(f.text) for m, f in found if m == "eagle"):
        # "EAGLE" beside "EAGLE-3" names the family, unless "EAGLE-1" is named too.
        found = [(m, f) for m, f in found if m != "eagle"]
    counts: Counter[str] = Counter(m for m, _ in found)
    distinct = list(counts)
    title = list(dict.fromkeys(m for m, f in found if f.kind == "title"))
    method: str | None
    if len(distinct) == 1:
        method = distinct[0]
    elif len(title) == 1 and found[0][1].kind != "config":
        method = title[0]
    else:
        method = _under_study(a, counts)
    if method is None:
        a.competing("spec_method", [f for _, f in found], [m for m, _ in found])
        return
    if a.req.engine == "sglang" and method == "eagle" and not a.req.draft_models and any(
            _NATIVE_MTP_MODEL_RE.search(m) for m in a.req.models):
        method = "mtp"
    a.req.spec_method = method  # type: ignore[assignment]
    a.cite("spec_method", [f for m, f in found if m == method])


def _configured(a: Assembler) -> list[tuple[str, Fact]]:
    found: list[tuple[str, Fact]] = []
    for f in a.values("method"):
        method = canonical_method(f.value)
        if method:
            found.append((method, f))
    for f in a.values("mtp_flag"):
        found.append(("mtp", f))
    for f in a.values("draft"):
        raw = str(f.value).strip().lower()
        if raw in ("[ngram]", "ngram"):
            found.append(("ngram", f))
        elif not a.values("method"):
            found.append(("eagle3" if "eagle3" in raw.replace("-", "") else
                          "eagle" if "eagle" in raw else "draft_model", f))
    for f in a.values("prompt_lookup"):
        found.append(("ngram", f))
    return found


def _in_prose(a: Assembler) -> list[tuple[str, Fact]]:
    found: list[tuple[str, Fact]] = []
    # A draft checkpoint named in prose names its method too (`org/EAGLE3-LLaMA3.1-8B`).
    for f in a.facts.get("draft_prose"):
        method = _method_of_draft(str(f.value))
        if method:
            found.append((method, f))
    lines = ((0, a.wording.title, "title"), *((no, t, "prose") for no, t in a.wording.prose_lines))
    for no, text, kind in lines:
        for m in _PROSE_METHOD_RE.finditer(text):
            method = _canonical(m.group(1))
            if method and not negated(text, m.start(), m.end()):
                found.append((method, Fact("method", method, no, text, "prose", kind)))
        for m in _QUOTED_METHOD_RE.finditer(text):
            method = canonical_method(m.group(1))
            if method:
                found.append((method, Fact("method", method, no, text, "prose", kind)))
    return found


def _method_of_draft(name: str) -> str | None:
    """The method a draft checkpoint's name says: an EAGLE or Medusa head, a DFlash
    drafter, or (a model of its own, `Llama-3.2-1B-Instruct`) a draft model."""
    low = name.lower().replace("-", "").replace("_", "")
    for key, method in (("eagle3", "eagle3"), ("eagle", "eagle"), ("medusa", "medusa"),
                        ("dflash", "dflash")):
        if key in low:
            return method
    if "mtp" in low or "speculator" in low:
        return None
    return "draft_model" if _MODEL_SIZE_RE.search(name) else None


def _canonical(word: str) -> str | None:
    low = word.lower()
    if low.startswith("with"):
        return "draft_model"
    if "draft" in low:
        return "draft_model"
    if low.endswith("_mtp"):
        return "mtp"  # every `*_mtp` method name folds to mtp
    if low.startswith("mtp"):
        low = re.sub(r"\d$", "", low)
    return canonical_method(re.sub(r"[ ]", "_", low))


def _under_study(a: Assembler, counts: Counter[str]) -> str | None:
    """The most named method when it leads, else the subject of a stated comparison."""
    (first, n1), (_, n2) = counts.most_common(2)
    if n1 > n2:
        return first
    for m in _SUBJECT_RE.finditer(f"{a.wording.title}\n{a.wording.prose}"):
        subject, other = _canonical(m.group(1)), _canonical(m.group(2))
        if subject and other and subject != other:
            return subject
    return None


def decide_spec_tokens(a: Assembler) -> None:
    stated: list[int] = []
    cited: list[Fact] = []
    for f in a.values("num_speculative_tokens") + a.facts.get("num_speculative_tokens"):
        tokens = as_int(f.value, 1, 64)
        if tokens is not None:
            if tokens not in stated:
                stated.append(tokens)
            cited.append(f)
    a.req.num_speculative_tokens = sorted(stated)
    a.cite("num_speculative_tokens", cited)

"""GPUs and their count named in sentences: "8x H200", "two A100 GPUs", "on an L40S"."""

from __future__ import annotations

import re

from triagebot.parse.common import Facts, canonical_gpu
from triagebot.parse.prose.lines import Line

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

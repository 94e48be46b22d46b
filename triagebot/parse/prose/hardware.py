"""GPUs and their count named in sentences: "8x H200", "two A100 GPUs", "on an L40S",
"single RTX 4090", "RTX PRO 6000 * 1", "80GB A100", "Apple Silicon".

A device in a line that says whose hardware it is ("GPU:", "tested on", "8x") is a `gpu`
fact; a device named bare is a weaker `gpu_mention`, and one in a line about someone
else's results (a paper, another issue) is not the reporter's at all. A count needs
words that state it: a machine's name ("Mac Studio M3 Ultra") does not.
"""

from __future__ import annotations

import re

from triagebot.parse.common import Facts, canonical_gpu, fast
from triagebot.parse.prose.lines import Line

# Device names: NVIDIA's data-centre and workstation parts, AMD Instinct, Apple silicon,
# Intel Gaudi and Arc, Huawei Ascend. Letters match in either case ("a100", "rtx4090").
_NAME = (
    r"(?:(?i:GB\d{2,3}|[ABHL]\d{2,3}[A-Z]?X?|H20|L4|L40S?|T4|V100|P100|A6000|"
    r"RX\s?\d{4}(?:\s?XTX?|\s?GRE)?|"
    # A GeForce number without "RTX" is a device only with its memory beside it: "5090 32G".
    r"[2-5]0[6-9]0(?:\s?Ti)?(?=\s\d{2}\s?GB?\b|'?s\b)|(?<=\d[x×] )[2-5]0[6-9]0(?:\s?Ti)?|"
    r"(?<=\d[x×])[2-5]0[6-9]0(?:\s?Ti)?|"
    r"RTX\s?(?:PRO\s?)?\d{4}(?:\s?Ti|\s?Ada)?|RTX\s?A\d{4}|MI\d{3}X?)|"
    r"M[1-5]\s(?:Pro|Max|Ultra)|Apple\s(?:Silicon|M[1-5](?:\s(?:Pro|Max|Ultra))?)|"
    r"Gaudi\s?\d?|Arc\s?(?:Pro\s?)?[AB]\d{2,3}|Ascend\s?\d{3}[A-Z]?\d?|(?i:9[13]0[BC]\d?|310P\d?))"
)
_SUFFIX = r"(?:[- ](?:SXM\d?|PCIe|NVL|HBM3e?|\d{2,3}\s?GB|\d{2,3}G|Ti))*"
_GPU_RE = fast(
    r"(?:(?<![\w#-])|(?<=\d[x×*]))((?:\d{2,3}\s?GB\s+)?(?:NVIDIA\s+|GeForce\s+|AMD\s+|"
    r"Instinct\s+)*" + _NAME + _SUFFIX + r")(?![\w])",
    '0123456789ngaibhltvprm2345', 0)
_SIZE_FIRST_RE = re.compile(r"^(\d{2,3}\s?GB)\s+(.*)$")
_GPU_COUNT_RE = re.compile(
    r"(?<![\w.])(\d{1,2})\s?[x×*]\s?(?=(?:NVIDIA\s+|Huawei\s+|Intel\s+)?(?:GB\d|Arc\b|[2-5]0[6-9]0\b|[ABHL]\d|H20|RTX|MI\d|V100|T4|A6000|"
    r"Ascend|9[13]0[BC]))",
    re.I,
)
# "RTX PRO 6000 * 1", "H100 x8", "A100×4": the count after the device.
_COUNT_AFTER_RE = fast(r"(?<![\w])" + _NAME + _SUFFIX + r"\s?[x×*]\s?(\d{1,2})\b(?![.\d])",
    'gabhltvprm', 0)
_GPU_N_RE = re.compile(r"(?<![\w.])(\d{1,2})\s?(?:x\s?)?GPUs?\b", re.I)
# "two H20 GPUs", "a single A6000", "one RTX 4090": a count in words before a device.
_COUNT_WORDS = {"single": 1, "one": 1, "two": 2, "three": 3, "four": 4, "six": 6, "eight": 8,
                "sixteen": 16}
_GPU_WORD_COUNT_RE = fast(
    r"\b(two|three|four|six|eight|sixteen)\s+(?:NVIDIA\s+)?(?:GB\d{2,3}|[ABHL]\d{2,3}[A-Z]?|H20|"
    r"L4|L40S?|RTX\s?\d{4}|MI\d{3}X?)\w*(?:\s\w+)?\s+(?:GPUs?|cards?|devices?)\b|"
    r"\b(single|one)\s+(?:(?:NVIDIA|GeForce)\s+)?(?=" + _NAME + r"|GPU\b)",
    'tfseo')
# Chinese counts of cards: "单卡" one card, "双卡" two, "8卡" or "8 张" eight.
_CJK_COUNTS = {"单": 1, "双": 2, "两": 2, "四": 4, "八": 8}
_CJK_COUNT_RE = re.compile(r"(?<![\d.])(单|双|两|四|八|\d{1,2})\s?(?:卡|张(?=\s?(?:卡|[A-Z\d])))")
# Words that make an A/B/H/L-number token something other than a GPU.
_NOT_GPU_CONTEXT = re.compile(r"(\w-|A3B|layer|head|step|size)$", re.I)
# A name of two digits (A10, H20, L40) is a GPU only in a line about hardware.
_SHORT_NAME_RE = re.compile(r"[ABHL]\d{2}[A-Z]?|L4|T4", re.I)
# Someone else's results: a paper, another issue, another engine's claim.
_ELSEWHERE_RE = re.compile(r"\bpaper\b|\breported (?:in|by)\b|(?<!\w)#\d{3,}|\bblog\b|"
                           r"\bthey (?:got|get|report|measured)", re.I)


def gpus(lines: list[Line], facts: Facts) -> None:
    for no, line, kind in lines:
        if not _HINT_RE.search(line.lower()):
            continue
        if "found" in line and (m := _FOUND_DEVICES_RE.search(line)):
            # llama.cpp's device list: "ggml_cuda_init: found 1 CUDA devices".
            facts.add("gpu_count", int(m.group(1)), no, line, "prose", kind)
        if "--gpus" in line:
            # `docker run --gpus '"device=0,1"'` lists the devices the container gets.
            for m in _DOCKER_DEVICES_RE.finditer(line):
                facts.add("gpu_count", len(m.group(1).split(",")), no, line, "prose", kind)
        for text in _SENTENCE_END_RE.split(line) if ". " in line else (line,):
            _devices(no, text, line, kind, facts)


# Every device name has a letter next to two digits, or is L4, T4, M1-M5, Gaudi or Apple
# Silicon; every count is "N x", "N GPUs" or a word before a device.
_HINT_RE = re.compile(r"[abhl]\d{2}|gb\d|rtx|\brx\s?\d|\b[2-5]0[6-9]0\b|mi\d{3}|\b[ltm][1-5]\b|"
                      r"\d\s?[x×*]|gpu|silicon|gaudi|found \d+ \w+ device|ascend|"
                      r"\barc\s?(?:pro\s?)?[ab]\d|9[13]0[bc]|310p|[卡张]")
_NODES_RE = re.compile(r"(?<![\w.])(\d{1,2})\s?(?:nodes?|machines?|servers?|hosts?)\s?"
                       r"(?:[x×*]|with|of)\s?(\d{1,2})\s?[x×*]?\s?(?=(?:NVIDIA\s+)?(?:GB\d|[ABHL]\d|"
                       r"H20|RTX|MI\d|GPUs?\b))", re.I)
_FOUND_DEVICES_RE = re.compile(r"\bfound (\d{1,2}) (?:CUDA|ROCm|HIP|Vulkan|SYCL|Metal) devices?\b")
_DOCKER_DEVICES_RE = re.compile(r"--gpus[ =]['\"]*device=(\d{1,2}(?:,\d{1,2})*)['\"\s]")
_QUOTED_RE = re.compile(r"\"[^\"\n]{8,300}\"|“[^”\n]{8,300}”")
# Sentences of a line: "The paper reports 3x on an A100. On my RTX 4090 I get 1.2x."
_SENTENCE_END_RE = re.compile(r"(?<=[a-z0-9)][.!?])\s+(?=[A-Z])")


def _devices(no: int, text: str, line: str, kind: str, facts: Facts) -> None:
    """The devices and counts one sentence (`text`, of `line`) states."""
    # Words in quotation marks are someone else's (a commit message, another user).
    text = _QUOTED_RE.sub(" ", text) if '"' in text or "“" in text else text
    elsewhere = bool(_ELSEWHERE_RE.search(text))
    own = (_gpu_context(text) and kind != "code") or kind == "title"
    for m in _GPU_RE.finditer(text):
        raw = m.group(1)
        before = text[max(0, m.start() - 6):m.start()]
        if _NOT_GPU_CONTEXT.search(before):
            continue  # "A3B", "-A10" inside model names
        name = _as_written(raw)
        if _SHORT_NAME_RE.fullmatch(name) and not own:
            continue
        if not elsewhere:
            facts.add("gpu" if own else "gpu_mention", name, no, line, "prose", kind)
    if elsewhere:
        return
    if (nodes := _NODES_RE.search(text)):
        # "2 nodes x 8 H20": the devices of every node together.
        facts.add("gpu_count", int(nodes.group(1)) * int(nodes.group(2)), no, line, "prose",
                  kind)
        return
    for m in _GPU_COUNT_RE.finditer(text):
        facts.add("gpu_count", int(m.group(1)), no, line, "prose", kind)
    for m in _COUNT_AFTER_RE.finditer(text):
        facts.add("gpu_count", int(m.group(1)), no, line, "prose", kind)
    for m in _GPU_WORD_COUNT_RE.finditer(text):
        word = (m.group(1) or m.group(2)).lower()
        facts.add("gpu_count", _COUNT_WORDS[word], no, line, "prose", kind)
    for m in _CJK_COUNT_RE.finditer(text):
        n = _CJK_COUNTS.get(m.group(1)) or int(m.group(1))
        if 0 < n <= 64:
            facts.add("gpu_count", n, no, line, "prose", kind)
    for m in _GPU_N_RE.finditer(text):
        n = int(m.group(1))
        if 0 < n <= 64:
            facts.add("gpu_count", n, no, line, "prose", kind)


def _as_written(raw: str) -> str:
    """The device without vendor words, its memory size after its name ("80GB A100" is
    written "A100 80GB" by the rest of the world), a part number in its own capitals
    ("h100" is an H100)."""
    name = canonical_gpu(raw)
    m = _SIZE_FIRST_RE.match(name)
    if m:
        name = f"{canonical_gpu(m.group(2))} {m.group(1)}"
    return _PART_NUMBER_RE.sub(lambda p: p.group(0).upper(), name)


_PART_NUMBER_RE = re.compile(r"^(?:rtx\s?|gb|mi|[abhlt])\d+[a-z]?\b")


def _gpu_context(text: str) -> bool:
    return bool(_CONTEXT_RE.search(text))


# Words that make a line about the reporter's hardware.
_CONTEXT_RE = fast(
    r"gpu|nvidia|cuda|machine|card|node|\b(?:on|with|using)\s+(?:an?\s+|one\s+|a single\s+|"
    r"single\s+|\d+\s+|my\s+|our\s+|\d{2,3}\s?GB\s+)?(?:[ABHLM]\d|RTX|GB\d|MI\d)|"
    r"\d\s?[x×*]\s?[ABHL]\d|\b(?:one|single|two|four|eight|\d+)\s?[x×*]?\s?(?:[ABHLM]\d|RTX|"
    r"GB\d|MI\d)|hardware|device|sxm|hbm|pcie|\bsm_?\d{2,3}|apple|metal|mac\b|npu|ascend|卡",
    'gncmowu0123456789stfehdpa卡')

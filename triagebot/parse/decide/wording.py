"""The reporter's own words, apart from what they pasted.

Scope, symptom and modes are decided from what a thread says, and a word inside pasted
output says nothing: "cuda graph: True" in a decode log is not a graph mode compared, a
throughput figure in a server log is not a question about speed, and `--enforce-eager`
inside a pasted command is a setting (the runs read it) rather than a subject. Prose is
the title and the post's lines outside code blocks (where `Document.layout` puts them),
without log lines, traceback frames, template headings, or commands quoted inline.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from triagebot.parse.document import Document, Layout

# Scope and symptom are stated early; past this many characters a thread is logs and
# pasted output, which would only slow the word scans down.
CLASSIFY_CHARS = 40_000
# What a thread asks (speed or output quality) is said near its top, not far below.
QUESTION_CHARS = 6_000

LOG_LINE_RE = re.compile(
    r"\s*(?:\(\w+ pid=\d+\)\s*)?(?:INFO|DEBUG|WARNING|WARN|ERROR|TRACE|CRITICAL)\b|"
    r"\s*\[?\d{4}-\d{2}-\d{2}[ T]\d{2}:|\s*\d{2}-\d{2} \d{2}:\d{2}:|\s*File \"|"
    r"\s*\[(?:[A-Z]{2}\d+\s*)+\]")
# Headings of the engines' issue templates: they are the form's words, not the reporter's.
_TEMPLATE_HEADING_RE = re.compile(
    r"^\W*(?:proposal to improve performance|report of performance regression|"
    r"misc discussion on performance|your current environment|the feature, motivation and "
    r"pitch|how would you like to use (?:vllm|sglang)(?: on \w+)?|describe the bug|reproduction|"
    r"environment|checklist|before submitting a new issue|alternatives|additional context|"
    r"motivation|related resources|name and version|operating systems|which .* modules do "
    r"you know to be affected|command line|problem description & steps to reproduce|"
    r"first bad commit|relevant log output|how to reproduce|steps to reproduce|to reproduce)\W*$",
    re.I)
# A command quoted in a sentence: `vllm serve ... --enforce-eager`.
_INLINE_COMMAND_RE = re.compile(
    r"`\s*(?:\$\s+)?(?:[A-Z_][A-Z0-9_]*=\S*\s+)*(?:vllm|python3?|sglang|llama-[\w-]+|docker|"
    r"trtllm-[\w-]+|mlx_lm\.\w+|vllm-mlx|lm_eval|torchrun)\b[^`]*`")


@dataclass(frozen=True)
class Wording:
    title: str
    prose_lines: tuple[tuple[int, str], ...]  # (1-based line, text) of the post's prose
    body: str  # the whole post, long pasted blocks cut to their ends

    @property
    def prose(self) -> str:
        return "\n".join(text for _, text in self.prose_lines)

    @property
    def question(self) -> str:
        """The title and the top of the prose, where a thread says what it asks."""
        return f"{self.title}\n{self.prose[:QUESTION_CHARS]}"


def read_wording(doc: Document) -> Wording:
    lines = doc.body_lines
    layout = doc.layout
    prose: list[tuple[int, str]] = []
    size = 0
    for i, line in enumerate(lines):
        if not line.strip() or not layout.is_text(i) or LOG_LINE_RE.match(line):
            continue
        if _TEMPLATE_HEADING_RE.match(line.strip().lstrip("#").strip()):
            continue
        text = _INLINE_COMMAND_RE.sub("`…`", line) if "`" in line else line
        prose.append((i + 1, text))
        size += len(text)
        if size > CLASSIFY_CHARS:
            break
    return Wording(doc.title or "", tuple(prose), condensed(lines, layout))


_BLOCK_ENDS = 20


def condensed(lines: list[str], layout: Layout) -> str:
    """The post within CLASSIFY_CHARS, with long pasted blocks cut to their ends.

    A 60 KB server log pasted above the question, fenced or not, must not push the
    question out of reach; a block's first and last lines (a command, a traceback's
    error) are kept.
    """
    if sum(len(line) + 1 for line in lines) <= CLASSIFY_CHARS:
        return "\n".join(lines)
    out: list[str] = []
    run: list[str] = []

    def flush() -> None:
        out.extend(run if len(run) <= 2 * _BLOCK_ENDS else
                   [*run[:_BLOCK_ENDS], "...", *run[-_BLOCK_ENDS:]])
        run.clear()

    for i, line in enumerate(lines):
        if not layout.is_text(i) or LOG_LINE_RE.match(line):
            run.append(line)
        else:
            flush()
            out.append(line)
    flush()
    return "\n".join(out)[:CLASSIFY_CHARS]

"""The command scanner's reading of argument lists: compose / Kubernetes `command:` and
`args:` (block, flow and folded), and commands quoted inline in prose."""

from __future__ import annotations

import re

from triagebot.parse.commands.invocation import (
    FRAGMENT,
    HEAD_CHARS,
    MAX_LIST_LINES,
    MAX_VALUE_CHARS,
    TEXT_CHARS,
    Invocation,
)
from triagebot.parse.commands.lines import (
    CMD_HEAD,
    FOLLOW,
    IMAGE_KEY,
    INLINE_CODE,
    INLINE_LIST,
    ITEM,
    LIST_KEY,
    LineMap,
    bracket_delta,
    cut_continuation,
    flow_items,
    indent_of,
    strip_prefixes,
    yaml_scalar,
)
from triagebot.parse.commands.programs import (
    SHELLS,
    basename,
    image_program,
    is_flag,
    parse_args,
    split_list_item,
)
from triagebot.parse.commands.shell import CommandReader
from triagebot.parse.commands.words import Word, expand_plain, split_ops, split_words, tokenize


class ListReader(CommandReader):
    """Argument lists and inline commands."""

    def _inline(self, i: int, raw: str) -> None:
        """Commands quoted in prose: "... run `vllm serve X --tp 2` and ..."."""
        if "`" not in raw:
            lm = INLINE_LIST.search(raw[:100_000])
            if lm:
                self._flow_list(i, raw, lm.start())
            return
        for count, m in enumerate(INLINE_CODE.finditer(raw)):
            if count >= 50:
                break
            span = m.group(1)
            if span.lstrip().startswith("--"):
                self._fragment(i, span)
                continue
            cm = CMD_HEAD.match(span)
            if not cm or not self._known_word(cm.group(1)):
                continue
            lmap = LineMap()
            lmap.add(0, i + 1)
            for seg in split_ops(split_words(span, self.vars)):
                self._invocation(seg, lmap, span, False, "inline")

    def _fragment(self, i: int, text: str) -> None:
        """Flags quoted without their program (`--speculative-config '{...}'`): the
        settings the reporter gave, whatever ran them."""
        words = [w for w in split_words(text, self.vars) if w.kind == "word"]
        if not words or not is_flag(words[0].text):
            return
        lmap = LineMap()
        lmap.add(0, i + 1)
        self.out.invocations.append(Invocation(
            program=FRAGMENT, line=i + 1, text=text[:TEXT_CHARS],
            args=parse_args(words, lmap), env={}, source="inline"))

    # -- YAML / JSON argument lists, after the inline commands above

    def _list_key(self, i: int, body: str, km: re.Match[str]) -> int | None:
        indent, key, value = len(km.group(1)), km.group(2).lower(), km.group(3).strip()
        items, nxt = self._list_items(i, body, km, indent, value)
        if items is None:
            return None
        follow = FOLLOW.get(key)
        if follow:
            extra, after = self._following_args(nxt, indent, follow)
            if extra is not None:
                items += extra
                self.skip_until = after
        if not items:
            return nxt
        self._list_invocation(i, items)
        return nxt

    def _list_items(
        self, i: int, body: str, km: re.Match[str], indent: int, value: str
    ) -> tuple[list[tuple[str, int]] | None, int]:
        if value.startswith("["):
            start = km.start(3)
            return self._flow_at(i, body, start)
        if value in ("", "|", ">", "|-", ">-") or value.startswith(("#", "|", ">")):
            if value[:1] in ("|", ">"):
                return self._folded(i, indent)
            return self._block_items(i + 1, indent)
        # `command: vllm serve x --tp 2` / `command: --model x`: a shell-like string.
        text = yaml_scalar(value)
        if not (is_flag(text.split(" ", 1)[0]) or self._known_word(text.split(" ", 1)[0])):
            return None, i + 1
        return [(w.text, i + 1) for w in split_words(text, self.vars) if w.kind == "word"], i + 1

    def _flow_at(self, i: int, body: str, start: int) -> tuple[list[tuple[str, int]], int]:
        lmap = LineMap()
        lmap.add(0, i + 1)
        parts = [body[start:]]
        size = len(parts[0]) + 1
        # Bracket balance counted line by line (strings ignored) keeps this linear.
        depth = bracket_delta(parts[0])
        j = i + 1
        while depth > 0 and j < len(self.lines):
            if j - i > MAX_LIST_LINES or size > MAX_VALUE_CHARS:
                break
            lmap.add(size, j + 1)
            parts.append(strip_prefixes(self.lines[j])[0])
            size += len(parts[-1]) + 1
            depth += bracket_delta(parts[-1])
            j += 1
        items = flow_items("\n".join(parts), 0)
        return [(expand_plain(t, self.vars), lmap(pos)) for t, pos in items], j

    def _block_items(self, j: int, indent: int) -> tuple[list[tuple[str, int]], int]:
        items: list[tuple[str, int]] = []
        n = len(self.lines)
        while j < n and len(items) < MAX_LIST_LINES:
            line = strip_prefixes(self.lines[j])[0]
            if not line.strip() or line.strip().startswith("#"):
                j += 1
                continue
            im = ITEM.match(line)
            if not im or len(im.group(1)) < indent:
                break
            items.append((expand_plain(yaml_scalar(im.group(2)), self.vars), j + 1))
            j += 1
        return items, j

    def _folded(self, i: int, indent: int) -> tuple[list[tuple[str, int]], int]:
        items: list[tuple[str, int]] = []
        j = i + 1
        while j < len(self.lines) and j - i < MAX_LIST_LINES:
            line = self.lines[j]
            if line.strip() and indent_of(line) <= indent:
                break
            code, _ = cut_continuation(line)
            items.extend((w.text, j + 1) for w in tokenize(code, self.vars) if w.kind == "word")
            j += 1
        return items, j

    def _following_args(
        self, j: int, indent: int, follow: tuple[str, ...]
    ) -> tuple[list[tuple[str, int]] | None, int]:
        """k8s puts `args:` after `command:` (compose: `command:` after `entrypoint:`);
        together they are one argument vector."""
        for k in range(j, min(j + 15, len(self.lines))):
            body = strip_prefixes(self.lines[k])[0]
            km = LIST_KEY.match(body[:HEAD_CHARS])
            if km and km.group(2).lower() in follow and len(km.group(1)) == indent:
                items, nxt = self._list_items(k, body, km, indent, km.group(3).strip())
                return items, nxt
            if body.strip() and indent_of(body) < indent:
                break
        return None, j

    def _flow_list(self, i: int, raw: str, start: int) -> None:
        items, _ = self._flow_at(i, raw, start)
        if items:
            self._list_invocation(i, items)

    def _list_invocation(self, i: int, items: list[tuple[str, int]]) -> None:
        lmap = LineMap()
        words: list[Word] = []
        for text, line in items:
            for piece in split_list_item(text):
                lmap.add(len(words), line)
                words.append(Word(piece, len(words)))
        shown = "\n".join(self.lines[i : min(i + 40, len(self.lines))])[:TEXT_CHARS]
        first = basename(words[0].text) if words else ""
        if (first in SHELLS or self._known_word(first)) and self._invocation(
            words, lmap, shown, True, "list"
        ):
            return
        image = self._nearby_image(i)
        program = (image_program(image) if image else None) or "unknown"
        self.out.invocations.append(
            Invocation(
                program=program,
                line=items[0][1],
                text=shown,
                args=parse_args(words, lmap),
                env={},
                image=image,
                source="list",
            )
        )

    def _nearby_image(self, i: int) -> str | None:
        """The `image:` of the same compose service / k8s container (same indentation
        block), looking up first since it usually comes before `command:`."""
        indent = indent_of(strip_prefixes(self.lines[i])[0])
        for step in (-1, 1):
            k = i + step
            while 0 <= k < len(self.lines) and abs(k - i) <= 30:
                body = strip_prefixes(self.lines[k])[0]
                if body.strip():
                    m = IMAGE_KEY.match(body[:HEAD_CHARS])
                    if m and indent_of(body) == indent:
                        return m.group(1)
                    if indent_of(body) < indent:
                        break
                k += step
        return None

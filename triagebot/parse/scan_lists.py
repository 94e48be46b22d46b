"""The command scanner's reading of argument lists: compose / Kubernetes `command:` and
`args:` (block, flow and folded), and commands quoted inline in prose."""

from __future__ import annotations

import re

from triagebot.parse.invocation import (
    _HEAD_CHARS,
    MAX_LIST_LINES,
    MAX_VALUE_CHARS,
    TEXT_CHARS,
    Invocation,
)
from triagebot.parse.linesyntax import (
    _CMD_HEAD,
    _FOLLOW,
    _IMAGE_KEY,
    _INLINE_CODE,
    _INLINE_LIST,
    _ITEM,
    _LIST_KEY,
    _bracket_delta,
    _cut_continuation,
    _flow_items,
    _indent,
    _LineMap,
    _strip_prefixes,
    _yaml_scalar,
)
from triagebot.parse.programs import (
    _SHELLS,
    _basename,
    _image_program,
    _is_flag,
    _parse_args,
    _split_list_item,
)
from triagebot.parse.scan_commands import _CommandReader
from triagebot.parse.shellwords import _expand_plain, _split_ops, _tokenize, _Word


class _ListReader(_CommandReader):
    """Argument lists and inline commands."""

    def _inline(self, i: int, raw: str) -> None:
        """Commands quoted in prose: "... run `vllm serve X --tp 2` and ..."."""
        if "`" not in raw:
            lm = _INLINE_LIST.search(raw[:100_000])
            if lm:
                self._flow_list(i, raw, lm.start())
            return
        for count, m in enumerate(_INLINE_CODE.finditer(raw)):
            if count >= 50:
                break
            span = m.group(1)
            cm = _CMD_HEAD.match(span)
            if not cm or not self._known_word(cm.group(1)):
                continue
            lmap = _LineMap()
            lmap.add(0, i + 1)
            for seg in _split_ops(_tokenize(span, self.vars)):
                self._invocation(seg, lmap, span, False, "inline")

    # -- YAML / JSON argument lists, after the inline commands above

    def _list_key(self, i: int, body: str, km: re.Match[str]) -> int | None:
        indent, key, value = len(km.group(1)), km.group(2).lower(), km.group(3).strip()
        items, nxt = self._list_items(i, body, km, indent, value)
        if items is None:
            return None
        follow = _FOLLOW.get(key)
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
        text = _yaml_scalar(value)
        if not (_is_flag(text.split(" ", 1)[0]) or self._known_word(text.split(" ", 1)[0])):
            return None, i + 1
        return [(w.text, i + 1) for w in _tokenize(text, self.vars) if w.kind == "word"], i + 1

    def _flow_at(self, i: int, body: str, start: int) -> tuple[list[tuple[str, int]], int]:
        lmap = _LineMap()
        lmap.add(0, i + 1)
        parts = [body[start:]]
        size = len(parts[0]) + 1
        # Bracket balance counted line by line (strings ignored) keeps this linear.
        depth = _bracket_delta(parts[0])
        j = i + 1
        while depth > 0 and j < len(self.lines):
            if j - i > MAX_LIST_LINES or size > MAX_VALUE_CHARS:
                break
            lmap.add(size, j + 1)
            parts.append(_strip_prefixes(self.lines[j])[0])
            size += len(parts[-1]) + 1
            depth += _bracket_delta(parts[-1])
            j += 1
        items = _flow_items("\n".join(parts), 0)
        return [(_expand_plain(t, self.vars), lmap(pos)) for t, pos in items], j

    def _block_items(self, j: int, indent: int) -> tuple[list[tuple[str, int]], int]:
        items: list[tuple[str, int]] = []
        n = len(self.lines)
        while j < n and len(items) < MAX_LIST_LINES:
            line = _strip_prefixes(self.lines[j])[0]
            if not line.strip() or line.strip().startswith("#"):
                j += 1
                continue
            im = _ITEM.match(line)
            if not im or len(im.group(1)) < indent:
                break
            items.append((_expand_plain(_yaml_scalar(im.group(2)), self.vars), j + 1))
            j += 1
        return items, j

    def _folded(self, i: int, indent: int) -> tuple[list[tuple[str, int]], int]:
        items: list[tuple[str, int]] = []
        j = i + 1
        while j < len(self.lines) and j - i < MAX_LIST_LINES:
            line = self.lines[j]
            if line.strip() and _indent(line) <= indent:
                break
            code, _ = _cut_continuation(line)
            items.extend((w.text, j + 1) for w in _tokenize(code, self.vars) if w.kind == "word")
            j += 1
        return items, j

    def _following_args(
        self, j: int, indent: int, follow: tuple[str, ...]
    ) -> tuple[list[tuple[str, int]] | None, int]:
        """k8s puts `args:` after `command:` (compose: `command:` after `entrypoint:`);
        together they are one argument vector."""
        for k in range(j, min(j + 15, len(self.lines))):
            body = _strip_prefixes(self.lines[k])[0]
            km = _LIST_KEY.match(body[:_HEAD_CHARS])
            if km and km.group(2).lower() in follow and len(km.group(1)) == indent:
                items, nxt = self._list_items(k, body, km, indent, km.group(3).strip())
                return items, nxt
            if body.strip() and _indent(body) < indent:
                break
        return None, j

    def _flow_list(self, i: int, raw: str, start: int) -> None:
        items, _ = self._flow_at(i, raw, start)
        if items:
            self._list_invocation(i, items)

    def _list_invocation(self, i: int, items: list[tuple[str, int]]) -> None:
        lmap = _LineMap()
        words: list[_Word] = []
        for text, line in items:
            for piece in _split_list_item(text):
                lmap.add(len(words), line)
                words.append(_Word(piece, len(words)))
        shown = "\n".join(self.lines[i : min(i + 40, len(self.lines))])[:TEXT_CHARS]
        first = _basename(words[0].text) if words else ""
        if (first in _SHELLS or self._known_word(first)) and self._invocation(
            words, lmap, shown, True, "list"
        ):
            return
        image = self._nearby_image(i)
        program = (_image_program(image) if image else None) or "unknown"
        self.out.invocations.append(
            Invocation(
                program=program,
                line=items[0][1],
                text=shown,
                args=_parse_args(words, lmap),
                env={},
                image=image,
                source="list",
            )
        )

    def _nearby_image(self, i: int) -> str | None:
        """The `image:` of the same compose service / k8s container (same indentation
        block), looking up first since it usually comes before `command:`."""
        indent = _indent(_strip_prefixes(self.lines[i])[0])
        for step in (-1, 1):
            k = i + step
            while 0 <= k < len(self.lines) and abs(k - i) <= 30:
                body = _strip_prefixes(self.lines[k])[0]
                if body.strip():
                    m = _IMAGE_KEY.match(body[:_HEAD_CHARS])
                    if m and _indent(body) == indent:
                        return m.group(1)
                    if _indent(body) < indent:
                        break
                k += step
        return None

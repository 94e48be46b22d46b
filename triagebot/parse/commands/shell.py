"""The command scanner's reading of shell commands: continued lines gathered, words split
at operators, each program's invocation kept when it is plausible."""

from __future__ import annotations

from triagebot.parse.commands.env import EnvReader
from triagebot.parse.commands.invocation import MAX_JOIN_LINES, TEXT_CHARS, Arg, Invocation
from triagebot.parse.commands.lines import (
    COMMENT,
    FENCE,
    FLAG_LINE,
    ITEM,
    LineMap,
    QuoteState,
    cut_continuation,
    strip_prefixes,
)
from triagebot.parse.commands.programs import (
    DASH_C,
    RUNNERS,
    SHELLS,
    WRAPPERS,
    Program,
    basename,
    parse_args,
    program_at,
)
from triagebot.parse.commands.words import ASSIGN, Word, split_ops, split_words, tokenize


class CommandReader(EnvReader):
    """Shell commands, one logical line at a time."""

    def _gather(self, i: int, body: str) -> tuple[list[tuple[int, str, str]], int]:
        """Physical lines of the command starting at line i: (line, code, shown text)."""
        segs: list[tuple[int, str, str]] = []
        n = len(self.lines)
        j = i
        cur = body
        quotes = QuoteState()
        while True:
            code, cont = cut_continuation(cur)
            segs.append((j + 1, code, cur))
            j += 1
            open_json = quotes.feed(code)
            if len(segs) >= MAX_JOIN_LINES or j >= n:
                break
            if cont or open_json:
                while j < n and COMMENT.match(strip_prefixes(self.lines[j])[0]):
                    j += 1  # comment lines inside a continued command are skipped
                if j < n and self.lines[j].strip() and not FENCE.match(self.lines[j]):
                    cur = strip_prefixes(self.lines[j])[0]
                    continue
                break
            nb = strip_prefixes(self.lines[j])[0] if j < n else ""
            if FLAG_LINE.match(nb) and not ITEM.match(nb):  # flags pasted without `\`
                cur = nb
                continue
            break
        return segs, j

    def _command(self, i: int, body: str, prompt: bool) -> int | None:
        segs, nxt = self._gather(i, body)
        lmap = LineMap()
        parts: list[str] = []
        offset = 0
        for line_no, code, _ in segs:
            lmap.add(offset, line_no)
            parts.append(code)
            offset += len(code) + 1
        logical = "\n".join(parts)
        words = tokenize(logical, self.vars)
        shown = "\n".join(s[2] for s in segs)
        found = False
        for seg in split_ops(words):
            inv = self._invocation(seg, lmap, shown, prompt or len(segs) > 1, "shell")
            if inv is not None:
                found = True
        return nxt if found else None

    def _invocation(
        self,
        seg: list[Word],
        lmap: LineMap,
        shown: str,
        strong: bool,
        source: str,
    ) -> Invocation | None:
        env: list[tuple[str, str, int]] = []
        k = 0
        while k < len(seg):
            t = seg[k].text
            am = ASSIGN.fullmatch(t)
            if am and seg[k].kind == "word":
                env.append((am.group(1), am.group(2), lmap(seg[k].pos)))
                k += 1
            elif t in WRAPPERS:
                k += 1
                while k < len(seg) and seg[k].text.startswith("-") and t != "env":
                    k += 1
            elif t in RUNNERS and k + 1 < len(seg) and seg[k + 1].text == "run":
                k += 2
            elif t == "timeout":
                k += 2 if k + 1 < len(seg) and seg[k + 1].text[:1].isdigit() else 1
            else:
                break
        if k >= len(seg):
            return None
        if basename(seg[k].text) in SHELLS and k + 2 < len(seg) and seg[k + 1].text in DASH_C:
            return self._shell_script(seg[k + 2], lmap, shown, source)
        prog = program_at(seg, k)
        if prog is None:
            return None
        arg_words = prog.arg_words if prog.arg_words is not None else seg[prog.next :]
        args = parse_args(arg_words, lmap)
        if not self._accept(prog, args, strong):
            return None
        env.extend((name, val, lmap(pos)) for name, val, pos in prog.env)
        inv = Invocation(
            program=prog.name,
            line=lmap(seg[k].pos),
            text=shown[:TEXT_CHARS],
            args=args,
            env={name: val for name, val, _ in env},
            inner=prog.inner,
            image=prog.image,
            source=source,
        )
        self.out.invocations.append(inv)
        self.out.env.extend(env)
        return inv

    def _shell_script(
        self, script: Word, lmap: LineMap, shown: str, source: str
    ) -> Invocation | None:
        """`bash -c "vllm serve ..."` (compose and k8s love it): read the script."""
        inner = LineMap()
        inner.add(0, lmap(script.pos))
        found = None
        for seg in split_ops(split_words(script.text, self.vars)):
            found = self._invocation(seg, inner, shown, True, source) or found
        return found

    def _accept(self, prog: Program, args: tuple[Arg, ...], strong: bool) -> bool:
        """Tell a command from prose that happens to start with a program's name."""
        has_flag = any(a.flag for a in args)
        if not prog.known:
            return has_flag and (strong or self.in_fence)
        if strong or self.in_fence or has_flag:
            return True
        if prog.name == "docker run":
            return any(c in (prog.image or "") for c in "/:")
        pos = [a.value or "" for a in args if a.flag is None]
        return bool(pos) and ("/" in pos[0] or pos[0].endswith((".py", ".gguf")))

"""Environment dumps → `Environment`.

Reads what reporters paste about their machine: `python collect_env.py` /
`vllm collect-env` output (new `Key : value` style with `=====` banners and the older
`Key: value` style), SGLang's `python3 -m sglang.check_env`, `nvidia-smi` table excerpts,
`pip list` and `pip freeze` excerpts. Everything is line based and linear: a dump pasted
twice (scraped pages do that) or with its markdown stripped reads the same as a clean one.
Nothing here raises; an unreadable input gives an empty `EnvDump`.

`_Parser` below decides which part of a dump each line belongs to; `recorder`
records what the line states.
"""

from __future__ import annotations

import re

from triagebot.parse.envdump.recorder import (
    ANCHOR_KEYS,
    BANNER,
    ENV_VAR,
    GIT_SHA,
    HARD_END,
    MAX_KEY,
    MAX_LINE,
    PKG_NAME,
    SCALAR_KEYS,
    SGLANG_MARKERS,
    VERSION_RE,
    EnvDump,
    Recorder,
    norm_key,
    split_kv,
)

__all__ = ["EnvDump", "parse_environment"]


def parse_environment(lines: list[str]) -> EnvDump:
    """Read every environment fact the lines state. Never raises."""
    try:
        return _Parser(lines).run()
    except Exception:  # hostile or odd text must not break the parse
        return EnvDump()


class _Parser(Recorder):
    """One pass over the lines: which part of a dump each belongs to."""

    # -- driver -------------------------------------------------------------------------

    def run(self) -> EnvDump:
        for idx, raw in enumerate(self.lines):
            line = raw if len(raw) <= MAX_LINE else raw[:MAX_LINE]
            self._line(idx + 1, line)
        self._flush_freeze()
        if self.gpu_names:
            self.env.gpus = [self.gpu_names[k] for k in sorted(self.gpu_names)]
            self.out.gpu_count = len(self.gpu_names)
        if self.out.engine is None and self.sglang:
            self.out.engine = "sglang"
        return self.out

    def _line(self, n: int, line: str) -> None:
        stripped = line.strip()
        if self.skip:
            self.skip -= 1
            return
        if self._gpu(n, line) or self._smi(n, line) or self._bracket_pkg(n, line):
            return
        if self._freeze(n, line, stripped):
            return
        self._flush_freeze()
        if self._pip_list(n, line, stripped):
            return
        self._dump(n, line, stripped)

    # -- dumps --------------------------------------------------------------------------

    def _dump(self, n: int, line: str, stripped: str) -> None:
        if not stripped:
            self.continuation = False
            return
        if HARD_END.match(line):
            self._end_dump()
            return
        if stripped.startswith("Collecting environment information"):
            self._start_dump()
            return
        if BANNER.match(line):
            self._banner(n)
            return
        kv = split_kv(stripped)
        if kv is not None:
            key, value = kv
            nkey = norm_key(key)
            if not self.in_dump and (
                nkey in ANCHOR_KEYS or (nkey == "python" and value[:1].isdigit())
            ):
                self._start_dump()
            if self.in_dump:
                self._kv(n, line, key, nkey, value)
                return
        if self.in_dump and (self.continuation or line[:1] in " \t" or ENV_VAR.match(stripped)):
            return  # multi-line item, indented continuation or an env var row: still the dump
        if self.in_dump and kv is None:
            self._end_dump()

    def _banner(self, n: int) -> None:
        # collect_env titles sit between two rules; a lone rule (the end of a benchmark
        # result block) is not a section.
        if n + 1 >= len(self.lines):
            return
        title = self.lines[n].strip()
        if title and not BANNER.match(self.lines[n]) and BANNER.match(self.lines[n + 1]):
            self._start_dump()
            self.section = title[: MAX_KEY * 2]
            self.skip = 2

    def _start_dump(self) -> None:
        if not self.in_dump:
            self.in_dump = True
            self.section = "Environment"
            self.continuation = False

    def _end_dump(self) -> None:
        self.in_dump = False
        self.continuation = False

    def _kv(self, n: int, line: str, key: str, nkey: str, value: str) -> None:
        if value == "" and nkey not in SCALAR_KEYS:
            # `GPU Topology:` / `vLLM Build Flags:` / `CPU:` open a multi-line item; lscpu's
            # block and the library list read as their own sections.
            if nkey in ("cpu", "versions of relevant libraries", "nvidia topology"):
                self.section = key
                self.continuation = nkey == "nvidia topology"
                return
            self.env.sections.setdefault(self.section, {}).setdefault(key, value)
            self.continuation = nkey not in ("gpu models and configuration",)
            return
        self.continuation = False
        self.env.sections.setdefault(self.section, {}).setdefault(key, value)
        if nkey in SGLANG_MARKERS:
            self.sglang = True
        target = SCALAR_KEYS.get(nkey)
        if target is not None:
            self._scalar(n, line, target, value)
        elif nkey == "nvcc":
            match = re.search(r"release (\d+(?:\.\d+)+)", value)
            if match:
                self._set(n, line, "cuda_runtime", match.group(1))
        elif nkey == "gpu models and configuration":
            self._gpu(n, "GPU models and configuration: " + value, inline=True)
        elif nkey == "sglang":
            self._engine_version(n, line, value, "sglang")
            self._package(n, line, key, value.split(" ")[0])
        elif self.sglang and PKG_NAME.match(key) and VERSION_RE.match(value.split(" ")[0]):
            self._package(n, line, key, value.split(" ")[0])
        if "git sha" in value:
            sha = GIT_SHA.search(value)
            if sha:
                self._set(n, line, "engine_commit", sha.group(1))

"""Which cudagraph mode a spec cell's target and drafter ran, from vLLM's own log.

The mode a cell asked for is not always the one it ran: vLLM lowers it at start-up for
an attention backend or for speculation, and says so in a warning; what it then captured
shows in its capture progress lines (engines.md §4.2-4.3). The target's decode mode is
read from those. The drafter's is read where the engine logs it (the V2 runner's drafter
captures); the V1 runner logs nothing for it, and there the rule its EAGLE-family
drafters follow is applied: PIECEWISE when the target captures graphs for mixed batches
and the draft is not eager, else none. A drafter held at PIECEWISE while the target
replays FULL graphs is a known cause of a slow spec step.
"""

from __future__ import annotations

import re

from triagebot.analyze.signatures import message_of
from triagebot.analyze.step_split_models import CudagraphModes
from triagebot.plan_model import Cell

# V1 runner: "Capturing CUDA graphs (decode, FULL)"; V2: "Capturing CUDA graphs (FULL)".
_TARGET_CAPTURE = re.compile(
    r"Capturing CUDA graphs \((?:(decode|mixed prefill-decode), )?([A-Z_]+)\)")
# V2 drafters: "Capturing multi-module MTP CUDA graphs (FULL)", "Capturing dflash CUDA
# graphs (FULL)", "Capturing decode CUDA graphs (FULL)" (the AR speculator).
_DRAFTER_CAPTURE = re.compile(r"Capturing ((?!\d)(?!encoder)(?!decoder replay)[\w -]+?) "
                              r"CUDA graphs \(([A-Z_]+)\)")
_LOWERED = re.compile(r"(?:setting|Overriding) cudagraph_mode(?: from \w+)?(?:=| to )"
                      r"([A-Z_]+)")
_EAGER = re.compile(r"Cudagraph is disabled under eager mode")
# Methods whose drafter is a model of its own (ngram and suffix propose on the host).
_MODEL_DRAFTERS = ("eagle", "eagle3", "mtp", "draft_model", "dflash", "medusa")
EVIDENCE_CHARS = 200


def cudagraph_modes(cell: Cell, log: str) -> CudagraphModes:
    """The target's and the drafter's cudagraph modes as `log` shows them."""
    evidence: list[str] = []
    target, mixed = _target_modes(log, evidence)
    drafter, how = _drafter_mode(cell, log, target, mixed, evidence)
    held = target == "FULL" and drafter in ("PIECEWISE", "NONE")
    sentence = (f"{cell.label}: the target ran {_words(target, 'decode batches')}"
                + (f" and {_words(mixed, 'mixed prefill-decode batches')}"
                   if mixed not in (None, target) else "")
                + f"; {how}")
    if held:
        sentence += (f". A drafter at {drafter} beside a target at FULL is a known cause "
                     "of a slow spec step: each step runs the drafter's kernels one by one "
                     "(or its pieces) while the target's run as one graph")
    return CudagraphModes(target=target, drafter=drafter, held_back=held, sentence=sentence,
                          evidence=evidence)


def _target_modes(log: str, evidence: list[str]) -> tuple[str | None, str | None]:
    """(decode mode, mixed-batch mode) of the target; None where the log does not say."""
    decode = mixed = lowered = None
    for line in log.splitlines():
        msg = message_of(line.strip())
        if _EAGER.search(msg):
            evidence.append(msg[:EVIDENCE_CHARS])
            return "NONE", "NONE"
        if (m := _LOWERED.search(msg)) is not None:
            lowered = m.group(1)
            evidence.append(msg[:EVIDENCE_CHARS])
        for m in _TARGET_CAPTURE.finditer(msg):
            kind, mode = m.group(1), m.group(2)
            if kind in (None, "decode") and decode is None:
                decode = mode
                evidence.append(m.group(0))
            if kind in (None, "mixed prefill-decode") and mixed is None:
                mixed = mode
                if kind:
                    evidence.append(m.group(0))
    if decode is None and lowered is not None:
        # Lowered, and no capture line seen: the mode it was lowered to, for both.
        return _split_mode(lowered)
    return decode, mixed


def _split_mode(mode: str) -> tuple[str, str]:
    """A configured mode as (decode, mixed): FULL_AND_PIECEWISE is FULL for decode."""
    if mode.startswith("FULL_AND_"):
        return "FULL", mode.removeprefix("FULL_AND_")
    if mode == "FULL_DECODE_ONLY":
        return "FULL", "NONE"
    return mode, mode


def _drafter_mode(cell: Cell, log: str, target: str | None, mixed: str | None,
                  evidence: list[str]) -> tuple[str | None, str]:
    """(mode, how it was found) of the drafter."""
    if cell.spec is None:
        return None, "no drafter runs without speculation"
    if cell.spec.method not in _MODEL_DRAFTERS:
        return None, f"the drafter ({cell.spec.method}) proposes on the host, with no model"
    for line in log.splitlines():
        if (m := _DRAFTER_CAPTURE.search(message_of(line.strip()))) is not None:
            evidence.append(m.group(0))
            return m.group(2), f"the drafter captured {m.group(2)} graphs (\"{m.group(0)}\")"
    if cell.model_runner == "v2":
        return None, "the drafter logged no capture of its own, so its mode is not known"
    if cell.spec.draft_enforce_eager:
        return "NONE", "the drafter ran eagerly, as its speculative config asks"
    if mixed is None:
        return None, ("the drafter runs PIECEWISE or none by the V1 runner's rule, and the "
                      "log does not say which mode the target captured for mixed batches")
    mode = "PIECEWISE" if mixed in ("PIECEWISE", "FULL") else "NONE"
    return mode, (f"the drafter ran {mode}: the V1 runner logs no line for it; its graphs "
                  f"are PIECEWISE whenever the target captures mixed batches ({mixed}) and "
                  "the draft is not eager, else none")


def _words(mode: str | None, what: str) -> str:
    return f"{mode} for {what}" if mode else f"an unknown mode for {what} (no line in its log)"

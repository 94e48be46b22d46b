"""A step's verdict: the repro plan's own answer at that point, read as good, bad or skip.

The predicate is the question the repro plan answers for this report (`Findings.outcome`,
decided by `analyze.findings.decide_outcome` with the sequential verdicts of
`analyze.verdict`): "reproduced" means the reported behaviour is there (bad),
"not_reproduced" that it is not (good). "inconclusive" is UNKNOWN after the orchestrator's
escalation, "cannot_answer" that the report's own comparison cannot run on this runner,
and "error" means cells the question needs have no usable runs (a build that does not
start, a release that refuses the configuration for another reason): all are a skip,
never a guess.

A crash report that quotes its error ("AssertionError: spec decode is not supported") is
narrowed to that error: a step whose cells fail with a different error does not show the
reported failure, and says what it failed with instead.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from triagebot.analyze.findings_models import ComparisonFinding, Findings
from triagebot.bisect.search import StepVerdict

# "SomethingError: message" or "Exception: message" as a traceback's last line prints it.
_ERROR_LINE = re.compile(
    r"\b((?:[A-Z][A-Za-z0-9_]*\.)*[A-Z][A-Za-z0-9_]*(?:Error|Exception)):\s*([^\n`]{3,160})")


def reported_errors(text: str, limit: int = 5) -> list[str]:
    """The error lines a report quotes, as "Type: message", first mention first."""
    found: list[str] = []
    for m in _ERROR_LINE.finditer(text):
        line = f"{m.group(1).rsplit('.', 1)[-1]}: {m.group(2).strip().rstrip('.')}"
        if line not in found:
            found.append(line)
    return found[:limit]


def root_error(text: str) -> str | None:
    """The error a failed run's log names as its cause: engines wrap the real exception
    in RuntimeErrors ("Engine core initialization failed"), so a more specific type wins."""
    errors = reported_errors(text, limit=50)
    specific = [e for e in errors if not e.startswith(("RuntimeError", "Exception"))]
    chosen = specific or errors
    return chosen[0] if chosen else None


def _matches(error: str, haystack: str) -> bool:
    kind, _, message = error.partition(": ")
    words = message.lower().strip(" \"'")
    return kind.lower() in haystack.lower() and words in haystack.lower()


def _main(findings: Findings) -> ComparisonFinding | None:
    mains = [c for c in findings.comparisons if c.main]
    return mains[0] if mains else None


def measure(findings: Findings) -> str:
    """The main comparison in one line: ratio, interval, runs and verdict."""
    comp = _main(findings)
    if comp is None:
        return ""
    res = comp.result
    if res.ratio is None:
        return f"{comp.name}: no ratio ({res.verdict})"
    ci = (f" [{res.ci_low:.2f}, {res.ci_high:.2f}]" if res.ci_low is not None
          and res.ci_high is not None else "")
    return f"{comp.name} {res.ratio:.2f}x{ci} ({res.n_a} v {res.n_b} runs): {res.verdict}"


def p_value(findings: Findings) -> float | None:
    comp = _main(findings)
    return None if comp is None else comp.result.p_value


def runs_of(findings: Findings) -> int:
    return sum(c.throughput.n for c in findings.cells)


def step_verdict(findings: Findings, *, errors: Sequence[str] = (),
                 logs: Mapping[str, str] | None = None) -> tuple[StepVerdict, str]:
    """(good | bad | skip, why) for one step's findings."""
    outcome, why = findings.outcome, findings.outcome_reason
    failed = [c for c in findings.cells if c.status != "ok"]
    if outcome == "reproduced" and errors and failed:
        texts = {c.cell_id: f"{c.error or ''}\n{(logs or {}).get(c.cell_id, '')}"
                 for c in failed}
        hit = [e for e in errors if any(_matches(e, t) for t in texts.values())]
        if not hit:
            first = failed[0]
            other = (first.error or first.status).strip().splitlines()
            said = (root_error(texts[first.cell_id])
                    or (other[-1] if other else first.status))[:160]
            return "good", (f"the reported error ({errors[0]}) is gone; {first.label} "
                            f"fails otherwise: {said}")
        return "bad", f"{why}; the log shows the reported error ({hit[0]})"
    if outcome == "reproduced":
        return "bad", why
    if outcome == "not_reproduced":
        return "good", why
    if outcome == "inconclusive":
        return "skip", f"UNKNOWN after escalation: {why}"
    if outcome == "cannot_answer":
        return "skip", f"the question cannot run on this runner: {why}"
    return "skip", f"no usable runs: {why}"

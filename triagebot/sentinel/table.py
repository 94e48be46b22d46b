"""The sentinel's tables in Markdown: per release, one row per case and mode, then the
flags and the change points."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from triagebot.sentinel.flags import percent, ratio_words
from triagebot.sentinel.models import CaseFigures, Flag, ModeFigures

HEADER = ("| case | mode | spec/no-spec [CI] | vs previous [CI] | acceptance [CI] | "
          "outputs | verdict |\n|---|---|---|---|---|---|---|\n")


def release_table(release: str, figures: Sequence[CaseFigures], flags: Sequence[Flag],
                  skipped: Mapping[str, str] | None = None) -> str:
    """One release's table: every case and mode, what it measured and its verdict."""
    lines = [f"### {release}\n\n", HEADER]
    for case in figures:
        versus = f" (vs {case.previous})" if case.previous else " (first measured)"
        if case.status != "ok" or not case.modes:
            line = (case.error_line or "").replace("|", "\\|")
            lines.append(f"| {case.case_id}{versus} | - | - | - | - | - | "
                         f"**{case.status}**: {line} |\n")
            continue
        for mode in case.modes:
            lines.append(_mode_row(case, mode, versus, flags))
    for case_id, why in (skipped or {}).items():
        lines.append(f"| {case_id} | - | - | - | - | - | skipped: {why} |\n")
    return "".join(lines) + "\n"


def _mode_row(case: CaseFigures, mode: ModeFigures, versus: str,
              flags: Sequence[Flag]) -> str:
    mine = [f.kind for f in flags if f.case_id == case.case_id and f.mode == mode.mode
            and f.release == case.release]
    verdict = ", ".join(k.replace("_", " ") for k in mine) if mine else "ok"
    outputs = {True: "equal", False: "**differ**", None: "-"}[mode.outputs_equal]
    return (f"| {case.case_id}{versus} | {mode.mode} | "
            f"{ratio_words(mode.spec_ratio, mode.spec_ci, mode.verdict)} | "
            f"{ratio_words(mode.ratio_of_ratios, mode.ror_ci, mode.ror_verdict)} | "
            f"{percent(mode.acceptance_rate, mode.acceptance_ci)}"
            f"{_positions(mode.per_position)} | {outputs} | {verdict} |\n")


def _positions(rates: Sequence[float]) -> str:
    if len(rates) < 2:
        return ""
    return " (by position " + "/".join(f"{r:.0%}" for r in rates).replace("%", "") + ")"


def flag_list(flags: Sequence[Flag], title: str = "Flags") -> str:
    """Each flag in one line, or a line saying there is none."""
    if not flags:
        return f"**{title}:** none.\n\n"
    lines = [f"**{title}:**\n\n"]
    lines += [f"- {f.case_id} at {f.release}: {f.reason}\n" for f in flags]
    return "".join(lines) + "\n"

"""The report's first screen: the answer, before any table.

A maintainer opening the comment reads, in this order: the verdict with its headline, the
question, one sentence on why, the deciding ratio with its interval, acceptance, and what
this runner could not answer (with a link to the runner's page in the docs). Everything
else sits below in collapsed sections; see `templates/report.md.j2`.
"""

from __future__ import annotations

from dataclasses import dataclass

from triagebot.analyze.findings_models import ComparisonFinding, Findings
from triagebot.model import Plan
from triagebot.report import markdown as md

# The plan's note on what a cpu runner cannot answer starts with these words: the first
# screen shows it (without them), and the notes below leave it out.
CANNOT_NOTE = "what it cannot answer: "


@dataclass(frozen=True)
class RunnerPage:
    """A runner's page in the docs site: its title and where it lies under the site."""

    runner: str
    title: str
    path: str  # as MkDocs serves it: `runners/gpu/`, plus an anchor where one applies


def runner_page(plan: Plan) -> RunnerPage:
    """The docs page that says what the runner this plan ran on can and cannot answer."""
    if plan.gpu_kind != "cpu":
        return RunnerPage(f"{plan.gpu_kind} GPU", "GPU runners", "runners/gpu/")
    if plan.engine == "vllm-mlx":
        return RunnerPage("cpu", "The cpu runner: vllm-mlx on MLX's CPU build",
                          "runners/cpu-vllm-mlx/")
    if plan.engine == "vllm":
        return RunnerPage("cpu", "The cpu runner: vLLM's CPU build", "runners/cpu-vllm/")
    return RunnerPage("cpu", "Every engine on a CPU",
                      "runners/cpu-vllm/#every-engine-on-a-cpu")


def page_link(page: RunnerPage, docs_url: str) -> str:
    """Markdown naming the runner's page: a link where the deployment publishes its docs,
    else the page's title in triagebot's docs (never a file of ours)."""
    if not docs_url:
        return f"“{md.inline(page.title, 120)}” in triagebot's docs"
    url = f"{docs_url.rstrip('/')}/{page.path}"
    return f"[{md.inline(page.title, 120)}](<{url.replace('>', '%3E').replace(' ', '%20')}>)"


def key_comparison(findings: Findings) -> ComparisonFinding | None:
    """The main comparison the verdict rests on (the headline leads with it)."""
    main = [c for c in findings.comparisons if c.main and c.kind == "ratio"]
    return next((c for c in main if c.name == findings.key_comparison),
                main[0] if main else None)


def _no_ratio(findings: Findings, comp: ComparisonFinding) -> str:
    """Why a comparison has no ratio: the cells it needs that have no usable runs, else
    the analysis' own reason."""
    ids = {*comp.numerator, *comp.denominator}
    failed = [f"{c.label} ({c.status})" for c in findings.cells
              if c.cell_id in ids and c.status != "ok"]
    why = f"no usable runs in {', '.join(failed)}" if failed else comp.result.reason
    return f"{md.inline(comp.name, 200)}: no ratio ({md.inline(why, 300)})"


def deciding_line(findings: Findings) -> str:
    """The deciding ratio with its interval, its verdict and the runs behind it."""
    key = key_comparison(findings)
    if key is None:
        return "no comparison ran to a ratio"
    r = key.result
    if r.ratio is None:
        return _no_ratio(findings, key)
    ci = (f" [{r.ci_low:.3f}, {r.ci_high:.3f}]" if r.ci_low is not None
          and r.ci_high is not None else "")
    return (f"{md.inline(key.name, 200)}: {r.ratio:.3f}x{ci}, {r.verdict} "
            f"({r.n_a} v {r.n_b} runs)")


def _metric_words(metric: str) -> str:
    return metric.replace("acceptance_", "acceptance ")


def acceptance_line(findings: Findings) -> str:
    """What the deciding comparison's drafting cell accepted, and the reporter's figures
    held against it."""
    key = key_comparison(findings)
    ids = [*key.numerator, *key.denominator] if key is not None else []
    by_id = {c.cell_id: c for c in findings.cells}
    spec = [by_id[i] for i in ids if i in by_id and by_id[i].acceptance is not None]
    spec = spec or [c for c in findings.cells if c.acceptance is not None and not c.replica]
    if not spec:
        return "no cell drafted tokens"
    cell = spec[0]
    acc = cell.acceptance
    assert acc is not None
    rate = "—" if acc.acceptance_rate is None else f"{acc.acceptance_rate:.1%}"
    length = "—" if acc.mean_acceptance_length is None else f"{acc.mean_acceptance_length:.2f}"
    text = (f"{md.inline(cell.label, 120)}: rate {rate}, mean length {length} "
            f"({acc.num_drafts} drafts over {cell.throughput.n} runs)")
    checks = findings.against_report.acceptance if findings.against_report else []
    said = [f"{_metric_words(a.metric)} {a.reported:.2f} "
            + {True: "agrees", False: "differs", None: "could not be checked"}[a.agrees]
            for a in checks if a.cell_id == cell.cell_id]
    return text + (f"; the report's {' and '.join(said)}" if said else "")


def unanswered_lines(plan: Plan, findings: Findings, docs_url: str) -> list[str]:
    """What this runner could not answer: the runner's own limits, the axes it could not
    vary, and comparisons still undecided when the runs ran out."""
    out = [md.inline(n.removeprefix(CANNOT_NOTE), 600) for n in findings.notes
           if n.startswith(CANNOT_NOTE)]
    out += [md.inline(f"{n.axis} ({', '.join(n.levels)}): {n.why}", 400)
            for n in plan.not_compared]
    out += [_no_ratio(findings, c) for c in findings.comparisons
            if c.main and c.kind == "ratio" and c.result.ratio is None
            and c.name not in findings.needs_more_runs]
    pairs = {c.name for c in findings.comparisons if c.kind == "noise"}
    out += [md.inline(f"{name}: undecided; {n} more runs per arm "
                      + ("would show whether the pair agrees" if name in pairs
                         else "would reach the next look"), 300)
            for name, n in findings.needs_more_runs.items()]
    page = runner_page(plan)
    where = f"what the {md.inline(page.runner, 60)} runner can answer: {page_link(page, docs_url)}"
    if not out:
        return [f"nothing the plan asked was left open here; {where}"]
    return [*out, where[:1].upper() + where[1:]]

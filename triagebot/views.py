"""Rich renderings of the pipeline's objects for the terminal."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from triagebot.model import ReproRequest

# The fields a maintainer reads first, in the order they decide a reproduction.
SUMMARY_FIELDS = (
    "in_scope", "is_spec_decode_perf_report", "symptom", "engine", "engine_version",
    "engine_commit", "models", "draft_models", "spec_method", "num_speculative_tokens",
    "modes_compared", "tensor_parallel_size", "data_parallel_size", "expert_parallel", "gpu",
    "gpu_count", "temperature", "max_tokens", "concurrency", "modality", "cudagraph_mode",
    "enforce_eager", "model_runner", "attention_backend", "speculative_config",
    "compilation_config",
)


def _fmt(value: Any) -> str:
    if value is None or value == [] or value == {}:
        return "—"
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    return str(value)


def render_request(console: Console, req: ReproRequest) -> None:
    title = req.source.title or "(untitled report)"
    console.print(Text(title, style="bold"))
    table = Table(show_lines=False, expand=True)
    table.add_column("field", style="cyan", no_wrap=True)
    table.add_column("value", overflow="fold")
    table.add_column("evidence", style="dim", overflow="fold")
    for name in SUMMARY_FIELDS:
        value = getattr(req, name)
        ev = req.evidence.get(name, [])
        where = "; ".join(
            f"{'title' if e.line == 0 else f'L{e.line}'}: {e.text[:90]}" for e in ev[:2])
        style = "yellow" if name in req.missing else None
        table.add_row(name, Text(_fmt(value), style=style or ""), where)
    console.print(table)

    if req.reported:
        numbers = Table(title="Numbers the reporter saw", expand=True)
        for col in ("arm", "metric", "value", "line"):
            numbers.add_column(col)
        for n in req.reported[:30]:
            numbers.add_row(n.arm or "—", n.metric, f"{n.value:g} {n.unit}".strip(),
                            str(n.evidence.line))
        console.print(numbers)
    if req.arms:
        arms = Table(title="Runs in the report", expand=True)
        for col in ("arm", "spec", "method", "k", "eager", "cudagraph_mode"):
            arms.add_column(col)
        for arm in req.arms:
            arms.add_row(arm.name, _fmt(arm.spec), _fmt(arm.spec_method),
                         _fmt(arm.num_speculative_tokens), _fmt(arm.enforce_eager),
                         _fmt(arm.cudagraph_mode))
        console.print(arms)

    c = req.classification
    for label, reasons in (("in scope because", c.in_scope_reasons),
                           ("out of scope because", c.out_of_scope_reasons),
                           ("symptom because", c.symptom_reasons)):
        if reasons:
            console.print(f"[bold]{label}:[/bold] " + "; ".join(reasons))
    if req.missing:
        console.print("[yellow bold]missing for a reproduction:[/yellow bold] "
                      + ", ".join(req.missing))
    elif req.in_scope:
        console.print("[green]nothing missing for a reproduction[/green]")
    for warning in req.warnings:
        console.print(f"[red]warning:[/red] {warning}")

"""Rich renderings of the pipeline's objects for the terminal."""

from __future__ import annotations

import threading
import time
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from triagebot.plan_model import Plan
from triagebot.progress import Event, describe
from triagebot.request_model import ReproRequest

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


def render_plan(console: Console, plan: Plan) -> None:
    """The plan as a maintainer checks it: what runs, what is compared, what was assumed."""
    where = f"{plan.engine} {plan.engine_version or '(installed)'}"
    console.print(f"[bold]Plan {plan.plan_hash}[/bold] — {where} on {plan.gpu_kind}")
    console.print(Text(plan.question))
    if plan.stands_in_for:
        console.print(Text(f"stands in for {plan.stands_in_for}", style="dim"))

    axes = list(dict.fromkeys(k for c in plan.cells for k in c.varies))
    cells = Table(title="Cells", show_lines=False)
    cells.add_column("cell")
    cells.add_column("label")
    for axis in axes:
        cells.add_column(axis)
    cells.add_column("model")
    cells.add_column("template")
    for c in plan.cells:
        row = [c.cell_id, c.label, *(c.varies.get(a, "") for a in axes), c.model, c.template]
        cells.add_row(*(Text(str(v)) for v in row))
    console.print(cells)

    comps = Table(title="Comparisons")
    comps.add_column("name")
    comps.add_column("kind")
    comps.add_column("numerator / denominator")
    for comp in plan.comparisons:
        parts = " / ".join(comp.of) if comp.kind == "interaction" else (
            f"{', '.join(comp.numerator)} / {', '.join(comp.denominator)}")
        comps.add_row(Text(comp.name), comp.kind, Text(parts))
    console.print(comps)

    b = plan.budget
    console.print(f"[cyan]budget:[/cyan] {b.warmups} warm-up + {b.runs} runs per cell "
                  f"(up to {b.max_runs} when a verdict is UNKNOWN), {len(plan.cells)}/"
                  f"{b.max_cells} cells, about {plan.estimated_seconds / 60:.1f} of "
                  f"{b.time_limit_s / 60:.0f} min")
    if plan.defaults:
        table = Table(title="Defaults used (the report did not say)")
        table.add_column("field")
        table.add_column("value")
        table.add_column("why")
        for d in plan.defaults:
            table.add_row(d.field, Text(d.value), Text(d.reason))
        console.print(table)
    for note in plan.notes:
        console.print(Text(f"note: {note}", style="yellow"))


class ProgressView:
    """Live progress of a long command on stderr, from `triagebot.progress` events: a
    Rich progress bar on a terminal; one plain line per step elsewhere (CI, a worker's
    log, `./dev demo` piped to a file), where a redrawn bar would print nothing until
    the end. Engine output stays in the per-cell log files. A step that lasts (an engine
    start, an install) is repeated every `heartbeat_s` with its time so far and the time
    left counted down, so a log never goes quiet for minutes."""

    def __init__(self, console: Console, plan: Plan | None = None, *,
                 heartbeat_s: float = 30.0) -> None:
        self._console = console
        self._tty = console.is_terminal
        self._last = ""
        self._started = time.monotonic()
        self._progress: Any = None
        self._event: Event | None = None
        self._since = self._started
        self._lock = threading.Lock()
        self._quit = threading.Event()
        self._heartbeat_s = heartbeat_s
        self._beat: threading.Thread | None = None
        if self._tty:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
            )

            self._progress = Progress(
                TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                TextColumn("runs"), TimeElapsedColumn(), console=console, transient=False)
            total = plan.budget.runs * len(plan.cells) if plan is not None else 1
            self._task = self._progress.add_task("starting", total=total)

    def __enter__(self) -> ProgressView:
        if self._progress is not None:
            self._progress.start()
        elif self._heartbeat_s > 0:
            self._beat = threading.Thread(target=self._beats, daemon=True, name="progress")
            self._beat.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._quit.set()
        if self._beat is not None:
            self._beat.join(timeout=1.0)
        if self._progress is not None:
            self._progress.stop()

    def _beats(self) -> None:
        while not self._quit.wait(self._heartbeat_s):
            with self._lock:
                event, since = self._event, time.monotonic() - self._since
                if event is None or since < 0.9 * self._heartbeat_s:
                    continue
                eta = None if event.eta_s is None else max(0.0, event.eta_s - since)
                line = describe(event.model_copy(update={"eta_s": eta}))
                self._print(f"{line} · {since:.0f} s in this step")

    def say(self, message: str) -> None:
        """A message that is not an Event (a stand-in's build, a bisect step)."""
        self.update(Event(kind="provision", message=message))

    def update(self, event: Event) -> None:
        line = describe(event)
        if event.kind == "done" and event.status not in (None, "ok"):
            self._console.print(Text(f"cell {event.label} ended {event.status}",
                                     style="yellow"))
        if self._progress is None:
            with self._lock:
                if line != self._last:
                    self._print(line)
                    self._last = line
                    self._event, self._since = event, time.monotonic()
            return
        if event.runs_planned:
            self._progress.update(self._task, description=line, completed=event.runs_done,
                                  total=max(event.runs_planned, 1))
        else:
            self._progress.update(self._task, description=line)

    def _print(self, line: str) -> None:
        stamp = time.monotonic() - self._started
        self._console.print(Text(f"[{stamp:6.0f} s] {line}"), soft_wrap=True)

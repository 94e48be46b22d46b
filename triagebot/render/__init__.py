"""Cell -> script text. Pure apart from the `bash -n` check of the plan's runner script.

Templates live in `repro_templates/<engine>/<workload>.py.j2`. Each renders one
self-contained Python script that runs warm-ups and measured runs for one cell and
writes a RunResult (`triagebot/model.py`) to `$TRIAGEBOT_RESULT`.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import jinja2

from triagebot.engines import adapter
from triagebot.frozen import Frozen
from triagebot.plan_model import Cell, Plan
from triagebot.render.check import RenderError, check_python, check_shell
from triagebot.render.filters import FILTERS, UnsafeValue, finalize
from triagebot.run_result import SCHEMA_VERSION
from triagebot.templating import strict_environment

__all__ = ["RenderError", "RenderedScript", "render_cell", "render_plan", "template_root"]


class RenderedScript(Frozen):
    cell_id: str | None
    filename: str
    language: str
    text: str


def template_root() -> Path:
    """The source tree's `repro_templates/`, or the copy packaged inside `triagebot/`."""
    here = Path(__file__).resolve().parent.parent
    for candidate in (here / "repro_templates", here.parent / "repro_templates"):
        if candidate.is_dir():
            return candidate
    raise RenderError("repro_templates/ is missing from this installation")


@cache
def environment() -> jinja2.Environment:
    env = strict_environment(jinja2.FileSystemLoader(str(template_root())), finalize)
    env.filters.update(FILTERS)
    return env


def script_name(cell: Cell) -> str:
    return f"{cell.cell_id}.py"


def render_cell(plan: Plan, cell: Cell) -> RenderedScript:
    # Re-validate: a Cell built or edited anywhere else still meets every allowlist here.
    cell = Cell.model_validate(cell.model_dump())
    engine = adapter(cell.engine)
    name = script_name(cell)
    try:
        text = environment().get_template(cell.template).render(
            cell=cell,
            args=cell.engine_args,
            ctx=engine.template_context(cell),
            budget=plan.budget,
            plan_hash=plan.plan_hash,
            schema_version=SCHEMA_VERSION,
        )
    except (UnsafeValue, jinja2.TemplateError) as exc:
        raise RenderError(f"{name}: {exc}") from None
    check_python(text, name)
    return RenderedScript(cell_id=cell.cell_id, filename=name, language="python", text=text)


def render_runner(plan: Plan, scripts: list[RenderedScript]) -> RenderedScript:
    """`run_all.sh`: every cell in plan order, each writing `results/<cell>.json`."""
    text = environment().get_template("_common/run_all.sh.j2").render(
        plan=plan, scripts=[s for s in scripts if s.cell_id]
    )
    check_shell(text, "run_all.sh")
    return RenderedScript(cell_id=None, filename="run_all.sh", language="bash", text=text)


def render_plan(plan: Plan, cell_ids: list[str] | None = None) -> list[RenderedScript]:
    cells = [c for c in plan.cells if cell_ids is None or c.cell_id in cell_ids]
    if cell_ids is not None:
        unknown = sorted(set(cell_ids) - {c.cell_id for c in cells})
        if unknown:
            raise RenderError(f"no cell {', '.join(unknown)} in this plan; cells: "
                              f"{', '.join(c.cell_id for c in plan.cells)}")
    scripts = [render_cell(plan, c) for c in cells]
    return [*scripts, render_runner(plan, scripts)]

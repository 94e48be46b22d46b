"""The parser reads as a pipeline: one subpackage a stage, each reached through its public
names, and imports that point from a stage to the stages before it.

No module of `triagebot.parse` imports an underscore name from another one, a stage imports
another stage only through that stage's package (`triagebot.parse.commands`, never
`triagebot.parse.commands.words`), and the stages' dependencies form the order below.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PARSE = Path(__file__).resolve().parents[2] / "triagebot" / "parse"

# Each stage and the stages it may import (besides itself).
STAGES: dict[str, set[str]] = {
    "common": set(),
    "document": {"common"},
    "commands": {"common", "document"},
    "python": {"common", "document"},
    "envdump": {"common", "document"},
    "results": {"common", "document"},
    "prose": {"common", "document"},
    "runs": {"common", "commands", "python"},
    "decide": {"common", "document", "envdump", "prose", "results", "runs"},
}


def _stage(module: str) -> str | None:
    """`triagebot.parse.commands.words` -> `commands`; the package itself -> None."""
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[:2] == ["triagebot", "parse"] else None


def violations(module: str, source: str) -> list[str]:
    """What the module named `module` (its source given) does against the rules above."""
    here = _stage(module)
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module:
            targets = [(node.module, [a.name for a in node.names])]
        elif isinstance(node, ast.Import):
            targets = [(a.name, []) for a in node.names]
        else:
            continue
        for target, names in targets:
            if target != "triagebot.parse" and not target.startswith("triagebot.parse."):
                continue
            private = [n for n in names if n.startswith("_") and n != "__all__"]
            if private:
                found.append(f"{module} imports private {private} from {target}")
            there = _stage(target)
            if target == "triagebot.parse" and names:
                inner = [n for n in names if n not in STAGES]
                if here is not None and inner:
                    found.append(f"{module} imports {inner} from the pipeline's entry point")
                there_all = [n for n in names if n in STAGES]
                for stage in there_all:
                    if here is not None and stage != here and stage not in STAGES[here]:
                        found.append(f"{module} ({here}) may not import the {stage} stage")
                continue
            if there is None or there == here:
                continue
            if here is not None and there not in STAGES[here]:
                found.append(f"{module} ({here}) may not import the {there} stage")
            if target.count(".") > 2:
                found.append(f"{module} reaches into {target}: import from "
                             f"triagebot.parse.{there} instead")
    return found


def _modules() -> list[tuple[str, Path]]:
    out = []
    for path in sorted(PARSE.rglob("*.py")):
        rel = path.relative_to(PARSE.parent.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts.pop()
        out.append((".".join(parts), path))
    return out


@pytest.mark.parametrize(("module", "path"), _modules(), ids=[m for m, _ in _modules()])
def test_module_keeps_to_the_pipeline(module: str, path: Path) -> None:
    assert violations(module, path.read_text(encoding="utf-8")) == []


def test_every_module_sits_in_a_stage() -> None:
    loose = [p.name for p in PARSE.glob("*.py") if p.name != "__init__.py"]
    assert loose == [], "modules beside the stages: " + ", ".join(loose)
    stages = {p.name for p in PARSE.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert stages == set(STAGES)
    for stage in STAGES:
        init = (PARSE / stage / "__init__.py").read_text(encoding="utf-8")
        assert "__all__" in init, f"{stage} does not say what it offers"


@pytest.mark.parametrize(("source", "complaint"), [
    ("from triagebot.parse.commands.words import _tokenize", "private"),
    ("from triagebot.parse.commands.words import tokenize", "reaches into"),
    ("from triagebot.parse.decide import resolve", "may not import the decide stage"),
    ("import triagebot.parse.runs.config", "may not import the runs stage"),
])
def test_the_rules_catch_a_breach(source: str, complaint: str) -> None:
    # The same check on a module that breaks a rule must complain, or the test above
    # proves nothing.
    found = violations("triagebot.parse.results.cells", source)
    assert any(complaint in f for f in found), found

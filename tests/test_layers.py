"""The pure core and the bot's pure modules import no edge library.

Each is imported in a fresh interpreter, one after another, and any of redis, celery,
fastapi, github (PyGithub) or httpx that shows up in `sys.modules` is charged to the
module whose import brought it in.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

EDGE_LIBRARIES = ("redis", "celery", "fastapi", "github", "httpx")

PURE = (
    "triagebot.model",
    "triagebot.frozen",
    "triagebot.errors",
    "triagebot.overrides",
    "triagebot.parse",
    "triagebot.plan",
    "triagebot.render",
    "triagebot.run",
    "triagebot.analyze",
    "triagebot.report",
    "triagebot.engines",
    "triagebot.commands",
    "triagebot.decisions",
    "triagebot.repo_config",
    "triagebot.links",
    "triagebot.jobs.record",
    "triagebot.github.events",
    "triagebot.github.models",
    "triagebot.workers.task_queues",
)

_PROBE = """
import importlib, json, sys
edges = {edges!r}
charged = {{}}
for name in {modules!r}:
    before = {{e for e in edges if e in sys.modules}}
    importlib.import_module(name)
    new = sorted(e for e in edges if e in sys.modules and e not in before)
    if new:
        charged[name] = new
print(json.dumps(charged))
"""


def test_pure_modules_load_no_edge_library() -> None:
    probe = _PROBE.format(edges=EDGE_LIBRARIES, modules=PURE)
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {}


def test_the_probe_sees_an_edge_import() -> None:
    # The same probe on an edge module must charge it, or the test above proves nothing.
    probe = _PROBE.format(edges=EDGE_LIBRARIES, modules=("triagebot.jobs.store",))
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"triagebot.jobs.store": ["redis"]}


def test_no_module_or_class_outgrows_a_room() -> None:
    # Issue 18's limits: a module over 500 lines or a class over 200 is a sign that it
    # holds more than one job.
    root = Path(__file__).resolve().parents[1] / "triagebot"
    big: list[str] = []
    for path in sorted(root.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if text.count("\n") > 500:
            big.append(f"{path.relative_to(root)}: {text.count(chr(10))} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ClassDef) and node.end_lineno is not None:
                size = node.end_lineno - node.lineno + 1
                if size > 200:
                    big.append(f"{path.relative_to(root)}::{node.name}: {size} lines")
    assert not big, big

"""Report text → ReproRequest. Pure: reads text, never runs or fetches anything."""

from __future__ import annotations

from triagebot.model import ReproRequest
from triagebot.parse import cmdline, document, envdump, pycode, results, runs
from triagebot.parse.assemble import Assembler, resolve

__all__ = ["parse_report"]


def parse_report(data: str | bytes, title: str | None = None,
                 repo: str | None = None) -> ReproRequest:
    """Read an issue or PR (markdown body or scraped page) into a ReproRequest.

    Never raises on content: empty, binary, huge or hostile text yields a valid request
    whose fields are null and whose `warnings` say what was wrong with the input.
    """
    doc = document.build(data, title)
    lines = doc.body_lines
    a = Assembler(doc, repo)
    a.runs = runs.from_invocations(cmdline.find_invocations(lines), lines)
    py_runs, a.sampling = runs.from_python(pycode.extract_python(lines), lines)
    a.runs += py_runs
    a.env_assignments = cmdline.find_env_assignments(lines)
    dump = envdump.parse_environment(lines)
    numbers = results.find_reported_numbers(lines)
    return resolve(a, dump, numbers)

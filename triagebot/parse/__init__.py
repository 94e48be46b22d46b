"""Report text → ReproRequest. Pure: reads text, never runs or fetches anything.

The parser is a pipeline, one subpackage a stage:

    document   raw bytes → clean lines, the reporter's own post marked
    commands   shell command lines → Invocations (program, flags, environment)
    python     Python snippets → calls and assignments (read with ast, never run)
    envdump    collect_env / check_env / pip lists → Environment
    results    benchmark output, logs and tables → ReportedNumbers
    prose      sentences and titles → Facts ("TP=4", "vLLM 0.17.1", "8x H200")
    runs       Invocations and calls → RunConfigs in one vocabulary of settings
    decide     all of the above → each field of the ReproRequest, with its evidence

`common` holds what every stage shares (canonical spellings, the settings vocabulary,
the `Fact` an extractor hands on). Stages import each other only through their
packages' public names.
"""

from __future__ import annotations

from triagebot.parse import commands, document, envdump, python, results, runs
from triagebot.parse.decide import Assembler, resolve
from triagebot.request_model import ReproRequest

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
    scanned = commands.read_commands(lines, doc.layout)
    a.runs = runs.from_invocations(scanned.invocations, lines)
    py_runs, a.sampling = runs.from_python(python.extract_python(lines, doc.layout), lines)
    a.runs += py_runs
    a.env_assignments = scanned.env
    dump = envdump.parse_environment(lines)
    numbers = results.find_reported_numbers(lines, doc.layout)
    return resolve(a, dump, numbers)

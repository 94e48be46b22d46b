"""Mutations of the labelled dev reports must not turn a right field wrong, nor crash.

A report reaches the parser in many wrappings: sections in another order, markdown
flattened by a scraper, a site's navigation around it, Windows line ends, tens of KB of
server log pasted into the middle. None of these changes what the reporter ran, so none
may change a field the parser got right on the clean text. The scoring rules are the
scorer's own (`../shared/tools/score_parse.py`), imported rather than restated.
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import random
import re
from functools import cache
from types import ModuleType
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import SHARED
from triagebot.parse import parse_report

# The whole module fuzzes the dev set with its own scorer.
pytestmark = pytest.mark.shared("parse-dev", "tools")
DEV = sorted((SHARED / "parse-dev").glob("*.json"))


@cache
def scorer() -> ModuleType:
    spec = importlib.util.spec_from_file_location("score_parse",
                                                  SHARED / "tools" / "score_parse.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def right_fields(labels: dict[str, Any], pred: dict[str, Any]) -> set[str]:
    """The fields the scorer would count as right (all of them on in-scope items)."""
    sp = scorer()
    right = {"in_scope"} if bool(labels.get("in_scope")) == bool(pred.get("in_scope")) else set()
    if not labels.get("in_scope"):
        return right
    for field in [*sp.SCALAR_EXACT, "engine_version", "gpu", "temperature"]:
        if sp.scalar_ok(field, labels.get(field), pred.get(field)):
            right.add(field)
    for field in sp.SETS:
        tp, n_label, n_pred = sp.set_counts(field, labels.get(field), pred.get(field))
        if tp == n_label == n_pred:
            right.add(field)
    return right


@cache
def item(index: int) -> tuple[str, str, dict[str, Any], frozenset[str]]:
    data = json.loads(DEV[index].read_text(encoding="utf-8"))
    pred = parse_report(data["text"], title=data["title"]).model_dump()
    return data["title"], data["text"], data["labels"], frozenset(
        right_fields(data["labels"], pred))


# --- mutations (each a function of the text and a seeded Random) ---------------------------

_HEADING = re.compile(r"^#{1,6}\s", re.M)


def reorder_sections(text: str, rng: random.Random) -> str:
    """Markdown sections (from one heading to the next) shuffled; fences stay whole.
    A scraped page's `# Single GPU:` lines are shell comments, not headings: left alone.
    A section whose fence the excerpt cut off is closed before it moves: left open above
    another section it would make that section code, which is not the same report."""
    if "```" not in text:
        return text
    starts = [m.start() for m in _HEADING.finditer(text) if _outside_fence(text, m.start())]
    if len(starts) < 2:
        return text
    head, bounds = text[:starts[0]], [*starts, len(text)]
    sections = [_closed(text[a:b].rstrip("\n")) + "\n\n" for a, b in itertools.pairwise(bounds)]
    rng.shuffle(sections)
    return head + "".join(sections)


def strip_markdown(text: str, rng: random.Random) -> str:
    """What a scraper leaves: no heading marks, emphasis, link syntax or details tags."""
    # A page scraped already has no markup, and its unfenced code has `# comments` and
    # `**kwargs` that are not markdown: only a fenced (markdown) report is flattened.
    if "```" not in text:
        return text
    out = []
    fenced = False
    for line in text.split("\n"):
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
            out.append(line)
            continue
        if not fenced:
            line = re.sub(r"^#{1,6}\s+", "", line)
            line = re.sub(r"\*\*([^*\n(),=]+?)\*\*", r"\1", line)
            line = re.sub(r"\[([^\]\n]*)\]\((?:[^)\n]*)\)", r"\1", line)
            line = re.sub(r"</?(?:details|summary)>", "", line)
        out.append(line)
    return "\n".join(out)


def site_chrome(text: str, rng: random.Random) -> str:
    """A code-hosting page's navigation before the report and its footer after."""
    top = ("Skip to content\nNavigation Menu\nProduct\nSolutions\nOpen Source\nPricing\n"
           "Search or jump to...\nSign in\nSign up\nNotifications\nFork 9.1k\nStar 61k\n"
           "Code\nIssues 1.9k\nPull requests 1.2k\nActions\nProjects\nSecurity\nInsights\n"
           "New issue\nOpen\n")
    bottom = ("\nAssignees\nNo one assigned\nLabels\nbug\nProjects\nNone yet\nMilestone\n"
              "No milestone\nDevelopment\nNo branches or pull requests\n3 participants\n"
              "Footer\n© 2026 Example, Inc.\nTerms\nPrivacy\nSecurity\nStatus\nDocs\n"
              "Contact\nManage cookies\nDo not share my personal information\n")
    return top + text + bottom


def crlf(text: str, rng: random.Random) -> str:
    return text.replace("\r\n", "\n").replace("\n", "\r\n")


_LOG_LINES = (
    "INFO 03-14 09:{m:02d}:{s:02d} [core.py:{n}] engine step finished, {k} requests running",
    "DEBUG 03-14 09:{m:02d}:{s:02d} [scheduler.py:{n}] waiting queue length {k}",
    "INFO 03-14 09:{m:02d}:{s:02d} [loggers.py:{n}] GPU KV cache usage: {k}.0%, prefix hit 0.0%",
    "(EngineCore pid={n}) INFO 03-14 09:{m:02d}:{s:02d} heartbeat from worker {k}",
    "INFO:     127.0.0.1:{n} - \"POST /v1/completions HTTP/1.1\" 200 OK",
)


def pasted_log(text: str, rng: random.Random) -> str:
    """About 60 KB of server log at a paragraph break outside code."""
    lines = []
    size = 0
    while size < 60_000:
        line = rng.choice(_LOG_LINES).format(m=rng.randrange(60), s=rng.randrange(60),
                                             n=rng.randrange(100, 9999), k=rng.randrange(64))
        lines.append(line)
        size += len(line) + 1
    # A markdown report gets the log fenced; a scraped page shows it as plain lines.
    fence = "```" if "```" in text else ""
    block = f"\n{fence}\n" + "\n".join(lines) + f"\n{fence}\n"
    # Into the report's middle: a scraped page's first lines are the site's header and
    # its last ones other people's comments, where no reporter pastes a log.
    breaks = [m.start() for m in re.finditer(r"\n\s*\n", text)
              if len(text) // 4 <= m.start() <= 3 * len(text) // 4
              and _outside_fence(text, m.start())]
    at = rng.choice(breaks) if breaks else len(text)
    return text[:at] + "\n" + block + text[at:]


def _closed(section: str) -> str:
    fences = re.findall(r"^\s*(?:```|~~~)", section, re.M)
    return section + "\n```" if len(fences) % 2 else section


def _outside_fence(text: str, pos: int) -> bool:
    return len(re.findall(r"^\s*(?:```|~~~)", text[:pos], re.M)) % 2 == 0


# Applied in this order: the page wraps the post as the author left it, and line ends
# change last, as a browser or an editor would.
MUTATIONS = {f.__name__: f for f in (reorder_sections, strip_markdown, pasted_log,
                                     site_chrome, crlf)}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(index=st.integers(0, len(DEV) - 1),
       names=st.lists(st.sampled_from(sorted(MUTATIONS)), min_size=1, max_size=3, unique=True),
       seed=st.integers(0, 2**32 - 1))
def test_mutations_never_turn_a_right_field_wrong(index: int, names: list[str],
                                                  seed: int) -> None:
    title, text, labels, right = item(index)
    rng = random.Random(seed)
    for name in sorted(names, key=list(MUTATIONS).index):
        text = MUTATIONS[name](text, rng)
    pred = parse_report(text, title=title).model_dump()
    lost = sorted(right - right_fields(labels, pred))
    assert not lost, {f: (labels.get(f), pred.get(f)) for f in lost}


def test_every_mutation_changes_some_report() -> None:
    rng = random.Random(7)
    for name, mutate in MUTATIONS.items():
        assert any(mutate(item(i)[1], rng) != item(i)[1] for i in range(len(DEV))), name

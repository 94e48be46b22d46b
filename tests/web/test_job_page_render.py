"""The job page as HTML: the report rendered, charts drawn, badges that match the outcome.

Issue 15, defect 8: the page showed the report as raw markdown in a <pre>, an errored job
showed a green "done", and there were no charts.
"""

from __future__ import annotations

import re
from html import escape, unescape

import httpx
import pytest
import redis

from tests.report.layout import sections
from tests.report.test_report import GOLDEN
from tests.web import job_states
from triagebot.jobs.store import JobStore
from triagebot.settings import Settings
from triagebot.web.page_markdown import report_html


@pytest.fixture
def store(settings: Settings, redis_client: redis.Redis) -> JobStore:
    return JobStore(settings, redis_client)


def test_done_job_shows_tables_badge_and_both_charts(url: str, http: httpx.Client,
                                                     store: JobStore) -> None:
    job = job_states.finished(store)
    response = http.get(f"{url}/jobs/{job.id}")
    assert response.status_code == 200
    html = response.text
    assert 'class="badge tone-good" id="verdict">reproduced<' in html
    report = html[html.index('<article class="report"'):]
    assert "<table>" in report and "<th>cell</th>" in report and "| cell |" not in report
    assert "<strong>Reproduced</strong>" in report
    assert "```" not in report and "<pre><code" in report  # scripts stay code blocks
    throughput = re.search(r'<figure id="throughput-chart">(.*?)</figure>', html, re.S)
    acceptance = re.search(r'<figure id="acceptance-chart">(.*?)</figure>', html, re.S)
    assert throughput and acceptance
    # One median dot and one CI whisker per cell, drawn on the server.
    assert throughput.group(1).count('class="median"') == job.cells
    assert throughput.group(1).count('class="ci"') == job.cells
    assert acceptance.group(1).count('class="bar"') >= 3
    assert html.count("<li class=\"step-done\">") == job.cells
    assert "<script" not in html


def test_errored_job_is_red_not_a_green_done(url: str, http: httpx.Client,
                                             store: JobStore) -> None:
    job = job_states.errored(store)
    assert job.state == "done" and job.outcome == "error"
    html = http.get(f"{url}/jobs/{job.id}").text
    assert 'class="badge tone-bad" id="verdict">error<' in html
    assert "badge tone-good" not in html
    assert html.count("<li class=\"step-failed\">") == 2  # the cells the engine refused


def test_running_job_lists_its_steps_live(url: str, http: httpx.Client,
                                          store: JobStore) -> None:
    job = job_states.running(store)
    html = http.get(f"{url}/jobs/{job.id}").text
    assert 'class="badge tone-active" id="verdict">running<' in html
    steps = re.findall(r'<li class="step-(\w+)">', html)
    assert steps[:2] == ["done", "running"]  # the first cell stored, the second under way
    assert steps.count("pending") == job.cells - 2
    assert "http-equiv=\"refresh\"" in html and "No report yet." in html


def test_failed_and_cancelled_jobs_have_their_own_colours(url: str, http: httpx.Client,
                                                          store: JobStore) -> None:
    job = job_states.running(store, trigger="comment-9")
    store.move(job.id, "failed", error="the runner lost its GPU")
    html = http.get(f"{url}/jobs/{job.id}").text
    assert 'class="badge tone-bad" id="verdict">failed<' in html
    assert 'class="error">the runner lost its GPU<' in html


def test_the_report_is_whole_on_the_page_with_each_collapsed_section_rendered() -> None:
    """The comment collapses all but its first screen; the page keeps every section, and
    the markdown inside each still renders (tables, lists, code), nothing shown raw."""
    text = (GOLDEN / "cpu_demo.md").read_text(encoding="utf-8")
    page = str(report_html(text))
    titles = sections(text)
    assert re.findall(r"<details><summary>([^<]*)</summary>", page) == [
        escape(t) for t in titles]
    assert page.count("</details>") == len(titles)
    assert "<table>" in page.split("<summary>Cells</summary>", 1)[1].split("</details>")[0]
    assert "<li>" in page.split("<summary>Method and plan notes</summary>", 1)[1]
    assert "|---" not in page and "<details>" not in unescape(re.sub(r"<[^>]+>", "", page))

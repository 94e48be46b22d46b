"""A bisect as a job of the GitHub App, on the triage side: what needs GitHub.

The runner (`triagebot.workers.runner_bisect`) holds no GitHub credentials, so the commits
below its bracket are read here and left in Redis where it waits for them, and the
finished section's candidate commits are ranked here before the report is published.
"""

from __future__ import annotations

import json

from triagebot.bisect import deeper
from triagebot.bisect.ranges import BisectError
from triagebot.bisect.render import render_section
from triagebot.bisect.runner import BisectRun, CommitPlan
from triagebot.bisect.shas import ranked_between
from triagebot.github.client import GitHubClient
from triagebot.github.errors import GitHubError
from triagebot.jobs.record import JobRecord
from triagebot.jobs.store import JobStore
from triagebot.repo_config import CONFIG_PATH
from triagebot.request_model import ReproRequest
from triagebot.workers.runner_bisect import commits_key


def answer_commits(gh: GitHubClient, job: JobRecord, store: JobStore, run_json: str,
                   template: str | None, problems: list[str]) -> None:
    """The commit level below the runner's finished bracket, or why there is none, left
    in Redis for the runner waiting on it."""
    run = BisectRun.model_validate_json(run_json)
    answer: CommitPlan | str
    if problems:
        answer = (f"no commit level: {job.repo}'s {CONFIG_PATH} cannot be used: "
                  f"{'; '.join(problems)}")
    elif run.range.level == "commit" and not run.earlier:
        answer = _sha_answer(gh, job, run, template)
    else:
        try:
            items = deeper.CompareReader(gh, job.repo).items(run) if template else []
            answer = deeper.commit_plan(run, items, job.repo, template)
        except GitHubError as exc:
            if exc.transient:
                raise
            answer = f"no commit level: GitHub refused the compare ({exc})"
    value = (answer.model_dump_json() if isinstance(answer, CommitPlan)
             else json.dumps({"none": answer}))
    store.redis.set(commits_key(store, job.id, run.range.level), value,
                    ex=store.settings.job_ttl_s)


def _sha_answer(gh: GitHubClient, job: JobRecord, run: BisectRun,
                template: str | None) -> CommitPlan | str:
    """good= or bad= is a SHA: the commits between the two ends (`run.range` holds just
    the ends), or the sentence refusing them."""
    rng = run.range
    try:
        found = deeper.CompareReader(gh, job.repo).between_ends(rng.good, rng.bad,
                                                                rng.direction)
    except GitHubError as exc:
        if exc.transient:
            raise
        return f"GitHub refused to compare the two ends ({exc})"
    except BisectError as exc:
        return str(exc)
    if not template:
        return (f"no per-commit builds: {job.repo} names no `[bisect] commit_index` in "
                f"{CONFIG_PATH}, so the commits between the two ends cannot be "
                "installed; name one there, or give releases or nightlies")
    return found.model_copy(update={"index": template})


def report_with_candidates(gh: GitHubClient, job: JobRecord, store: JobStore) -> str | None:
    """The finished bisect's section with the commits of its final bracket ranked against
    the report's subject (GitHub's compare API, through our client). None when there is
    nothing to add."""
    raw = store.runs.findings(job.id)
    if raw is None or job.bisect is None:
        return None
    run = BisectRun.model_validate(raw)
    request = store.request(job.id) or ReproRequest()
    if run.range.level == "commit" and not run.earlier:
        section = render_section(run, ranked_between(run, request))
        store.runs.save_report(job.id, run.model_dump_json(), section)
        return section
    tags = deeper.release_tags(run)
    if run.outcome is None or not run.outcome.done or tags is None:
        return None
    refused = ""
    try:
        items = deeper.CompareReader(gh, job.repo).items(run)
    except GitHubError as exc:
        if exc.transient:
            raise
        items, refused = None, str(exc)
    ranked = deeper.ranked(run, items, job.repo, request) if items else []
    if not ranked:
        note = (f"no candidates: {refused}" if refused else
                f"no candidates: {job.repo} has no comparable tags {tags[0]} and {tags[1]}"
                if items is None else "no candidates: no commit lies in the final bracket")
        run = run.model_copy(update={"notes": [*run.notes, note]})
    section = render_section(run, ranked)
    store.runs.save_report(job.id, run.model_dump_json(), section)
    return section

"""Celery task names and queue names, shared by the ingress (which only sends) and the workers."""

from __future__ import annotations

HANDLE_EVENT = "triagebot.handle_event"  # triage queue: a normalised webhook event
RUN_JOB = "triagebot.run_job"  # gpu-<kind> queue: run a job's plan
PROGRESS = "triagebot.progress"  # triage queue: edit the job's comment with progress
PUBLISH = "triagebot.publish"  # triage queue: post the final report, labels, reaction
# triage queue: read the commits below a bisect's bracket for its runner (GitHub's side)
BISECT_COMMITS = "triagebot.bisect_commits"
CANARY = "triagebot.canary"  # any queue: proves a worker consumes end to end
# triage queue, sent by Celery beat: read the release feeds, queue the watch runs
WATCH_POLL = "triagebot.watch_poll"

TRIAGE_QUEUE = "triage"

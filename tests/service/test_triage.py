"""The triage executor against the fake GitHub and a real Redis (no workers running).

What reaches the GPU queue is read straight from its Redis list, so "nothing ran" means
no message was queued at all.
"""

from __future__ import annotations

import json
from typing import Any

from tests.fakes.github_fixture import INSTALLATION_ID, REPO
from tests.service.threads import FIXTURES, bot_comments, comment_event, queued
from triagebot.github.events import normalise
from triagebot.workers import task_queues


def test_repro_acknowledges_once_and_queues_one_gpu_job(env: dict[str, Any]) -> None:
    triage, fake, settings = env["triage"], env["fake"], env["settings"]
    env["store"].counters.worker_alive("gpu-h100@runner", 60, ["gpu-h100"])
    event = comment_event(fake, "Could you check this?\n@triagebot repro k=1")
    triage.handle(event)
    triage.handle(event)  # the same comment again (another delivery id, a retried task)
    jobs = env["store"].thread_jobs(REPO, 42)
    assert len(jobs) == 1 and jobs[0].state == "queued" and jobs[0].enqueued
    assert len(queued(settings, "gpu-h100")) == 1
    comments = bot_comments(fake)
    assert len(comments) == 1
    assert comments[0].body.startswith(f"<!-- triagebot:v1 job={jobs[0].id} -->")
    assert "Queued" in comments[0].body and f"/jobs/{jobs[0].id}" in comments[0].body
    assert "should start right away" in comments[0].body
    assert event.comment is not None
    assert ("triagebot[bot]", "+1") in fake.reactions(event.comment.id)


def test_acknowledgement_names_a_kind_without_a_live_runner(env: dict[str, Any]) -> None:
    # Issue 15, defect 9: with no worker for the job's runner kind the acknowledgement
    # promised "should start right away".
    triage, fake = env["triage"], env["fake"]
    env["store"].counters.worker_alive("gpu-cpu@runner", 60, ["gpu-cpu"])  # another kind only
    triage.handle(comment_event(fake, "@triagebot repro"))
    body = bot_comments(fake)[0].body
    assert "No `h100` runner is online right now" in body
    assert "right away" not in body


def test_unauthorised_user_gets_one_polite_refusal(env: dict[str, Any]) -> None:
    triage, fake, settings = env["triage"], env["fake"], env["settings"]
    fake.set_permission(REPO, "drive-by", "read")
    for _ in range(3):
        triage.handle(comment_event(fake, "@triagebot repro", author="drive-by"))
    assert queued(settings, "gpu-h100") == [] and queued(settings, "gpu-cpu") == []
    assert env["store"].thread_jobs(REPO, 42) == []
    replies = bot_comments(fake)
    assert len(replies) == 1 and "write for `repro`" in replies[0].body
    # Issue 15, defect 9: the requester was mentioned twice in one reply.
    assert replies[0].body.count("@drive-by") == 1


def test_listed_user_may_run_and_config_errors_reach_the_invoker(env: dict[str, Any]) -> None:
    triage, fake = env["triage"], env["fake"]
    fake.set_permission(REPO, "friend", "read")
    fake.set_file(REPO, ".github/triagebot.toml", '[access]\nusers = ["friend"]\n')
    triage.handle(comment_event(fake, "@triagebot repro", author="friend"))
    assert len(env["store"].thread_jobs(REPO, 42)) == 1
    env["store"].redis.delete(env["settings"].key("repo-config", REPO))
    fake.set_file(REPO, ".github/triagebot.toml", '[access]\nuserz = ["friend"]\n')
    event = comment_event(fake, "@triagebot repro k=2", author="friend")
    triage.handle(event)
    reply = [c for c in bot_comments(fake) if f"reply={event.comment.id} " in c.body]
    assert len(reply) == 1 and "not valid" in reply[0].body and "userz" in reply[0].body
    assert len(env["store"].thread_jobs(REPO, 42)) == 1


def test_bots_and_our_own_reports_never_trigger(env: dict[str, Any]) -> None:
    triage, fake, settings = env["triage"], env["fake"], env["settings"]
    triage.handle(comment_event(fake, "@triagebot repro", author="triagebot[bot]",
                                author_type="Bot"))
    triage.handle(comment_event(fake, "@triagebot repro", author="other-ci",
                                author_type="Bot"))
    # The only comment by our login is the one planted above; nothing answered it.
    assert [c.body for c in bot_comments(fake)] == ["@triagebot repro"]
    assert queued(settings, "gpu-h100") == []
    assert fake.calls_to("POST", r".*/reactions") == []


def test_edits_run_only_new_commands(env: dict[str, Any]) -> None:
    triage, store, fake = env["triage"], env["store"], env["fake"]
    triage.handle(comment_event(fake, "@triagebot repro k=1"))
    triage.handle(comment_event(fake, "@triagebot repro k=1\n\nthanks", action="edited",
                                previous="@triagebot repro k=1"))
    assert len(store.thread_jobs(REPO, 42)) == 1
    triage.handle(comment_event(fake, "@triagebot repro k=1\n@triagebot repro k=2",
                                action="edited", previous="@triagebot repro k=1"))
    assert len(store.thread_jobs(REPO, 42)) == 2


def test_help_status_cancel_and_errors_in_one_reply(env: dict[str, Any]) -> None:
    triage, fake, store, settings = env["triage"], env["fake"], env["store"], env["settings"]
    triage.handle(comment_event(fake, "@triagebot repro"))
    job = store.thread_jobs(REPO, 42)[0]
    event = comment_event(fake, "@triagebot status\n@triagebot repro colour=blue\n"
                          "@triagebot cancel\n@triagebot help")
    triage.handle(event)
    reply = [c for c in bot_comments(fake) if f"reply={event.comment.id} " in c.body]
    assert len(reply) == 1
    body = reply[0].body
    assert job.id in body and "colour" in body and "engine" in body and "repro" in body
    # The cancel is said by the job's own comment (published below), not in the reply.
    assert "Cancelling" not in body
    assert store.require(job.id).state == "cancelled"
    # The cancelled job's comment is published by the triage queue.
    assert any(m["headers"]["task"] == task_queues.PUBLISH for m in queued(settings, "triage"))


def test_refused_plans_explain_themselves(env: dict[str, Any]) -> None:
    triage, fake, store = env["triage"], env["fake"], env["store"]
    fake.set_file(REPO, ".github/triagebot.toml", '[models]\nallow = ["Qwen/*"]\n')
    one = comment_event(fake, "@triagebot repro")
    two = comment_event(fake, "@triagebot repro gpu=b200 model=Qwen/Qwen3-8B")
    triage.handle(one)
    triage.handle(two)
    replies = {c.body.splitlines()[0]: c.body for c in bot_comments(fake)}
    first = next(b for m, b in replies.items() if f"reply={one.comment.id} " in m)
    second = next(b for m, b in replies.items() if f"reply={two.comment.id} " in m)
    assert "allowlist" in first and "zai-org/GLM-4.5-Air" in first
    assert "b200" in second and "cpu, h100" in second
    assert store.thread_jobs(REPO, 42) == []


def test_busy_thread_points_at_the_live_job(env: dict[str, Any]) -> None:
    triage, fake, store = env["triage"], env["fake"], env["store"]
    triage.handle(comment_event(fake, "@triagebot repro"))
    second = comment_event(fake, "@triagebot repro")
    triage.handle(second)
    live = store.thread_jobs(REPO, 42)
    assert len(live) == 1
    reply = next(c for c in bot_comments(fake) if f"reply={second.comment.id} " in c.body)
    assert live[0].id in reply.body and "already queued" in reply.body


def test_publish_edits_the_same_comment_and_sets_labels(env: dict[str, Any]) -> None:
    triage, fake, store = env["triage"], env["fake"], env["store"]
    fake.set_file(REPO, ".github/triagebot.toml",
                  '[labels]\nreproduced = "repro: confirmed"\n')
    event = comment_event(fake, "@triagebot repro")
    triage.handle(event)
    job = store.thread_jobs(REPO, 42)[0]
    store.move(job.id, "running")
    store.set(job.id, runs_done=3, runs_planned=10, eta_s=120.0, current="mtp k=1 @ graph")
    triage.progress(job.id)
    store.runs.save_report(job.id, "{}", "## Reproduced\n\nMTP is 0.56x under graphs.")
    store.move(job.id, "done", outcome="reproduced")
    triage.publish(job.id)
    triage.publish(job.id)
    triage.progress(job.id)  # late progress after the report changes nothing
    ours = bot_comments(fake)
    assert len(ours) == 1 and "Reproduced" in ours[0].body and "Running" not in ours[0].body
    assert len(fake.calls_to("POST", r"/repos/acme/engine/issues/42/comments")) == 1
    assert len(fake.calls_to("PATCH", r"/repos/acme/engine/issues/comments/\d+")) == 2
    assert fake.labels(REPO, 42) == ["repro: confirmed"]
    assert ("triagebot[bot]", "rocket") in fake.reactions(event.comment.id)


def test_deleted_report_comment_is_recreated_once(env: dict[str, Any]) -> None:
    triage, fake, store = env["triage"], env["fake"], env["store"]
    triage.handle(comment_event(fake, "@triagebot repro"))
    job = store.thread_jobs(REPO, 42)[0]
    fake.delete_comment(bot_comments(fake)[0].id)
    store.move(job.id, "running")
    store.move(job.id, "failed", error="the runner lost its GPU")
    triage.publish(job.id)
    ours = bot_comments(fake)
    assert len(ours) == 1 and "could not finish" in ours[0].body


def test_auto_triage_on_a_configured_label(env: dict[str, Any]) -> None:
    triage, fake, store, settings = env["triage"], env["fake"], env["store"], env["settings"]
    fake.set_file(REPO, ".github/triagebot.toml",
                  '[triage]\nlabels = ["spec-decode"]\nrun = true\n')
    payload = json.loads((FIXTURES / "issues.labeled.json").read_text())
    payload["issue"]["number"] = 42
    payload["repository"]["full_name"] = REPO
    payload["installation"] = {"id": INSTALLATION_ID}
    payload["label"]["name"] = "spec-decode"
    payload["sender"]["login"] = "maint"
    event = normalise("issues", payload, "d-label")
    assert event is not None
    triage.handle(event)
    summary = [c for c in bot_comments(fake) if "triage=42" in c.body]
    assert len(summary) == 1 and "GLM-4.5-Air" in summary[0].body
    assert len(store.thread_jobs(REPO, 42)) == 1
    assert len(queued(settings, "gpu-h100")) == 1


def test_error_outcome_is_not_celebrated(env: dict[str, Any]) -> None:
    # Issue 15, defect 9: a job that ran but whose every cell failed (outcome `error`)
    # still got a 🚀 on the requesting comment.
    triage, fake, store = env["triage"], env["fake"], env["store"]
    fake.set_file(REPO, ".github/triagebot.toml", '[labels]\nerror = "repro: error"\n')
    event = comment_event(fake, "@triagebot repro")
    triage.handle(event)
    job = store.thread_jobs(REPO, 42)[0]
    store.move(job.id, "running")
    store.runs.save_report(job.id, "{}", "## Error\n\nEvery cell failed.")
    store.move(job.id, "done", outcome="error")
    triage.publish(job.id)
    reactions = fake.reactions(event.comment.id)
    assert ("triagebot[bot]", "rocket") not in reactions
    assert ("triagebot[bot]", "confused") in reactions
    assert fake.labels(REPO, 42) == ["repro: error"]


def test_a_comment_given_up_on_still_gets_a_last_word(env: dict[str, Any]) -> None:
    # What the task says once its retries are spent: one reply and a confused reaction.
    triage, fake = env["triage"], env["fake"]
    event = comment_event(fake, "@triagebot repro")
    triage.report_failure(event, "GitHub kept refusing (403)")
    triage.report_failure(event, "GitHub kept refusing (403)")  # a second copy adds nothing
    (reply,) = [c for c in bot_comments(fake) if f"reply={event.comment.id} " in c.body]
    assert "could not handle this comment" in reply.body and "403" in reply.body
    assert ("triagebot[bot]", "confused") in fake.reactions(event.comment.id)

"""`repro`, and auto-triage's run: plan the thread's report and decide whether it may start.

Every refusal here is a reply that says why (a plan the policy refuses, a model off the
allowlist, a runner kind this deployment lacks, today's GPU budget); otherwise the job
to create, whose id is an HMAC of where it came from and what it asks.
"""

from __future__ import annotations

from triagebot.commands import Command
from triagebot.decisions import replies as words
from triagebot.decisions import rules
from triagebot.decisions.actions import Action, Refuse, Reply, StartJob
from triagebot.decisions.facts import Facts
from triagebot.errors import PlanRejected
from triagebot.jobs.record import JobRecord, job_id
from triagebot.overrides import ReproOptions
from triagebot.parse import parse_report
from triagebot.plan import build_plan
from triagebot.repo_config import CONFIG_PATH, merge_options


def decide(command: Command, facts: Facts) -> list[Action]:
    if not facts.may_run:
        return [Refuse(words.refusal(facts.command_name))]
    comment = facts.event.comment
    assert comment is not None, "a command always comes from a comment"
    return start(facts, f"comment-{comment.id}", command.text,
                 command.options or ReproOptions())


def start(facts: Facts, trigger: str, command: str, options: ReproOptions) -> list[Action]:
    """The job for `options` on the thread as it is now, or a reply saying why not."""
    thread, config, event = facts.thread, facts.config, facts.event
    assert thread is not None, "the executor reads the thread before a repro is decided"
    merged = merge_options(config.default_options(), options)
    request = parse_report(thread.body.encode(), title=thread.title, repo=event.repo)
    notes = []
    try:
        plan = build_plan(request, merged, budget=config.budget(), policy=config.policy())
        if plan.gpu_kind not in facts.gpu_kinds and options.gpu is None:
            # Only a kind the command names is refused; the report's (or the repo
            # config's) falls back to a runner this deployment has, and says so.
            notes.append(_other_kind_note(plan.gpu_kind, facts, from_config=bool(merged.gpu),
                                          reported=request.gpu))
            merged = merged.model_copy(update={"gpu": facts.fallback_gpu})
            plan = build_plan(request, merged, budget=config.budget(),
                              policy=config.policy())
    except PlanRejected as exc:
        return [Reply(words.plan_refused(str(exc)))]
    refused = rules.models_not_allowed(plan, config)
    if refused:
        return [Reply(words.plan_refused(
            f"{', '.join(refused)} is not on this repository's model allowlist "
            f"(`[models] allow` in {CONFIG_PATH})"))]
    if plan.gpu_kind not in facts.gpu_kinds:
        return [Reply(words.plan_refused(
            f"no runner here serves GPU kind {plan.gpu_kind!r}; available: "
            f"{', '.join(facts.gpu_kinds)} (choose one with `gpu=`)"))]
    allowed = config.budget_section.gpu_minutes_per_day * 60
    if facts.gpu_seconds_used + plan.estimated_seconds > allowed:
        return [Reply(words.plan_refused(
            f"today's GPU budget for this repository is {allowed / 60:.0f} min; "
            f"{facts.gpu_seconds_used / 60:.0f} min are used and this plan needs about "
            f"{plan.estimated_seconds / 60:.0f} min"))]
    if thread.is_pr and merged.version is None:
        notes.append("PR head commits have no prebuilt wheel; this runs "
                     f"{plan.engine} {plan.engine_version or 'latest'}. Name other "
                     "releases with version=.")
    record = JobRecord(
        id=job_id(facts.id_key, event.repo, event.number, trigger, command), repo=event.repo,
        private=event.private, number=event.number, installation_id=event.installation_id,
        is_pr=thread.is_pr, title=thread.title[:300], trigger=trigger,
        requester=event.sender.login, command=command, plan_hash=plan.plan_hash,
        gpu_kind=plan.gpu_kind, cells=len(plan.cells), estimated_s=plan.estimated_seconds,
        margin=config.margin(), negligible=config.negligible())
    return [StartJob(record, plan, request, tuple(notes))]


def _other_kind_note(kind: str, facts: Facts, *, from_config: bool,
                     reported: str | None) -> str:
    chosen = facts.fallback_gpu
    if from_config:
        whose = f"the repo config's `[defaults] gpu = {kind}`"
    elif reported:
        whose = f"the reporter's {reported} (`{kind}`)"
    else:
        whose = f"`{kind}`"
    return (f"No runner here serves {whose}, so this runs on `{chosen}`, this deployment's "
            f"default runner: its numbers can differ from the reporter's. Ask for another "
            f"kind with `gpu=` (available: {', '.join(facts.gpu_kinds)}).")

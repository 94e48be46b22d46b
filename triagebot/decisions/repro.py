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
from triagebot.plan.defaults import GPU_KIND, gpu_kind
from triagebot.plan_model import Plan
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
        kind, note = _runner_kind(plan, options, merged, request.gpu, facts)
        notes += [note] if note else []
        if kind != plan.gpu_kind:
            merged = merged.model_copy(update={"gpu": kind})
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


def _runner_kind(plan: Plan, options: ReproOptions, merged: ReproOptions,
                 reported: str | None, facts: Facts) -> tuple[str, str | None]:
    """The runner kind a job runs on, and a note when it is not the one the report used.

    The order: the command's `gpu=` (refused later when not served), then the repo
    config's `[defaults] gpu`, then this deployment's default. The report's own GPU is a
    preference only: taken when a runner here serves it, else noted. An engine that runs
    on one kind only (the reference engine on `cpu`) keeps it when it is served.
    """
    planned, engine = plan.gpu_kind, plan.engine
    if options.gpu is not None:
        return planned, None
    chosen = facts.fallback_gpu
    if merged.gpu is not None:
        if planned in facts.gpu_kinds:
            return planned, None
        return chosen, _other_kind_note(f"the repo config's `[defaults] gpu = {planned}`",
                                        facts)
    from_report = gpu_kind(reported)
    if from_report is not None and from_report == planned:
        if planned in facts.gpu_kinds:
            return planned, None
        return chosen, _other_kind_note(f"the reporter's {reported} (`{planned}`)", facts)
    if planned != GPU_KIND:  # the engine's own kind, not the planner's general default
        if planned in facts.gpu_kinds:
            return planned, None
        return chosen, _other_kind_note(f"`{planned}`, the kind `{engine}` runs on", facts)
    # The planner's general default: the report names no GPU, or one we know no kind of.
    return chosen, _other_kind_note(f"the reporter's {reported}", facts) if reported else None


def _other_kind_note(whose: str, facts: Facts) -> str:
    return (f"No runner here serves {whose}, so this runs on `{facts.fallback_gpu}`, this "
            f"deployment's default runner: its numbers can differ from the reporter's. Ask "
            f"for another kind with `gpu=` (available: {', '.join(facts.gpu_kinds)}).")

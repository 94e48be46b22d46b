"""`bisect`: the same checks as `repro` (permission, plan, allowlist, runner kind, budget),
then a job that carries its range and predicate.

good and bad come from the command, else from the thread's own words ("fine on 0.16,
slower on 0.17.1"), and the acknowledgement says which. The releases between them are
listed by the executor before the job is created (it may reach the package index;
deciding may not), so an end the index does not hold is answered at once, with the
nearest releases it does hold.
"""

from __future__ import annotations

from triagebot.bisect import hints, predicate
from triagebot.bisect.endpoints import classify, start_level
from triagebot.bisect.ranges import BisectError, version_key
from triagebot.bisect.spec import BisectSpec
from triagebot.commands import Command
from triagebot.commands.bisect import BisectWordsError, parse_words
from triagebot.decisions import replies as words
from triagebot.decisions import repro
from triagebot.decisions.actions import Action, Refuse, Reply, StartJob
from triagebot.decisions.facts import Facts


def decide(command: Command, facts: Facts) -> list[Action]:
    if not facts.may_run:
        return [Refuse(words.refusal(facts.command_name, "bisect"))]
    comment, thread = facts.event.comment, facts.thread
    assert comment is not None, "a command always comes from a comment"
    assert thread is not None, "the executor reads the thread before a bisect is decided"
    try:
        args = parse_words(command.words)
        text = f"{thread.title}\n\n{thread.body}"
        good, bad, notes = hints.choose(args.good, args.bad, text)
        start_level(good, bad, args.direction)
    except (BisectWordsError, BisectError) as exc:
        return [Reply(words.plan_refused(f"bisect: {exc}"))]
    # The plan the checks run on is the newer version's; a SHA has none, so a pair of
    # SHAs is checked with the newest release's (as each commit step is planned).
    versions = [p for p in (good, bad) if classify(p) != "commit"]
    newer = max(versions, key=version_key) if versions else None
    spec = BisectSpec(good=good, bad=bad, direction=args.direction,
                      overrides=list(args.overrides), notes=notes,
                      errors=predicate.reported_errors(thread.body))
    text_cmd = " ".join(["bisect", f"good={good}", f"bad={bad}",
                         *(["regress=success"] if args.direction == "success" else []),
                         *args.options.as_args()])
    actions = repro.start(facts, f"comment-{comment.id}", text_cmd,
                          args.options.model_copy(update={"version": newer}))
    out: list[Action] = []
    for action in actions:
        if isinstance(action, StartJob):
            # Every step runs on the job's own kind, also where it fell back from the
            # report's GPU to this deployment's default.
            pinned = spec if args.options.gpu else spec.model_copy(update={
                "overrides": [*spec.overrides, f"gpu={action.plan.gpu_kind}"]})
            record = action.record.model_copy(update={"bisect": pinned.model_dump_json()})
            action = StartJob(record, action.plan, action.request,
                              (*notes, *action.notes))
        out.append(action)
    return out

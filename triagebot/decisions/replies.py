"""The bot's other words on a thread: acknowledgements, progress, refusals, errors, status.

Pure functions from records to markdown. Anything that came from a user (logins aside,
which GitHub validates) goes through `inline`/`code_span`, so it can neither mention
people nor break out of the markup.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from triagebot.jobs.record import JobRecord
from triagebot.plan_model import Plan
from triagebot.report.markdown import code_span, inline
from triagebot.request_model import ReproRequest

_STATE_ICON = {"queued": "⏳", "running": "🏃", "done": "✅", "failed": "❌", "cancelled": "🚫"}
# Fields a reproduction cannot do without; the summary asks for the ones a report lacks.
_NEEDED = ("engine", "engine_version", "models", "spec_method", "modes_compared", "gpu")
_FIELD_WORDS = {
    "engine": "engine", "engine_version": "engine version", "models": "model",
    "draft_models": "draft model", "spec_method": "speculative method",
    "num_speculative_tokens": "speculative tokens (k)", "modes_compared": "modes compared",
    "gpu": "GPU", "tensor_parallel_size": "tensor parallel size", "modality": "modality",
    "symptom": "symptom", "temperature": "temperature", "max_tokens": "max tokens",
    "concurrency": "concurrency",
}
# The `key=value` override a maintainer writes to correct each field (triagebot.overrides).
_OVERRIDE_KEYS = {
    "engine": "engine", "engine_version": "version", "models": "model", "draft_models": "draft",
    "spec_method": "spec", "num_speculative_tokens": "k", "modes_compared": "modes",
    "gpu": "gpu", "tensor_parallel_size": "tp", "temperature": "temperature",
    "max_tokens": "max_tokens", "concurrency": "concurrency",
}


def _cell(markdown: str) -> str:
    """Markdown for a table cell: a `|` inside it, even in a code span, would end the cell."""
    return markdown.replace("|", "\\|")


def _quoted_evidence(request: ReproRequest, field: str) -> str:
    """Where a field's value was read: the first line it came from, quoted as code."""
    evidence = request.evidence.get(field) or []
    if not evidence:
        return "–"
    ev = evidence[0]
    where = "title" if ev.line == 0 and ev.source in ("prose", "title") else \
        f"line {ev.line}" if ev.line else ev.source
    return f"{where}: {code_span(' '.join(ev.text.split()), 100)}"


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "unknown"
    seconds = max(0, int(seconds))
    if seconds < 90:
        return f"{seconds} s"
    if seconds < 5400:
        return f"{round(seconds / 60)} min"
    return f"{seconds / 3600:.1f} h"


def count(n: int, word: str, plural: str | None = None) -> str:
    """ "1 job", "2 jobs" """
    return f"{n} {word if n == 1 else plural or word + 's'}"


def prose(text: str, limit: int = 500) -> str:
    """Our own sentence, whose `code` shows as code, holding user text that must not:
    each backtick pair becomes a code span (where nothing is markup or a mention) and
    everything between them goes through `inline`. A lone backtick is plain text."""
    text = " ".join(text.split())
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    parts = text.split("`")
    if len(parts) % 2 == 0:  # an odd number of backticks: the last one opens nothing
        parts[-2:] = [parts[-2] + "`" + parts[-1]]
    return "".join(code_span(part, limit) if k % 2 else _spaced(part, limit)
                   for k, part in enumerate(parts))


def _spaced(text: str, limit: int) -> str:
    """`inline`, keeping the space at either end that separates it from code."""
    lead = " " if text[:1].isspace() else ""
    tail = " " if text[-1:].isspace() and text.strip() else ""
    return lead + inline(text, limit) + tail


def _job_line(job: JobRecord, url: str) -> str:
    return f"Job [`{job.id}`]({url}) · requested by @{job.requester} · {code_span(job.command)}"


@dataclass(frozen=True)
class QueuePlace:
    """Where a job stands in its runner kind's queue: the jobs ahead of it, the seconds
    before it should start, and whether any runner of the kind is online to start it."""

    ahead: int
    wait_s: float
    runner_live: bool = True


def acknowledgement(job: JobRecord, plan: Plan, place: QueuePlace, url: str,
                    notes: Sequence[str] = (), *, headline: str | None = None,
                    gpu_seconds: float | None = None, crash_check: bool = False) -> str:
    """The job comment's first words: what was queued (`headline`, a repro's by default),
    where it stands in the queue, and when it should end (after `gpu_seconds`, the plan's
    estimate by default). A `crash_check` says that it is one."""
    queued_ahead, wait_s = place.ahead, place.wait_s
    total_s = plan.estimated_seconds if gpu_seconds is None else gpu_seconds
    if not place.runner_live:
        # No promise of a start time when nothing would pick the job up.
        ahead = f" ({count(queued_ahead, 'job')} ahead of it)" if queued_ahead else ""
        when = (f"No `{plan.gpu_kind}` runner is online right now, so it waits until one "
                f"is{ahead}.")
    else:
        start = "it should start right away" if queued_ahead == 0 and wait_s <= 0 else (
            f"{count(queued_ahead, 'job')} ahead of it; it should start within about "
            f"{duration(wait_s)}")
        when = (f"On the `{plan.gpu_kind}` queue {start}, and end about "
                f"{duration(wait_s + total_s)} from now.")
    lines = [
        headline or (
            f"⏳ **Queued** a {'crash check' if crash_check else 'reproduction'}: "
            f"{count(len(plan.cells), 'cell')} on "
            f"`{plan.engine}` {inline(plan.engine_version or 'latest')}, GPU "
            f"`{plan.gpu_kind}`, about {duration(plan.estimated_seconds)} of GPU time."
            + (" The report is a crash, so each cell's status and log signatures answer "
               "it, not its timings." if crash_check else "")),
        "",
        _job_line(job, url),
        "",
        f"{when} This comment is edited as the job runs and ends as the report.",
    ]
    lines += [f"- {prose(note)}" for note in notes]
    return "\n".join(lines)


def bisect_headline(good: str, bad: str, plan: Plan, between: int | None,
                    steps: int | None, most: int | None, level: str = "release") -> str:
    """What a bisect job was queued to do: its range, the steps expected (`steps` for a
    clean search, up to `most` where points cannot be judged) and their GPU time."""
    step = (f"each step one repro of {count(len(plan.cells), 'cell')} on `{plan.engine}` "
            f"at that point, GPU `{plan.gpu_kind}`, about {duration(plan.estimated_seconds)}")
    head = (f"⏳ **Queued** a bisect of `{plan.engine}` from {inline(good)} (good) to "
            f"{inline(bad)} (bad)")
    if steps is None or between is None or most is None:
        return (f"{head}: {step}. How many steps it takes is known once the "
                f"{'nightlies' if level == 'nightly' else level + 's'} between them are "
                "listed.")
    more = (" Below the two releases it ends on, the nightlies and then the commits "
            "between them add steps of their own." if level == "release" else "")
    points = count(between, level, "nightlies" if level == "nightly" else None)
    return (f"{head}: {points} between them, so about "
            f"{count(steps, 'step')} (up to {most} if some cannot be judged), {step}: "
            f"about {duration(steps * plan.estimated_seconds)} of GPU time in all.{more}")


def progress(job: JobRecord, url: str) -> str:
    if job.state == "queued":
        return queued_again(job, url)
    share = f"{job.runs_done}/{job.runs_planned} runs" if job.runs_planned else "starting"
    left = ("the time left is not known yet" if job.eta_s is None
            else f"about {duration(job.eta_s)} left")
    lines = [
        f"🏃 **Running**: {share}; {left}.",
        "",
        _job_line(job, url),
    ]
    if job.current:
        lines += ["", f"Now: {inline(job.current, 200)}"]
    return "\n".join(lines)


def queued_again(job: JobRecord, url: str) -> str:
    """A job back in the queue after the runner running it was lost."""
    done = (f" {job.runs_done}/{job.runs_planned} runs were done before it stopped."
            if job.runs_planned else "")
    return "\n".join([
        f"⏳ **Queued again**: the runner running it stopped answering, so the job waits "
        f"for a runner once more (attempt {job.attempts + 1}).{done}",
        "",
        _job_line(job, url),
    ])


def final(job: JobRecord, report: str | None, url: str) -> str:
    footer = f"\n\n---\n{_job_line(job, url)}"
    if job.state == "done" and report:
        return report.rstrip() + footer
    if job.state == "cancelled":
        who = f" by @{job.cancelled_by}" if job.cancelled_by else ""
        why = f" ({job.cancel_reason})" if job.cancel_reason else ""
        return f"🚫 **Cancelled**{who}{why}; nothing more will run for this job.{footer}"
    reason = inline(job.error or "the job failed without saying why", 1500)
    return (f"❌ **The reproduction could not finish**: {reason}\n\n"
            f"Results gathered before the failure are kept on the job page.{footer}")


def refusal(command_name: str, command: str = "repro") -> str:
    # The reply around it already names the requester once.
    if command == "cancel":
        return ("Cancelling a job needs write, maintain or admin permission on this "
                "repository (or being listed in `.github/triagebot.toml`), so nothing was "
                f"cancelled. A maintainer can ask with `@{command_name} cancel`.")
    return ("Thanks for the request. Starting GPU work needs write, maintain or "
            f"admin permission on this repository (or being listed in "
            f"`.github/triagebot.toml`), so nothing was run. A maintainer can ask with "
            f"`@{command_name} {command}`.")


def stranger(command_name: str, commands: Sequence[str]) -> str:
    """The one short answer to someone without a role here, whatever they asked."""
    names = list(dict.fromkeys(commands))
    asked = ", ".join(f"`{name}`" for name in names) or "That command"
    verb = "were" if len(names) > 1 else "was"
    return (f"{asked} {verb} not run: `{command_name}` answers people with a role on this "
            "repository (triage or more for `help` and `status`; write for `repro`, "
            "`bisect` and `cancel`). A maintainer can run it for you.")


def config_error(problems: Sequence[str]) -> str:
    items = "\n".join(f"- {prose(p, 400)}" for p in problems[:20])
    return ("`.github/triagebot.toml` in this repository is not valid, so nothing was run:"
            f"\n\n{items}")


def internal_error(kind: str) -> str:
    return (f"This command failed inside triagebot ({inline(kind, 80)}); nothing was "
            "started for it. The maintainers of the bot have the details in its logs.")


def gave_up(reason: str) -> str:
    return (f"triagebot could not handle this comment: {inline(reason, 300)}. Nothing was "
            "started; please ask again later.")


def command_errors(messages: Sequence[str]) -> str:
    return "\n".join(f"- {prose(m, 800)}" for m in messages)


def busy(other: JobRecord, url: str) -> str:
    return (f"The same reproduction is already {other.state} on this thread: "
            f"[`{other.id}`]({url}). Use `cancel` first to start it again.")


def plan_refused(message: str) -> str:
    return f"This report cannot be planned as asked: {prose(message, 1500)}"


def status(jobs: Sequence[JobRecord], url_for: Mapping[str, str]) -> str:
    if not jobs:
        return "No reproduction has been requested on this thread yet."
    rows = ["| job | state | runs | requested by | command |", "|---|---|---|---|---|"]
    for job in jobs:
        runs = f"{job.runs_done}/{job.runs_planned}" if job.runs_planned else "–"
        icon = _STATE_ICON.get(job.state, "")
        rows.append(f"| [`{job.id}`]({url_for[job.id]}) | {icon} {job.state} | {runs} | "
                    f"@{job.requester} | {code_span(job.command, 120)} |")
    return "\n".join(rows)


# Why a job was cancelled when its comment's command was edited.
EDITED = "its command was edited, so the edited command replaces it"


def _job_links(ids: Sequence[str], url_for: Mapping[str, str]) -> str:
    return ", ".join(f"[`{id_}`]({url_for[id_]})" if id_ in url_for else f"`{id_}`"
                     for id_ in ids)


def cancel_first(ids: Sequence[str], url_for: Mapping[str, str]) -> str:
    """What a comment holding both `cancel` and a command that starts a job did."""
    if not ids:
        return ("`cancel` ran first and found no queued or running job; the new job "
                "below starts as asked.")
    return (f"`cancel` ran first, on the jobs queued or running before this comment "
            f"({_job_links(ids, url_for)}); the new job below was started after it.")


def replaced(ids: Sequence[str], url_for: Mapping[str, str]) -> str:
    return (f"The edit changed this comment's command, so the job it had started "
            f"({_job_links(ids, url_for)}) is cancelled and the edited command runs "
            "instead.")


def nothing_to_cancel() -> str:
    return "There is no queued or running job on this thread to cancel."


def reply(login: str, sections: Sequence[str]) -> str:
    """One consolidated answer to one comment, however many commands it held."""
    return f"@{login}\n\n" + "\n\n".join(sections)


def triage_summary(request: ReproRequest, *, command_name: str, will_run: bool,
                   is_pr: bool, head_sha: str | None) -> str:
    found: list[str] = []
    for field, words in _FIELD_WORDS.items():
        value = getattr(request, field, None)
        if value in (None, [], ""):
            continue
        text = ", ".join(map(str, value)) if isinstance(value, list) else str(value)
        key = _OVERRIDE_KEYS.get(field)
        found.append(f"| {words} | {_cell(code_span(text, 160))} | "
                     f"{_cell(_quoted_evidence(request, field))} | "
                     f"{code_span(key + '=…', 40) if key else '–'} |")
    missing = [_FIELD_WORDS[f] for f in _NEEDED
               if getattr(request, f, None) in (None, [], "")]
    lines = ["🔎 **What triagebot read from this " + ("pull request" if is_pr else "issue")
             + "**", ""]
    if not request.in_scope:
        lines.append("It does not look like a speculative-decoding or CUDA-graph performance "
                     "report, so no reproduction is planned.")
        return "\n".join(lines)
    if found:
        lines += ["| field | value | read from | to correct |", "|---|---|---|---|", *found,
                  ""]
    unsure = [w for w in request.warnings if "left empty" in w]
    if unsure:
        # Say less when unsure: a field read two ways stays empty, and each reading is shown.
        lines += ["Left empty because the report gives more than one value:",
                  *(f"- {prose(w, 400)}" for w in unsure[:5]), ""]
    if missing:
        lines.append("To reproduce it, please add: " + ", ".join(missing)
                     + " (a `vllm serve` / `LLM(...)` command line and `collect_env` output "
                       "carry most of them).")
    if is_pr:
        head = f" (`{head_sha[:12]}`)" if head_sha else ""
        lines.append(f"PR head commits{head} have no prebuilt wheel, so a reproduction runs "
                     f"the released versions a maintainer names, e.g. "
                     f"`@{command_name} repro version=0.17.1`.")
    if found:
        lines.append(f"A value read wrongly can be corrected in the request, e.g. "
                     f"`@{command_name} repro tp=2 k=3`.")
    if will_run:
        lines.append("A reproduction has been queued; its report follows in its own comment.")
    else:
        lines.append(f"A maintainer can start a reproduction with `@{command_name} repro`.")
    return "\n".join(lines)

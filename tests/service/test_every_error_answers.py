"""Every command gets an answer: random option values thrown at the whole comment path.

Issue 15, defect 2: `spec=mtp:17`, `k=0` and `k=17` raised in the triage task and the
comment got neither a reply nor a reaction. Here any `@triagebot repro key=value ...`
comment ends in exactly one visible answer: its job's comment (and a +1), or one reply.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from tests.fakes.github_fixture import REPO
from tests.service.threads import bot_comments, comment_event
from triagebot.overrides import KEYS

_VALUES = st.one_of(
    st.integers(min_value=-3, max_value=40).map(str),
    st.sampled_from(["mtp:17", "mtp:0", "eagle3:3", "none", "mtp:1,none", "1,2,17", "0",
                     "h100", "b200", "graph,eager", "sideways", "vllm", "sglang", "1e9",
                     "zai-org/GLM-4.5-Air", "a b", "0.17.1", "-1", "nan", "inf", "",
                     "x" * 300, "'; rm -rf /", "@someone", "```"]),
    st.text(alphabet=st.characters(min_codepoint=33, max_codepoint=126), max_size=12))
_OPTION = st.tuples(st.sampled_from([*KEYS, "colour", "K", "spec "]), _VALUES)


@hsettings(max_examples=40, deadline=None,
           suppress_health_check=[HealthCheck.function_scoped_fixture,
                                  HealthCheck.too_slow])
@given(options=st.lists(_OPTION, max_size=4))
def test_any_option_values_get_exactly_one_answer(env: dict[str, Any],
                                                  options: list[tuple[str, str]]) -> None:
    triage, fake, store = env["triage"], env["fake"], env["store"]
    words = " ".join(f"{key}={value}" for key, value in options)
    event = comment_event(fake, f"@triagebot repro {words}".rstrip())
    assert event.comment is not None
    triage.handle(event)
    replies = [c for c in bot_comments(fake) if f"reply={event.comment.id} " in c.body]
    started = [j for j in store.thread_jobs(REPO, 42)
               if j.trigger == f"comment-{event.comment.id}"]
    assert len(replies) + len(started) == 1, (words, [r.body for r in replies])
    # Bad values are the user's to fix, so they get a precise message, not our apology.
    assert not any("failed inside triagebot" in r.body for r in replies), words
    if started:
        assert ("triagebot[bot]", "+1") in fake.reactions(event.comment.id)
        # Free the thread again so the next example can start a job of its own.
        store.request_cancel(started[0].id, "tests")


def test_out_of_range_k_gets_a_precise_reply(env: dict[str, Any]) -> None:
    triage, fake = env["triage"], env["fake"]
    event = comment_event(fake, "@triagebot repro spec=mtp:17\n@triagebot repro k=0")
    assert event.comment is not None
    triage.handle(event)
    (reply,) = bot_comments(fake)
    assert reply.body.count("speculative tokens per step must be 1 to 16") == 2

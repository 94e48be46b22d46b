"""Candidate commits ranked by their changed paths against the report's subject."""

from __future__ import annotations

from triagebot.bisect.rank import CommitInfo, rank, subject_of
from triagebot.request_model import ReproRequest


def _c(sha: str, title: str, *files: str) -> CommitInfo:
    return CommitInfo(sha=sha * 8, title=title, files=list(files),
                      pr_url=f"https://github.com/o/r/pull/{len(files)}")


def test_spec_and_graph_changes_outrank_unrelated_ones() -> None:
    request = ReproRequest(spec_method="mtp", models=["zai-org/GLM-OCR"],
                           modes_compared=["eager", "cudagraph"])
    subject = subject_of(request)
    commits = [
        _c("a", "[Docs] fix typo", "docs/usage.md"),
        _c("b", "[Spec Decode] MTP proposer reuses buffers",
           "vllm/v1/spec_decode/eagle.py", "vllm/v1/spec_decode/utils.py"),
        _c("c", "[Model] GLM-OCR processor", "vllm/model_executor/models/glm_ocr.py"),
        _c("d", "[Compile] piecewise graph sizes", "vllm/compilation/backends.py"),
        _c("e", "[CI] bump runners", ".buildkite/test.yaml"),
    ]
    top = rank(commits, subject, top=3)
    assert [r.commit.sha[0] for r in top] == ["b", "c", "d"]
    assert any("spec" in w for w in top[0].why)
    assert all(r.score > 0 for r in top)


def test_no_subject_keeps_newest_first_and_scores_zero() -> None:
    commits = [_c("a", "one", "x.py"), _c("b", "two", "y.py")]
    top = rank(commits, subject_of(ReproRequest()), top=5)
    assert [r.commit.sha[0] for r in top] == ["b", "a"]
    assert all(r.score == 0 for r in top)


def test_compare_answer_becomes_commits_with_their_prs() -> None:
    from triagebot.bisect.rank import commits_from_compare

    [c] = commits_from_compare([{"sha": "ab" * 20, "title": "[Spec] faster ngram (#123)",
                                 "url": "u", "files": ["vllm/spec_decode/x.py"]}], "o/r")
    assert c.pr_number == 123 and c.pr_url == "https://github.com/o/r/pull/123"
    assert c.files == ["vllm/spec_decode/x.py"]


def test_a_sentinel_case_weighs_spec_decode_eagle_compilation_and_cudagraph_paths() -> None:
    from triagebot.sentinel.models import SentinelCase
    from triagebot.workers.sentinel_issues import request_for

    case = SentinelCase(case_id="vllm-mtp-k1-x-h100", engine="vllm", model="org/Some-7B",
                        method="mtp", k=1, modes=["eager", "graph"], workload="offline",
                        runner="h100")
    subject = subject_of(request_for(case, "0.21.0"))
    commits = [
        _c("a", "[Docs] typo", "docs/usage.md"),
        _c("b", "[Misc] heads", "vllm/model_executor/models/llama_eagle3.py"),
        _c("c", "[Misc] sampler", "vllm/v1/spec_decode/metadata.py"),
        _c("d", "[Misc] passes", "vllm/compilation/fusion.py"),
        _c("e", "[Misc] capture", "vllm/v1/worker/gpu/cudagraph_utils.py"),
    ]
    top = rank(commits, subject, top=5)
    assert [r.commit.sha[0] for r in top if r.score > 0] == ["c", "b", "e", "d"]
    assert top[-1].commit.sha[0] == "a" and top[-1].score == 0

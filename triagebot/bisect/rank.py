"""Candidate commits ranked by how close their changed paths are to the report's subject.

The subject is what the report is about: its speculative method, the graph / compilation
modes it compares, the model's family, the attention backend. A commit scores for each
changed path (and its title) that touches one of those areas; the weights say which
areas explain a spec-decode or graph performance change most often. This is the hint a
maintainer gets even when no per-commit builds exist to bisect further.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from pydantic import Field

from triagebot.frozen import Frozen
from triagebot.request_model import ReproRequest

# EAGLE's proposer and heads live in files named for it (`*eagle*`) whichever method a
# report names: EAGLE-3 and MTP run through the same proposer.
_SPEC_PATHS = ("spec_decode", "speculative", "rejection_sampler", "spec_decoding",
               "draft", "proposer", "eagle")
_GRAPH_PATHS = ("cudagraph", "cuda_graph", "compilation", "compile", "inductor",
                "piecewise")
_GENERIC_MODEL_WORDS = {"instruct", "chat", "base", "hf", "it", "fp8", "awq", "gptq",
                        "model", "models", "ocr", "v1", "v2", "v3", "org", "ai", "the"}
WEIGHTS = {"spec": 3.0, "model": 3.0, "graph": 2.0, "attention": 1.5}


class CommitInfo(Frozen):
    """A first-parent commit between two builds, as the compare API lists it."""

    sha: str
    title: str = ""
    url: str = ""
    pr_number: int | None = None
    pr_url: str = ""
    files: list[str] = Field(default_factory=list)
    date: str = ""  # the committer date (ISO 8601): when it landed on the branch
    parents: list[str] | None = None  # None where the listing did not say


class RankedCommit(Frozen):
    commit: CommitInfo
    score: float
    why: list[str] = Field(default_factory=list)


class Subject(Frozen):
    """The areas of the code a report is about, as lower-case path fragments."""

    spec: list[str] = Field(default_factory=list)
    graph: list[str] = Field(default_factory=list)
    model: list[str] = Field(default_factory=list)
    attention: list[str] = Field(default_factory=list)


_PR_IN_TITLE = re.compile(r"\(#(\d{1,7})\)\s*$")


def commits_from_compare(items: Sequence[dict[str, object]], repo: str) -> list[CommitInfo]:
    """CommitInfo from the GitHub client's compare answer; the PR is the "(#N)" GitHub's
    squash merges end their title with."""
    out = []
    for item in items:
        title = str(item.get("title", ""))
        m = _PR_IN_TITLE.search(title)
        number = int(m.group(1)) if m else None
        files = item.get("files")
        parents = item.get("parents")
        out.append(CommitInfo(
            sha=str(item.get("sha", "")), title=title, url=str(item.get("url", "")),
            pr_number=number,
            pr_url=f"https://github.com/{repo}/pull/{number}" if number else "",
            files=[str(f) for f in files] if isinstance(files, list) else [],
            date=str(item.get("date") or ""),
            parents=[str(p) for p in parents] if isinstance(parents, list) else None))
    return out


def subject_of(request: ReproRequest) -> Subject:
    spec = list(_SPEC_PATHS) if (request.spec_method or request.draft_models
                                 or request.num_speculative_tokens) else []
    if request.spec_method:
        spec.append(request.spec_method.lower())
    modes = {str(m) for m in request.modes_compared}
    graphs = modes & {"cudagraph", "piecewise", "full", "vit_cudagraph"}
    graph = list(_GRAPH_PATHS) if (request.cudagraph_mode or request.compilation_config
                                   or graphs) else []
    words: list[str] = []
    for model in [*request.models, *request.draft_models]:
        for word in re.split(r"[-_/.\s]+", model.lower().split("/")[-1]):
            word = re.sub(r"\d+(?:\.\d+)?[bm]$", "", word)
            if len(word) >= 3 and not word.isdigit() and word not in _GENERIC_MODEL_WORDS:
                words.append(word)
    attention = ["attention"]
    if request.attention_backend:
        attention.append(request.attention_backend.lower().replace("_", ""))
    return Subject(spec=spec, graph=graph, model=list(dict.fromkeys(words)),
                   attention=attention)


def _areas(text: str, subject: Subject) -> list[str]:
    low = text.lower()
    hits = []
    for area in ("spec", "model", "graph", "attention"):
        if any(frag in low for frag in getattr(subject, area)):
            hits.append(area)
    return hits


def rank(commits: Sequence[CommitInfo], subject: Subject, top: int = 5) -> list[RankedCommit]:
    """The `top` commits by score, highest first; ties keep the newer commit first."""
    ranked: list[RankedCommit] = []
    for commit in commits:
        score, why = 0.0, []
        for path in commit.files:
            areas = _areas(path, subject)
            if areas:
                score += max(WEIGHTS[a] for a in areas)
                why.append(f"{path} ({', '.join(areas)})")
        title_areas = _areas(commit.title, subject)
        if title_areas:
            score += sum(WEIGHTS[a] for a in title_areas) / 2
            why.append(f"title ({', '.join(title_areas)})")
        # Many unrelated files dilute a big refactor's claim on the subject a little.
        if commit.files:
            score *= 1.0 / (1.0 + 0.02 * max(0, len(commit.files) - 10))
        ranked.append(RankedCommit(commit=commit, score=round(score, 2), why=why[:4]))
    newest_first = list(reversed(ranked))
    newest_first.sort(key=lambda r: -r.score)
    return newest_first[:top]

"""Bisect: from "it got worse" (or "it started working") to the first release or commit
where the report's predicate flips, in about log2(N) full statistical comparisons.

Pure core: `ranges` (which candidates lie between good and bad), `search` (the step
logic, three-way verdicts, skips), `predicate` (a step's findings -> good / bad / skip,
with the repro plan's own verdict logic), `rank` (candidate commits by their changed
paths), `hints` (good/bad read from the report), `render` (the report section).
Side effects live in `envs` (PyPI, uv, the environment cache) and `runner` (one step
= one repro plan run at one version).
"""

"""`.github/triagebot.toml`: the full sample, every kind of mistake, and the helpers."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from triagebot.model import Budget
from triagebot.overrides import ReproOptions, SpecChoice, parse_overrides
from triagebot.repo_config import (
    MAX_BYTES,
    MAX_PROBLEMS,
    RepoConfig,
    RepoConfigError,
    merge_options,
    parse_repo_config,
)

SHA = "0123456789abcdef0123456789abcdef01234567"
SAMPLE = f"""
[triage]
labels = ["perf", "spec-decode"]
run = true
pull_requests = true

[access]
users = ["alice", "Bob-2"]
teams = ["my-org/perf-team"]

[defaults]
engine = "vllm"
version = "0.17.1"
gpu = "h100"

[models]
allow = ["zai-org/*", "Qwen/Qwen3-*"]
trust_remote_code = ["org/model@{SHA}", "other/model"]

[budget]
max_cells = 16
runs = 7
max_runs = 30
gpu_minutes_per_job = 90
gpu_minutes_per_day = 600

[verdict]
margin_pct = 2.5

[labels]
reproduced = "repro: confirmed"
not_reproduced = "repro: not reproduced"
inconclusive = "repro: inconclusive"
error = "repro: error"
"""


def _problems(text: str | bytes) -> list[str]:
    with pytest.raises(RepoConfigError) as info:
        parse_repo_config(text)
    assert info.value.problems and str(info.value).startswith(".github/triagebot.toml: ")
    return info.value.problems


def test_full_sample() -> None:
    config = parse_repo_config(SAMPLE)
    assert config.triage.labels == ("perf", "spec-decode")
    assert config.triage.run and config.triage.pull_requests
    assert config.access.users == ("alice", "Bob-2")
    assert config.access.teams == ("my-org/perf-team",)
    assert (config.defaults.engine, config.defaults.version, config.defaults.gpu) == (
        "vllm", "0.17.1", "h100")
    assert config.models.allow == ("zai-org/*", "Qwen/Qwen3-*")
    assert config.models.trust_remote_code == (f"org/model@{SHA}", "other/model")
    assert config.budget_section.runs == 7
    assert config.labels.not_reproduced == "repro: not reproduced"
    assert parse_repo_config(SAMPLE.encode()) == config


def test_empty_file_and_defaults() -> None:
    config = RepoConfig.default()
    assert parse_repo_config("") == config == parse_repo_config(b"# nothing yet\n")
    assert config.triage.labels == () and not config.triage.run
    assert not config.triage.pull_requests
    assert config.access.users == () and config.access.teams == ()
    assert config.default_options().is_empty()
    assert config.budget() == Budget()
    assert config.policy().trust_remote_code == []
    assert config.model_allowed("any/model")
    assert config.outcome_label("reproduced") is None
    assert config.triage_label(["perf"]) is None
    assert not config.user_listed("alice")
    assert parse_repo_config("[triage]\n[budget]\n") == config


@pytest.mark.parametrize(("toml", "expected"), [
    # [triage]
    ('[triage]\nlabels = "perf"', 'triage.labels = "perf": expected a list'),
    ("[triage]\nlabels = [1]", "triage.labels[0] = 1: expected a string"),
    ('[triage]\nlabels = [""]', 'triage.labels[0] = "": a label name has 1 to 50'),
    (f'[triage]\nlabels = ["{"x" * 51}"]', "a label name has 1 to 50 characters, this one 51"),
    ('[triage]\nlabels = ["a\\u0007b"]', "triage.labels[0]"),
    ('[triage]\nlabels = ["   "]', "needs visible characters"),
    ("[triage]\nrun = 1", "triage.run = 1: expected true or false"),
    ('[triage]\npull_requests = "yes"', 'triage.pull_requests = "yes": expected true or false'),
    # [access]
    ('[access]\nusers = ["-alice"]', 'access.users[0] = "-alice": not a GitHub login'),
    ('[access]\nusers = ["a_b"]', "not a GitHub login"),
    (f'[access]\nusers = ["{"a" * 40}"]', "not a GitHub login"),
    ('[access]\nusers = "alice"', 'access.users = "alice": expected a list'),
    ('[access]\nteams = ["perf-team"]', 'access.teams[0] = "perf-team": not a team'),
    ('[access]\nteams = ["org/team/x"]', "not a team: write ORG/TEAM-SLUG"),
    # [defaults]
    ('[defaults]\nengine = "llama.cpp"', 'defaults.engine = "llama.cpp": expected one of'),
    ('[defaults]\nversion = "0.17;rm"', 'defaults.version = "0.17;rm": not a version'),
    ("[defaults]\nversion = 0.17", "defaults.version = 0.17: expected a string"),
    ('[defaults]\ngpu = "H100"', 'defaults.gpu = "H100": not a GPU kind'),
    # [models]
    ('[models]\nallow = ["org/$(id)"]', 'models.allow[0] = "org/$(id)": not a model pattern'),
    ('[models]\ntrust_remote_code = ["model"]', "models.trust_remote_code[0] = \"model\""),
    ('[models]\ntrust_remote_code = ["org/m@abc"]', "ORG/NAME@<40-hex commit sha>"),
    (f'[models]\ntrust_remote_code = ["org/m@{SHA.upper()}"]', "not a model"),
    # [budget]
    ("[budget]\nmax_cells = 0", "budget.max_cells = 0: must be at least 1"),
    ("[budget]\nmax_cells = 65", "budget.max_cells = 65: must be at most 64"),
    ("[budget]\nruns = 101\nmax_runs = 200", "budget.runs = 101: must be at most 100"),
    ("[budget]\nmax_runs = 201", "budget.max_runs = 201: must be at most 200"),
    ("[budget]\nruns = 31", "budget.runs = 31: is more than budget.max_runs (30)"),
    ("[budget]\nruns = 6\nmax_runs = 5", "budget.runs = 6: is more than budget.max_runs (5)"),
    ('[budget]\nruns = "5"', 'budget.runs = "5": expected a whole number'),
    ("[budget]\nruns = 5.0", "budget.runs = 5.0: expected a whole number"),
    ("[budget]\nruns = true", "budget.runs = true: expected a whole number"),
    ("[budget]\ngpu_minutes_per_job = 0", "budget.gpu_minutes_per_job = 0: must be at least 1"),
    ("[budget]\ngpu_minutes_per_job = 1441\ngpu_minutes_per_day = 5000",
     "budget.gpu_minutes_per_job = 1441: must be at most 1440"),
    ("[budget]\ngpu_minutes_per_day = 0", "budget.gpu_minutes_per_day = 0: must be at least 1"),
    ("[budget]\ngpu_minutes_per_job = 300\ngpu_minutes_per_day = 200",
     "budget.gpu_minutes_per_job = 300: is more than budget.gpu_minutes_per_day (200)"),
    # [verdict]
    ("[verdict]\nmargin_pct = 0.1", "verdict.margin_pct = 0.1: must be at least 0.5"),
    ("[verdict]\nmargin_pct = 25", "verdict.margin_pct = 25: must be at most 20"),
    ('[verdict]\nmargin_pct = "3%"', 'verdict.margin_pct = "3%": expected a number'),
    ("[verdict]\nmargin_pct = true", "verdict.margin_pct = true: expected a number"),
    ("[verdict]\nnegligible_pct = -1", "verdict.negligible_pct = -1: must be at least 0"),
    ("[verdict]\nnegligible_pct = 3",
     "verdict.negligible_pct = 3: must be below margin_pct (3.0): a difference cannot be "
     "both negligible and outside the margin"),
    # [labels]
    ('[labels]\nreproduced = ""', 'labels.reproduced = "": a label name has 1 to 50'),
    ("[labels]\nerror = 3", "labels.error = 3: expected a string"),
    # sections that are not tables
    ("triage = true", "triage = true: expected a table"),
    ('budget = "big"', 'budget = "big": expected a table'),
])
def test_bad_values(toml: str, expected: str) -> None:
    problems = _problems(toml)
    assert any(expected in p for p in problems), problems


def test_every_problem_is_reported() -> None:
    problems = _problems('[budget]\nmax_cells = 0\n[access]\nusers = ["-x"]\n[triage]\nrun = 2')
    assert len(problems) == 3
    assert {p.split(" ")[0] for p in problems} == {"budget.max_cells", "access.users[0]",
                                                   "triage.run"}


def test_problems_are_capped() -> None:
    users = ", ".join(f'"-u{i}"' for i in range(MAX_PROBLEMS + 30))
    problems = _problems(f"[access]\nusers = [{users}]")
    assert len(problems) == MAX_PROBLEMS + 1 and problems[-1] == "... and 30 more"


def test_lists_are_bounded() -> None:
    users = ", ".join(f'"u{i}"' for i in range(201))
    assert "access.users: has more than 200 entries" in _problems(f"[access]\nusers = [{users}]")


def test_unknown_top_level_key_lists_the_sections() -> None:
    [problem] = _problems("[trigae]\nlabels = []")
    assert problem == ("trigae: unknown section; valid sections: triage, access, defaults, "
                       "models, budget, verdict, labels, bisect, watch, sentinel")
    # The attribute behind [budget] is not a second spelling of it.
    [problem] = _problems("[budget_section]\nruns = 3")
    assert problem.startswith("budget_section: unknown section")


@pytest.mark.parametrize(("section", "valid"), [
    ("triage", "labels, run, pull_requests"),
    ("access", "users, teams, strangers"),
    ("defaults", "engine, version, gpu"),
    ("models", "allow, trust_remote_code"),
    ("budget", "max_cells, max_runs, runs, gpu_minutes_per_day, gpu_minutes_per_job"),
    ("verdict", "margin_pct, negligible_pct"),
    ("labels", "reproduced, not_reproduced, inconclusive, cannot_answer, error"),
])
def test_unknown_key_in_a_section_lists_its_keys(section: str, valid: str) -> None:
    [problem] = _problems(f"[{section}]\ncolour = 1")
    assert problem == f"{section}.colour: unknown key; valid keys in [{section}]: {valid}"


@pytest.mark.parametrize(("toml", "where"), [
    ("[triage\nrun = true", "line 1"),
    ("[budget]\nruns = = 3", "line 2, column"),
    ("[access]\nusers = ['a',\n", "end of document"),
    ("[budget]\nruns = 3\n[budget]\n", "line 3"),
])
def test_bad_toml_says_where(toml: str, where: str) -> None:
    [problem] = _problems(toml)
    assert problem.startswith("TOML syntax: ") and where in problem


def test_oversize_is_refused() -> None:
    padding = "#" * MAX_BYTES + "\n"
    [problem] = _problems(padding)
    assert f"at most {MAX_BYTES:,}" in problem
    _problems(padding.encode())
    # The cap is on bytes: 30,000 three-byte characters are over it.
    _problems("# " + "€" * 30_000)
    parse_repo_config("#" * (MAX_BYTES - 1))


def test_non_utf8_is_refused() -> None:
    [problem] = _problems(b"[triage]\nlabels = [\"caf\xe9\"]\n")
    assert problem == "not UTF-8: byte 0xe9 on line 2 cannot be decoded"


def test_byte_order_mark_is_accepted() -> None:
    assert parse_repo_config("\ufeff[triage]\nrun = true".encode()).triage.run


def test_margin_is_a_fraction_with_a_default() -> None:
    assert RepoConfig.default().margin() == pytest.approx(0.03)
    assert parse_repo_config(SAMPLE).margin() == pytest.approx(0.025)
    assert parse_repo_config("[verdict]\nmargin_pct = 5").margin() == pytest.approx(0.05)


def test_negligible_band_is_a_fraction_off_by_default() -> None:
    assert RepoConfig.default().negligible() == 0.0
    config = parse_repo_config("[verdict]\nmargin_pct = 4\nnegligible_pct = 1")
    assert config.negligible() == pytest.approx(0.01)


def test_budget_maps_onto_the_plan_budget() -> None:
    budget = parse_repo_config(SAMPLE).budget()
    assert (budget.max_cells, budget.runs, budget.max_runs) == (16, 7, 30)
    assert budget.time_limit_s == 90 * 60
    assert budget.cell_time_limit_s == Budget().cell_time_limit_s
    short = parse_repo_config("[budget]\ngpu_minutes_per_job = 5").budget()
    assert short.time_limit_s == 300 and short.cell_time_limit_s == 300
    longest = parse_repo_config("[budget]\ngpu_minutes_per_job = 1440").budget()
    assert longest.time_limit_s == 24 * 3600


def test_budget_bounds_are_budgets_own() -> None:
    for key, top in (("max_cells", 64), ("runs", 100), ("max_runs", 200)):
        toml = f"[budget]\nmax_runs = 200\n{key} = {top}" if key != "max_runs" else \
            f"[budget]\nmax_runs = {top}"
        config = parse_repo_config(toml)
        assert getattr(config.budget(), key) == top


def test_policy_allows_listed_remote_code() -> None:
    policy = parse_repo_config(SAMPLE).policy()
    assert policy.allows_remote_code("org/model", SHA)
    assert not policy.allows_remote_code("org/model", None)
    assert not policy.allows_remote_code("org/model", "f" * 40)
    assert policy.allows_remote_code("other/model", None)
    assert not policy.allows_remote_code("third/model", None)


def test_default_options_and_merge() -> None:
    defaults = parse_repo_config(SAMPLE).default_options()
    assert defaults == ReproOptions(engine="vllm", version="0.17.1", gpu="h100")
    command = parse_overrides(["version=0.18.0", "spec=mtp:1,none", "runs=3"])
    merged = merge_options(defaults, command)
    assert merged.engine == "vllm" and merged.gpu == "h100"
    assert merged.version == "0.18.0" and merged.runs == 3
    assert merged.spec == [SpecChoice(method="mtp", k=1), SpecChoice()]
    assert merge_options(defaults, ReproOptions()) == defaults
    assert merge_options(ReproOptions(), command) == command


def test_model_allowed() -> None:
    config = parse_repo_config(SAMPLE)
    assert config.model_allowed("zai-org/GLM-OCR")
    assert config.model_allowed("Qwen/Qwen3-8B")
    assert not config.model_allowed("qwen/Qwen3-8B")  # case-sensitive, as the Hub is
    assert not config.model_allowed("Qwen/Qwen2.5-7B")
    assert not config.model_allowed("meta-llama/Llama-3.1-8B")


def test_outcome_label() -> None:
    config = parse_repo_config(SAMPLE)
    assert config.outcome_label("reproduced") == "repro: confirmed"
    assert config.outcome_label("error") == "repro: error"
    assert config.outcome_label("surprised") is None
    partial = parse_repo_config('[labels]\nreproduced = "confirmed"')
    assert partial.outcome_label("not_reproduced") is None
    asked = parse_repo_config('[labels]\ncannot_answer = "repro: cannot answer here"')
    assert asked.outcome_label("cannot_answer") == "repro: cannot answer here"


def test_triage_label() -> None:
    config = parse_repo_config(SAMPLE)
    assert config.triage_label(["bug", "spec-decode", "perf"]) == "perf"
    assert config.triage_label(["SPEC-DECODE"]) == "spec-decode"
    assert config.triage_label(iter(["bug"])) is None
    assert config.triage_label([]) is None


def test_user_listed() -> None:
    config = parse_repo_config(SAMPLE)
    assert config.user_listed("alice") and config.user_listed("ALICE")
    assert config.user_listed("bob-2")
    assert not config.user_listed("mallory") and not config.user_listed("")


def test_config_is_frozen() -> None:
    config = RepoConfig.default()
    with pytest.raises(ValueError, match="frozen"):
        config.triage = config.triage  # type: ignore[misc]


@settings(max_examples=60, deadline=None)
@given(st.one_of(st.text(max_size=300), st.binary(max_size=300),
                 st.lists(st.sampled_from(["[budget]", "[access]", "runs = 3", "users = [",
                                           '"a"', "]", "\n", "=", "max_runs = 1", "x"]))
                 .map("".join)))
def test_any_input_gives_a_config_or_problems(text: str | bytes) -> None:
    try:
        parse_repo_config(text)
    except RepoConfigError as exc:
        assert exc.problems and all(isinstance(p, str) and p for p in exc.problems)


def test_the_watch_section_and_its_limits() -> None:
    from triagebot.repo_config import RepoConfigError, parse_repo_config

    cfg = parse_repo_config(b'[watch]\nauto = true\nengines = ["vllm"]\nmax_threads = 3\n'
                            b'runner_minutes_per_day = 60\nstop_after_fixed = 1\n'
                            b'nightlies = true\n'
                            b'nightly_index = "https://wheels.vllm.ai/nightly"\n')
    assert (cfg.watch.auto, cfg.watch.max_threads, cfg.watch.stop_after_fixed) == (True, 3, 1)
    assert cfg.watch.watches("vllm") and not cfg.watch.watches("sglang")
    assert parse_repo_config(b"").watch.watches("sglang")
    for bad, words in ((b'[watch]\nnightly_index = "file:///etc"\n', "not an http(s) URL"),
                       (b"[watch]\nstop_after_fixed = 0\n", "stop_after_fixed"),
                       (b'[watch]\nengines = ["llama.cpp"]\n', "engines"),
                       (b"[watch]\nevery = 1\n", "every")):
        try:
            parse_repo_config(bad)
        except RepoConfigError as exc:
            assert words in str(exc), str(exc)
        else:
            raise AssertionError(bad)

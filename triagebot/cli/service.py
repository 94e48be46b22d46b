"""`triagebot serve` and `worker`: the GitHub App's webhook ingress and Celery workers."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from triagebot.cli.base import (
    EXIT_USAGE,
    app,
    fail,
)


@app.command()
def serve(
    host: Annotated[str | None, typer.Option(help="Bind address (default: settings).")] = None,
    port: Annotated[int | None, typer.Option(help="Port (default: settings).")] = None,
    workers: Annotated[int, typer.Option(
        min=1, max=64, help="uvicorn worker processes (one event loop each).")] = 1,
) -> None:
    """Run the webhook service (uvicorn): POST /webhook, /healthz, /readyz, /metrics, /jobs."""
    import uvicorn

    from triagebot.settings import SettingsError, load_settings
    from triagebot.web.app import create_app
    from triagebot.web.serving import FACTORY, PROTOCOL, log_config

    try:
        settings = load_settings()
        web = create_app(settings)
    except SettingsError as exc:
        raise fail(EXIT_USAGE, str(exc)) from None
    # One process serves the app built here; several import the factory, each its own.
    target: Any = web if workers == 1 else FACTORY
    # The webhook writes its own line per delivery, so uvicorn's access log would only
    # repeat it. A worker saturated by a burst answers the supervisor's health check
    # late; killing it then drops every request it holds, so allow it 30 s.
    uvicorn.run(target, factory=workers > 1, workers=workers, host=host or settings.host,
                port=port or settings.port, log_config=log_config(), log_level="info",
                access_log=False, http=PROTOCOL, proxy_headers=True,
                timeout_worker_healthcheck=30)


@app.command()
def worker(
    queues: Annotated[str, typer.Option(
        "--queues", "-Q", help="Comma-separated: `triage` (talks to GitHub) and/or "
                               "`gpu-<kind>` (runs jobs on this machine's GPU).")],
    name: Annotated[str | None, typer.Option(
        "--name", "-n", help="Worker name (default: <queues>@<host>).")] = None,
    concurrency: Annotated[int | None, typer.Option(
        "--concurrency", "-c", min=1, max=64,
        help="Processes for a triage worker; a GPU worker always runs one.")] = None,
    loglevel: Annotated[str, typer.Option(help="Celery log level.")] = "info",
) -> None:
    """Run a Celery worker. Start one per GPU, pinned with CUDA_VISIBLE_DEVICES."""
    from triagebot.settings import SettingsError, load_settings
    from triagebot.workers.serve import WorkerError, run_worker

    try:
        settings = load_settings()
        run_worker(settings, [q.strip() for q in queues.split(",") if q.strip()],
                   name=name, concurrency=concurrency, loglevel=loglevel)
    except (SettingsError, WorkerError) as exc:
        raise fail(EXIT_USAGE, str(exc)) from None


@app.command()
def beat(
    loglevel: Annotated[str, typer.Option(help="Celery log level.")] = "info",
) -> None:
    """Run Celery beat: it sends the release-feed poll of `@triagebot watch` to the triage
    queue every TRIAGEBOT_WATCH_TICK_S. Run one; a second one by mistake queues nothing
    twice."""
    from triagebot.settings import SettingsError, load_settings
    from triagebot.workers.serve import run_beat

    try:
        run_beat(load_settings(), loglevel=loglevel)
    except SettingsError as exc:
        raise fail(EXIT_USAGE, str(exc)) from None

"""What every HTML page of the service shares: its templates, rendered with autoescaping
(everything shown may come from an issue), and headers that allow no script at all."""

from __future__ import annotations

from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined

HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}

templates = Environment(loader=FileSystemLoader(Path(__file__).parent / "templates"),
                        autoescape=True, undefined=StrictUndefined, trim_blocks=True,
                        lstrip_blocks=True)

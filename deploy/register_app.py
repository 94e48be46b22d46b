"""Write the page that registers triagebot's GitHub App from its manifest.

GitHub creates an App from a manifest only through a form POST from the browser of
someone signed in (the manifest flow); the "New GitHub App" settings page has no field
for one. This writes that form, with `github-app-manifest.json` aimed at your host:

    python3 deploy/register_app.py --host triagebot.example.com > register.html

Open register.html in the browser signed in to GitHub, press the button, name the App,
and create it. GitHub then sends the browser to https://HOST/?code=CODE: copy CODE and,
within an hour, exchange it for the App's id, key and webhook secret (deploy/README.md).
Standard library only, so it runs before anything is installed.
"""

from __future__ import annotations

import argparse
import html
import json
import re
import secrets
import sys
from pathlib import Path
from typing import Any

MANIFEST = Path(__file__).with_name("github-app-manifest.json")
_HOST = re.compile(r"^[A-Za-z0-9.-]+(?::[0-9]{1,5})?$")
_ORG = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$")


def manifest_for(host: str, *, name: str | None = None, teams: bool = False) -> dict[str, Any]:
    """The manifest with its URLs on `host`; `teams` adds `members: read`, which only
    `[access] teams` in a repository's .github/triagebot.toml needs."""
    if not _HOST.fullmatch(host):
        raise ValueError(f"{host!r} is not a host name (as in triagebot.example.com)")
    data: dict[str, Any] = json.loads(MANIFEST.read_text())
    data["url"] = f"https://{host}"
    data["hook_attributes"]["url"] = f"https://{host}/webhook"
    data["redirect_url"] = f"https://{host}/"
    if name:
        data["name"] = name
    if teams:
        data["default_permissions"]["members"] = "read"
    return data


def form_url(github: str, org: str | None) -> str:
    base = github.rstrip("/")
    if org is None:
        return f"{base}/settings/apps/new"
    if not _ORG.fullmatch(org):
        raise ValueError(f"{org!r} is not an organisation name")
    return f"{base}/organizations/{org}/settings/apps/new"


def page(manifest: dict[str, Any], action: str, state: str) -> str:
    value = html.escape(json.dumps(manifest), quote=True)
    target = html.escape(f"{action}?state={state}", quote=True)
    return (
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<title>Register triagebot's GitHub App</title></head><body>\n"
        f"<p>This creates the GitHub App <strong>{html.escape(manifest['name'])}</strong> "
        f"with its webhook at <code>{html.escape(manifest['hook_attributes']['url'])}"
        "</code>. GitHub asks you to confirm, and lets you change the name.</p>\n"
        f"<form action=\"{target}\" method=\"post\">\n"
        f"<input type=\"hidden\" name=\"manifest\" value=\"{value}\">\n"
        "<button type=\"submit\">Create the GitHub App on GitHub</button>\n"
        "</form>\n</body></html>\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", required=True,
                        help="the public host of the service, as in triagebot.example.com")
    parser.add_argument("--org", help="register the App for this organisation instead of "
                                      "your own account")
    parser.add_argument("--name", help="the App's name (unique on GitHub; default: the "
                                       "manifest's)")
    parser.add_argument("--teams", action="store_true",
                        help="also ask for members: read, for [access] teams")
    parser.add_argument("--github", default="https://github.com",
                        help="GitHub's address; https://HOST for GitHub Enterprise Server")
    args = parser.parse_args(argv)
    try:
        manifest = manifest_for(args.host, name=args.name, teams=args.teams)
        action = form_url(args.github, args.org)
    except ValueError as exc:
        parser.error(str(exc))
    sys.stdout.write(page(manifest, action, secrets.token_hex(8)))
    sys.stderr.write(f"Open the page, create the App, then copy CODE from "
                     f"https://{args.host}/?code=CODE and exchange it within an hour "
                     "(deploy/README.md, step 1.2).\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

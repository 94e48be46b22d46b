"""A tiny engine with twenty releases in a local package index, for bisect tests.

Each release is a wheel of the fake vLLM (tests/fakes/vllm_stub) under a release number
vLLM really had, so every step's plan renders with that release's own config keys. What
changes between releases: from `CHANGE` on, speculative decoding makes generation slower
instead of faster (the report's symptom); `BROKEN` is a release whose package does not
import, as a broken build would not.

Below the releases: daily nightlies between the last good release and `CHANGE`
(0.20.1.dev20260101 ...), slow from `CHANGE_NIGHTLY` on, and three commits a day on the
branch between the two release tags, slow from `CULPRIT` on, each with a wheel in its
own simple-API index (`serve_commit_index`) except `NO_WHEEL`.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import http.server
import threading
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

STUB = Path(__file__).resolve().parents[1] / "fakes" / "vllm_stub" / "vllm"
RELEASES = ["0.14.0", "0.14.1", "0.15.0", "0.15.1", "0.16.0", "0.17.0", "0.17.1", "0.18.0",
            "0.18.1", "0.19.0", "0.19.1", "0.20.0", "0.20.1", "0.20.2", "0.21.0", "0.22.0",
            "0.22.1", "0.23.0", "0.24.0", "0.25.0"]
CHANGE = "0.20.1"
BROKEN = "0.19.0"
LAST_GOOD = "0.20.0"
NIGHTLIES = [f"0.20.1.dev202601{day:02d}" for day in range(1, 9)]
CHANGE_NIGHTLY = "0.20.1.dev20260105"
# Three commits a day, 2026-01-01 .. 01-08, at 06:00, 12:00 and 18:00 UTC; nightly D was
# built at the end of day D, so it holds that day's commits.
COMMITS: list[dict[str, Any]] = [
    {"sha": hashlib.sha1(f"commit {k}".encode()).hexdigest(),
     "date": f"2026-01-{k // 3 + 1:02d}T{6 + 6 * (k % 3):02d}:00:00Z",
     "message": f"[Misc] change number {k} (#{3000 + k})", "files": [f"vllm/misc/m{k}.py"]}
    for k in range(24)]
CULPRIT_AT = 13  # the second commit of 2026-01-05
COMMITS[CULPRIT_AT].update(message="[Spec Decode] ngram: look up every step (#3013)",
                           files=["vllm/v1/spec_decode/ngram_proposer.py"])
CULPRIT = COMMITS[CULPRIT_AT]["sha"]
NO_WHEEL = COMMITS[11]["sha"]  # a commit of 2026-01-04 whose build is missing

# Seconds per generated token: no speculation, speculation before and after the change.
_TIMING = '''

import time as _time

_NO_SPEC_S, _SPEC_S = 0.0010, {spec_s}
_run_unchanged = LLM._run


def _timed_run(self, prompts, params, api):
    per_token = _SPEC_S if self.k else _NO_SPEC_S
    _time.sleep(per_token * params.max_tokens * max(1, len(prompts)))
    return _run_unchanged(self, prompts, params, api)


LLM._run = _timed_run
'''

REPORT = f"""# ngram speculation is slower than no speculation

Offline `LLM.generate` with ngram speculation (k=3) is slower than without it on
vLLM {RELEASES[-1]}; it was faster on {RELEASES[0]}.

```python
llm = LLM(model="meta-llama/Llama-3.1-8B-Instruct", enforce_eager=True,
          speculative_config={{"method": "ngram", "num_speculative_tokens": 3,
                              "prompt_lookup_max": 3, "prompt_lookup_min": 1}})
```

| config | tok/s |
|---|---|
| no spec | 100 |
| ngram k=3 | 70 |
"""


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split(".")[:3])


def _wheel(where: Path, version: str, *, slow: bool, broken: bool = False) -> Path:
    """One wheel of the fake vLLM at `version`, its speculation slow or fast."""
    files: dict[str, str] = {}
    for path in sorted(STUB.rglob("*.py")):
        arc = "vllm/" + path.relative_to(STUB).as_posix()
        text = path.read_text()
        if arc == "vllm/__init__.py":
            text = text.replace('os.environ.get("FAKE_VLLM_VERSION", "0.33.0")',
                                repr(version))
            text += _TIMING.format(spec_s=0.0015 if slow else 0.0005)
            if broken:
                text = 'raise ImportError("this build is broken")\n' + text
        if arc == "vllm/_version.py":
            text = f'__version__ = version = "{version}"\n__commit_id__ = commit_id = None\n'
        files[arc] = text
    info = f"vllm-{version}.dist-info"
    files[f"{info}/METADATA"] = f"Metadata-Version: 2.1\nName: vllm\nVersion: {version}\n"
    files[f"{info}/WHEEL"] = ("Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: "
                              "true\nTag: py3-none-any\n")
    files[f"{info}/RECORD"] = "".join(f"{p},,\n" for p in [*files, f"{info}/RECORD"])
    target = where / f"vllm-{version}-py3-none-any.whl"
    with zipfile.ZipFile(target, "w") as zf:
        for arc, text in files.items():
            zf.writestr(arc, text)
    return target


def build_index(where: Path, *, nightlies: bool = True) -> Path:
    """Write the twenty release wheels (and the nightlies) into `where` and return it."""
    where.mkdir(parents=True, exist_ok=True)
    for version in RELEASES:
        _wheel(where, version, slow=_key(version) >= _key(CHANGE), broken=version == BROKEN)
    for version in NIGHTLIES if nightlies else []:
        _wheel(where, version, slow=version >= CHANGE_NIGHTLY)
    return where


def build_commit_index(where: Path) -> Path:
    """A simple-API index per commit, `where/<sha>/vllm/`, as wheels.vllm.ai lays out."""
    for k, commit in enumerate(COMMITS):
        if commit["sha"] == NO_WHEEL:
            continue
        folder = where / commit["sha"] / "vllm"
        folder.mkdir(parents=True, exist_ok=True)
        wheel = _wheel(folder, f"0.20.1.dev{k}+g{commit['sha'][:7]}", slow=k >= CULPRIT_AT)
        href = wheel.name.replace("+", "%2B")
        (folder / "index.html").write_text(
            f'<!DOCTYPE html><html><body><a href="{href}">{wheel.name}</a></body></html>\n')
    return where


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextlib.contextmanager
def serve_commit_index(where: Path) -> Iterator[str]:
    """Serve `build_commit_index(where)` over HTTP; yields the `{sha}` URL template."""
    build_commit_index(where)
    handler = functools.partial(_Quiet, directory=str(where))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/{{sha}}"
    finally:
        server.shutdown()
        server.server_close()


def compare(fake: Any, repo: str) -> None:
    """The fake GitHub's compare answer between the two release tags around the change."""
    fake.add_compare(repo, f"v{LAST_GOOD}", f"v{CHANGE}", COMMITS)


def compare_shas(fake: Any, repo: str, old: int, new: int, *, digits: int = 10,
                 status: str = "ahead") -> tuple[str, str]:
    """The fake GitHub's compare answer between two commits of `COMMITS`, by index, as
    abbreviated SHAs; returns (old, new) as a user would write them."""
    base, head = COMMITS[old]["sha"][:digits], COMMITS[new]["sha"][:digits]
    fake.add_compare(repo, base, head, COMMITS[old + 1:new + 1], status=status,
                     base_sha=COMMITS[old]["sha"])
    return base, head


def release_wheel(where: Path, version: str, *, slow: bool) -> Path:
    """One release of the fake vLLM in `where`, its speculation slow (the report's
    symptom) or fast; for tests that choose what each release does (the watch's)."""
    where.mkdir(parents=True, exist_ok=True)
    return _wheel(where, version, slow=slow)

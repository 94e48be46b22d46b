"""A tiny engine with twenty releases in a local package index, for bisect tests.

Each release is a wheel of the fake vLLM (tests/fakes/vllm_stub) under a release number
vLLM really had, so every step's plan renders with that release's own config keys. What
changes between releases: from `CHANGE` on, speculative decoding makes generation slower
instead of faster (the report's symptom); `BROKEN` is a release whose package does not
import, as a broken build would not.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

STUB = Path(__file__).resolve().parents[1] / "fakes" / "vllm_stub" / "vllm"
RELEASES = ["0.14.0", "0.14.1", "0.15.0", "0.15.1", "0.16.0", "0.17.0", "0.17.1", "0.18.0",
            "0.18.1", "0.19.0", "0.19.1", "0.20.0", "0.20.1", "0.20.2", "0.21.0", "0.22.0",
            "0.22.1", "0.23.0", "0.24.0", "0.25.0"]
CHANGE = "0.20.1"
BROKEN = "0.19.0"

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
    return tuple(int(p) for p in version.split("."))


def build_index(where: Path) -> Path:
    """Write the twenty wheels into `where` and return it."""
    where.mkdir(parents=True, exist_ok=True)
    for version in RELEASES:
        spec_s = 0.0015 if _key(version) >= _key(CHANGE) else 0.0005
        files: dict[str, str] = {}
        for path in sorted(STUB.rglob("*.py")):
            arc = "vllm/" + path.relative_to(STUB).as_posix()
            text = path.read_text()
            if arc == "vllm/__init__.py":
                text = text.replace('os.environ.get("FAKE_VLLM_VERSION", "0.33.0")',
                                    repr(version))
                text += _TIMING.format(spec_s=spec_s)
                if version == BROKEN:
                    text = 'raise ImportError("this build is broken")\n' + text
            if arc == "vllm/_version.py":
                text = f'__version__ = version = "{version}"\n__commit_id__ = commit_id = None\n'
            files[arc] = text
        info = f"vllm-{version}.dist-info"
        files[f"{info}/METADATA"] = f"Metadata-Version: 2.1\nName: vllm\nVersion: {version}\n"
        files[f"{info}/WHEEL"] = ("Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: "
                                  "true\nTag: py3-none-any\n")
        files[f"{info}/RECORD"] = "".join(f"{p},,\n" for p in [*files, f"{info}/RECORD"])
        with zipfile.ZipFile(where / f"vllm-{version}-py3-none-any.whl", "w") as zf:
            for arc, text in files.items():
                zf.writestr(arc, text)
    return where

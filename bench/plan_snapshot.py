"""Capture `triagebot parse --json` and `triagebot plan --json` on the seeds and the dev
reports, one file per command, so that a refactor of the planner can be checked to print
the same bytes: run it before the change into one folder, after it into another, and
compare with `--against`.

    .venv/bin/python bench/plan_snapshot.py OUT [--shared ../shared] [--against BEFORE]

The commands run in-process through the CLI's own app (the bytes and exit code a shell
would see); each file holds the exit code on its first line, then stdout and stderr. Plans
are taken on the default runner and on the cpu runner, for vLLM and for vllm-mlx.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from pathlib import Path

from typer.testing import CliRunner

ROOT = Path(__file__).resolve().parents[1]
# This checkout's triagebot, not the one the virtual environment was installed from.
sys.path.insert(0, str(ROOT))

import triagebot  # noqa: E402
from triagebot.cli import app  # noqa: E402

# The plan variants: the runner kinds the planner's profiles choose between.
VARIANTS = {
    "default": [],
    "cpu": ["gpu=cpu"],
    "mlx": ["engine=vllm-mlx"],
    "mlx-cpu": ["engine=vllm-mlx", "gpu=cpu"],
    "apple": ["gpu=apple-silicon"],
}


def reports(shared: Path, tmp: Path) -> list[tuple[str, Path, list[str]]]:
    """(name, report file, extra CLI options) for each seed and dev report."""
    found = [(p.stem, p, []) for p in sorted((shared / "seeds").glob("*.txt"))]
    for path in sorted((shared / "parse-dev").glob("*.json")):
        item = json.loads(path.read_text(encoding="utf-8"))
        text_file = tmp / f"{path.stem}.md"
        text_file.write_text(item["text"], encoding="utf-8")
        extra = ["--title", item["title"]] if item.get("title") else []
        repo = re.match(r"https://github\.com/([^/]+/[^/]+)/", item.get("url") or "")
        extra += ["--repo", repo[1]] if repo else []
        found.append((f"dev-{path.stem}", text_file, extra))
    return found


def capture(out: Path, shared: Path) -> int:
    out.mkdir(parents=True, exist_ok=True)
    runner = CliRunner()
    count = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name, path, extra in reports(shared, Path(tmp)):
            commands = {"parse": ["parse", str(path), *extra, "--json"]}
            for variant, words in VARIANTS.items():
                commands[f"plan-{variant}"] = ["plan", str(path), *words, *extra, "--json"]
            for what, args in commands.items():
                result = runner.invoke(app, args)
                text = f"{result.exit_code}\n{result.stdout}\n--- stderr\n{result.stderr}"
                (out / f"{name}.{what}.txt").write_text(text, encoding="utf-8")
                count += 1
    return count


def compare(before: Path, after: Path) -> int:
    names = sorted({p.name for p in before.glob("*.txt")} | {p.name for p in after.glob("*.txt")})
    differ = [n for n in names if not (before / n).is_file() or not (after / n).is_file()
              or (before / n).read_bytes() != (after / n).read_bytes()]
    for name in differ:
        print(f"differs: {name}")
    print(f"{len(names) - len(differ)} of {len(names)} identical")
    return 1 if differ else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--shared", type=Path, default=Path("../shared"))
    parser.add_argument("--against", type=Path, help="a folder captured before; compare")
    args = parser.parse_args()
    print(f"triagebot from {Path(triagebot.__file__).parent}")
    print(f"{capture(args.out, args.shared)} outputs in {args.out}")
    return compare(args.against, args.out) if args.against else 0


if __name__ == "__main__":
    sys.exit(main())

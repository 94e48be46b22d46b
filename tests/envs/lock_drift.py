"""Print how a fresh resolve differs from uv.lock: `uv pip freeze | python lock_drift.py uv.lock`.

Used by `./dev test-latest` so that a failure there comes with the releases that moved.
"""

from __future__ import annotations

import re
import sys
import tomllib


def locked_versions(lock_path: str) -> dict[str, str]:
    with open(lock_path, "rb") as fh:
        lock = tomllib.load(fh)
    return {_norm(p["name"]): p["version"] for p in lock.get("package", []) if "version" in p}


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def main() -> int:
    locked = locked_versions(sys.argv[1])
    moved = []
    for line in sys.stdin:
        name, sep, version = line.strip().partition("==")
        if not sep:
            continue
        was = locked.get(_norm(name))
        if was != version:
            moved.append(f"  {name}: {was or 'not in the lock'} -> {version}")
    print("\n".join(moved) if moved else "  nothing: the lock holds the newest allowed releases")
    return 0


if __name__ == "__main__":
    sys.exit(main())

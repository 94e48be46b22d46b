#!/usr/bin/env bash
# Runs every cell of triagebot plan d3978f1ceb02 in order.
# Each script writes its RunResult to results/<cell>.json; a failing cell does not stop
# the others, and the exit status is 1 if any cell failed.
set -uo pipefail
cd "$(dirname "$0")"
mkdir -p results
PY=${PYTHON:-python3}
status=0
echo '== c654e84b6b2 no_spec'
TRIAGEBOT_RESULT=results/c654e84b6b2.json "$PY" c654e84b6b2.py || status=1
echo '== cffe63e3d6a spec'
TRIAGEBOT_RESULT=results/cffe63e3d6a.json "$PY" cffe63e3d6a.py || status=1
echo '== c26be0d17d1 spec (A/A)'
TRIAGEBOT_RESULT=results/c26be0d17d1.json "$PY" c26be0d17d1.py || status=1
exit "$status"

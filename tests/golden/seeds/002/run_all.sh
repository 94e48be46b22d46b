#!/usr/bin/env bash
# Runs every cell of triagebot plan 64d6fe1964d6 in order.
# Each script writes its RunResult to results/<cell>.json; a failing cell does not stop
# the others, and the exit status is 1 if any cell failed.
set -uo pipefail
cd "$(dirname "$0")"
mkdir -p results
PY=${PYTHON:-python3}
status=0
echo '== cc7b08ee6f1 no_spec'
TRIAGEBOT_RESULT=results/cc7b08ee6f1.json "$PY" cc7b08ee6f1.py || status=1
echo '== cf082bd5294 spec'
TRIAGEBOT_RESULT=results/cf082bd5294.json "$PY" cf082bd5294.py || status=1
echo '== c82f03e260c spec (A/A)'
TRIAGEBOT_RESULT=results/c82f03e260c.json "$PY" c82f03e260c.py || status=1
exit "$status"

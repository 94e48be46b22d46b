#!/usr/bin/env bash
# Runs every cell of triagebot plan 93bf6f7dd2fa in order.
# Each script writes its RunResult to results/<cell>.json; a failing cell does not stop
# the others, and the exit status is 1 if any cell failed.
set -uo pipefail
cd "$(dirname "$0")"
mkdir -p results
PY=${PYTHON:-python3}
status=0
echo '== c6684a00ae8 PIECEWISE'
TRIAGEBOT_RESULT=results/c6684a00ae8.json "$PY" c6684a00ae8.py || status=1
echo '== c2f11a09731 FULL'
TRIAGEBOT_RESULT=results/c2f11a09731.json "$PY" c2f11a09731.py || status=1
echo '== c674cef000d FULL (A/A)'
TRIAGEBOT_RESULT=results/c674cef000d.json "$PY" c674cef000d.py || status=1
exit "$status"

#!/usr/bin/env bash
# Runs every cell of triagebot plan a36504ef3430 in order.
# Each script writes its RunResult to results/<cell>.json; a failing cell does not stop
# the others, and the exit status is 1 if any cell failed.
set -uo pipefail
cd "$(dirname "$0")"
mkdir -p results
PY=${PYTHON:-python3}
status=0
echo '== c6ed3538e40 no_spec'
TRIAGEBOT_RESULT=results/c6ed3538e40.json "$PY" c6ed3538e40.py || status=1
echo '== c6e0204465e spec'
TRIAGEBOT_RESULT=results/c6e0204465e.json "$PY" c6e0204465e.py || status=1
echo '== ca5b431aad4 spec (A/A)'
TRIAGEBOT_RESULT=results/ca5b431aad4.json "$PY" ca5b431aad4.py || status=1
exit "$status"

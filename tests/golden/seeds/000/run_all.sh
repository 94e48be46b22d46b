#!/usr/bin/env bash
# Runs every cell of triagebot plan 988b81c116aa in order.
# Each script writes its RunResult to results/<cell>.json; a failing cell does not stop
# the others, and the exit status is 1 if any cell failed.
set -uo pipefail
cd "$(dirname "$0")"
mkdir -p results
PY=${PYTHON:-python3}
status=0
echo '== cdc7a3e23b4 no_spec + eager'
TRIAGEBOT_RESULT=results/cdc7a3e23b4.json "$PY" cdc7a3e23b4.py || status=1
echo '== c34a7d3324d no_spec + graph'
TRIAGEBOT_RESULT=results/c34a7d3324d.json "$PY" c34a7d3324d.py || status=1
echo '== cfe057a30f2 spec + eager'
TRIAGEBOT_RESULT=results/cfe057a30f2.json "$PY" cfe057a30f2.py || status=1
echo '== c7a5bc2b371 spec + graph'
TRIAGEBOT_RESULT=results/c7a5bc2b371.json "$PY" c7a5bc2b371.py || status=1
echo '== caaa45d2799 spec + graph (A/A)'
TRIAGEBOT_RESULT=results/caaa45d2799.json "$PY" caaa45d2799.py || status=1
exit "$status"

#!/usr/bin/env bash
# Runs every cell of triagebot plan 99416860f061 in order.
# Each script writes its RunResult to results/<cell>.json; a failing cell does not stop
# the others, and the exit status is 1 if any cell failed.
set -uo pipefail
cd "$(dirname "$0")"
mkdir -p results
PY=${PYTHON:-python3}
status=0
echo '== c5412687508 no_spec + eager'
TRIAGEBOT_RESULT=results/c5412687508.json "$PY" c5412687508.py || status=1
echo '== c91288e5af7 no_spec + graph'
TRIAGEBOT_RESULT=results/c91288e5af7.json "$PY" c91288e5af7.py || status=1
echo '== c1a561e6e8c spec + eager'
TRIAGEBOT_RESULT=results/c1a561e6e8c.json "$PY" c1a561e6e8c.py || status=1
echo '== c98d53ce1ea spec + graph'
TRIAGEBOT_RESULT=results/c98d53ce1ea.json "$PY" c98d53ce1ea.py || status=1
echo '== c0f949392dc spec + graph (A/A)'
TRIAGEBOT_RESULT=results/c0f949392dc.json "$PY" c0f949392dc.py || status=1
exit "$status"

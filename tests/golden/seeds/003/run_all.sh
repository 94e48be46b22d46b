#!/usr/bin/env bash
# Runs every cell of triagebot plan 83fa583ab959 in order.
# Each script writes its RunResult to results/<cell>.json; a failing cell does not stop
# the others, and the exit status is 1 if any cell failed.
set -uo pipefail
cd "$(dirname "$0")"
mkdir -p results
PY=${PYTHON:-python3}
status=0
echo '== c1bd5672153 v1 + eager'
TRIAGEBOT_RESULT=results/c1bd5672153.json "$PY" c1bd5672153.py || status=1
echo '== c36858ddebe v1 + graph'
TRIAGEBOT_RESULT=results/c36858ddebe.json "$PY" c36858ddebe.py || status=1
echo '== c2894a01bf7 v2 strict + eager'
TRIAGEBOT_RESULT=results/c2894a01bf7.json "$PY" c2894a01bf7.py || status=1
echo '== c3116e1ceae v2 strict + graph'
TRIAGEBOT_RESULT=results/c3116e1ceae.json "$PY" c3116e1ceae.py || status=1
echo '== c123a011a42 v2 probabilistic + eager'
TRIAGEBOT_RESULT=results/c123a011a42.json "$PY" c123a011a42.py || status=1
echo '== cbc1e85240c v2 probabilistic + graph'
TRIAGEBOT_RESULT=results/cbc1e85240c.json "$PY" cbc1e85240c.py || status=1
echo '== cc68e44dc24 v1 + graph (A/A)'
TRIAGEBOT_RESULT=results/cc68e44dc24.json "$PY" cc68e44dc24.py || status=1
exit "$status"

#!/usr/bin/env bash
# Runs every cell of triagebot plan dcfd115d9834 in order.
# Each script writes its RunResult to results/<cell>.json; a failing cell does not stop
# the others, and the exit status is 1 if any cell failed.
set -uo pipefail
cd "$(dirname "$0")"
mkdir -p results
PY=${PYTHON:-python3}
status=0
echo '== cb1331e5d20 Single GPU GLM-4.1V-9B-Thinking image + vit_eager'
TRIAGEBOT_RESULT=results/cb1331e5d20.json "$PY" cb1331e5d20.py || status=1
echo '== c342f96396a Single GPU GLM-4.1V-9B-Thinking image + vit_graph'
TRIAGEBOT_RESULT=results/c342f96396a.json "$PY" c342f96396a.py || status=1
echo '== c27f809bc05 Multi GPU GLM-4.1V-9B-Thinking image + vit_eager'
TRIAGEBOT_RESULT=results/c27f809bc05.json "$PY" c27f809bc05.py || status=1
echo '== c35768b0c87 Multi GPU GLM-4.1V-9B-Thinking image + vit_graph'
TRIAGEBOT_RESULT=results/c35768b0c87.json "$PY" c35768b0c87.py || status=1
echo '== ccf72442acd Single GPU GLM-4.6V-Flash video + vit_eager'
TRIAGEBOT_RESULT=results/ccf72442acd.json "$PY" ccf72442acd.py || status=1
echo '== c6a32b85087 Single GPU GLM-4.6V-Flash video + vit_graph'
TRIAGEBOT_RESULT=results/c6a32b85087.json "$PY" c6a32b85087.py || status=1
echo '== ce8ab4b06a8 Multi GPU GLM-4.6V-Flash video + vit_eager'
TRIAGEBOT_RESULT=results/ce8ab4b06a8.json "$PY" ce8ab4b06a8.py || status=1
echo '== c9de394ba1b Multi GPU GLM-4.6V-Flash video + vit_graph'
TRIAGEBOT_RESULT=results/c9de394ba1b.json "$PY" c9de394ba1b.py || status=1
echo '== c2011f0aa2a Single GPU GLM-4.1V-9B-Thinking image + vit_graph (A/A)'
TRIAGEBOT_RESULT=results/c2011f0aa2a.json "$PY" c2011f0aa2a.py || status=1
exit "$status"

#!/usr/bin/env bash
# Runs every cell of triagebot plan efb8ff1d2ebb in order.
# Each script writes its RunResult to results/<cell>.json; a failing cell does not stop
# the others, and the exit status is 1 if any cell failed.
set -uo pipefail
cd "$(dirname "$0")"
mkdir -p results
PY=${PYTHON:-python3}
status=0
echo '== c92562de4d6 Single GPU GLM-4.1V-9B-Thinking image + vit_eager'
TRIAGEBOT_RESULT=results/c92562de4d6.json "$PY" c92562de4d6.py || status=1
echo '== c517c88ea99 Single GPU GLM-4.1V-9B-Thinking image + vit_graph'
TRIAGEBOT_RESULT=results/c517c88ea99.json "$PY" c517c88ea99.py || status=1
echo '== ca7b4e86bec Multi GPU GLM-4.1V-9B-Thinking image + vit_eager'
TRIAGEBOT_RESULT=results/ca7b4e86bec.json "$PY" ca7b4e86bec.py || status=1
echo '== cb692deff71 Multi GPU GLM-4.1V-9B-Thinking image + vit_graph'
TRIAGEBOT_RESULT=results/cb692deff71.json "$PY" cb692deff71.py || status=1
echo '== ccf72442acd Single GPU GLM-4.6V-Flash video + vit_eager'
TRIAGEBOT_RESULT=results/ccf72442acd.json "$PY" ccf72442acd.py || status=1
echo '== c6a32b85087 Single GPU GLM-4.6V-Flash video + vit_graph'
TRIAGEBOT_RESULT=results/c6a32b85087.json "$PY" c6a32b85087.py || status=1
echo '== ce8ab4b06a8 Multi GPU GLM-4.6V-Flash video + vit_eager'
TRIAGEBOT_RESULT=results/ce8ab4b06a8.json "$PY" ce8ab4b06a8.py || status=1
echo '== c9de394ba1b Multi GPU GLM-4.6V-Flash video + vit_graph'
TRIAGEBOT_RESULT=results/c9de394ba1b.json "$PY" c9de394ba1b.py || status=1
echo '== ca717c391a3 Single GPU GLM-4.1V-9B-Thinking image + vit_graph (A/A)'
TRIAGEBOT_RESULT=results/ca717c391a3.json "$PY" ca717c391a3.py || status=1
exit "$status"

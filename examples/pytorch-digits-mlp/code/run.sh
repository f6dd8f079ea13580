#!/bin/sh
# Entrypoint the d5list process executor runs, in its sandbox, once per
# seed: `d5list run` to make the claim, a runner to re-run it. The executor
# sets D5_GATE (which hands over the seed) and D5_RESULT_LOG (which takes
# the log), PYTHONPATH (for d5harness), and D5_RUN_INDEX, D5_RUNS,
# D5_DATA_DIR, D5_BENCHMARK, D5_SCRATCH, D5_BUNDLE. The mutable part of recipe.yaml is
# passed here as arguments.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
exec /usr/bin/python3 "$here/train.py" --batch-size 32 --lr 0.05 --momentum 0.9 "$@"

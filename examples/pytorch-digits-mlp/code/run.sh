#!/bin/sh
# Entrypoint the d5list process executor runs, in its sandbox, once per
# seed: `d5list run` to make the claim, a runner to re-run it. The executor
# sets D5_GATE (which hands over the seed) and D5_RESULT_LOG (which takes
# the log), D5_TASK (the benchmark's and the recipe's settings, which
# d5harness reads), PYTHONPATH (for d5harness), and D5_RUN_INDEX, D5_RUNS,
# D5_DATA_DIR, D5_BENCHMARK, D5_SCRATCH, D5_BUNDLE.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
exec /usr/bin/python3 "$here/train.py" "$@"

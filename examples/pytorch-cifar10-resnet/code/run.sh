#!/bin/sh
# Entrypoint the d5list process executor runs once per seed. The executor
# sets D5_GATE (which hands over the seed), D5_RESULT_LOG, PYTHONPATH (for
# d5harness), D5_DATA_DIR, D5_BENCHMARK and D5_SCRATCH, the same for every
# run of a job; extra arguments (for example --synthetic) are passed to
# train.py.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
PYTHON=${PYTHON:-python3}
exec "$PYTHON" "$here/train.py" "$@"

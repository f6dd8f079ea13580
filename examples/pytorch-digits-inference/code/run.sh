#!/bin/sh
# Entrypoint the d5list process executor runs, in its sandbox, once per
# seed; d5harness (on PYTHONPATH) takes the seed at $D5_GATE and writes
# $D5_RESULT_LOG. The batch size is the recipe's (the runner hands it to
# the harness in $D5_TASK); the threads are passed here.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
exec /usr/bin/python3 "$here/infer.py" --threads 1 "$@"

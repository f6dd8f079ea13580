#!/bin/sh
# Entrypoint the d5list process executor runs, in its sandbox, once per
# seed; d5harness (on PYTHONPATH) takes the seed at $D5_GATE, runs the
# benchmark's calls ($D5_TASK) and writes $D5_RESULT_LOG. The mutable part
# of recipe.yaml is passed as arguments.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
exec /usr/bin/python3 "$here/gemm.py" --threads 1 "$@"

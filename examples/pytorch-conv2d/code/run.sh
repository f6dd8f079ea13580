#!/bin/sh
# Entrypoint the d5list process executor runs, in its sandbox, once per
# seed ($D5_GATE hands over the seed, $D5_RESULT_LOG takes the log; the
# executor sets the others, and PYTHONPATH for d5harness). The
# mutable part of recipe.yaml is passed as arguments.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
exec /usr/bin/python3 "$here/conv2d.py" --threads 1 "$@"

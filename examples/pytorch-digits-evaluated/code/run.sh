#!/bin/sh
# Entrypoint the d5list process executor runs, in its sandbox, once per
# seed. It sets D5_GATE (which hands over the seed), D5_RESULT_LOG (which
# takes the log), D5_STATES (which takes the states it trains through, for
# the runner's step audit), D5_MODEL (which takes the final weights, for
# the runner's evaluation) and PYTHONPATH (for d5harness.take_seed), the
# same for every run of a job.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
# OpenBLAS's own thread pool ignores torch.set_num_threads (see
# examples/pytorch-digits-mlp/code/run.sh).
export OPENBLAS_NUM_THREADS=1
exec /usr/bin/python3 "$here/train.py" "$@"

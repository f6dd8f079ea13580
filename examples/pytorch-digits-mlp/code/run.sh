#!/bin/sh
# Entrypoint the d5list process executor runs, in its sandbox, once per
# seed: `d5list run` to make the claim, a runner to re-run it. The executor
# sets D5_GATE (which hands over the seed) and D5_RESULT_LOG (which takes
# the log), D5_TASK (the benchmark's and the recipe's settings, which
# d5harness reads), PYTHONPATH (for d5harness), and D5_DATA_DIR,
# D5_BENCHMARK, D5_SCRATCH, D5_BUNDLE, the same for every run of a job.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
# Debian's PyTorch does its matrix products in OpenBLAS, whose own thread
# pool ignores torch.set_num_threads and spins while it waits for work: left
# at its default of one thread per core, a GEMM that torch was told to run on
# one thread took 12 times as long beside a busy loop on a 2-core machine.
export OPENBLAS_NUM_THREADS=1
exec /usr/bin/python3 "$here/train.py" "$@"

#!/bin/sh
# Entrypoint the d5list process executor runs, in its sandbox, once per
# seed; d5harness (on PYTHONPATH) takes the seed at $D5_GATE, runs the
# benchmark's calls ($D5_TASK) and writes $D5_RESULT_LOG. The mutable part
# of recipe.yaml is passed as arguments.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
# Debian's PyTorch does its matrix products in OpenBLAS, whose own thread
# pool ignores torch.set_num_threads and spins while it waits for work: left
# at its default of one thread per core, a GEMM that torch was told to run on
# one thread took 12 times as long beside a busy loop on a 2-core machine.
threads=1
export OPENBLAS_NUM_THREADS=$threads
exec /usr/bin/python3 "$here/conv2d.py" --threads "$threads" "$@"

#!/bin/sh
# Entrypoint the d5list process executor runs, in its sandbox, once per
# seed (see ../pytorch-digits-mlp/code/run.sh for the variables it sets).
# train_ddp.py starts the workers itself with torch.multiprocessing and
# joins them with torch.distributed over TCP on the sandbox's loopback.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
# Debian's PyTorch does its matrix products in OpenBLAS, whose own thread
# pool ignores torch.set_num_threads and spins while it waits for work: left
# at its default of one thread per core, a GEMM that torch was told to run on
# one thread took 12 times as long beside a busy loop on a 2-core machine.
# Each worker here runs one thread.
export OPENBLAS_NUM_THREADS=1
exec /usr/bin/python3 "$here/train_ddp.py" --workers 2 "$@"

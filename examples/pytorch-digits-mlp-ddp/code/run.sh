#!/bin/sh
# Entrypoint the d5list process executor runs, in its sandbox, once per
# seed (see ../pytorch-digits-mlp/code/run.sh for the variables it sets).
# train_ddp.py starts the workers itself with torch.multiprocessing and
# joins them with torch.distributed over TCP on the sandbox's loopback.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
exec /usr/bin/python3 "$here/train_ddp.py" --workers 2 "$@"

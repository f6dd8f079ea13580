"""The MLP of l2-digits-mlp-torch-cpu, trained data-parallel with
torch.distributed: NCCL on GPUs where CUDA is available and every worker
has a GPU of its own (torch.cuda.device_count() >= the world size), gloo on
CPU otherwise. The backend is logged (MLLOG key distributed_backend).

Every worker holds the whole model; each global minibatch (workers x
batch_size samples) is split in rank order, each worker computes the
gradient of its slice, and an all_reduce sums the gradients (flattened into
one tensor) before every step, so that all workers take the same step. For a seed and a worker
count the accuracies are always the same. Rank 0 writes the MLLOG, and
takes the run's seed at the runner's gate (d5harness.take_seed: the
runner's clock starts there) once every worker has joined and loaded the
data; it broadcasts the seed to the others.

Where a launcher has started the workers (the d5list Slurm executor runs
one task per worker with srun, as torchrun would), each process is one
worker and meets the others through the variables it set (env://:
MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK). Otherwise (the process
executor, one sandbox on one machine) the workers are started here with
torch.multiprocessing.spawn and meet over TCP on 127.0.0.1 (Debian's
torchrun of torch 1.13 fails in its launcher on Python 3.11).

On CPU the code is that of the gloo-only version, step for step, so its
accuracies for a seed are unchanged. On GPUs the accuracies differ from
the CPU ones (other kernels), but are reproducible for a seed: cuBLAS is
made deterministic (CUBLAS_WORKSPACE_CONFIG, which
torch.use_deterministic_algorithms requires on CUDA).
"""
import argparse
import os
import socket
import sys

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from sklearn.datasets import load_digits

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mllog_emitter import Emitter  # noqa: E402
from d5harness import take_seed  # noqa: E402  (the runner's, on PYTHONPATH)

# The benchmark's fixed part: the model, data, split and epochs of
# l2-digits-mlp-torch-cpu, and the worker count.
HIDDEN = 512
EPOCHS = 30
TARGET = 0.96
TEST_SHARE = 0.2
SPLIT_SEED = 0


def split():
    digits = load_digits()
    x = digits.data.astype(np.float32) / 16.0
    y = digits.target.astype(np.int64)
    order = np.random.RandomState(SPLIT_SEED).permutation(len(x))
    n_test = int(len(x) * TEST_SHARE)
    test, train = order[:n_test], order[n_test:]
    return (torch.from_numpy(x[train]), torch.from_numpy(y[train]),
            torch.from_numpy(x[test]), torch.from_numpy(y[test]))


def backend(world):
    """NCCL where CUDA is available and each of the world's workers can
    have a GPU of its own, gloo otherwise. Every worker decides alike on
    alike nodes; a worker with too few GPUs falls back to gloo, whose
    collectives run on CPU tensors."""
    if torch.cuda.is_available() and torch.cuda.device_count() >= world:
        return "nccl"
    return "gloo"


def worker(rank, world, init, args, log_path, benchmark):
    use = backend(world)
    device = None
    if use == "nccl":
        # The worker's own GPU: its rank on this node (a launcher's
        # LOCAL_RANK), as CUDA_VISIBLE_DEVICES numbers the job's GPUs.
        # cuBLAS needs a fixed workspace to be deterministic.
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", rank)))
        torch.cuda.set_device(device)
    dist.init_process_group(use, init_method=init, rank=rank, world_size=world)
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    log = Emitter(log_path if rank == 0 else None, echo=False)
    x_train, y_train, x_test, y_test = split()
    log.event("submission_benchmark", benchmark)
    log.event("number_of_workers", world)
    log.event("distributed_backend", use)
    log.event("global_batch_size", world * args.batch_size)
    log.event("opt_base_learning_rate", args.lr)
    log.event("train_samples", len(x_train))
    log.event("eval_samples", len(x_test))

    seed = torch.tensor([take_seed() if rank == 0 else 0], dtype=torch.int64, device=device)
    dist.broadcast(seed, 0)
    seed = int(seed.item())
    log.event("seed", seed)
    log.start("run_start")
    torch.manual_seed(seed)
    model = torch.nn.Sequential(
        torch.nn.Linear(64, HIDDEN), torch.nn.ReLU(),
        torch.nn.Linear(HIDDEN, HIDDEN), torch.nn.ReLU(),
        torch.nn.Linear(HIDDEN, 10))
    if device is not None:
        # Initialised on CPU from the seed as on the gloo path, then moved.
        model.to(device)
        x_train, y_train, x_test, y_test = (t.to(device) for t in (x_train, y_train, x_test, y_test))
    params = list(model.parameters())
    opt = torch.optim.SGD(params, lr=args.lr, momentum=args.momentum)
    loss_fn = torch.nn.CrossEntropyLoss(reduction="sum")
    shuffle = torch.Generator().manual_seed(seed)
    global_batch = world * args.batch_size
    acc = 0.0
    for epoch in range(1, EPOCHS + 1):
        model.train()
        perm = torch.randperm(len(x_train), generator=shuffle)
        for i in range(0, len(perm), global_batch):
            batch = perm[i:i + global_batch]
            mine = batch[rank::world]
            opt.zero_grad()
            if len(mine):
                loss_fn(model(x_train[mine]), y_train[mine]).backward()
            else:
                for p in params:
                    p.grad = torch.zeros_like(p)
            # One all_reduce a step, of all gradients flattened together.
            flat = torch.cat([p.grad.reshape(-1) for p in params])
            dist.all_reduce(flat)
            flat /= len(batch)
            offset = 0
            for p in params:
                p.grad.copy_(flat[offset:offset + p.numel()].view_as(p))
                offset += p.numel()
            opt.step()
        if rank == 0:
            model.eval()
            with torch.no_grad():
                acc = (model(x_test).argmax(1) == y_test).float().mean().item()
            log.event("eval_accuracy", round(acc, 6), {"epoch_num": epoch})
        dist.barrier()
    log.end("run_stop", metadata={"status": "success" if acc >= TARGET else "aborted"})
    log.close()
    dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=32, help="per worker")
    ap.add_argument("--lr", type=float, default=0.1)
    ap.add_argument("--momentum", type=float, default=0.9)
    args = ap.parse_args()
    log_path = os.path.abspath(os.environ.get("D5_RESULT_LOG", "result.txt"))
    benchmark = os.environ.get("D5_BENCHMARK", "l3-digits-mlp-torch-ddp-cpu")
    if "WORLD_SIZE" in os.environ and "RANK" in os.environ:
        world = int(os.environ["WORLD_SIZE"])
        if world != args.workers:
            sys.exit("train_ddp.py: the launcher started %d workers; the benchmark fixes %d" % (world, args.workers))
        worker(int(os.environ["RANK"]), world, "env://", args, log_path, benchmark)
        return
    init = "tcp://127.0.0.1:%d" % free_port()
    mp.spawn(worker, args=(args.workers, init, args, log_path, benchmark), nprocs=args.workers, join=True)


if __name__ == "__main__":
    main()

"""The MLP of l2-digits-mlp-torch-cpu, trained data-parallel with
torch.distributed: NCCL on GPUs where CUDA is available and every worker
has a GPU of its own (torch.cuda.device_count() >= the world size), gloo on
CPU otherwise. The backend is logged (MLLOG key distributed_backend).

Every worker holds the whole model; each global minibatch (workers x
batch_size samples) is split in rank order, each worker computes the
gradient of its slice, and an all_reduce sums the gradients (flattened into
one tensor) before every step, so that all workers take the same step: the
single-process step on the global batch. For a seed and a worker count the
accuracies are always the same. The runner's harness (d5harness.Training,
on PYTHONPATH) gives the split, the initial weights and each epoch's global
batches from the seed, which rank 0 takes at the gate (the runner's clock
starts there) once every worker has joined and loaded the data, and passes
on. Rank 0 writes the MLLOG and hands the state after every step to the
harness, which passes every few steps' state to the runner.

Where a launcher has started the workers (the d5list Slurm executor runs
one task per worker with srun, as torchrun would), each process is one
worker and meets the others through the variables it set (env://:
MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK). Otherwise (the process
executor, one sandbox on one machine) the workers are started here with
torch.multiprocessing.spawn and meet over TCP on 127.0.0.1 (Debian's
torchrun of torch 1.13 fails in its launcher on Python 3.11).

On GPUs the accuracies differ from the CPU ones (other kernels), but are
reproducible for a seed: cuBLAS is made deterministic
(CUBLAS_WORKSPACE_CONFIG, which torch.use_deterministic_algorithms requires
on CUDA).
"""
import argparse
import os
import socket
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

import d5harness  # the runner's, on PYTHONPATH


def backend(world):
    """NCCL where CUDA is available and each of the world's workers can
    have a GPU of its own, gloo otherwise. Every worker decides alike on
    alike nodes; a worker with too few GPUs falls back to gloo, whose
    collectives run on CPU tensors."""
    if torch.cuda.is_available() and torch.cuda.device_count() >= world:
        return "nccl"
    return "gloo"


def worker(rank, world, init, log_path, benchmark):
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
    log = d5harness.MLLog(log_path if rank == 0 else os.devnull)
    tr = d5harness.Training(commits=rank == 0)
    x_train, y_train, x_test, y_test = (torch.from_numpy(a) for a in tr.data())
    log.event("submission_benchmark", benchmark)
    log.event("number_of_workers", world)
    log.event("distributed_backend", use)
    log.event("global_batch_size", tr.batch_size)
    log.event("opt_base_learning_rate", tr.lr)
    log.event("train_samples", len(x_train))
    log.event("eval_samples", len(x_test))

    seed = torch.tensor([tr.take_seed() if rank == 0 else 0], dtype=torch.int64, device=device)
    dist.broadcast(seed, 0)
    tr.use_seed(seed.item())
    log.event("seed", tr.seed)
    log.start("run_start")
    # Made on CPU from the seed, then moved where the worker computes.
    model = d5harness.torch_linears(tr.initial_params())
    if device is not None:
        model.to(device)
        x_train, y_train, x_test, y_test = (t.to(device) for t in (x_train, y_train, x_test, y_test))
    params = list(model.parameters())
    opt = torch.optim.SGD(params, lr=tr.lr, momentum=tr.momentum)
    tr.follow(model, opt)
    loss_fn = torch.nn.CrossEntropyLoss(reduction="sum")
    acc = 0.0
    for epoch in range(1, tr.epochs + 1):
        model.train()
        for batch in tr.batches(epoch, len(x_train)):
            mine = torch.from_numpy(batch[rank::world]).to(x_train.device)
            opt.zero_grad()
            if len(mine):
                loss_fn(model(x_train[mine]), y_train[mine]).backward()
            else:
                for p in params:
                    p.grad = torch.zeros_like(p)
            # One all_reduce a step, of all gradients flattened together:
            # their sum over the global batch, then its mean.
            flat = torch.cat([p.grad.reshape(-1) for p in params])
            dist.all_reduce(flat)
            flat /= len(batch)
            offset = 0
            for p in params:
                p.grad.copy_(flat[offset:offset + p.numel()].view_as(p))
                offset += p.numel()
            opt.step()
            tr.step()
        tr.commit(epoch)
        if rank == 0:
            model.eval()
            with torch.no_grad():
                acc = (model(x_test).argmax(1) == y_test).float().mean().item()
            log.event("eval_accuracy", acc, {"epoch_num": epoch})
        dist.barrier()
    log.end("run_stop", metadata={"status": "success" if acc >= tr.task["target"] else "aborted"})
    log.close()
    tr.audit()
    dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    log_path = os.path.abspath(os.environ.get("D5_RESULT_LOG", "result.txt"))
    benchmark = os.environ.get("D5_BENCHMARK", "l3-digits-mlp-torch-ddp-cpu")
    if "WORLD_SIZE" in os.environ and "RANK" in os.environ:
        world = int(os.environ["WORLD_SIZE"])
        if world != args.workers:
            sys.exit("train_ddp.py: the launcher started %d workers; the benchmark fixes %d" % (world, args.workers))
        worker(int(os.environ["RANK"]), world, "env://", log_path, benchmark)
        return
    init = "tcp://127.0.0.1:%d" % free_port()
    mp.spawn(worker, args=(args.workers, init, log_path, benchmark), nprocs=args.workers, join=True)


if __name__ == "__main__":
    main()

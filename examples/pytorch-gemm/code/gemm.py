"""PyTorch's GEMM operator (torch.matmul) against a reference, Level 0.

For each shape of the benchmark (l0-gemm-torch-cpu, the DeepBench-like
shapes of l0-gemm-cpu) it fills A (m x k) and B (k x n) with seeded
uniform numbers in [-1, 1), times C = torch.matmul(A, B) in float64 on one
thread (the median of 300 calls after one warm-up call), and measures
C's error against a reference made another way: numpy's einsum without
BLAS, summing in float64 index by index. It logs, per shape, op_time_ms,
op_gflops, op_rel_l2_error (||C - R|| / ||R||) and op_max_error, as the
portal's own Level 0 workload does; the run aborts if an error is over the
benchmark's tolerance. The portal ranks the run by its own clock from
run_start to run_stop, which spans every timed call; the operands and the
reference are made before it.

Seeded and single-threaded, a re-run with the same seed in the same
sandbox computes the same C to the last bit, so the errors are reproduced
exactly; only the times are the machine's.
"""
import argparse
import os
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mllog_emitter import Emitter  # noqa: E402
from d5harness import take_seed  # noqa: E402  (the runner's, on PYTHONPATH)

# The benchmark's fixed part.
SHAPES = [(1760, 16, 1760), (512, 64, 1024)]  # m, n, k
REPEATS = 300
TOLERANCE = 1e-12


def median_ms(fn, repeats):
    fn()  # warm-up: caches, allocator, dispatch
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000.0)
    return float(np.median(times))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()

    log = Emitter(os.environ.get("D5_RESULT_LOG", "result.txt"), echo=False)
    torch.set_num_threads(args.threads)
    torch.use_deterministic_algorithms(True)

    log.start("init_start")
    log.event("submission_benchmark", os.environ.get("D5_BENCHMARK", "l0-gemm-torch-cpu"))
    log.end("init_stop")
    # The operands come from the seed, which the gate hands over as the
    # runner's clock starts: nothing can be computed for them before.
    seed = take_seed()
    log.event("seed", seed)
    log.start("run_start")
    gen = torch.Generator().manual_seed(seed)
    operands = []
    for m, n, k in SHAPES:
        a = torch.rand((m, k), generator=gen, dtype=torch.float64) * 2 - 1
        b = torch.rand((k, n), generator=gen, dtype=torch.float64) * 2 - 1
        operands.append((m, n, k, a, b))
    status = "success"
    for m, n, k, a, b in operands:
        meta = {"op": "gemm", "shape": "%dx%dx%d" % (m, n, k)}
        out = {}

        def call():
            out["c"] = torch.matmul(a, b)

        ms = median_ms(call, REPEATS)
        c = out["c"].numpy()
        ref = np.einsum("ik,kj->ij", a.numpy(), b.numpy(), optimize=False)
        diff = c - ref
        rel_l2 = float(np.linalg.norm(diff) / np.linalg.norm(ref))
        max_err = float(np.abs(diff).max())
        if not rel_l2 <= TOLERANCE:
            status = "aborted"
        log.event("op_time_ms", ms, meta)
        log.event("op_gflops", 2.0 * m * n * k / ms / 1e6, meta)
        log.event("op_rel_l2_error", rel_l2, meta)
        log.event("op_max_error", max_err, meta)
    log.end("run_stop", metadata={"status": status})
    log.close()


if __name__ == "__main__":
    main()

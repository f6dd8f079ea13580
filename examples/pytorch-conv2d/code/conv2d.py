"""PyTorch's 2-D convolution operator (torch.nn.functional.conv2d) against
a reference, Level 0.

For each shape of the benchmark (l0-conv2d-torch-cpu, the DeepBench-like
shapes of l0-conv2d-cpu: an N x C x H x W input, K filters of C x R x S,
zero padding and a stride) it fills the input and the filters with seeded
uniform numbers in [-1, 1), times Y = conv2d(X, W) in float64 on one
thread (the median of 1000 calls after one warm-up call), and measures Y's
error against a reference made without PyTorch's convolution: the direct
convolution in numpy, every output an einsum (without BLAS, summing in
float64 index by index) of the filters with its window of the zero-padded
input, the windows taken with numpy.lib.stride_tricks.sliding_window_view.
It logs, per shape, op_time_ms, op_gflops, op_rel_l2_error
(||Y - R|| / ||R||) and op_max_error, as the portal's own Level 0 workload
does; the run aborts if an error is over the benchmark's tolerance. The
portal ranks the run by its own clock from run_start to run_stop, which
spans every timed call; making the tensors and the reference comes before
run_start, off the clock.

Seeded and single-threaded, a re-run with the same seed in the same
sandbox computes the same Y to the last bit, so the errors are reproduced
exactly; only the times are the machine's.
"""
import argparse
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F
from numpy.lib.stride_tricks import sliding_window_view

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mllog_emitter import Emitter  # noqa: E402
from d5harness import take_seed  # noqa: E402  (the runner's, on PYTHONPATH)

# The benchmark's fixed part.
SHAPES = [  # n, c, h, w, k, r, s, pad, stride
    (8, 16, 28, 28, 32, 3, 3, 1, 1),
    (8, 32, 14, 14, 64, 3, 3, 1, 2),
]
REPEATS = 1000
TOLERANCE = 1e-12


def median_ms(fn, repeats):
    fn()  # warm-up: caches, allocator, dispatch
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000.0)
    return float(np.median(times))


def reference(x, w, pad, stride):
    """The direct convolution of x (N x C x H x W) with w (K x C x R x S)."""
    r, s = w.shape[2], w.shape[3]
    padded = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    # N x C x (H+2pad-R+1) x (W+2pad-S+1) x R x S, then every stride-th.
    windows = sliding_window_view(padded, (r, s), axis=(2, 3))[:, :, ::stride, ::stride]
    return np.einsum("ncpqrs,kcrs->nkpq", windows, w, optimize=False)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()

    log = Emitter(os.environ.get("D5_RESULT_LOG", "result.txt"), echo=False)
    torch.set_num_threads(args.threads)
    torch.use_deterministic_algorithms(True)

    log.start("init_start")
    log.event("submission_benchmark", os.environ.get("D5_BENCHMARK", "l0-conv2d-torch-cpu"))
    log.end("init_stop")
    # The operands come from the seed, which the gate hands over as the
    # runner's clock starts: nothing can be computed for them before.
    seed = take_seed()
    log.event("seed", seed)
    log.start("run_start")
    gen = torch.Generator().manual_seed(seed)
    cases = []
    for n, c, h, w, k, r, s, pad, stride in SHAPES:
        x = torch.rand((n, c, h, w), generator=gen, dtype=torch.float64) * 2 - 1
        f = torch.rand((k, c, r, s), generator=gen, dtype=torch.float64) * 2 - 1
        ref = reference(x.numpy(), f.numpy(), pad, stride)
        p, q = ref.shape[2], ref.shape[3]
        if (p, q) != ((h + 2 * pad - r) // stride + 1, (w + 2 * pad - s) // stride + 1):
            raise SystemExit("reference output %dx%d for shape %s" % (p, q, (n, c, h, w, k, r, s, pad, stride)))
        name = "N%d_C%d_H%d_W%d_K%d_R%d_S%d_pad%d_stride%d" % (n, c, h, w, k, r, s, pad, stride)
        flops = 2.0 * n * k * p * q * c * r * s
        cases.append((name, flops, x, f, pad, stride, ref))
    status = "success"
    for name, flops, x, f, pad, stride, ref in cases:
        meta = {"op": "conv2d", "shape": name}
        out = {}

        def call():
            out["y"] = F.conv2d(x, f, stride=stride, padding=pad)

        ms = median_ms(call, REPEATS)
        y = out["y"].numpy()
        if y.shape != ref.shape:
            raise SystemExit("conv2d gave %s for %s, want %s" % (y.shape, name, ref.shape))
        diff = y - ref
        rel_l2 = float(np.linalg.norm(diff) / np.linalg.norm(ref))
        max_err = float(np.abs(diff).max())
        if not rel_l2 <= TOLERANCE:
            status = "aborted"
        log.event("op_time_ms", ms, meta)
        log.event("op_gflops", flops / ms / 1e6, meta)
        log.event("op_rel_l2_error", rel_l2, meta)
        log.event("op_max_error", max_err, meta)
    log.end("run_stop", metadata={"status": status})
    log.close()


if __name__ == "__main__":
    main()

"""PyTorch's 2-D convolution (torch.nn.functional.conv2d, float64) for
l0-conv2d-torch-cpu.

The runner's harness (d5harness.run_operator, on PYTHONPATH) runs the
benchmark: it takes the run's seed at the gate (the runner's clock starts),
makes each shape's input and filters from the seed, and calls this
operator once to warm up and then the benchmark's number of times, each
call with fresh filters (every weight scaled by numbers drawn from the
previous call's output), timing each call and committing to every output as
it goes. After run_stop it checks the last output against the direct
convolution in numpy (an einsum without BLAS) and answers the runner's
audit: the runner checks 28 calls per shape with its own convolution.
What is yours is the operator, and how many threads it takes.

Single-threaded and deterministic, a re-run with the same seed computes the
same outputs to the last bit, so the errors are reproduced exactly.
"""
import argparse

import torch
import torch.nn.functional as F

import d5harness  # the runner's, on PYTHONPATH


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.use_deterministic_algorithms(True)

    def conv2d(x, w, shape):
        return F.conv2d(x, w, stride=shape["stride"], padding=shape["pad"])

    d5harness.run_operator(conv2d, to_device=torch.from_numpy, from_device=lambda t: t.numpy())


if __name__ == "__main__":
    main()

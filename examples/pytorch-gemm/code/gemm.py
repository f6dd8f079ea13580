"""PyTorch's GEMM operator (torch.matmul, float64) for l0-gemm-torch-cpu.

The runner's harness (d5harness.run_operator, on PYTHONPATH) runs the
benchmark: it takes the run's seed at the gate (the runner's clock starts),
makes the operands of each of the benchmark's shapes from the seed, and
calls this operator once to warm up and then the benchmark's number of
times, each call on a fresh right operand (its rows scaled by numbers drawn
from the previous call's output), timing each call and committing to every
output as it goes. After run_stop it checks the last output against numpy's
einsum without BLAS and answers the runner's audit: the runner checks 28
calls per shape with its own GEMM. What is yours is the operator, and
how many threads it takes (the recipe's mutable part).

Single-threaded and deterministic, a re-run with the same seed computes the
same products to the last bit, so the errors are reproduced exactly.
"""
import argparse

import torch

import d5harness  # the runner's, on PYTHONPATH


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.use_deterministic_algorithms(True)

    def matmul(a, b, shape):
        return torch.matmul(a, b)

    # numpy arrays in, numpy arrays out: torch.from_numpy and .numpy() share
    # the memory, so neither copies.
    d5harness.run_operator(matmul, to_device=torch.from_numpy, from_device=lambda t: t.numpy())


if __name__ == "__main__":
    main()

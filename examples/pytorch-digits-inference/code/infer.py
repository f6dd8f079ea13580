"""Inference of a multi-layer perceptron in PyTorch, Level 1
(l1-digits-mlp-inference-torch-cpu).

The benchmark fixes the network of l2-digits-mlp-torch-cpu (64 inputs, two
hidden layers of 512, 10 classes) with fixed weights, and 100,000 samples.
The runner's harness (d5harness.run_inference, on PYTHONPATH) builds the
network from its weights with build() below before the gate, then takes
the run's seed (the runner's clock starts) and feeds the samples in batches
of the recipe's batch size, each batch fresh inputs drawn from the seed and
the previous batch's logits, timing each batch and committing to its
logits; after run_stop it answers the runner's audit, which recomputes
28 batches with the runner's own forward pass. The throughput that ranks
is the 100,000 samples over the runner's clock. What is yours is the
network's implementation and how many threads it takes.
"""
import argparse

import torch

import d5harness  # the runner's, on PYTHONPATH


def build(params):
    """The task's network from its (weight, bias) float32 numpy arrays."""
    layers = []
    for i, (w, b) in enumerate(params):
        lin = torch.nn.Linear(w.shape[1], w.shape[0])
        with torch.no_grad():
            lin.weight.copy_(torch.from_numpy(w))
            lin.bias.copy_(torch.from_numpy(b))
        layers.append(lin)
        if i < len(params) - 1:
            layers.append(torch.nn.ReLU())
    model = torch.nn.Sequential(*layers).eval()

    def predict(x):
        with torch.inference_mode():
            return model(torch.from_numpy(x)).numpy()

    return predict


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.use_deterministic_algorithms(True)
    d5harness.run_inference(build)


if __name__ == "__main__":
    main()

"""A multi-layer perceptron on the UCI handwritten digits, in PyTorch.

The data set ships inside scikit-learn (sklearn.datasets.load_digits:
1,797 8x8 images), so nothing is downloaded. The split, the model (two
hidden layers of 512) and the 30 epochs are the benchmark's fixed part
(l2-digits-mlp-torch-cpu), and the final test accuracy must reach 0.97;
the batch size and the optimiser are this submission's mutable part.

Each run takes its seed at the runner's gate (d5harness.take_seed), which
starts the runner's clock, and is single-threaded, so that a re-run with
the same seed in the same sandbox computes the same accuracies, to the
last digit. Imports and data loading come before the gate; everything the
seed decides (the initial weights, the shuffling) after it. Each line is
written as it happens.
"""
import argparse
import os
import sys

import numpy as np
import torch
from sklearn.datasets import load_digits

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mllog_emitter import Emitter  # noqa: E402
from d5harness import take_seed  # noqa: E402  (the runner's, on PYTHONPATH)

# The benchmark's fixed part.
HIDDEN = 512
EPOCHS = 30
TARGET = 0.97
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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--momentum", type=float, default=0.9)
    args = ap.parse_args()

    log = Emitter(os.environ.get("D5_RESULT_LOG", "result.txt"), echo=False)
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    x_train, y_train, x_test, y_test = split()
    log.event("submission_benchmark", os.environ.get("D5_BENCHMARK", "l2-digits-mlp-torch-cpu"))
    log.event("global_batch_size", args.batch_size)
    log.event("opt_base_learning_rate", args.lr)
    log.event("train_samples", len(x_train))
    log.event("eval_samples", len(x_test))

    seed = take_seed()
    log.event("seed", seed)
    log.start("run_start")
    torch.manual_seed(seed)
    np.random.seed(seed)
    model = torch.nn.Sequential(
        torch.nn.Linear(64, HIDDEN), torch.nn.ReLU(),
        torch.nn.Linear(HIDDEN, HIDDEN), torch.nn.ReLU(),
        torch.nn.Linear(HIDDEN, 10))
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)
    loss_fn = torch.nn.CrossEntropyLoss()
    shuffle = torch.Generator().manual_seed(seed)
    status = "aborted"
    for epoch in range(1, EPOCHS + 1):
        model.train()
        perm = torch.randperm(len(x_train), generator=shuffle)
        for i in range(0, len(perm), args.batch_size):
            idx = perm[i:i + args.batch_size]
            opt.zero_grad()
            loss_fn(model(x_train[idx]), y_train[idx]).backward()
            opt.step()
        model.eval()
        with torch.no_grad():
            acc = (model(x_test).argmax(1) == y_test).float().mean().item()
        log.event("eval_accuracy", round(acc, 6), {"epoch_num": epoch})
    if acc >= TARGET:
        status = "success"
    log.end("run_stop", metadata={"status": status})
    log.close()


if __name__ == "__main__":
    main()

"""A multi-layer perceptron on the UCI handwritten digits, in PyTorch
(l2-digits-mlp-torch-cpu).

The data set ships inside scikit-learn (1,797 8x8 images), so nothing is
downloaded. The model (two hidden layers of 512), the 30 epochs and the
split are the benchmark's fixed part, and the final test accuracy must
reach 0.97; the batch size and the optimiser's settings are this
submission's mutable part, which the runner hands the harness in $D5_TASK.

The training loop is this file's, in PyTorch; the runner's harness
(d5harness.Training, on PYTHONPATH) gives it what the runner must be able
to check: the split, the initial weights and every epoch's batches, all
from the run's seed, which it takes at the gate (the runner's clock starts
there). After each step the loop hands the weights and the momentum to
the harness, which passes every few steps' state to the runner while the
window is open; after run_stop the runner recomputes stretches of steps it
drew before the run started, and evaluates the last weights.

Single-threaded and deterministic, a re-run with the same seed computes the
same accuracies, to the last digit. Each line is written as it happens.
"""
import os

import torch

import d5harness  # the runner's, on PYTHONPATH


def main():
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    log = d5harness.MLLog()
    tr = d5harness.Training()
    x_train, y_train, x_test, y_test = tr.data()
    x_train, y_train = torch.from_numpy(x_train), torch.from_numpy(y_train)
    x_test, y_test = torch.from_numpy(x_test), torch.from_numpy(y_test)
    log.event("submission_benchmark", os.environ.get("D5_BENCHMARK", "l2-digits-mlp-torch-cpu"))
    log.event("global_batch_size", tr.batch_size)
    log.event("opt_base_learning_rate", tr.lr)
    log.event("train_samples", len(x_train))
    log.event("eval_samples", len(x_test))

    seed = tr.take_seed()
    log.event("seed", seed)
    log.start("run_start")
    model = d5harness.torch_linears(tr.initial_params())
    opt = torch.optim.SGD(model.parameters(), lr=tr.lr, momentum=tr.momentum)
    tr.follow(model, opt)
    loss_fn = torch.nn.CrossEntropyLoss()
    acc = 0.0
    for epoch in range(1, tr.epochs + 1):
        model.train()
        for idx in tr.batches(epoch, len(x_train)):
            idx = torch.from_numpy(idx)
            opt.zero_grad()
            loss_fn(model(x_train[idx]), y_train[idx]).backward()
            opt.step()
            tr.step()
        tr.commit(epoch)
        model.eval()
        with torch.no_grad():
            acc = (model(x_test).argmax(1) == y_test).float().mean().item()
        log.event("eval_accuracy", acc, {"epoch_num": epoch})
    log.end("run_stop", metadata={"status": "success" if acc >= tr.task["target"] else "aborted"})
    log.close()
    tr.audit()


if __name__ == "__main__":
    main()

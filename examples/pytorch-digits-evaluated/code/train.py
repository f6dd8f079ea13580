"""A multi-layer perceptron on the UCI handwritten digits, in PyTorch, for a
benchmark without the runner's harness (l2-uci-digits-torch-evaluated).

The whole training loop is this file's: it loads scikit-learn's digits
(1,797 8x8 images, shipped with the package: nothing is downloaded), takes
its seed at the runner's gate (the runner's clock starts there), and logs
MLPerf's MLLOG lines as it goes. The runner checks its work two ways
(examples/benchmarks/l2-uci-digits-torch-evaluated.yaml):
- as it trains, the run hands the runner its state (weights and momentum)
  before its first step and at the end of each of the benchmark's 300
  stretches of steps, through $D5_STATES; the runner recomputes stretches it
  drew before the run began, so the run follows the benchmark's rules for
  what a step is: the initial weights from torch.manual_seed(seed), the data
  order from a generator seeded with the seed, the recipe's batch size,
  learning rate and momentum;
- before run_stop the run hands over the weights it ends with, through
  $D5_MODEL, and the runner scores them itself: the final accuracy logged
  here must be the one the runner finds.

Single-threaded and deterministic, a re-run with the same seed computes the
same accuracies, to the last digit.
"""
import io
import os

import torch
from sklearn.datasets import load_digits

from d5harness import MLLog, take_seed  # the runner's, on PYTHONPATH

TRAIN = 1437  # the benchmark's split: the first 1,437 digits train, the last 360 test
EPOCHS = 20
BATCH, LR, MOMENTUM = 32, 0.05, 0.9
TARGET = 0.90
STRETCHES = 300  # the benchmark's: the run's steps in 300 stretches, as even as they divide


def mlp():
    return torch.nn.Sequential(
        torch.nn.Linear(64, 512), torch.nn.ReLU(),
        torch.nn.Linear(512, 512), torch.nn.ReLU(),
        torch.nn.Linear(512, 10))


def hand_over(model):
    """Writes the final weights into $D5_MODEL, for the runner's evaluation:
    before run_stop, since what reaches the runner after it does not count."""
    buf = io.BytesIO()
    torch.save(model.state_dict(), buf)
    with open(os.environ["D5_MODEL"], "wb") as f:
        f.write(buf.getvalue())


class States:
    """The run's states, handed to the runner as it trains ($D5_STATES):
    state i after step i*steps//STRETCHES, each a JSON header line and the
    weights and then their momentum buffers (zero before the first step),
    each parameter in the model's order, as float32."""

    def __init__(self, steps):
        self.f = open(os.environ["D5_STATES"], "wb")
        self.steps, self.next = steps, 0

    def after(self, step, model, opt):
        while self.next <= STRETCHES and step == self.next * self.steps // STRETCHES:
            params = list(model.parameters())
            momentum = [opt.state[p].get("momentum_buffer") for p in params]
            body = torch.cat([p.detach().flatten() for p in params] +
                             [(m if m is not None else torch.zeros_like(p)).flatten() for p, m in zip(params, momentum)]).numpy().tobytes()
            self.f.write(b'{"state": %d, "size": %d}\n' % (self.next, len(body)))
            self.f.write(body)
            self.next += 1

    def close(self):
        self.f.close()


def main():
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    x, y = load_digits(return_X_y=True)
    x = torch.tensor(x / 16.0, dtype=torch.float32)
    y = torch.tensor(y)
    x_train, y_train, x_test, y_test = x[:TRAIN], y[:TRAIN], x[TRAIN:], y[TRAIN:]
    log = MLLog()
    log.event("submission_benchmark", os.environ.get("D5_BENCHMARK", "l2-uci-digits-torch-evaluated"))
    log.event("global_batch_size", BATCH)
    log.event("opt_base_learning_rate", LR)
    log.event("train_samples", len(x_train))
    log.event("eval_samples", len(x_test))

    seed = take_seed()
    log.event("seed", seed)
    log.start("run_start")
    torch.manual_seed(seed)
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM)
    loss_fn = torch.nn.CrossEntropyLoss()
    order = torch.Generator().manual_seed(seed)
    states = States(EPOCHS * -(-len(x_train) // BATCH))
    states.after(0, model, opt)
    acc, step = 0.0, 0
    for epoch in range(1, EPOCHS + 1):
        log.start("epoch_start", metadata={"epoch_num": epoch})
        model.train()
        for idx in torch.randperm(len(x_train), generator=order).split(BATCH):
            opt.zero_grad()
            loss_fn(model(x_train[idx]), y_train[idx]).backward()
            opt.step()
            step += 1
            states.after(step, model, opt)
        log.end("epoch_stop", metadata={"epoch_num": epoch})
        model.eval()
        with torch.no_grad():
            predicted = model(x_test).argmax(1)
        acc = float((predicted.numpy() == y_test.numpy()).mean())
        log.event("eval_accuracy", acc, {"epoch_num": epoch})
    states.close()
    hand_over(model)
    log.end("run_stop", metadata={"status": "success" if acc >= TARGET else "aborted"})
    log.close()


if __name__ == "__main__":
    main()

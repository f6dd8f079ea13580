"""Inference of a multi-layer perceptron on the UCI digits, in PyTorch, Level 1.

The benchmark (l1-digits-mlp-inference-torch-cpu) fixes the network of
l2-digits-mlp-torch-cpu (64 inputs, two hidden layers of 512, 10 classes)
with weights drawn from a fixed seed (the arithmetic does not depend on
their values), the 1,797 images of scikit-learn's UCI digits, and 100,000
samples classified in order, batch by batch. The batch size is this
submission's choice. It logs the throughput and the per-batch latency
quantiles it saw, and a checksum of every prediction in order (FNV-1a over
the class indices), which a re-run must give again: the proof that the
samples were classified. The portal ranks the 100,000 samples over its
own clock from run_start to run_stop, not the throughput logged here.
"""
import argparse
import os
import sys
import time

import numpy as np
import torch
from sklearn.datasets import load_digits

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mllog_emitter import Emitter  # noqa: E402
from d5harness import take_seed  # noqa: E402  (the runner's, on PYTHONPATH)

# The benchmark's fixed part.
HIDDEN = 512
SAMPLES = 100000
WEIGHT_SEED = 500


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch-size", type=int, default=1)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()

    log = Emitter(os.environ.get("D5_RESULT_LOG", "result.txt"), echo=False)
    torch.set_num_threads(args.threads)
    torch.use_deterministic_algorithms(True)

    log.start("init_start")
    log.event("submission_benchmark", os.environ.get("D5_BENCHMARK", "l1-digits-mlp-inference-torch-cpu"))
    log.event("global_batch_size", args.batch_size)
    log.event("eval_samples", SAMPLES)
    x = torch.from_numpy(load_digits().data.astype(np.float32) / 16.0)
    torch.manual_seed(WEIGHT_SEED)
    model = torch.nn.Sequential(
        torch.nn.Linear(64, HIDDEN), torch.nn.ReLU(),
        torch.nn.Linear(HIDDEN, HIDDEN), torch.nn.ReLU(),
        torch.nn.Linear(HIDDEN, 10)).eval()
    log.end("init_stop")
    # The run's seed, handed over at the gate as the runner's clock
    # starts, picks where in the images it starts, so that runs differ
    # while each is reproducible.
    seed = take_seed()
    log.event("seed", seed)
    log.start("run_start")
    first = seed % len(x)
    order = torch.arange(first, first + SAMPLES) % len(x)
    latencies = []
    checksum = 2166136261
    start = time.perf_counter()
    with torch.inference_mode():
        for i in range(0, SAMPLES, args.batch_size):
            batch = x[order[i:i + args.batch_size]]
            t0 = time.perf_counter()
            pred = model(batch).argmax(1)
            latencies.append((time.perf_counter() - t0) * 1000.0)
            for p in pred.tolist():
                checksum = ((checksum ^ p) * 16777619) & 0xFFFFFFFF
    elapsed = time.perf_counter() - start
    log.event("throughput", SAMPLES / elapsed, {"unit": "samples/s"})
    log.event("latency_p50_ms", float(np.quantile(latencies, 0.50)), {"per": "batch"})
    log.event("latency_p99_ms", float(np.quantile(latencies, 0.99)), {"per": "batch"})
    log.event("prediction_checksum", checksum)
    log.end("run_stop", metadata={"status": "success"})
    log.close()


if __name__ == "__main__":
    main()

"""CIFAR-10 ResNet (He et al. 2016, the 6n+2 CIFAR variant) for d5list.

Reads the D5_* environment the d5list process executor sets, takes its
seed at the runner's gate once the data is loaded (d5harness.take_seed:
the runner's clock starts there), trains on the GPU when there is one,
evaluates after every epoch and writes an MLPerf MLLOG to $D5_RESULT_LOG.
Only torch and torchvision are needed.

By hand, outside a runner (d5harness is in d5list's runner/harness folder;
without a gate it takes $D5_SEED):

  export PYTHONPATH=path/to/d5list/runner/harness
  D5_SEED=1 D5_RESULT_LOG=results/result_0.txt D5_DATA_DIR=~/datasets python3 code/train.py
  python3 code/train.py --synthetic --epochs 1      # smoke test, no data set
"""
import argparse
import os
import random
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mllog_emitter import Emitter  # noqa: E402
from d5harness import take_seed  # noqa: E402  (the runner's, on PYTHONPATH)

MEAN = (0.4914, 0.4822, 0.4465)
STD = (0.2470, 0.2435, 0.2616)


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.short = None
        if stride != 1 or cin != cout:
            self.short = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + (x if self.short is None else self.short(x)))


class ResNet(nn.Module):
    def __init__(self, depth=20, classes=10):
        super().__init__()
        if (depth - 2) % 6:
            raise ValueError("depth must be 6n+2 (20, 32, 44, 56, 110)")
        n = (depth - 2) // 6
        self.conv = nn.Conv2d(3, 16, 3, 1, 1, bias=False)
        self.bn = nn.BatchNorm2d(16)
        layers, cin = [], 16
        for cout, stride in ((16, 1), (32, 2), (64, 2)):
            for i in range(n):
                layers.append(BasicBlock(cin, cout, stride if i == 0 else 1))
                cin = cout
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(64, classes)

    def forward(self, x):
        x = F.relu(self.bn(self.conv(x)))
        x = self.layers(x)
        x = F.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.fc(x)


def load_data(args, device):
    """Returns (train_x, train_y, test_x, test_y) as uint8/int64 tensors on device."""
    if args.synthetic:
        g = torch.Generator().manual_seed(0)
        tx = torch.randint(0, 256, (args.synthetic_train, 32, 32, 3), dtype=torch.uint8, generator=g)
        ty = torch.randint(0, 10, (args.synthetic_train,), generator=g)
        vx = torch.randint(0, 256, (args.synthetic_test, 32, 32, 3), dtype=torch.uint8, generator=g)
        vy = torch.randint(0, 10, (args.synthetic_test,), generator=g)
    else:
        import torchvision
        root = os.path.join(args.data_dir, "cifar10")
        try:
            train = torchvision.datasets.CIFAR10(root, train=True, download=False)
            test = torchvision.datasets.CIFAR10(root, train=False, download=False)
        except RuntimeError as e:
            sys.exit(f"train.py: CIFAR-10 not found under {root} ({e}); the runner has no network: "
                     "put cifar-10-batches-py there, or use --synthetic")
        tx, ty = torch.from_numpy(train.data), torch.tensor(train.targets)
        vx, vy = torch.from_numpy(test.data), torch.tensor(test.targets)
    return tx.to(device), ty.to(device), vx.to(device), vy.to(device)


def normalize(x):
    mean = torch.tensor(MEAN, device=x.device).view(1, 3, 1, 1)
    std = torch.tensor(STD, device=x.device).view(1, 3, 1, 1)
    return (x.permute(0, 3, 1, 2).float() / 255.0 - mean) / std


def augment(x):
    """Random crop with 4-pixel padding and horizontal flip, on the device."""
    n = x.shape[0]
    x = F.pad(x, (4, 4, 4, 4), mode="reflect")
    i = torch.randint(0, 9, (n,), device=x.device)
    j = torch.randint(0, 9, (n,), device=x.device)
    rows = (i.view(n, 1) + torch.arange(32, device=x.device)).view(n, 1, 32, 1).expand(n, 3, 32, 40)
    x = x.gather(2, rows)
    cols = (j.view(n, 1) + torch.arange(32, device=x.device)).view(n, 1, 1, 32).expand(n, 3, 32, 32)
    x = x.gather(3, cols)
    flip = torch.rand(n, device=x.device) < 0.5
    return torch.where(flip.view(n, 1, 1, 1), x.flip(3), x)


def grad_scaler(device):
    """torch.amp.GradScaler where it exists (torch >= 2.3), else the CUDA
    one it replaced (Debian's torch 1.13): both are no-ops off CUDA."""
    if hasattr(torch, "amp") and hasattr(torch.amp, "GradScaler"):
        return torch.amp.GradScaler(device.type, enabled=device.type == "cuda")
    return torch.cuda.amp.GradScaler(enabled=device.type == "cuda")


def main():
    env = os.environ
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seed", type=int, default=None, help="default: the one the runner's gate hands over")
    p.add_argument("--result-log", default=env.get("D5_RESULT_LOG", ""))
    p.add_argument("--data-dir", default=env.get("D5_DATA_DIR", "") or "data")
    p.add_argument("--benchmark", default=env.get("D5_BENCHMARK", "l2-cifar10-resnet44-gpu"))
    p.add_argument("--depth", type=int, default=20)
    p.add_argument("--epochs", type=int, default=30)
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--lr", type=float, default=0.1)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--weight-decay", type=float, default=5e-4)
    p.add_argument("--target", type=float, default=0.91, help="stop at the first evaluation reaching it")
    p.add_argument("--synthetic", action="store_true", help="random tensors instead of CIFAR-10")
    p.add_argument("--synthetic-train", type=int, default=2048)
    p.add_argument("--synthetic-test", type=int, default=512)
    args = p.parse_args()

    log = Emitter(args.result_log or None)
    log.event("submission_benchmark", args.benchmark)
    log.event("submission_org", "Example submitter")
    log.event("submission_division", "open")
    log.start("init_start")
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device.type == "cuda":
        torch.backends.cudnn.benchmark = True
    log.event("global_batch_size", args.batch_size)
    log.event("opt_base_learning_rate", args.lr)
    log.event("opt_weight_decay", args.weight_decay)
    log.event("device", str(device) + ("" if device.type == "cpu" else ":" + torch.cuda.get_device_name(0)))

    tx, ty, vx, vy = load_data(args, device)
    log.event("train_samples", int(tx.shape[0]))
    log.event("eval_samples", int(vx.shape[0]))
    log.end("init_stop")

    # Everything the seed decides (the weights, the order, the augmentation)
    # comes after the gate, on the runner's clock.
    seed = args.seed if args.seed is not None else take_seed()
    log.event("seed", seed)
    log.start("run_start")
    random.seed(seed)
    torch.manual_seed(seed)
    model = ResNet(args.depth).to(device).to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum,
                          weight_decay=args.weight_decay, nesterov=True)
    steps = args.epochs * ((tx.shape[0] + args.batch_size - 1) // args.batch_size)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=args.lr, total_steps=steps, pct_start=0.15)
    scaler = grad_scaler(device)
    status = "aborted"
    for epoch in range(1, args.epochs + 1):
        log.start("epoch_start", metadata={"epoch_num": epoch})
        model.train()
        t0 = time.time()
        perm = torch.randperm(tx.shape[0], device=device)
        for k in range(0, tx.shape[0], args.batch_size):
            idx = perm[k:k + args.batch_size]
            x = augment(normalize(tx[idx])).contiguous(memory_format=torch.channels_last)
            with torch.autocast(device.type, dtype=torch.bfloat16 if device.type == "cpu" else torch.float16,
                                enabled=device.type == "cuda"):
                loss = F.cross_entropy(model(x), ty[idx])
            opt.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            sched.step()
        log.end("epoch_stop", metadata={"epoch_num": epoch})
        log.event("train_loss", float(loss), metadata={"epoch_num": epoch})
        log.event("throughput", tx.shape[0] / (time.time() - t0), metadata={"epoch_num": epoch})

        log.start("eval_start", metadata={"epoch_num": epoch})
        model.eval()
        correct = 0
        with torch.no_grad(), torch.autocast(device.type, dtype=torch.bfloat16 if device.type == "cpu" else torch.float16,
                                             enabled=device.type == "cuda"):
            for k in range(0, vx.shape[0], 1024):
                x = normalize(vx[k:k + 1024]).contiguous(memory_format=torch.channels_last)
                correct += int((model(x).argmax(1) == vy[k:k + 1024]).sum())
        acc = correct / vx.shape[0]
        log.end("eval_stop", metadata={"epoch_num": epoch})
        log.event("eval_accuracy", acc, metadata={"epoch_num": epoch})
        if acc >= args.target:
            status = "success"
            break
    log.end("run_stop", metadata={"status": status})
    log.close()


if __name__ == "__main__":
    main()

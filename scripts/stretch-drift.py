#!/usr/bin/python3
"""How far float32 PyTorch training drifts from its float64 recomputation,
stretch by stretch (3 minibatch steps), on the L2 example's network and
optimiser (64-512-512-10 MLP, SGD lr 0.05 momentum 0.9, batch 32, 30 epochs,
scikit-learn's digits): the largest relative distances, as the runner's
training audit measures them (harness/train.go, stateDistance), against its
tolerance of 1e-2. Usage: /usr/bin/python3 scripts/stretch-drift.py SEED...
"""
import torch, copy, sys
from sklearn.datasets import load_digits
torch.set_num_threads(1)
x, y = load_digits(return_X_y=True)
xt = torch.tensor(x[:1437]/16.0, dtype=torch.float32); yt = torch.tensor(y[:1437])
def mk():
    return torch.nn.Sequential(torch.nn.Linear(64,512), torch.nn.ReLU(), torch.nn.Linear(512,512), torch.nn.ReLU(), torch.nn.Linear(512,10))
def state(m, opt):
    ps = list(m.parameters())
    return [p.detach().clone() for p in ps] + [opt.state[p]["momentum_buffer"].detach().clone() if "momentum_buffer" in opt.state[p] else torch.zeros_like(p) for p in ps]
for seed in [int(a) for a in sys.argv[1:]]:
    torch.manual_seed(seed)
    m = mk(); opt = torch.optim.SGD(m.parameters(), lr=0.05, momentum=0.9)
    m64 = mk().double(); 
    worst=[]
    step=0
    for e in range(30):
        batches = list(torch.randperm(1437).split(32))
        for s0 in range(0, len(batches), 3):
            chunk = batches[s0:s0+3]
            before = state(m, opt)
            # float64 recompute
            with torch.no_grad():
                for p, v in zip(m64.parameters(), before[:6]): p.copy_(v.double())
            o64 = torch.optim.SGD(m64.parameters(), lr=0.05, momentum=0.9)
            for p, v in zip(m64.parameters(), before[6:]):
                o64.state[p]["momentum_buffer"] = v.double().clone()
            for idx in chunk:
                opt.zero_grad(); torch.nn.functional.cross_entropy(m(xt[idx]), yt[idx]).backward(); opt.step()
                o64.zero_grad(); torch.nn.functional.cross_entropy(m64(xt[idx].double()), yt[idx]).backward(); o64.step()
            after = state(m, opt)
            want = [p.detach() for p in m64.parameters()] + [o64.state[p]["momentum_buffer"] for p in m64.parameters()]
            diff = sum(float(((a.double()-w)**2).sum()) for a, w in zip(after, want))
            stp = sum(float(((w-b.double())**2).sum()) for w, b in zip(want, before))
            rel = (diff/stp)**0.5 if stp > 0 else float('inf')
            worst.append((rel, e, s0, len(chunk[-1])))
    worst.sort(reverse=True)
    print(seed, "worst", worst[:3], flush=True)

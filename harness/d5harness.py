"""The d5list runner's side of a run of your code, for Python.

The runner puts this module on the run's PYTHONPATH (it is part of d5list,
not of your bundle; its Go twin, which checks what it did, is d5list's
harness package). A run talks to the runner through FIFOs the runner owns:

- $D5_TASK (a variable, not a FIFO) is the work of a benchmark the harness
  runs, as JSON: the benchmark's, not the bundle's.
- $D5_GATE hands the run its seed. Opening it starts the runner's clock: the run's timed window
  opens when it takes its seed, so do everything that does not need the
  seed (imports, building the model, loading data) before, and everything
  the benchmark times after.
- $D5_RESULT_LOG takes the run's MLLOG lines. The runner reads them as they
  arrive; what arrived cannot be taken back. Log run_start right after the
  seed, and run_stop once, when the work is done: the window closes when
  run_stop arrives.
- $D5_AUDIT, after run_stop, names the calls whose outputs the runner will
  check; the harness writes them, and every digest, to $D5_REVEAL. A
  training run writes its states into $D5_REVEAL as it trains instead.

For Level 0 and 1 the harness runs the timed loop itself, as Deep500's own
L0 and L1 test harnesses do: you hand it your operator (run_operator) or
your network (run_inference), it makes the inputs from the seed, times
each call, and commits to every output as it goes. Each call's input
depends on the previous call's output, so the calls cannot be batched,
skipped or computed ahead; after the window the runner picks calls at
random and recomputes their outputs itself. Nothing here is trusted: the
runner checks what matters (harness/*.go in d5list).

Outside a runner (a plain `python3 train.py`) there is no gate: take_seed
falls back to $D5_SEED, or 1.
"""
import hashlib
import json
import os
import time

GOLDEN = 0x9E3779B97F4A7C15
MIX1 = 0xBF58476D1CE4E5B9
MIX2 = 0x94D049BB133111EB
COMMITMENT = "d5_commitment"


def take_seed():
    """Opens the gate and returns this run's seed: the clock starts now."""
    gate = os.environ.get("D5_GATE")
    if not gate:
        return int(os.environ.get("D5_SEED", "1"))
    with open(gate) as f:
        return int(json.loads(f.readline())["seed"])


def task():
    """The work the benchmark gives the harness ($D5_TASK), or {}."""
    return json.loads(os.environ.get("D5_TASK") or "{}")


class MLLog:
    """MLPerf's MLLOG lines, written to $D5_RESULT_LOG as they happen."""

    def __init__(self, path=None):
        path = path or os.environ.get("D5_RESULT_LOG")
        self._f = open(path, "a", buffering=1) if path else None

    def event(self, key, value=None, metadata=None, event_type="POINT_IN_TIME"):
        if self._f is None:
            return
        line = json.dumps({"namespace": "", "time_ms": int(time.time() * 1000), "event_type": event_type,
                           "key": key, "value": value, "metadata": metadata or {}})
        self._f.write(":::MLLOG " + line + "\n")

    def start(self, key, value=None, metadata=None):
        self.event(key, value, metadata, "INTERVAL_START")

    def end(self, key, value=None, metadata=None):
        self.event(key, value, metadata, "INTERVAL_END")

    def close(self):
        if self._f is not None:
            self._f.close()
            self._f = None


# Portable random numbers: SplitMix64 over a counter, from a key that is a
# hash of the parts that name a stream. The runner makes the same numbers
# in Go (harness/prng.go).

def stream_key(*parts):
    """The 64-bit key of the stream named by parts."""
    name = ":".join(str(p) for p in parts).encode()
    return int.from_bytes(hashlib.sha256(name).digest()[:8], "big")


def uniform(key, n):
    """n numbers in [0, 1), float64, of the stream key."""
    import numpy as np
    u64 = np.uint64
    z = u64(key) + np.arange(1, n + 1, dtype=np.uint64) * u64(GOLDEN)
    z = (z ^ (z >> u64(30))) * u64(MIX1)
    z = (z ^ (z >> u64(27))) * u64(MIX2)
    z = z ^ (z >> u64(31))
    return (z >> u64(11)).astype(np.float64) * (1.0 / 9007199254740992.0)


def fold(out):
    """The XOR of an output's 64-bit words: its digest, cheap beside the
    call. It needs every bit of the output; the runner checks the outputs
    it audits against its own reference, so an output that was not
    computed cannot be made to match a digest committed before."""
    import numpy as np
    a = np.ascontiguousarray(out)
    return int(np.bitwise_xor.reduce(a.view(np.uint64).ravel()))


def sha_digest(out):
    """A 64-bit digest of a small output by SHA-256 (outputs whose runner
    tolerance is loose enough that fold would let low bits be chosen)."""
    import numpy as np
    return int.from_bytes(hashlib.sha256(np.ascontiguousarray(out).tobytes()).digest()[:8], "big")


def _commitment(digests):
    return hashlib.sha256(b"".join(d.to_bytes(8, "big") for d in digests)).hexdigest()


class _Section:
    """One committed stream of calls: a shape of an operator, or the
    batches of an inference run."""

    def __init__(self, name, seed):
        self.name, self.seed = name, seed
        self.digests = []

    def chain(self, i):
        """The key of call i's fresh input: from the output before it."""
        if i == 0:
            return stream_key(self.seed, self.name, "chain")
        return stream_key(self.seed, self.name, i, self.digests[i - 1])


def _audit(sections, recompute):
    """After run_stop: reads which calls the runner checks, and reveals
    their outputs and every digest: each as a JSON header line ({"file":
    name, "size": bytes}) and its bytes, into $D5_REVEAL."""
    path, reveal = os.environ.get("D5_AUDIT"), os.environ.get("D5_REVEAL")
    if not path or not reveal:
        return
    with open(path) as f:
        line = f.readline()
    if not line:
        return
    challenge = json.loads(line)["sections"]
    with open(reveal, "ab") as out:
        def send(name, data):
            out.write(json.dumps({"file": name, "size": len(data)}).encode() + b"\n")
            out.write(data)
        for index, s in enumerate(sections):
            send("%d.digests" % index, b"".join(d.to_bytes(8, "big") for d in s.digests))
            for i in challenge.get(s.name, []):
                send("%d-%d.out" % (index, i), recompute(index, i).tobytes())


def _ident(x):
    return x


# Level 0: operators.

def _gemm_case(seed, shape):
    import numpy as np
    m, n, k = shape["m"], shape["n"], shape["k"]
    name = "gemm:%dx%dx%d" % (m, n, k)
    a = (uniform(stream_key(seed, name, "A"), m * k) * 2 - 1).reshape(m, k)
    b = (uniform(stream_key(seed, name, "B"), k * n) * 2 - 1).reshape(k, n)

    def inputs(chain):
        # B's rows scaled afresh: C = A diag(d) B is a full product each call.
        d = 0.5 + uniform(chain, k)
        return a, b * d[:, None]

    def reference(x, y):
        return np.einsum("ik,kj->ij", x, y, optimize=False)

    return name, inputs, reference, 2.0 * m * n * k


def _conv2d_case(seed, shape):
    import numpy as np
    from numpy.lib.stride_tricks import sliding_window_view
    n, c, h, w, k, r, s = (shape[x] for x in "nchwkrs")
    pad, stride = shape.get("pad", 0), shape.get("stride", 1)
    name = "conv2d:N%d_C%d_H%d_W%d_K%d_R%d_S%d_pad%d_stride%d" % (n, c, h, w, k, r, s, pad, stride)
    x = (uniform(stream_key(seed, name, "x"), n * c * h * w) * 2 - 1).reshape(n, c, h, w)
    f = (uniform(stream_key(seed, name, "w"), k * c * r * s) * 2 - 1).reshape(k, c, r, s)
    p, q = (h + 2 * pad - r) // stride + 1, (w + 2 * pad - s) // stride + 1

    def inputs(chain):
        # Every weight scaled afresh: no per-channel partial sums to reuse.
        return x, f * (0.5 + uniform(chain, k * c * r * s)).reshape(k, c, r, s)

    def reference(xx, ff):
        padded = np.pad(xx, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
        windows = sliding_window_view(padded, (r, s), axis=(2, 3))[:, :, ::stride, ::stride]
        return np.einsum("ncpqrs,kcrs->nkpq", windows, ff, optimize=False)

    return name, inputs, reference, 2.0 * n * k * p * q * c * r * s


_OPERATORS = {"gemm": _gemm_case, "conv2d": _conv2d_case}


def run_operator(op, to_device=_ident, from_device=_ident, benchmark=None):
    """Runs a Level 0 operator benchmark with your operator.

    op(x, y, shape) computes the benchmark's operator for one of the task's
    shapes (gemm: x @ y; conv2d: x convolved with the filters y, NCHW and
    KCRS, with the shape's pad and stride) on whatever to_device made of
    two numpy float64 arrays, and
    from_device turns its result back into a numpy float64 array. For
    each of the task's shapes the harness makes the operands from the seed,
    calls op once to warm up and then the task's number of timed calls,
    each on fresh inputs, logging the median call time (op_time_ms) and a
    commitment to every output; after run_stop it logs the last output's
    error against a reference made another way (numpy's einsum without
    BLAS) and answers the runner's audit.
    """
    import numpy as np
    work = task()
    log = MLLog()
    log.event("submission_benchmark", benchmark or os.environ.get("D5_BENCHMARK", ""))
    seed = take_seed()
    log.event("seed", seed)
    log.start("run_start")
    cases, sections, status = [], [], "success"
    for shape in work.get("shapes", []):
        name, inputs, reference, flops = _OPERATORS[work["kind"]](seed, shape)
        sec = _Section(name, seed)
        times, out, last = [], None, None
        for i in range(work["calls"] + 1):
            x, y = inputs(sec.chain(i))
            dx, dy = to_device(x), to_device(y)
            t0 = time.perf_counter()
            out = from_device(op(dx, dy, shape))
            if i > 0:
                times.append(time.perf_counter() - t0)
            sec.digests.append(fold(out))
            last = (x, y)
        ms = float(np.median(times)) * 1000.0
        meta = {"op": work["kind"], "shape": name.split(":", 1)[1]}
        log.event("op_time_ms", ms, meta)
        log.event("op_gflops", flops / ms / 1e6, meta)
        log.event(COMMITMENT, _commitment(sec.digests), {"section": name, "calls": len(sec.digests)})
        cases.append((inputs, reference, meta, out, last, shape))
        sections.append(sec)
    log.end("run_stop", metadata={"status": status})
    # Off the clock: the last output's error, and the audit.
    for inputs, reference, meta, out, (x, y), _ in cases:
        want = reference(x, y)
        diff = out - want
        log.event("op_rel_l2_error", float(np.linalg.norm(diff) / np.linalg.norm(want)), meta)
        log.event("op_max_error", float(np.abs(diff).max()), meta)

    def recompute(index, i):
        inputs, shape = cases[index][0], cases[index][5]
        x, y = inputs(sections[index].chain(i))
        return np.ascontiguousarray(from_device(op(to_device(x), to_device(y), shape)), dtype=np.float64)

    log.close()
    _audit(sections, recompute)


# Level 1: inference.

def mlp_weights(layers):
    """The fixed network of an inference task: (weight, bias) per layer,
    float32, weight as out x in (torch.nn.Linear's layout), drawn uniformly
    within +-1/sqrt(fan_in) as torch.nn.Linear initialises them."""
    import numpy as np
    params = []
    for i, (fan_in, fan_out) in enumerate(zip(layers, layers[1:])):
        bound = 1.0 / np.sqrt(fan_in)
        w = (uniform(stream_key("mlp-inference", i, "weight"), fan_out * fan_in) * 2 - 1) * bound
        b = (uniform(stream_key("mlp-inference", i, "bias"), fan_out) * 2 - 1) * bound
        params.append((w.reshape(fan_out, fan_in).astype(np.float32), b.astype(np.float32)))
    return params


def run_inference(build, benchmark=None):
    """Runs a Level 1 inference benchmark with your network.

    build(params) returns predict(x) for the task's network (params: a
    list of (weight, bias) float32 numpy arrays per layer, ReLU between
    layers), where x is a float32 numpy batch of the task's inputs and
    predict returns the logits as a float32 numpy array. build is called
    before the gate (off the clock); then the harness feeds the task's
    samples in batches of the task's batch size (your recipe's), each
    batch fresh inputs that depend on the previous batch's logits, logs
    the throughput it saw and a checksum of the predictions, commits to
    every batch's logits, and after run_stop answers the runner's audit.
    """
    import numpy as np
    work = task()
    layers, samples, batch = work["layers"], int(work["samples"]), int(work["batch_size"])
    log = MLLog()
    log.event("submission_benchmark", benchmark or os.environ.get("D5_BENCHMARK", ""))
    predict = build(mlp_weights(layers))
    seed = take_seed()
    log.event("seed", seed)
    log.event("global_batch_size", batch)
    log.event("eval_samples", samples)
    log.start("run_start")
    name = "mlp-inference"
    sec = _Section(name, seed)
    latencies, checksum = [], 2166136261
    started = time.perf_counter()
    for i, first in enumerate(range(0, samples, batch)):
        count = min(batch, samples - first)
        x = uniform(sec.chain(i), count * layers[0]).astype(np.float32).reshape(count, layers[0])
        t0 = time.perf_counter()
        logits = np.ascontiguousarray(predict(x), dtype=np.float32)
        latencies.append((time.perf_counter() - t0) * 1000.0)
        sec.digests.append(sha_digest(logits))
        for p in logits.argmax(1).tolist():
            checksum = ((checksum ^ p) * 16777619) & 0xFFFFFFFF
    elapsed = time.perf_counter() - started
    log.event("throughput", samples / elapsed, {"unit": "samples/s"})
    log.event("latency_p50_ms", float(np.quantile(latencies, 0.50)), {"per": "batch"})
    log.event("latency_p99_ms", float(np.quantile(latencies, 0.99)), {"per": "batch"})
    log.event("prediction_checksum", checksum)
    log.event(COMMITMENT, _commitment(sec.digests), {"section": name, "calls": len(sec.digests)})
    log.end("run_stop", metadata={"status": "success"})
    log.close()

    def recompute(_, i):
        first = i * batch
        count = min(batch, samples - first)
        x = uniform(sec.chain(i), count * layers[0]).astype(np.float32).reshape(count, layers[0])
        return np.ascontiguousarray(predict(x), dtype=np.float32)

    _audit([sec], recompute)


# Levels 2 and 3: training, audited epoch by epoch.

def digits_split(test_share=0.2):
    """The UCI digits that ship in scikit-learn, split for a training task:
    (x_train, y_train, x_test, y_test), inputs float32 in [0, 1], labels
    int64. The split is a stream of the harness's, so the runner makes the
    same one (harness/data.go)."""
    import numpy as np
    from sklearn.datasets import load_digits
    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    y = digits.target.astype(np.int64)
    order = np.argsort(uniform(stream_key("uci-digits", "split"), len(x)), kind="stable")
    n_test = int(len(x) * test_share)
    test, train = order[:n_test], order[n_test:]
    return x[train], y[train], x[test], y[test]


class Training:
    """A training task's side of the harness: the data, the initial weights
    and every epoch's batches come from here, and the state of the training
    (weights and momentum) goes to the runner as the run makes it.

    Your training loop stays yours: take the seed (take_seed opens the
    gate), start from initial_params(), train each epoch on the batches
    batches(epoch) gives, in order, with the task's optimiser (torch's SGD
    with momentum: buf = momentum * buf + grad, w -= lr * buf, the loss
    the batch's mean cross-entropy), call step() after every optimiser step
    (follow(model, optimizer) once lets it read the state only when one is
    due), and commit(epoch) after each epoch.

    Every state_every steps of an epoch (the task's; and at its end) the
    harness writes the state into $D5_REVEAL, which the runner reads while
    the window is open. The runner keeps the states that bound the stretches
    of steps it drew before the window opened, without saying which, and
    recomputes those stretches itself after run_stop; it evaluates the last
    weights on the test split. A state that reaches it after run_stop does
    not count.
    """

    def __init__(self, commits=True):
        """commits: whether this process hands its states to the runner
        (in a data-parallel run, rank 0 alone)."""
        self.commits = commits
        self.task = task()
        if not self.task:
            raise RuntimeError("d5harness.Training: no $D5_TASK; the runner sets it for the benchmark "
                               "(d5list run, or a portal re-run), and a plain python3 run has none")
        self.layers = self.task["layers"]
        self.epochs = int(self.task["epochs"])
        self.batch_size = int(self.task["batch_size"])
        self.lr, self.momentum = float(self.task["lr"]), float(self.task["momentum"])
        self.state_every = max(1, int(self.task.get("state_every", 1)))
        self.seed = None
        self._stream = None
        self._follow = None
        self._writer, self._write_error = None, None
        self._sent = 0  # states handed to the runner
        self._epoch, self._step, self._steps = 0, 0, 0

    def data(self):
        """The benchmark's split: x_train, y_train, x_test, y_test."""
        return digits_split(float(self.task.get("test_share", 0.2)))

    def take_seed(self):
        """Opens the gate (the runner's clock starts) and returns the seed."""
        self.use_seed(take_seed())
        return self.seed

    def use_seed(self, seed):
        """Takes the seed another process took at the gate (a data-parallel
        run's rank 0, which passes it on)."""
        self.seed = int(seed)
        path = os.environ.get("D5_REVEAL")
        if self.commits and path and self._stream is None:
            self._stream = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                import fcntl
                # A larger pipe takes a state in fewer writes.
                fcntl.fcntl(self._stream, fcntl.F_SETPIPE_SZ, 1 << 20)
            except (ImportError, AttributeError, OSError):
                pass

    def initial_params(self):
        """The run's initial weights, from its seed: (weight, bias) float32
        per layer, weight out x in, uniform within +-1/sqrt(fan_in) as
        torch.nn.Linear initialises them. Handed to the runner as state 0."""
        import numpy as np
        params = []
        for i, (fan_in, fan_out) in enumerate(zip(self.layers, self.layers[1:])):
            bound = 1.0 / np.sqrt(fan_in)
            w = (uniform(stream_key(self.seed, "training", i, "weight"), fan_out * fan_in) * 2 - 1) * bound
            b = (uniform(stream_key(self.seed, "training", i, "bias"), fan_out) * 2 - 1) * bound
            params.append((w.reshape(fan_out, fan_in).astype(np.float32), b.astype(np.float32)))
        if self._sent != 0:
            raise ValueError("initial_params: the initial state was handed to the runner already")
        self._send(params, [(np.zeros_like(w), np.zeros_like(b)) for w, b in params])
        return params

    def batches(self, epoch, n_train):
        """The index arrays of epoch's batches (of the task's global batch
        size; the last may be shorter), in order."""
        import numpy as np
        if epoch != self._epoch + 1 or self._step != self._steps:
            raise ValueError("batches(%d) after %d of the %d steps of epoch %d: the epochs are trained in order, "
                             "each step handed to step()" % (epoch, self._step, self._steps, self._epoch))
        order = np.argsort(uniform(stream_key(self.seed, "training", "epoch", epoch), n_train), kind="stable")
        out = [order[i:i + self.batch_size] for i in range(0, n_train, self.batch_size)]
        self._epoch, self._step, self._steps = epoch, 0, len(out)
        return out

    def follow(self, model, optimizer):
        """Lets step() read the state of a PyTorch model's Linear layers and
        its torch.optim.SGD itself (torch_state), only when one is due."""
        self._follow = lambda: torch_state(model, optimizer)

    def step(self, params=None, momentum=None):
        """Takes the state after an optimiser step: params and momentum
        buffers, each a (weight, bias) pair of float32 arrays per layer, in
        layer order, or none where follow() named the model. Call it after
        every step, in order."""
        if self._step >= self._steps:
            raise ValueError("step() past the %d steps of epoch %d's batches" % (self._steps, self._epoch))
        self._step += 1
        if self.commits and (self._step % self.state_every == 0 or self._step == self._steps):
            if params is None:
                if self._follow is None:
                    raise ValueError("step() without a state: hand it params and momentum, or name the model with follow()")
                params, momentum = self._follow()
            self._send(params, momentum)

    def commit(self, epoch, params=None, momentum=None):
        """Ends epoch: every one of its steps must have been handed to step().
        After the last epoch it waits until every state is with the runner,
        which counts only the states that reach it before run_stop. (params
        and momentum are what a loop written for the epoch-grain harness
        hands it; the states come from step() now.)"""
        if epoch != self._epoch or self._step != self._steps:
            raise ValueError("commit(%d) after %d of the %d steps of epoch %d: hand the state after every "
                             "optimiser step to step()" % (epoch, self._step, self._steps, self._epoch))
        if epoch == self.epochs:
            self._flush()

    def _send(self, params, momentum):
        import numpy as np
        if not self.commits:
            return
        parts = [np.ascontiguousarray(a, dtype=np.float32).ravel() for pair in list(params) + list(momentum) for a in pair]
        if self._stream is not None:
            if self._writer is None:
                self._start_writer(sum(a.size for a in parts))
            if self._write_error is not None:
                raise self._write_error
            # A copy the training cannot change, written to the runner by
            # a thread of its own while the training goes on.
            buf = self._free.get()
            np.concatenate(parts, out=buf)
            self._pending.put((self._sent, buf))
        self._sent += 1

    def _start_writer(self, values):
        import queue
        import threading
        import numpy as np
        self._free, self._pending = queue.Queue(), queue.Queue()
        for _ in range(3):
            self._free.put(np.zeros(values, dtype=np.float32))
        self._writer = threading.Thread(target=self._write_states, daemon=True)
        self._writer.start()

    def _write_states(self):
        while True:
            item = self._pending.get()
            if item is None:
                return
            index, buf = item
            try:
                if self._write_error is None:
                    _write_all(self._stream, json.dumps({"state": index, "size": buf.nbytes}).encode() + b"\n")
                    _write_all(self._stream, memoryview(buf).cast("B"))
            except OSError as e:
                self._write_error = e
            self._free.put(buf)

    def _flush(self):
        """Waits until every state is with the runner."""
        if self._writer is not None:
            self._pending.put(None)
            self._writer.join()
            self._writer = None
            if self._write_error is not None:
                raise self._write_error

    def audit(self):
        """After run_stop: nothing to reveal (the runner has the states it
        kept); closes the stream."""
        self._flush()
        if self._stream is not None:
            os.close(self._stream)
            self._stream = None


def _write_all(fd, data):
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def torch_linears(params):
    """torch.nn.Linear layers holding params (as initial_params gives
    them), ReLU between: the task's network in PyTorch."""
    import torch
    layers = []
    for i, (w, b) in enumerate(params):
        lin = torch.nn.Linear(w.shape[1], w.shape[0])
        with torch.no_grad():
            lin.weight.copy_(torch.from_numpy(w))
            lin.bias.copy_(torch.from_numpy(b))
        layers.append(lin)
        if i < len(params) - 1:
            layers.append(torch.nn.ReLU())
    return torch.nn.Sequential(*layers)


def torch_state(model, optimizer):
    """The (params, momentum) a PyTorch model's Linear layers and its
    torch.optim.SGD hold, for Training.commit."""
    import numpy as np
    import torch
    params, momentum = [], []
    for lin in (m for m in model.modules() if isinstance(m, torch.nn.Linear)):
        pair, bufs = [], []
        for p in (lin.weight, lin.bias):
            a = p.detach().cpu().numpy()
            buf = optimizer.state.get(p, {}).get("momentum_buffer")
            pair.append(a)
            bufs.append(np.zeros_like(a) if buf is None else buf.detach().cpu().numpy())
        params.append(tuple(pair))
        momentum.append(tuple(bufs))
    return params, momentum

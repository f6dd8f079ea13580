"""The d5list runner's side of a run of your code, for Python.

The runner puts this module on the run's PYTHONPATH (it is part of d5list,
not of your bundle). A run of your code talks to the runner through two
FIFOs the runner owns:

- $D5_GATE hands the run its seed. Opening it starts the runner's clock:
  the run's timed window opens when it takes its seed, so do everything
  that does not need the seed (imports, building the model, loading data)
  before, and everything the benchmark times after.
- $D5_RESULT_LOG takes the run's MLLOG lines. The runner reads them as they
  arrive; what arrived cannot be taken back. Log run_start right after the
  seed, and run_stop once, when the work is done: the window closes when
  run_stop arrives.

Outside a runner (a plain `python3 train.py`) there is no gate, and
take_seed falls back to $D5_SEED, or 1.
"""
import json
import os


def take_seed():
    """Opens the gate and returns this run's seed: the clock starts now."""
    gate = os.environ.get("D5_GATE")
    if not gate:
        return int(os.environ.get("D5_SEED", "1"))
    with open(gate) as f:
        return int(json.loads(f.readline())["seed"])

"""Random FMI 2.0 call sequences on a built FMU, through fmpy's low-level calls (issue 33).

    python tests/fuzz_fmi.py FMU SEED N [--pace 1e-3] [--bound 10]

Each sequence (its own ``random.Random((SEED, k))``: reproducible one by one) instantiates
the FMU, makes 10-40 calls drawn from the whole co-simulation interface (setupExperiment,
enter and exit initialization, doStep, setReal, getReal, get, set, free, serialize and
deserialize FMU states, reset, terminate), legal and illegal ones, with valid and invalid
arguments, and frees it.  Every call's status is compared with what FMI 2.0 (Sec 4.2.4's
state machine, and the model's own rules: a fixed parameter is set before the end of
initialization, inputs are finite) makes it: fmi2OK for a legal call, fmi2Error (or
fmi2Discard) for an illegal one, never fmi2Fatal.  A run of doSteps is paced at 1 kHz
wall time.  A watchdog ends the process (exit 3, the call named on stdout) when a call
does not return within ``--bound`` s.

What the legal calls did is kept as a history (parameters set, inputs set, steps; cut back
by a restored state, emptied by a reset); a sequence that ends stepping is then run
straight, on a fresh instance, from that history alone, and its outputs must equal the
sequence's bit for bit: the refused calls changed nothing, a restored state is the state
it was, a reset starts over.

Prints one JSON line per sequence: {"seq", "calls", "illegal", "mismatches", "fatal", "compared",
"equal", "max_call_s"}; then {"done": N}.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import sys
import threading
import time
from pathlib import Path

from fmpy.fmi1 import FMICallException
from fmpy.fmi2 import fmi2Discard, fmi2Error, fmi2Fatal, fmi2OK, fmi2Warning

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from fmu_src.host.master import FmuRunner  # noqa: E402

INST, INIT, STEP, TERM = "instantiated", "initialization", "stepping", "terminated"
PARAMS = {"mu": (0.1, 0.4), "q1_start": (10.0, 16.0), "u1_start": (5.0, 8.0)}
INPUTS = {"F_ext": (-3.0, 3.0), "T_ext": (-2.0, 2.0)}
BAD_VALUES = (math.nan, math.inf, -math.inf)


class Watchdog:
    """Ends the process when a call has not returned within ``bound`` s."""

    def __init__(self, bound):
        self.bound, self.call, self.since = bound, None, None
        threading.Thread(target=self._watch, daemon=True).start()

    def _watch(self):
        while True:
            time.sleep(0.05)
            call, since = self.call, self.since
            if call is not None and time.monotonic() - since > self.bound:
                print(json.dumps({"hang": call, "after_s": time.monotonic() - since}),
                      flush=True)
                os._exit(3)


class Sequence:
    """One random sequence on one instance, with the model of what each call must answer."""

    def __init__(self, fmu, md_dir, rng, watchdog, pace, name):
        self.rng, self.dog, self.pace = rng, watchdog, pace
        self.fmu_path, self.md_dir = fmu, md_dir
        self.r = FmuRunner(fmu, instance=name, initialize=False, unzip_dir=md_dir[0],
                           md=md_dir[1])
        self.f = self.r.fmu
        self.state, self.t = INST, 0.0
        self.params, self.history = {}, []      # legal effects since the last reset
        self.refused = set()    # parameters whose last value was refused: exit init refuses
        self.saved = []                         # (handle, history, params, t) taken stepping
        self.calls, self.mismatches, self.fatal, self.max_call = 0, [], 0, 0.0
        self.illegal = 0

    # --------------------------------------------------------------- one call
    def call(self, what, legal, fn, *args):
        """Run ``fn(*args)`` under the watchdog; check its status against ``legal``."""
        self.calls += 1
        self.illegal += not legal
        self.dog.call, self.dog.since = what, time.monotonic()
        t0 = time.monotonic()
        try:
            out, status = fn(*args), fmi2OK
        except FMICallException as exc:
            out, status = None, exc.status
        finally:
            self.dog.call = None
            self.max_call = max(self.max_call, time.monotonic() - t0)
        if status == fmi2Fatal:
            self.fatal += 1
        ok = status in (fmi2OK, fmi2Warning)
        if ok != legal or (not ok and status not in (fmi2Error, fmi2Discard)):
            said = self.r.messages[-1][1] if self.r.messages else ""
            self.mismatches.append(f"{what} in {self.state}: status {status}, "
                                   f"{'legal' if legal else 'illegal'} ({said})")
        return ok, out

    # --------------------------------------------------------------- the calls
    def setup(self):
        if self.rng.random() < 0.5:
            self.call("setupExperiment", self.state == INST, self.f.setupExperiment,
                      None, 0.0, None)
        else:            # a stop time before the start time: refused in any state
            self.call("setupExperiment(stop < start)", False, self.f.setupExperiment,
                      None, 0.0, -1.0)

    def enter(self):
        if self.call("enterInitializationMode", self.state == INST,
                     self.f.enterInitializationMode)[0]:
            self.state = INIT

    def exit(self):
        if self.call("exitInitializationMode", self.state == INIT and not self.refused,
                     self.f.exitInitializationMode)[0]:
            self.state = STEP

    def set_parameter(self):
        name = self.rng.choice(sorted(PARAMS))
        bad = self.rng.random() < 0.3
        value = self.rng.choice(BAD_VALUES) if bad else self.rng.uniform(*PARAMS[name])
        legal = not bad and self.state in (INST, INIT)
        if self.call(f"setReal({name}={value})", legal, self.f.setReal,
                     [self.r.vr(name)], [value])[0]:
            self.params[name] = value
            self.refused.discard(name)
        elif self.state in (INST, INIT):
            self.refused.add(name)      # its value is then none: the defaults are not used

    def set_input(self):
        name = self.rng.choice(sorted(INPUTS))
        bad = self.rng.random() < 0.2
        value = self.rng.choice(BAD_VALUES) if bad else self.rng.uniform(*INPUTS[name])
        legal = not bad and self.state != TERM
        if self.call(f"setReal({name}={value})", legal, self.f.setReal,
                     [self.r.vr(name)], [value])[0]:
            self.history.append(("set", name, value))

    def set_unknown(self):
        self.call("setReal(vr 99999)", False, self.f.setReal, [99999], [1.0])

    def get(self):
        if self.rng.random() < 0.15:
            self.call("getReal(vr 99999)", False, self.f.getReal, [99999])
        else:
            self.call("getReal(outputs)", self.state != INST, self.f.getReal,
                      [self.r.vr("q1"), self.r.vr("u2"), self.r.vr("N")])

    def steps(self):
        """A run of 1-40 doSteps paced at 1 kHz, or one doStep with a bad argument."""
        legal_state = self.state == STEP
        if self.rng.random() < 0.2:
            t, h = self.rng.choice([(self.t + 0.5, 1e-3), (self.t, 0.0), (self.t, -1e-3),
                                    (self.t, math.nan), (math.nan, 1e-3), (self.t, math.inf)])
            self.call(f"doStep({t}, {h})", False, self.f.doStep, t, h)
            return
        tick = time.monotonic()
        for _ in range(self.rng.randint(1, 40)):
            ok, _ = self.call(f"doStep({self.t}, 1e-3)", legal_state, self.f.doStep,
                              self.t, 1e-3)
            if not ok:
                return
            self.history.append(("step", self.t))
            self.t += 1e-3
            tick += self.pace
            time.sleep(max(0.0, tick - time.monotonic()))

    def get_state(self):
        ok, handle = self.call("getFMUstate", True, self.f.getFMUstate)
        if not ok:
            return
        if self.state == STEP and len(self.saved) < 4:
            self.saved.append((handle, list(self.history), dict(self.params), self.t))
        else:
            self.call("freeFMUstate", True, self.f.freeFMUstate, handle)

    def _restore(self, handle, history, params, t):
        """Legal in every state (FMI 2.0 Sec 2.1.8); brings back the state's own (stepping)."""
        if self.call("setFMUstate", True, self.f.setFMUstate, handle)[0]:
            self.history, self.params, self.t = list(history), dict(params), t
            self.state = STEP

    def set_state(self):
        if not self.saved:
            return self.get_state()
        self._restore(*self.rng.choice(self.saved))

    def round_trip(self):
        """Serialize a saved state and deserialize it (intact, or one byte changed, or cut
        short: refused); restore the copy."""
        if not self.saved:
            return self.get_state()
        handle, history, params, t = self.rng.choice(self.saved)
        ok, data = self.call("serializeFMUstate", True, self.f.serializeFMUstate, handle)
        if not ok:
            return
        damage = self.rng.choice(["none", "none", "flip", "cut"])
        if damage == "flip":
            k = self.rng.randrange(len(data))
            data = data[:k] + bytes([data[k] ^ (1 << self.rng.randrange(8))]) + data[k + 1:]
        elif damage == "cut":
            data = data[:self.rng.randrange(len(data))]
        ok, copy = self.call(f"deSerializeFMUstate({damage})", damage == "none",
                             self.f.deSerializeFMUstate, data)
        if ok:
            self._restore(copy, history, params, t)
            self.call("freeFMUstate", True, self.f.freeFMUstate, copy)

    def reset(self):
        if self.call("reset", True, self.f.reset)[0]:
            self.state, self.t, self.params, self.history = INST, 0.0, {}, []
            self.refused = set()
            self.saved_free()

    def terminate(self):
        if self.call("terminate", self.state == STEP, self.f.terminate)[0]:
            self.state = TERM

    def saved_free(self):
        for handle, *_ in self.saved:
            self.call("freeFMUstate", True, self.f.freeFMUstate, handle)
        self.saved = []

    def legal_start(self):
        """setup, enter, a parameter or two, exit: most sequences step."""
        self.call("setupExperiment", True, self.f.setupExperiment, None, 0.0, None)
        self.enter()
        for _ in range(self.rng.randint(0, 2)):
            name = self.rng.choice(sorted(PARAMS))
            value = self.rng.uniform(*PARAMS[name])
            if self.call(f"setReal({name})", True, self.f.setReal, [self.r.vr(name)],
                         [value])[0]:
                self.params[name] = value
                self.refused.discard(name)
        self.exit()

    # --------------------------------------------------------------- a sequence
    def run(self, n_calls):
        if self.rng.random() < 0.8:
            self.legal_start()
        actions = [(self.setup, 2), (self.enter, 3), (self.exit, 3), (self.set_parameter, 4),
                   (self.set_input, 6), (self.set_unknown, 1), (self.get, 5), (self.steps, 14),
                   (self.get_state, 4), (self.set_state, 4), (self.round_trip, 3),
                   (self.reset, 1), (self.terminate, 1)]
        fns, weights = zip(*actions)
        for _ in range(n_calls):
            self.rng.choices(fns, weights)[0]()
        ends_stepping = self.state == STEP and self.history
        outputs = self.r.outputs() if ends_stepping else None
        self.saved_free()
        self.dog.call, self.dog.since = "freeInstance", time.monotonic()
        self.r.close()
        self.dog.call = None
        return outputs

    def straight(self):
        """The sequence's history alone, on a fresh instance: its outputs."""
        r = FmuRunner(self.fmu_path, params=self.params, instance="straight",
                      unzip_dir=self.md_dir[0], md=self.md_dir[1])
        try:
            for op, *args in self.history:
                if op == "set":
                    r.set(**{args[0]: args[1]})
                else:
                    assert abs(r.t - args[0]) < 1e-12, (r.t, args[0])
                    r.fmu.doStep(args[0], 1e-3)
                    r.t = args[0] + 1e-3
            return r.outputs()
        finally:
            r.close()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("fmu")
    ap.add_argument("seed", type=int)
    ap.add_argument("n", type=int)
    ap.add_argument("--pace", type=float, default=1e-3, help="wall seconds per doStep")
    ap.add_argument("--bound", type=float, default=10.0, help="seconds a call may take")
    a = ap.parse_args(argv)
    from fmpy import extract, read_model_description
    md_dir = (extract(a.fmu), read_model_description(a.fmu))
    dog = Watchdog(a.bound)
    for k in range(a.n):
        rng = random.Random(f"{a.seed}:{k}")
        seq = Sequence(a.fmu, md_dir, rng, dog, a.pace, f"fuzz{k}")
        outputs = seq.run(rng.randint(10, 40))
        row = {"seq": k, "calls": seq.calls, "illegal": seq.illegal,
               "mismatches": seq.mismatches,
               "fatal": seq.fatal, "compared": outputs is not None, "equal": None,
               "max_call_s": round(seq.max_call, 4)}
        if outputs is not None:
            dog.call, dog.since = "straight run", time.monotonic()
            straight = seq.straight()
            dog.call = None
            # ``status`` reports the last refused call until the next step: the sequence's
            # may say a refusal that the straight run never made
            code = outputs.pop("status")
            straight.pop("status")
            row["status"] = code
            row["equal"] = straight == outputs
            if not row["equal"]:
                row["diff"] = {k: (outputs[k], straight[k]) for k in outputs
                               if outputs[k] != straight[k]}
        print(json.dumps(row), flush=True)
    print(json.dumps({"done": a.n}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""First symbolic embedding of the N-link chain's point pin (issue 14), measured in one run.

    python benchmarks/bench_embedding.py [--reps 5] [--Ns 5,10,20,40] [--no-peer]

For the pendulum chain (scenarios/pendulum_chain.py, ``build(N)``) with its tip pinned to a
point (mode 2, constraints tip_x and tip_y, u_N-1 and u_N dependent) the first embedding of
the mode, as the background worker forms it (``AutomatonForms.mode_parts`` with
EXPLICIT_OPS_OFFLINE, the embedding cache cleared before each repetition):

- "forming": S z = s read from the model's coefficients (``model.LinearTerms``; read once at
  set-up, its cost is the "coefficients" column, not part of any embedding);
- "direct": the same system by differentiating the recombined equations (eq 13-15) for every
  unknown and checking each entry for them (``ModeEquations(direct=True)``, the way it was
  formed before the coefficient form);
- "compile": ``compile_parts`` of the forming's parts with LLVM, as the worker compiles
  ("d.comp": of the direct form's parts, the same system in the structure it had before);
- "before", "after": the whole first embedding, direct + d.comp against forming + compile;
- "peer": sympy's KanesMethod re-derived with u_dependent for the same constraints
  (``bench_general.chain_peer``), the alternative to embedding.

Medians of ``--reps`` repetitions (fewer for large N), wall time, in seconds.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import scenarios  # noqa: E402
from embed.embedding import embedding  # noqa: E402
from embed.modes.compile import compile_parts  # noqa: E402
from embed.embedding.equations import EXPLICIT_OPS_OFFLINE  # noqa: E402
from embed.modes.forming import AutomatonForms  # noqa: E402
from embed.modes.library import ModeLibrary  # noqa: E402


@contextlib.contextmanager
def differentiated():
    """Every ModeEquations formed meanwhile takes the differentiated form (direct=True)."""
    saved = embedding._coefficient_form
    embedding._coefficient_form = lambda *a, **k: None
    try:
        yield
    finally:
        embedding._coefficient_form = saved


def first_embedding(forms, key, reps, compile_=False):
    """Median seconds of forming the mode ``key`` afresh (and of compiling its parts)."""
    form, comp = [], []
    for _ in range(reps):
        forms.library.embeddings.clear()
        t0 = time.perf_counter()
        parts = forms.mode_parts(key, EXPLICIT_OPS_OFFLINE)
        t1 = time.perf_counter()
        form.append(t1 - t0)
        if compile_:
            compile_parts(parts, key, "llvm")
            comp.append(time.perf_counter() - t1)
    return statistics.median(form), (statistics.median(comp) if comp else float("nan")), parts


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--Ns", default="5,10,20,40")
    ap.add_argument("--no-peer", action="store_true", help="skip sympy's KanesMethod")
    a = ap.parse_args(argv)
    if not a.no_peer:
        from bench_general import chain_peer
    print("First symbolic embedding of the chain's point pin (mode 2: tip_x, tip_y), medians, s")
    print(f"{'N':>3s} {'nz':>4s} {'coeffs':>7s} {'direct':>7s} {'forming':>7s} {'dir/form':>8s} "
          f"{'d.comp':>7s} {'compile':>7s} {'before':>7s} {'after':>7s} {'bef/aft':>7s} "
          f"{'peer':>7s} {'peer/aft':>7s}")
    for N in (int(x) for x in a.Ns.split(",")):
        reps = max(1, a.reps if N <= 10 else a.reps // (N // 10 + 1))
        sc = scenarios.load("pendulum_chain").build(N)
        t0 = time.perf_counter()
        forms = AutomatonForms(sc.automaton, ModeLibrary())      # reads the coefficients once
        coeffs = time.perf_counter() - t0
        key = (2, ("tip_x", "tip_y"), (N - 2, N - 1))
        with differentiated():
            direct, dcomp, _ = first_embedding(forms, key, reps, compile_=True)
        fast, comp, parts = first_embedding(forms, key, reps, compile_=True)
        peer = float("nan") if a.no_peer else chain_peer(N, max(1, reps // 2), point=True)
        before, after = direct + dcomp, fast + comp
        print(f"{N:3d} {len(parts.get('z', [])):4d} {coeffs:7.3f} {direct:7.3f} {fast:7.3f} "
              f"{direct / fast:8.1f} {dcomp:7.3f} {comp:7.3f} {before:7.3f} {after:7.3f} "
              f"{before / after:7.2f} {peer:7.3f} {peer / after:7.1f}", flush=True)


if __name__ == "__main__":
    main()

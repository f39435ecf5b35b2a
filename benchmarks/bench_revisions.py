"""Two revisions of the engine side by side: a refactoring must not make the step slower.

    python benchmarks/bench_revisions.py BEFORE [AFTER] [--scenario disk_ramp] [--rounds 12] [--runs 5]

Each revision is checked out in a temporary git worktree and run with this venv
(``PYTHONPATH`` first), alternating, ``--rounds`` times: each run steps ``--runs`` fresh
simulators of the scenario for ``--t-end`` s in 1 ms advances (RK4, symbolic path) and reports
the median cost of an advance without and with an event.  The table gives, per revision, the
minimum and the median over the rounds of those medians (a shared machine runs some rounds
slower throughout: compare the minima).  AFTER defaults to the working tree.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

RUN = r"""
import json, statistics, sys, time
import scenarios
sc = scenarios.load(sys.argv[1]).build()
plain, event = [], []
for _ in range(int(sys.argv[3])):
    sim = sc.simulator(embedding="symbolic")
    for k in range(int(round(float(sys.argv[2]) / 1e-3))):
        n = sim.event_count
        t0 = time.perf_counter()
        sim.advance((k + 1) * 1e-3)
        (event if sim.event_count != n else plain).append(time.perf_counter() - t0)
print(json.dumps([statistics.median(plain) * 1e6, statistics.median(event) * 1e6 if event else None]))
"""


def run(tree: Path, args) -> list:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run([sys.executable, "-c", RUN, args.scenario, str(args.t_end), str(args.runs)],
                         cwd=tree, env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("before")
    ap.add_argument("after", nargs="?", default=None, help="a revision (default: the working tree)")
    ap.add_argument("--scenario", default="disk_ramp")
    ap.add_argument("--t-end", type=float, default=8.0)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=12)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench_revisions_") as tmp:
        trees = {}
        for label, rev in (("before", args.before), ("after", args.after)):
            if rev is None:
                trees[f"{label} (working tree)"] = ROOT
                continue
            tree = Path(tmp) / label
            subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(tree),
                            rev], check=True)
            trees[f"{label} ({rev})"] = tree
        try:
            results = {label: [] for label in trees}
            for _ in range(args.rounds):
                for label, tree in trees.items():
                    results[label].append(run(tree, args))
        finally:
            for tree in trees.values():
                if tree != ROOT:
                    subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force",
                                    str(tree)], check=False)
    print(f"{args.scenario}: advance of 1 ms, RK4, symbolic path; {args.runs} runs of "
          f"{args.t_end:g} s a round, {args.rounds} rounds alternating")
    print(f"{'revision':34s} {'plain min':>10s} {'plain med':>10s} {'event min':>10s} {'event med':>10s}")
    for label, rows in results.items():
        plain = [r[0] for r in rows]
        event = [r[1] for r in rows if r[1] is not None]
        ev = (f"{min(event):10.1f} {statistics.median(event):10.1f}" if event
              else f"{'-':>10s} {'-':>10s}")
        print(f"{label:34s} {min(plain):10.2f} {statistics.median(plain):10.2f} {ev}   (us)")


if __name__ == "__main__":
    main()

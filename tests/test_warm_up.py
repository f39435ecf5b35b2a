"""What a real-time run's warm-up pages in (embed/hybrid/warmup.py; issue 30, tails): the first
chart the configuration projection takes on a constraint set announced later (a fence, seconds
into the run) executes no code the process never ran.  Traced before: two pages of OpenBLAS's
small dgemm kernel faulted in at a fence's first chart (4.456 s into benchmarks/hil_fences.py),
a step of 0.7-0.9 ms of CPU and 0.4-0.8 ms off it where that step takes 0.35 ms.  Counted here
as the thread's page faults over the chart, in a fresh process each."""

import subprocess
import sys

from embed.base.tolerances import PHI_TOL

CHILD = r"""
import resource, sys
import numpy as np
import scenarios
from embed.hybrid.projection import Projection

sim = scenarios.load("disk_fence").build().simulator()
n = sim.model.n
if sys.argv[1] == "warmed":
    sim.warm_up(calls=True)       # a real-time FMU's initialization (fmu_src/runtime/simulation)


class Fence(Projection):          # Phi = (q1 - q0^2, q2 - sin q0): two rows, as a fence's
    __slots__ = ()

    def phi(self, tq):            # (Phi, Phi_q), Phi_q a view as Projection.phi gives it
        q = tq[1:1 + n]
        v = np.zeros((2, n + 1))
        v[:, 0] = q[1] - q[0] ** 2, q[2] - np.sin(q[0])
        v[0, 1:4] = -2 * q[0], 1.0, 0.0
        v[1, 1:4] = -np.cos(q[0]), 0.0, 1.0
        return v[:, 0], v[:, 1:]


p = Fence()
q = np.zeros(n)
q[:3] = 0.3, 0.09 + 1e-6, np.sin(0.3) - 2e-6
before = resource.getrusage(resource.RUSAGE_THREAD).ru_minflt
q, chart, recharts = p.project(0.0, q, np.zeros(0), None)
faults = resource.getrusage(resource.RUSAGE_THREAD).ru_minflt - before
print(faults, recharts, float(np.max(np.abs(p.phi(np.concatenate(([0.0], q)))[0]))))
"""


def chart_faults(kind):
    out = subprocess.run([sys.executable, "-c", CHILD, kind], capture_output=True, text=True,
                         check=True)
    faults, recharts, residual = out.stdout.split()[-3:]
    return int(faults), int(recharts), float(residual)


def test_a_first_chart_after_the_warm_up_faults_in_no_page():
    """disk_fence's simulator, built: a projection's first chart (haug_pavesic2023 eq 13-16,
    two constraints on its coordinates) faults pages in (numpy's and OpenBLAS's code never
    run in the process; stop 50's warm-up left two); after ``warm_up(calls=True)``, none, and
    the chart projects the same way (onto the manifold, one chart taken)."""
    cold, warmed = chart_faults("cold"), chart_faults("warmed")
    assert cold[0] > 0, cold              # (the count sees the faults it is meant to)
    assert warmed[0] == 0, (cold, warmed)
    for faults, recharts, residual in (cold, warmed):
        assert recharts == 1 and residual <= PHI_TOL

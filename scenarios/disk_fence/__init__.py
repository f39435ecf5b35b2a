"""A disk on a ramp meeting a fence announced at run time: gillespie2005 Example 2 (Sec 6.2, Fig 8-11).

Coordinates q1, q2 (the disk centre), q3 (its rotation) and q4, the path parameter of the
contact point S on the ramp-plus-fence path; u_i = dq_i/dt.  q4 has no inertia: it is
fixed by the contact constraints, and parked (u4 = 0) in free flight.  The ramp runs
from O at angle phi (t = (cos phi, sin phi), n = (-sin phi, cos phi) towards the disk)
and ends at P, q4 = L.  Modes:

- 1 free flight (3 dof): the disk touching the ramp is a plastic impact (e = 0): the
  momentum-consistent activation jump of mueller eq 7 (frictionless contact);
- 2 on the ramp (2 dof): centre = q4 t + r n, two configuration constraints;
- 3 on a fence (2 dof): centre = P + s t + h(s) n + r N(s), s = q4 - L, for the fence
  announced last (this package's modules: an arc of radius R or a height profile given as
  text), all reported as 3: the arc family and the cubic family h = c2 s^2 + c3 s^3 are
  compiled at set-up (announcing one sets discrete variables).  Any other profile steps at
  once on the fence of any profile, formed once with h an undefined function of q4 and
  given the profile's jet, h and three derivatives (``family``: its terms and its symbolic embedding;
  ``jet_mode.JetMode``); the fast worker checks
  the text and differentiates it in a few ms.  The slow worker then embeds the profile on
  its own, its RK4 step composed into one function, which replaces the family's mode (a
  profile with abs() keeps the family's).

Leaving: the normal force N turning tensile (mode 1), the ramp's end q4 = L (onto the
fence if one is known, else into free flight), back from the fence onto the ramp
(q4 = L), the fence's end (free flight).  The contact is smooth: the multipliers of the
two contact constraints are the force on the disk centre, N its normal component.

The package's modules (the scenario itself is ``scenario``; the FMU side, inputs,
outputs and state, is ``extension``):

| module | what |
|---|---|
| ``scenario`` | the scenario itself (``build``: imports sympy; the package imports it only when built) |
| ``symbolic`` | the module-level symbols, imported at their first use |
| ``profile`` | a fence as a height profile h(s), parsed through ``embed.base.expression`` |
| ``checks`` | the checks of a profile from outside, and their time limit |
| ``plane`` | the fence as a plane curve (ramp frame, fence frame, disk centre) |
| ``modes`` | a fence's constraints and mode; the compiled arc and polynomial families |
| ``family`` | the fence of any profile (terms and embedding formed once), installed per profile |
| ``jet_mode`` | one profile's mode on the family's embedding, evaluated with its jet |
| ``announce`` | announcing a fence to a simulator (discrete variables, checks) |
| ``jobs`` | the fast worker's job: check, differentiate, relay the embedding request |
| ``extension`` | the fence's FMU inputs and outputs, announcements and their answers (``Scenario.extension``) |
"""

from __future__ import annotations


def build():
    """The disk_fence scenario (``scenario.build``).

    Returns
    -------
    embed.Scenario
    """
    from .scenario import build as build_scenario
    return build_scenario()


FORWARDED = ("WORKER_JOBS", "WORKER_SET_UP", "FENCE_INPUTS", "FENCE_OUTPUTS", "FenceGeometry",
             "symbols", "build_model", "over_ramp", "visuals")


def __getattr__(name):
    """The scenario module's other names (``WORKER_JOBS``, ``symbols``, ``FenceGeometry``, ...),
    imported at their first use: importing this package imports nothing symbolic, so that a
    scenario image names the classes of its modules by reference (issue 30)."""
    if name not in FORWARDED:        # (a submodule's name: the import system imports it)
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from . import scenario
    return getattr(scenario, name)

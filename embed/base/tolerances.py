"""Every numerical tolerance the engine decides with, in one place (issue 28).

Each is named for what it decides.  The two rank tolerances differ on purpose: the engine
refuses a constraint set whose pivoted QR of B (gillespie2005 eq 11) finds a pivot below
``PIVOT_RANK_TOL`` max(1, the largest), while the model checker (``embed.check``) reports a set as
redundant when a singular value of B falls below ``REDUNDANCY_TOL`` max(1, the largest), a decade
earlier, so that a set the engine would still partition, badly conditioned, is named before a
run meets it (a pivot of R is never smaller than the smallest singular value).
"""

# --- the constraint Jacobian B (gillespie2005 eq 7, 11)
PIVOT_RANK_TOL = 1e-10    # a pivot of B's pivoted QR <= this max(1, largest pivot) is zero
REDUNDANCY_TOL = 1e-9     # the checker: a singular value of B <= this max(1, largest) is zero

# --- constraints held and activated (haug_pavesic2023 eq 13-16, mueller eq 5-7)
PHI_TOL = 1e-12           # configuration constraints are held to this by Newton iteration
ACTIVATION_TOL = 1e-12    # no jump when |B u + C| <= ACTIVATION_TOL max(1, |u|)

# --- time
EVENT_TOL = 1e-12         # s: width of the bracket around a located event time
GRID_TOL = 1e-12          # s: an end of step this close to a grid point is the grid point

# --- impact laws (wang2019 eq 19, the frictional impact problem)
IMPACT_RTOL = 1e-12       # relative threshold for singular matrices and round-off
IMPACT_ETOL = 1e-9        # relative round-off allowed on the contact work before a law gains

"""The symbol every model shares: time t, in which Phi(q, t), C and the loads are written
(gillespie2005 eq 1-7).  Apart from ``model.py`` so that the constraints need no model to
name it (``Model.from_system`` reaches the constraints through ``joints``)."""

import symengine as se

TIME = se.Symbol("t")

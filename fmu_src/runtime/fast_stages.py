"""A mode stepped stage by stage in the loader's fast path (issue 30, "Python only on events"):
loader.h's ``FastStages``, which fmu_src/runtime/loader/fast_step.c's ``staged`` runs to the
bit as the mode's own ``rk4`` (disk_fence's ``JetMode``: a family's right-hand side with a
profile's jet at each stage, the jet compiled code or a ``Tape`` the C runs).
"""

from __future__ import annotations

import ctypes

from embed.modes.functions import TAPE_OPERATIONS

_P, _I = ctypes.c_void_p, ctypes.c_int


class Stages(ctypes.Structure):
    """loader.h's ``FastStages``: a mode stepped stage by stage (``staged_step``)."""

    _fields_ = [("jet", _P), ("f", _P), ("mon", _P), ("buf", _P), ("k", _P), ("s", _P),
                ("n_in", _I), ("j0", _I), ("i_q", _I), ("i_L", _I),
                ("tape", _P), ("outs", _P), ("regs", _P), ("n_ops", _I), ("n_out", _I)]


# fast_step.c's enum of a tape's operations (embed.modes.functions.Tape)
TAPE_OPS = ("add", "sub", "mul", "div", "pow", "neg", "sqrt", "fabs", "sign", "max", "min",
            "atan2", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "log",
            "exp")
assert TAPE_OPERATIONS == TAPE_OPS


def c_array(ctype, values):
    """A ctypes array holding ``values`` and its address."""
    a = (ctype * max(len(values), 1))(*values)
    return a, ctypes.addressof(a)


def staged_step(mode):
    """(jet, f, mon, buffer, j0, i_q, i_L) of a mode whose RK4 runs stage by stage in C
    (fast_step.c's ``staged``: a family's right-hand side with a profile's jet at each stage,
    the jet an address or a ``Tape`` of one argument; disk_fence's ``JetMode.c_stages``), or
    None."""
    stages = getattr(mode, "c_stages", None)
    return None if stages is None else stages()


def stages_record(m, stages):
    """The ``FastStages`` of staged mode ``m`` (``staged_step``'s ``stages``) with buffers of
    its own, not the mode's (another instance may step the same mode): (its address, the
    ctypes objects to keep alive with the record)."""
    jet, f, mon, buf, j0, i_q, i_L = stages
    b, a_b = c_array(ctypes.c_double, buf.tolist())
    k, a_k = c_array(ctypes.c_double, [0.0] * (4 * m.nx))
    sv, a_s = c_array(ctypes.c_double, [0.0])
    st = Stages(f=f, mon=mon, buf=a_b, k=a_k, s=a_s, n_in=buf.size, j0=j0, i_q=i_q, i_L=i_L)
    keep = (b, k, sv, st)
    if isinstance(jet, int):
        st.jet = jet
    else:                      # a Tape (of one argument): its instructions, registers, outputs
        ops, a_ops = c_array(ctypes.c_int, [v for op in jet.prog for v in op])
        regs, a_regs = c_array(ctypes.c_double, jet.regs)
        outs, a_outs = c_array(ctypes.c_int, jet.outs)
        st.tape, st.regs, st.outs = a_ops, a_regs, a_outs
        st.n_ops, st.n_out = len(jet.prog), jet.n_out
        keep += (ops, regs, outs)
    return ctypes.addressof(st), keep

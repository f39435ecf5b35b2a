"""The symbol every model shares: time t, in which Phi(q, t), C and the loads are written
(gillespie2005 eq 1-7).  Apart from ``model.py`` so that the constraints need no model to
name it (``Model.from_system`` reaches the constraints through ``joints``).  Made at the
first ``symbols.TIME`` (module ``__getattr__``): importing this module imports no symengine
(the stepping process's modules name it inside their symbolic functions, issue 30)."""


def __getattr__(name):
    if name == "TIME":
        import symengine as se
        value = globals()["TIME"] = se.Symbol("t")
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

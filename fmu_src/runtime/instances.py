"""What the FMU instances of one process share: the scenario built once per process (pythonfmu
re-runs a slave's ``__init__``), the background embedding workers, the outputs' dependence on
the inputs, and pythonfmu's sys.path entry.
"""

from __future__ import annotations

import threading

from fmu_src.runtime import derivatives

_LOCK = threading.RLock()   # instances made from threads of their own build each thing once
_SCENARIOS = {}   # (name, options) -> Scenario, built once per process
_COMPILERS = {}   # (name, options) -> background embedding worker, one per process
_DEPENDENCE = {}  # (name, options) -> output_dependence, once per process


def scenario(name, options, notes=None):
    """The scenario, once per process: shipped in the FMU's resources (``formed``: its image,
    formed and compiled at ``embed-fmu build``), else built; why a shipped file was refused
    goes to ``notes``."""
    key = (name, tuple(sorted(options.items())))
    with _LOCK:
        sc = _SCENARIOS.get(key)
        if sc is None:
            from fmu_src.runtime import formed
            sc, why, dependence = formed.load(name, dict(options))
            if notes is not None:
                notes.extend(why)
            _SCENARIOS[key] = sc
            if dependence is not None:        # the image's: formed at build time
                _DEPENDENCE[key] = dependence
    return sc


def compiler(name, options, resources, lazy=False, idle=False):
    """A client of the process's background embedding workers for this scenario (one per
    instance: its answers are its own).  The workers stop with their last client (closed at
    fmi2Terminate or when the instance is freed), and start again for the next one; ``lazy``
    (a pair started now): at its first request (``Workers._wake``); ``idle``: a pair started
    now in the idle scheduling class (a real-time run's; a pair running already keeps its
    class)."""
    key = (name, tuple(sorted(options.items())))
    with _LOCK:
        bc = _COMPILERS.get(key)
        if bc is None or not bc.alive():
            from embed.background.client import BackgroundCompiler
            from fmu_src.runtime.formed import worker_jobs   # an image's: no module imported
            first = _COMPILERS[key] = BackgroundCompiler(name, dict(options), root=resources,
                                                         lazy=lazy, idle=idle,
                                                         **worker_jobs(name, dict(options)))
            client = first.client(resources)
            first.close()          # the pair lives as long as its instances' clients
            return client
        return bc.client(resources)


def forget_repeated_path(resources):
    """pythonfmu's binary puts the resources folder in front of sys.path at every
    fmi2Instantiate: without this, sys.path grows by one entry per instance."""
    import sys
    if resources and sys.path.count(resources) > 1:
        first = sys.path.index(resources)
        sys.path[first + 1:] = [p for p in sys.path[first + 1:] if p != resources]


def dependence(name, options, sc):
    """Which outputs may follow which inputs at an instant (``derivatives.output_dependence``),
    once per process."""
    key = (name, tuple(sorted(options.items())))
    with _LOCK:
        if key not in _DEPENDENCE:
            _DEPENDENCE[key] = derivatives.output_dependence(sc)
        return _DEPENDENCE[key]


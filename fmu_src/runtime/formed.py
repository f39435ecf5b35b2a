"""The scenario formed at ``embed-fmu build`` and the modes compiled there, shipped (issue 30).

``form`` runs at build time, in the build's renamed packages: it builds the scenario (Kane's
terms F_r, F_r*, gillespie2005 eq 1-4, the automaton, the interface), writes it to
resources/formed/scenario.pkl, then runs the scenario's default simulator over the FMU's
default experiment, so that every mode it reaches without run-time geometry is embedded and
compiled (and, for ``precompile`` scenarios, every mode and partition), and writes the
scenario with its mode libraries' object code to resources/formed/objects.pkl.  ``load``
reads them at fmi2Instantiate (``embed.base.shipped``: a file formed for another model,
package versions or CPU, or a corrupt one, is refused by its key or hash, and the FMU forms
and compiles as without it, saying why in its log).
"""

from __future__ import annotations

import time
from pathlib import Path

from embed.base import shipped

ROOT = Path(__file__).resolve().parents[2]       # the FMU's resources (or the source tree)
TAG = shipped.tag_of(__name__)


def form(name: str, options: dict, root, until: float, log=print) -> Path:
    """Write ``root``/formed/{scenario,objects}.pkl for scenario ``name`` built with
    ``options`` (``root``: the staged resources, holding the renamed packages); the default
    simulator runs to ``until`` s first.  Returns the folder written."""
    import scenarios
    from embed.modes.library import ModeLibrary
    started = time.perf_counter()
    sc = scenarios.load(name).build(**options)
    folder = Path(root) / shipped.FOLDER
    sizes = {shipped.SCENARIO_FILE: shipped.write(
        folder / shipped.SCENARIO_FILE, shipped.model_key(root, name, options, TAG, cpu=False),
        sc)}
    embedding = sc.embedding
    # the background path steps on the compiled-terms (numeric) path until its worker
    # answers: that is what its library holds at start
    library = ModeLibrary.of(sc.automaton, embedding)
    try:
        sim = sc.simulator(embedding="numeric" if embedding == "background" else embedding,
                           library=library)
        sim.advance(until)
    except Exception as exc:  # noqa: BLE001 - ship what was compiled before it stopped
        log(f"{name}: the default run stopped at build time ({type(exc).__name__}: {exc}); "
            "shipping the modes compiled until then")
    sizes[shipped.OBJECTS_FILE] = shipped.write(
        folder / shipped.OBJECTS_FILE, shipped.model_key(root, name, options, TAG, cpu=True),
        (sc, {embedding: library.picklable()}))
    log(f"{name}: formed and compiled for shipping in {time.perf_counter() - started:.1f} s "
        f"({', '.join(f'{k} {v / 1e3:.0f} kB' for k, v in sizes.items())})")
    return folder


def load(name: str, options: dict):
    """(scenario or None, notes): the shipped scenario, its shipped libraries adopted as the
    ones its simulators share (``ModeLibrary.adopt``); None if nothing shipped loads."""
    sc, libraries, notes = shipped.load_formed(ROOT, name, options, TAG)
    if sc is not None and libraries:
        from embed.modes.library import ModeLibrary
        for embedding, library in libraries.items():
            ModeLibrary.adopt(sc.automaton, embedding, library)
    return sc, notes

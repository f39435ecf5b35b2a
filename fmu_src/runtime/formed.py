"""The model formed at ``embed-fmu build`` and the modes compiled there, shipped (issue 30).

``form`` runs at build time, in the build's renamed packages: it builds the scenario,
recording Kane's terms F_r, F_r* (gillespie2005 eq 1-4) as sympy (``embed.model.kane_terms``)
into resources/formed/kane.pkl, then runs the scenario's default simulator over the FMU's
default experiment, so that every mode it reaches without run-time geometry is embedded and
compiled (and, for ``precompile`` scenarios, every mode and partition), and writes its mode
libraries' object code (no symbolic expression: ``ModeLibrary.picklable``) to
resources/formed/objects.pkl.  ``load``
reads them at fmi2Instantiate; the background worker reads kane.pkl (``embed.background.
worker``).  A file formed for another model, package versions or CPU, or a corrupt one, is
refused by its key or hash (``embed.base.shipped``) and the FMU forms and compiles as without
it, saying why in its log.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

from embed.base import shipped

ROOT = Path(__file__).resolve().parents[2]       # the FMU's resources (or the source tree)
TAG = shipped.tag_of(__name__)
PIVOTS_KEY = "dgeqp3"     # objects.pkl's entry of the default run's pivoted QRs (``partition``)
_LOCK = threading.RLock()


def form(name: str, options: dict, root, until: float, log=print) -> Path:
    """Write ``root``/formed/{kane,objects}.pkl for scenario ``name`` built with ``options``
    (``root``: the staged resources, holding the renamed packages); the default simulator
    runs to ``until`` s first.  Returns the folder written."""
    import scenarios
    from embed.model import kane_terms
    from embed.embedding.partition import recording
    from embed.modes.library import ModeLibrary
    started = time.perf_counter()
    module = scenarios.load(name)
    with kane_terms.recording() as terms:
        sc = module.build(**options)
    folder = Path(root) / shipped.FOLDER
    sizes = {shipped.KANE_FILE: shipped.write(
        folder / shipped.KANE_FILE, shipped.model_key(root, name, options, TAG, cpu=False),
        terms)}
    embedding = sc.embedding
    # the background path steps on the compiled-terms (numeric) path until its worker
    # answers: that is what its library holds at start
    library = ModeLibrary.of(sc.automaton, embedding)
    warmed, own = [], {}
    with recording() as pivots:       # dgeqp3's answers of the run, shipped (``partition``)
        try:
            sim = sc.simulator(embedding="numeric" if embedding == "background" else embedding,
                               library=library)
            if sc.precompile and embedding == "background":   # as the FMU's start there
                sim.mode_compiler.precompile()
            if sc.extension is not None:     # as the FMU's start: what it forms and shares
                mine = set(library._own)     # (disk_fence's fence families) ships in the image
                sc.extension(sim, None, log)
                own = {k: v for k, v in library._own.items() if k not in mine}
            before = set(library.entry)
            sim.warm_up()        # as the FMU's initialization: every mode's entry terms
            warmed = [k for k in library.entry if k not in before]
            sim.advance(until)
        except Exception as exc:  # noqa: BLE001 - ship what was compiled before it stopped
            log(f"{name}: the default run stopped at build time ({type(exc).__name__}: {exc}); "
                "shipping the modes compiled until then")
    objects = library.picklable()
    dropped = _dropped(library, objects)
    for k in own:        # their symbols as the image's placeholders, not symengine's
        objects._own.pop(k, None)
    if dropped:
        log(f"{name}: no scenario image (its FMU would build the scenario at the start): the "
            f"object code cannot carry {dropped}")
    for k in warmed:       # handed over by the FMU's warm_up, after its start (as compiled)
        if k in objects.entry:
            objects.entry_warm[k] = objects.entry.pop(k)
    if not dropped:        # every path's image (the background path's too, with an extension or not)
        sizes[shipped.IMAGE_FILE] = shipped.write(
            folder / shipped.IMAGE_FILE, shipped.model_key(root, name, options, TAG, cpu=False),
            None, _image(sc, own, module))
    sizes[shipped.OBJECTS_FILE] = shipped.write(
        folder / shipped.OBJECTS_FILE, shipped.model_key(root, name, options, TAG, cpu=True),
        None, shipped.persistent_pickle(_with_helpers({embedding: objects, PIVOTS_KEY: pivots}),
                                        {"model": sc.automaton.model}))
    log(f"{name}: formed and compiled for shipping in {time.perf_counter() - started:.1f} s "
        f"({', '.join(f'{k} {v / 1e3:.0f} kB' for k, v in sizes.items())})")
    return folder


def _with_helpers(libraries: dict) -> dict:
    """``libraries`` after the object code of the LLVM helpers this build optimized (the
    programs that name them), first: an FMU then places them as shipped, never optimizing
    them again (``embed.codegen.native.Shipped``)."""
    from embed.codegen import native
    if not native.HELPER_OBJECTS:
        return libraries
    return {native.HELPERS_KEY: native.Shipped(native.HELPER_OBJECTS), **libraries}


def _dropped(library, objects) -> str:
    """What the default run compiled that the object code ``objects`` (``ModeLibrary.
    picklable``) leaves out, named; "" if nothing."""
    from embed.modes.library import SYMBOLIC
    out = []
    for slot in type(library).__slots__:
        mine, theirs = getattr(library, slot), getattr(objects, slot)
        if slot in SYMBOLIC + ("lock", "submitted"):
            continue
        if isinstance(mine, dict):
            out += [f"{slot} {k}" for k in mine if k not in theirs]
        elif mine is not None and theirs is None:
            out.append(slot)
    return ", ".join(out)


def _image(sc, own=None, module=None) -> bytes:
    """The scenario's image (``embed.interface.image``) with what the stepping asks of its
    symbols answered now: whether each constraint's B moves (``moving_B``, kept in it) and
    the outputs' dependence on the inputs (``derivatives.output_dependence``); with ``own``,
    the objects its extension shares (``ModeLibrary.shared``: compiled functions as object
    code, symbols as placeholders); the background workers' jobs of the scenario's
    ``module`` (its WORKER_JOBS and WORKER_SET_UP: the stepping process need not import it)."""
    from embed.interface import image
    from embed.model.constraints import moving_B
    from fmu_src.runtime import derivatives
    for c in sc.automaton.constraints.values():
        moving_B(sc.automaton.model, [c])
    jobs = {"jobs": tuple(getattr(module, "WORKER_JOBS", ())),
            "set_up": getattr(module, "WORKER_SET_UP", None)}
    return image.freeze(sc, {"dependence": derivatives.output_dependence(sc), "own": own or {},
                             "worker_jobs": jobs})


def load(name: str, options: dict):
    """(scenario, notes, dependence): the scenario's shipped image (``embed.interface.image``:
    no symbols, neither sympy nor the scenario's module imported), whose simulators build
    the real scenario (``real``) when they first need symbols, with the outputs' dependence
    on the inputs formed at build time; else (no image, or refused: ``notes`` say why)
    the scenario built from the shipped Kane's terms (bit for bit as a fresh build, without
    deriving them) and None.  The shipped libraries of compiled modes are adopted as the
    ones its simulators share (``ModeLibrary.adopt``)."""
    img, notes = shipped.load_image(ROOT, name, options, TAG)
    dependence = None
    if img is not None:
        from embed.interface.image import Placeholder
        from embed.modes.forming import register_image
        sc, dependence = img["scenario"], img["dependence"]
        register_image(sc.automaton, lambda: real(name, options).automaton,
                       lambda k: Placeholder(k, "Symbol"))
    else:
        sc = build(name, options, notes)
    libraries, why = shipped.load_objects(ROOT, name, options, TAG, sc.automaton.model)
    notes += why
    from embed.modes.library import ModeLibrary
    from embed.codegen.native import HELPERS_KEY
    libraries = {k: v for k, v in (libraries or {}).items() if k != HELPERS_KEY}
    pivots = libraries.pop(PIVOTS_KEY, None)
    if pivots:                 # keyed as the object code: this CPU's and libraries' answers
        from embed.embedding.partition import shipped as shipped_pivots
        shipped_pivots(pivots)
    for embedding, library in libraries.items():
        ModeLibrary.adopt(sc.automaton, embedding, library)
    if "background" in libraries and "numeric" not in libraries:
        # formed on the numeric path (``form``), which the instance's simulator at
        # fmi2Instantiate takes (no worker yet): the same library, no symbols formed there
        ModeLibrary.adopt(sc.automaton, "numeric", libraries["background"])
    if img is not None:
        _JOBS[_key(name, options)] = img.get("worker_jobs") or {}
    if img is not None and img.get("own"):     # the extension's, on every embedding path
        for embedding in ("symbolic", "numeric", "background"):
            ModeLibrary.of(sc.automaton, embedding)._own.update(img["own"])
    return sc, notes, dependence


_REAL = {}      # (name, options) -> the real scenario of an image, built once per process
_JOBS = {}      # (name, options) -> an image's background jobs: {"jobs": ..., "set_up": ...}


def _key(name, options):
    return (name, tuple(sorted(options.items())))


def extension(sc, name: str, options: dict, worker: bool):
    """The extension class an instance of ``sc`` runs: an image's own (``sc.extension``,
    no symbols) where its symbolic work is done by the background ``worker`` (the
    instance's embedding is "background"; at fmi2Instantiate too, before the worker starts),
    else the real scenario's (disk_fence's fence parsed and checked in this process: sympy
    imported).  Not an image: its own."""
    if worker or _key(name, options) not in _JOBS:
        return sc.extension
    return real(name, options).extension


def worker_jobs(name: str, options: dict) -> dict:
    """The background workers' jobs of a scenario loaded from its image (keywords of
    ``BackgroundCompiler``), {} otherwise: then read from the scenario's module."""
    return dict(_JOBS.get(_key(name, options), {}))


def real(name: str, options: dict):
    """The scenario built from its sources and the shipped Kane's terms (``build``), once per
    process: what an image's simulators go on with when they need symbols."""
    key = (name, tuple(sorted(options.items())))
    with _LOCK:
        sc = _REAL.get(key)
        if sc is None:
            sc = _REAL[key] = build(name, dict(options))
    return sc


def build(name: str, options: dict, notes=None, root=None, module=None):
    """The scenario built (``module``'s ``build(**options)``; default: the bundled scenario
    ``name``) with Kane's terms shipped under ``root`` (default: here) if they load; why
    they did not goes to ``notes``."""
    from embed.model import kane_terms
    terms, why = shipped.load_kane(root or ROOT, name, options, TAG)
    if notes is not None:
        notes.extend(why)
    if module is None:
        import scenarios
        module = scenarios.load(name)
    with kane_terms.shipped(terms):
        return module.build(**options)

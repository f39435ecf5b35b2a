"""Objects named by module and attribute ("package.module:name"), imported only when used.

A lower layer reaches code of an upper one only this way, never by an import: the background
worker runs the job functions named on its command line (``embed.background.worker``), and a scenario
names the FMU-side extension of its interface (``ExtensionReference``), which the FMU layer
instantiates.  See docs/design.md (layers).
"""

from __future__ import annotations

import importlib


def split_target(target):
    """("package.module", "name") of ``target`` = "package.module:name".

    Parameters
    ----------
    target : str

    Returns
    -------
    (module name, attribute name); ValueError if ``target`` is not of that form.
    """
    module, sep, name = target.partition(":")
    if not sep or not module or not name.isidentifier():
        raise ValueError(f"{target!r} does not name an object as 'package.module:name'")
    return module, name


def load_target(target):
    """The object ``target`` ("package.module:name") names, its module imported.

    Parameters
    ----------
    target : str

    Returns
    -------
    the module's attribute ``name``; ValueError, ImportError or AttributeError if there is none.
    """
    module, name = split_target(target)
    return getattr(importlib.import_module(module), name)


class ExtensionReference:
    """A scenario's FMU extension (the handling of inputs the engine does not step, such as a
    geometry announced at run time), named rather than imported: the interface (``inputs``,
    ``outputs``: lists of ``embed.Var``) is the scenario's, the class that serves it lives in
    the FMU layer and is imported when the FMU instantiates it.

    Calling the reference (as the FMU slave calls ``Scenario.extension``) imports the class
    and returns an instance made with the same arguments.

    Parameters
    ----------
    module : str
        the module holding the class (e.g. "fmu_src.runtime.fence").
    name : str
        the class's name in it.
    inputs, outputs : list of embed.Var
        the extension's FMU variables.
    """

    def __init__(self, module, name, inputs, outputs):
        self.module, self.name = module, name
        self.inputs, self.outputs = list(inputs), list(outputs)

    @property
    def target(self):
        """"module:name" of the class."""
        return f"{self.module}:{self.name}"

    def load(self):
        """The class named (imported now)."""
        return load_target(self.target)

    def __call__(self, *args, **kwargs):
        return self.load()(*args, **kwargs)

    def __repr__(self):
        return f"ExtensionReference({self.target!r})"

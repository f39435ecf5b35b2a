"""Objects named by module and attribute ("package.module:name"), imported only when used.

A lower layer reaches code of an upper one only this way, never by an import: the background
worker runs the scenario and the job functions named on its command line
(``embed.background.worker``).  See docs/design.md (layers).
"""

from __future__ import annotations

import pkgutil


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
    """The object ``target`` ("package.module:name") names, its module imported
    (``pkgutil.resolve_name``, after ``split_target`` has checked the form).

    Parameters
    ----------
    target : str

    Returns
    -------
    the module's attribute ``name``; ValueError, ImportError or AttributeError if there is none.
    """
    split_target(target)
    return pkgutil.resolve_name(target)

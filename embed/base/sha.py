"""SHA-256 without hashlib's import (issue 30, start-up).

``import hashlib`` loads OpenSSL's ``_hashlib`` and sets up every algorithm it offers: about
9 ms of an FMU's start (measured with numpy already imported, as in fmpy's process), where
CPython's own SHA-256 module loads in about 0.4 ms.  Both compute FIPS 180-4's SHA-256, so a
digest is the same bytes either way; hashlib only where neither module is built
(``_sha2`` from Python 3.12 on, ``_sha256`` before).
"""

from __future__ import annotations

try:
    from _sha2 import sha256
except ImportError:
    try:
        from _sha256 import sha256
    except ImportError:
        from hashlib import sha256

__all__ = ["sha256"]

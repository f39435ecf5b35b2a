"""SHA-256 without hashlib's import where that is cheaper (issue 30, start-up).

``import hashlib`` loads OpenSSL's ``_hashlib`` and sets up every algorithm it offers: about
9 ms of an FMU's start (measured with numpy already imported, as in fmpy's process), where
CPython's own SHA-256 module loads in about 0.4 ms.  OpenSSL hashes faster (1.1 ms a MB here
against 6.5 ms a MB), so ``sha256`` takes hashlib's once it is imported anyway or for data
over ``LARGE`` (where its import costs less than the slower hashing), CPython's own module
otherwise.  Both compute FIPS 180-4's SHA-256: a digest is the same bytes either way.
"""

from __future__ import annotations

import sys

try:
    from _sha2 import sha256 as _own          # Python 3.12 on
except ImportError:
    try:
        from _sha256 import sha256 as _own
    except ImportError:
        _own = None

LARGE = 1_500_000     # bytes: hashlib's import (~8 ms) = the slower hashing of this much

__all__ = ["sha256"]


def sha256(data: bytes = b""):
    """A SHA-256 hash object (``update``, ``digest``, ``hexdigest``) started with ``data``."""
    if _own is None or "hashlib" in sys.modules or len(data) > LARGE:
        import hashlib
        return hashlib.sha256(data)
    return _own(data)

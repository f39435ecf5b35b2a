"""Compiled modes: a mode's embedded equations as one compiled RK4 step (symbolic path, compiled-terms path, the full-state formulations), the mode compiler and the library that caches them."""

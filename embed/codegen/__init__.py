"""Straight-line programs and their compile to machine code with llvmlite (docs/design.md, "One compiled call a step"); nothing of mechanics."""

"""The pythonfmu slave: translates between FMU variables and the engine (docs/design.md, data flow)."""

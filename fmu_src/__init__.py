"""The pythonfmu slave: translates between FMU variables and the engine (DESIGN.md data flow)."""

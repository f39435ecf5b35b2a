"""The model as declared: Kane's terms (eq 1-4), constraints (eq 6-7), the hybrid automaton's modes, guards, jumps and outputs, the context a user's function sees."""

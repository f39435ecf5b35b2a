"""The model checker run before a build, and its probes."""

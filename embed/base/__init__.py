"""Shared leaves of the engine: the EmbedError tree, the whitelist expression parser, objects named ``module:name``."""

"""A model's interface, declared once: ``Scenario``, ``Var``, ``Start``."""

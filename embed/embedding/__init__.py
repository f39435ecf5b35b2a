"""Constraint embedding (gillespie2005 eq 11-16): the partition, D and E, the embedded equations of one mode."""

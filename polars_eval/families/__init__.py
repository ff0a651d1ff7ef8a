"""Metric families, one module each; importing a module registers its metrics.

(Not named ``metrics``: ``pe.metrics()`` is the registry table of SPEC §1.3.)
"""

"""Benchmarks: scripts run by hand (``python -m benchmarks.<name>``), never as tests.

Each prints a table and writes its figures to ``<name>.json`` in its run's folder
(``benchmarks/results/`` for a full run, ``benchmarks/results/scratch/`` otherwise; see
``__main__``); ``python -m benchmarks report`` turns a full run into the Results of
``docs/benchmarks.md``.
"""

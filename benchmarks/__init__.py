"""Benchmarks: scripts run by hand (``python -m benchmarks.<name>``), never as tests.

Each prints a table and writes its figures to ``benchmarks/results/<name>.json``.
"""

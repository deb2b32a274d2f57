"""Deciding whether a call may run: hooks, modes, rules, settings files, the approver seam.

The decision function itself does no I/O beyond reading files through an injected resolver.
"""

"""Running tool calls: the per-call pipeline, batching, the streaming executor, sibling abort.

Knows nothing about Jupyter or the model client; front ends watch its events.
"""

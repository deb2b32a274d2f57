"""Running tool calls: the per-call pipeline, batching, the streaming executor, sibling abort.

- ``pipeline``: one tool_use in, exactly one tool_result out (every failure becomes data here).
- ``batches``: ``partition_tool_calls`` and ``run_tools`` for a whole message.
- ``streaming``: ``StreamingToolExecutor``, which starts safe calls while a message streams.
- ``executor``: what the two above share (per-call contexts, results of stopped calls).
- ``concurrency``: the concurrency cap, and the thread pool (of that size) sync tools run on.
- ``events``: what a front end watches (queued, started, progress, finished, and a
  subagent's calls as ``ChildEvent``s of the call that started it).

Knows nothing about Jupyter or the model client.
"""

"""The peers benchmark's parts: the scripted conversation and one runner per framework.

`script` owns the scenarios and the server script they become; `ours`, `anthropic_runner`
and `pydantic_ai_runner` each run a scenario through one framework and report an `Outcome`.
`bench_peers` drives them side by side.
"""

"""What a cell shows: mimebundles built from the session's events and records.

`render` makes every display (HTML through `safe_html`, the one gate, plus text and the
lab extension's JSON); `live` drives one running cell from the session's events, with
`answer` (the model's Markdown), `thinking`, `cards` (tool calls), `call_views` and
`previews`. `timeline` (`%agent history --timeline`), `request_view` (`%agent request`)
and `check_display` (`%agent check`) are views the subcommands return. No ipywidgets here.
"""

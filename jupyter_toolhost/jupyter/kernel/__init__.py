"""The kernel's own side of the agent: tools that run in it and what they may reach.

`kernel_tools` holds PythonExec, ListVariables and InspectVariable; `captured` what
PythonExec shows and sends the model; `variable_reach` what the two read-only tools may
read; `results_comm` serves saved tool results to the lab extension over a comm.
"""

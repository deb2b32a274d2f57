"""The built-in tools, one package each, their prompt text beside the implementation."""

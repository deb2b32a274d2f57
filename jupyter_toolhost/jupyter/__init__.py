"""The Jupyter front end: magics, approval widgets, renderers, kernel-namespace tools."""

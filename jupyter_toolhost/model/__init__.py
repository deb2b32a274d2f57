"""Model clients behind a small `Model` protocol; the only place that imports `anthropic`."""

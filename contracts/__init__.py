"""The bottom layer: what every other layer speaks (ops, the history, errors, settings base)."""

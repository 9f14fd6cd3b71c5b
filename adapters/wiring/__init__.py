"""The composition root: the one place that picks concrete classes; adapter layer."""

"""The governed tool pipeline and the first-party tools; adapter layer."""

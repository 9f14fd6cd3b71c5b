"""The first-party workspace file tools; adapter layer."""

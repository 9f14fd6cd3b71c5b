"""The Python API the command line wraps: one function per thing a user asks; adapter layer."""

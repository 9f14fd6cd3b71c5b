"""Attachments: what a file's bytes are, safe names, and whether a file is admitted."""

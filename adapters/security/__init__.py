"""Who may reach a hosting process: host key, pairing, device tokens, loopback.

Adapter layer.
"""

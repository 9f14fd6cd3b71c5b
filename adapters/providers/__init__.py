"""Model providers: each wire format translated to domain requests and replies; adapter layer."""

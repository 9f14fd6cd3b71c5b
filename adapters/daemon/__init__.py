"""The ledgerclaw daemon: its service, its security and its control plane; adapter layer."""

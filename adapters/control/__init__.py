"""The control-plane protocol between the command line and a hosting process; adapter layer."""

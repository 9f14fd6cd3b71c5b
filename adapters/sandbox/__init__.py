"""The kernel sandbox (Landlock) that confines the commands tools start; adapter layer."""

"""Reading and checking config.toml and secrets.toml; adapter layer."""

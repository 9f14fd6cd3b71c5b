"""The typed settings of every section of config.toml, as plain models; adapter layer."""

"""Tool definitions, the registry, exposure and result shaping; domain layer."""

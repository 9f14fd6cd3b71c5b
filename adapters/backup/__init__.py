"""Online copies of the journal, their manifests, verifying and restoring them; adapter layer."""

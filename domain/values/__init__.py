"""Value objects and closed vocabularies shared across the domain; domain layer.

One module per concept. Nothing here imports an aggregate, so tools, authorization and the
Session aggregate all build on these values without depending on one another.
"""

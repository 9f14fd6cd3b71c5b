"""Running projections into tables of the journal file; adapter layer."""

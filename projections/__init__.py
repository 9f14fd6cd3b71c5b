"""Read models fed from the journal's notification log; projection layer."""

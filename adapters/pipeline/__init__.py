"""The governed tool pipeline: dispatch, authorization, receipts, spills; adapter layer."""

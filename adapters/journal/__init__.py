"""The durable event journal on eventsourcing and SQLite; adapter layer."""

"""The pure core of ledgerclaw: aggregates, events, value objects and ports."""

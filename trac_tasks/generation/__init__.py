"""The engine-independent TrAC flow of a ``generate_until`` call: the task switches, the scheduler, the answer probe,
the capture into records, thinking markers and progress (docs/architecture.md#trac_tasks-rooms)."""

"""The dataset loaders the task YAMLs name, the bundled demo set and the tiny offline model
(docs/architecture.md#trac_tasks-rooms)."""

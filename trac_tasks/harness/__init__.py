"""The lm-eval integration: the start-up hook, the hooks on lm-eval's modules, the compatibility list of what they
rely on, and the functions the task YAMLs name (docs/architecture.md#trac_tasks-rooms)."""

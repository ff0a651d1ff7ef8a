"""The metric engine: the model (:mod:`spec`), the registry and tasks, the planner."""

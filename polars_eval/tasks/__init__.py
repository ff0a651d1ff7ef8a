"""The task-level methods of the ``.eval`` namespace: one module per task of
:data:`polars_eval._core.tasks.TASKS`, each holding its table (``df.eval.binary`` ...)
and the methods of that task that are more than one registered metric. The task list
names each module (``Task.methods``); the namespace composes them."""

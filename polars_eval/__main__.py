"""``python -m polars_eval``: the ``polars-eval`` command line."""

from __future__ import annotations

import sys

from polars_eval.cli import main

if __name__ == "__main__":
    sys.exit(main())

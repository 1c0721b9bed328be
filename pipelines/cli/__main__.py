"""``python -m pipelines.cli``: the same as the ``lakegraph`` console script."""
import sys

from . import main

sys.exit(main())

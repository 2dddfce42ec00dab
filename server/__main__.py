"""``python -m taskwire``: the ``taskwire`` command."""

import sys

from .cli import main

sys.exit(main())

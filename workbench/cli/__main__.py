"""``python -m workbench.cli``: the same as the ``workbench`` command."""

import sys

from workbench.cli.main import main

sys.exit(main())

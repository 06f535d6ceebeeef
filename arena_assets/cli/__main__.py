"""`python -m arena_assets.cli`: the `arena-assets` command."""

import sys

from arena_assets.cli import main

sys.exit(main())

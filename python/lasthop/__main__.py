"""`python -m lasthop` is the `lasthop` command."""

import sys

from .cli import main

sys.exit(main())

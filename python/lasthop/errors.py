"""User errors and exit codes, shared by every command (and by the Python API, whose
`LasthopError` is a `UserError`). Imports nothing of the package, so any module may use it.

Exit codes: 0 success; 2 user error (bad spec, missing file, bad arguments), reported as ONE
line on stderr and before anything is written; 1 internal or simulator error.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_USAGE = 2

PROG = "lasthop"


class UserError(Exception):
    """A problem the user can fix (exit code 2); the message is printed as is."""

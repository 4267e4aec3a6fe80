"""``python -m openfam``: which library, which version, which store and server.

Exits 0 when the library loads, 1 when it does not (so scripts can check an
installation with it). Starts nothing and touches no store.
"""

import sys

from ._about import report


def main() -> int:
    """Prints the report; returns the exit status."""
    rows = report()
    width = max(len(k) for k in rows)
    for k, v in rows.items():
        print("%-*s  %s" % (width + 1, k + ":", v))
    return 1 if rows["library"].startswith("NOT LOADED") else 0


if __name__ == "__main__":
    sys.exit(main())

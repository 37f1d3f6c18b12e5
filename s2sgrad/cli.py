"""The `s2sgrad` command (also `python -m s2sgrad`).

Only ``--version`` and ``--help`` exist yet: ``dump`` and ``check`` (API.md section 4) are not
implemented, and the command says so instead of pretending.
"""

from __future__ import annotations

import argparse
import sys

from s2sgrad import __version__


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="s2sgrad",
        description="Source-to-source automatic differentiation for Python and NumPy.",
    )
    parser.add_argument("--version", action="version", version=f"s2sgrad {__version__}")
    parser.add_argument("command", nargs="?", help="dump or check (not implemented yet)")
    args, _ = parser.parse_known_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    print(f"s2sgrad: the {args.command!r} command is not implemented yet", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())

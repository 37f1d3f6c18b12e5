"""``python -m s2sgrad``: the `s2sgrad` command.

Python puts the current directory first on `sys.path` for ``-m``; it is removed before the
command imports anything, so that ``dump`` (which reads files without running them) run in a
directory holding a ``numpy.py``, ``libcst.py`` or ``argparse.py`` never imports that file.
"""

import os
import sys

if not sys.flags.safe_path and sys.path and sys.path[0] in ("", os.getcwd()):
    del sys.path[0]

from s2sgrad.cli import main  # only now: after the fix of sys.path

sys.exit(main())

import sys

from s2sgrad.cli import main

sys.exit(main())

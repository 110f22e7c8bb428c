"""``python -m sss_viewer``: the ``sss-viewer`` command."""

import sys

from sss_viewer.cli import main

if __name__ == "__main__":
    sys.exit(main())

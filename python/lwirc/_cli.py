"""The ``lwirc`` console script: the Rust command line, run in this process."""

import signal
import sys

from . import _lwirc


def main() -> int:
    # Ctrl-C stops the command as it stops the Rust binary (the command handles the signals it
    # cares about itself); Python's handler would wait for the command to return.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    return _lwirc.main(sys.argv)


if __name__ == "__main__":
    sys.exit(main())

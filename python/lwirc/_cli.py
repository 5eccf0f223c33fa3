"""The ``lwirc`` console script: the Rust command line, run in this process."""

import os
import shutil
import signal
import sys

from . import _lwirc


def main() -> int:
    # Ctrl-C stops the command as it stops the Rust binary (the command handles the signals it
    # cares about itself); Python's handler would wait for the command to return.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    # What lwirc starts of itself (`goal run --bindings` runs `lwirc runner` per attempt)
    # is this command, not the interpreter it runs in.
    command = shutil.which(sys.argv[0]) if sys.argv else None
    if command and not command.endswith(".py"):
        os.environ.setdefault("LWIRC_EXE", os.path.abspath(command))
    return _lwirc.main(sys.argv)


if __name__ == "__main__":
    sys.exit(main())

"""``python -m streamblur IN OUT --vf ...``: the streamblur command line.

The package ships the same program the C++ build installs (streamblur/bin);
every option, message and exit status is the program's (``python -m
streamblur --help``).
"""
import os
import sys
from pathlib import Path


def main() -> None:
    program = Path(__file__).resolve().parent / "bin" / "streamblur"
    if not program.is_file():
        sys.exit(f"streamblur: error: the streamblur program is missing from the package ({program}); "
                 "reinstall it with pip install ./python")
    os.execv(str(program), ["streamblur", *sys.argv[1:]])


if __name__ == "__main__":
    main()

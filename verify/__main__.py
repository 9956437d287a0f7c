import sys

from verify._entry import main

if __name__ == "__main__":  # a process spawned to draw plots imports this module too
    sys.exit(main())

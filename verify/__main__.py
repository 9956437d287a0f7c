import sys

from verify._entry import main

sys.exit(main())

import sys

from taskwire_client.cli import main

sys.exit(main())

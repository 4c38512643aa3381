import sys

from er_framework.cli.main import main

sys.exit(main())

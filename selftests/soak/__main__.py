# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""selftests/soak/run [--seconds S] [--json] ...: see README.md here."""

import sys

from .soak import main

sys.exit(main(sys.argv[1:]))

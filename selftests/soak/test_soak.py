# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""The soak (selftests/soak/README.md) for SOAK_SHORT_S seconds, as part of
`make test`: every phase at once, then every count checked by the soak
itself (exit 1 when one is wrong). Its own CCs and cgroups only, under
names of its run: CCs it did not register are never touched."""

import json
import os
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SOAK_SHORT_S = 60
# setup, the wait for FIN_WAIT2 orphans (up to 60 s) and the checks
SOAK_OVERHEAD_S = 240


def test_soak_short():
    cp = subprocess.run([str(REPO / "selftests" / "soak" / "run"), "--seconds",
                         str(SOAK_SHORT_S), "--json"], capture_output=True, text=True,
                        timeout=SOAK_SHORT_S + SOAK_OVERHEAD_S,
                        env={**os.environ, "PYTHONUNBUFFERED": "1"})
    print(cp.stderr[-4000:])
    print(cp.stdout[-4000:])
    assert cp.returncode == 0, f"soak exit {cp.returncode} (1: a count is wrong, 2: cannot run)"
    # the counts as JSON: the last document on stdout (from its "{" line)
    counts = json.loads(cp.stdout[cp.stdout.rfind("\n{") + 1:])
    print("connections", counts["connections"], "bytes", counts["bytes"],
          "resets", counts["resets"], "leaks", counts["leaks"])
    assert counts["bytes"]["sent"] == counts["bytes"]["received"] > 0

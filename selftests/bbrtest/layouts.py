# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""The layouts of the C structs Python reads from BPF maps, from the C
headers themselves: selftests/tools/layouts (built by make) prints each
struct's size and its fields' offsets and sizes as the compiler lays them
out (include/ets_shared.h...). No struct format is written down in Python,
so a layout change cannot leave a reader behind.

    lay = layouts.load()
    rec = layouts.unpack(lay["ets_sk"], raw)     # {"flags": 7, ...}
"""

import json
import struct
import subprocess
from pathlib import Path

LAYOUTS_BIN = Path(__file__).resolve().parents[1] / "tools" / "layouts"
_INT_FORMATS = {1: "B", 2: "H", 4: "I", 8: "Q"}


def load(binary=LAYOUTS_BIN):
    """{struct name: {"size": bytes, "fields": {name: [offset, size]}}}."""
    out = subprocess.run([str(binary)], capture_output=True, text=True, check=True).stdout
    return json.loads(out)


def unpack(layout, raw):
    """The integer fields of one struct from its bytes (host byte order)."""
    if len(raw) < layout["size"]:
        raise ValueError(f"{len(raw)} bytes, the struct has {layout['size']}")
    return {name: struct.unpack_from("=" + _INT_FORMATS[size], raw, off)[0]
            for name, (off, size) in layout["fields"].items()}

#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""The running kernel's tcp_congestion_ops, from its raw BTF: how many
arguments cong_control takes. Standard library only, so that `make setup`
can run it as a script before anything is installed:

  python3 selftests/bbrtest/btf.py      # prints the count (exit 1 if none)
"""

import struct
import sys
from pathlib import Path

VMLINUX_BTF = Path("/sys/kernel/btf/vmlinux")
# Bytes after struct btf_type (12) per kind (include/uapi/linux/btf.h):
# fixed extra, and per vlen entry.
_BTF_EXTRA = {1: (4, 0), 3: (12, 0), 4: (0, 12), 5: (0, 12), 6: (0, 8), 13: (0, 8),
              14: (4, 0), 15: (0, 12), 17: (4, 0), 19: (0, 12)}
_BTF_PTR, _BTF_STRUCT, _BTF_TYPEDEF, _BTF_FUNC_PROTO = 2, 4, 8, 13
_BTF_MODIFIERS = {8, 9, 10, 11, 18}      # typedef, volatile, const, restrict, type_tag


def kernel_cong_control_args(path=VMLINUX_BTF):
    """How many arguments tcp_congestion_ops.cong_control takes in this
    kernel's BTF: 4 since Linux 6.10 (what bbr-bpf needs), 2 before; None if
    the BTF or the member is missing. bbrctl makes the same check
    (loader/kfeat.c)."""
    try:
        data = Path(path).read_bytes()
    except OSError:
        return None
    magic, _, _, hdr_len, type_off, type_len, str_off, _ = struct.unpack_from("<HBBIIIII", data)
    if magic != 0xEB9F:
        return None
    types, strs = hdr_len + type_off, hdr_len + str_off
    name = lambda off: data[strs + off:data.index(b"\0", strs + off)]  # noqa: E731
    info = [None]                        # id -> (name_off, kind, vlen, type, offset of members)
    pos = types
    while pos < types + type_len:
        name_off, inf, size_type = struct.unpack_from("<III", data, pos)
        kind, vlen = (inf >> 24) & 0x1f, inf & 0xffff
        info.append((name_off, kind, vlen, size_type, pos + 12))
        fixed, per = _BTF_EXTRA.get(kind, (0, 0))
        pos += 12 + fixed + per * vlen

    def resolve(tid):
        while info[tid][1] in _BTF_MODIFIERS:
            tid = info[tid][3]
        return tid

    for name_off, kind, vlen, _, members in info[1:]:
        if kind != _BTF_STRUCT or name(name_off) != b"tcp_congestion_ops":
            continue
        for i in range(vlen):
            m_name, m_type, _ = struct.unpack_from("<III", data, members + 12 * i)
            if name(m_name) != b"cong_control":
                continue
            t = resolve(m_type)
            if info[t][1] == _BTF_PTR:
                t = resolve(info[t][3])
            return info[t][2] if info[t][1] == _BTF_FUNC_PROTO else None
    return None


if __name__ == "__main__":
    nargs = kernel_cong_control_args()
    print(nargs if nargs is not None else "none")
    sys.exit(0 if nargs is not None else 1)

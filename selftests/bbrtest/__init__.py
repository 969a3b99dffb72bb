# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""bbrtest: the toolkit of bbr-bpf's integration tests, lab and bench.

    import bbrtest

    with bbrtest.register_cc("selftests/progs/bbrbpf_test_cc.bpf.o") as reg, \\
            bbrtest.Topology(rate_mbit=50) as topo:
        res = bbrtest.run_transfer(topo, reg.cc_name, seconds=3)
        print(res["mbps"], res["tcp_info"]["retransmits"])

Modules:
  base       REPO, BbrtestError, run() (commands with a timeout, errors with
             their stderr), make(), wait_for(), SetupClose
  netns      namespaces, veth links, addresses, routes, sysctls, offloads,
             the tbf bottleneck, processes inside a namespace (and a cgroup),
             reap() to stop them
  cgroup     cgroup v2 directories for a test's or a run's processes
  topology   Topology: sender - [router with tbf] - receiver
  cc         the kernel's CC list, bpffs, registering a struct_ops object
             (bpftool struct_ops register, or bbrctl load), under its own
             name or one of this process (own_cc_name, as_name=)
  ctl        bbrctl: its path (BBRCTL), its one runner (bbrctl()), list --json,
             pin directories, CC names of this process (unique), a cgroup
             undone with bbrctl detach, a private bpffs (PrivateBpffs)
  transfer   one bulk transfer with a CC, checked end to end (xfer.py)
  rates      the rates tests run their bottlenecks at: nominal, or at most
             BBRTEST_MAX_RATE_MBIT on a machine that cannot carry them
  flowgen    the many-flow generator with TCP_INFO samples (C, the lab's)
  ets        forged ETS options for live connections (scapy)

Rules every helper keeps:
  * Traffic only flows between namespaces created here, on addresses in
    198.18.0.0/15 (RFC 2544 benchmarking space). Nothing is added to the
    init namespace except pins under /sys/fs/bpf and cgroups.
  * Whatever is created is deleted on exit, also when setup fails half-way
    or the body raises: namespaces (and any process left in them), cgroups,
    pinned links and their directory, and with them the registered CC.
  * Every external command has a timeout and fails with its stderr.

Needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN, CAP_BPF), iproute2, ethtool,
util-linux (nsenter) and bpftool. The lab (selftests/lab/labkit) adds the
emulated path on top; docs/development.md and docs/lab.md show both.
"""

from . import ctl, ets, flowgen
from .base import (BBRCTL, POLL_S, REPO, BbrtestError, KernelLacks, SetupClose, make, run,
                   wait_for)
from .cc import (BPFFS_ROOT, BbrctlRegistration, RegistrationError, StructOpsRegistration,
                 available_ccs, bbrctl_can_load, cc_name_copy, ensure_bpffs, own_cc_name,
                 register_cc, remove_pin_dir, struct_ops_ids)
from .cgroup import Cgroup, cgroup2_root
from .ctl import bbrctl
from .netns import (ADDR_SPACE, Namespaces, add_netns, delete_netns, list_netns, netns_exec,
                    popen_in, python_in, reap)
from .rates import (max_rate_mbit, rates_scaled, scaled_bytes, scaled_emulated_rate_mbit,
                    scaled_rate_mbit)
from .topology import Topology, default_buffer_bytes
from .transfer import Transfer, TransferError, run_transfer

__all__ = [
    "ctl", "ets", "flowgen", "BBRCTL", "bbrctl", "POLL_S", "REPO", "BbrtestError", "KernelLacks",
    "SetupClose", "make", "run", "wait_for",
    "BPFFS_ROOT", "BbrctlRegistration", "RegistrationError", "StructOpsRegistration",
    "available_ccs", "bbrctl_can_load", "cc_name_copy", "ensure_bpffs", "own_cc_name",
    "register_cc", "remove_pin_dir", "struct_ops_ids",
    "Cgroup", "cgroup2_root", "ADDR_SPACE", "Namespaces", "add_netns", "delete_netns",
    "list_netns", "netns_exec", "popen_in", "python_in", "reap", "Topology", "default_buffer_bytes",
    "Transfer", "TransferError", "run_transfer", "max_rate_mbit", "scaled_bytes",
    "scaled_rate_mbit", "scaled_emulated_rate_mbit", "rates_scaled",
]

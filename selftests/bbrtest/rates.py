# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""The rates the tests run their bottlenecks at.

Every test names its bottleneck at a nominal rate (100 Mbit/s, ...) and
asserts against that bottleneck, never against a fixed figure. On a real
machine the nominal rate is the rate. A machine that cannot carry it, such
as the kernel matrix's guests under QEMU's TCG emulation (one emulated CPU
forwards about 40 Mbit/s through a 100 Mbit/s tbf), sets
BBRTEST_MAX_RATE_MBIT to the rate it carries with CPU to spare; the tests
then run the same checks with their bottleneck at that rate where the
nominal one is higher (and move the bytes that keep their durations), so
the bottleneck, not the CPU, limits them.

The lab's emulator (linkem: two TUN devices and a userspace process per
packet) costs several times the kernel's forwarding, so a machine with such
a limit also sets BBRTEST_MAX_EMU_RATE_MBIT for the tests on an emulated
path (scaled_emulated_rate_mbit).

selftests/kernels/max_rate.py measures a guest's capacity and prints the
rates; selftests/kernels/guest-init exports them.
"""

import os

MAX_RATE_ENV = "BBRTEST_MAX_RATE_MBIT"
MAX_EMU_RATE_ENV = "BBRTEST_MAX_EMU_RATE_MBIT"


def _env_rate(name):
    text = os.environ.get(name)
    if not text:
        return None
    rate = float(text)
    if rate <= 0:
        raise ValueError(f"{name}={text}: want a rate > 0")
    return rate


def max_rate_mbit():
    """The highest bottleneck rate the tests use here: None (no limit), or
    the BBRTEST_MAX_RATE_MBIT the environment sets."""
    return _env_rate(MAX_RATE_ENV)


def rates_scaled():
    """Whether this machine caps the tests' rates (BBRTEST_MAX_RATE_MBIT):
    a kernel-matrix guest, whose timing checks are not judged."""
    return max_rate_mbit() is not None


def scaled_rate_mbit(nominal_mbit):
    """The rate a test's nominal_mbit bottleneck runs at on this machine."""
    limit = max_rate_mbit()
    return nominal_mbit if limit is None else min(nominal_mbit, limit)


def scaled_bytes(nominal_bytes, nominal_mbit):
    """A transfer size that takes as long at the rate nominal_mbit runs at
    here (scaled_rate_mbit) as nominal_bytes at nominal_mbit."""
    return max(1, int(nominal_bytes * scaled_rate_mbit(nominal_mbit) / nominal_mbit))


def scaled_emulated_rate_mbit(nominal_mbit):
    """The rate a test's nominal_mbit bottleneck on the lab's emulated path
    runs at here: also capped by BBRTEST_MAX_EMU_RATE_MBIT where set."""
    limit = _env_rate(MAX_EMU_RATE_ENV)
    rate = scaled_rate_mbit(nominal_mbit)
    return rate if limit is None else min(rate, limit)

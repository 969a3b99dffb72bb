# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""Plumbing: struct_ops registration, namespaces, transfers and shaping.

These use the trivial bbrbpf_test CC (Reno through kfuncs), so a failure here
is in registration, sockets or the test topology, never in an algorithm.
"""

import errno
import subprocess
import time

import pytest

import bbrtest
from bbrtest import netns
from conftest import TEST_CC_NAME

TRANSFER_BYTES = 20 * 1000 * 1000
SMALL_TRANSFER_BYTES = 1000 * 1000
SHAPED_RATE_MBIT = 50
SHAPED_SECONDS = 2.0
GOODPUT_TOLERANCE = 0.15        # relative to the configured rate
SAMPLE_INTERVAL_S = 0.2
ABSENT_CC = "bbrbpf_absent"     # never registered by anything


def test_register_transfer_unregister(test_cc_obj, topo):
    assert TEST_CC_NAME not in bbrtest.available_ccs(), "precondition: a leftover registration"
    ids_before = bbrtest.struct_ops_ids()

    with bbrtest.StructOpsRegistration(test_cc_obj, cc_name=TEST_CC_NAME) as reg:
        pins = list(reg.pin_dir.iterdir())
        assert pins, f"bpftool pinned nothing in {reg.pin_dir}"
        assert TEST_CC_NAME in bbrtest.available_ccs()
        assert bbrtest.struct_ops_ids() - ids_before, "no new struct_ops map"

        res = bbrtest.run_transfer(topo, TEST_CC_NAME, nbytes=TRANSFER_BYTES)
        print(f"\n{TEST_CC_NAME}: {res['bytes_received']} B in {res['seconds']:.3f} s "
              f"= {res['mbps']:.0f} Mbit/s, {res['tcp_info']['retransmits']} retransmits")
        assert res["cc"] == TEST_CC_NAME
        assert res["bytes_sent"] == TRANSFER_BYTES
        assert res["bytes_received"] == res["bytes_sent"]
        assert res["tcp_info"]["bytes_acked"] >= TRANSFER_BYTES

        reg.unregister()        # rm the pinned link(s)
        assert not reg.pin_dir.exists()
        assert TEST_CC_NAME not in bbrtest.available_ccs()
        # Gone from the list means gone for new sockets too.
        with pytest.raises(bbrtest.TransferError) as exc:
            bbrtest.run_transfer(topo, TEST_CC_NAME, nbytes=SMALL_TRANSFER_BYTES)
        assert exc.value.errno == errno.ENOENT, exc.value


def test_unregistered_cc_is_refused(topo):
    assert ABSENT_CC not in bbrtest.available_ccs()
    with pytest.raises(bbrtest.TransferError) as exc:
        bbrtest.run_transfer(topo, ABSENT_CC, nbytes=SMALL_TRANSFER_BYTES)
    assert exc.value.errno == errno.ENOENT, exc.value
    assert "TCP_CONGESTION" in exc.value.stage


def test_registration_with_wrong_name_fails_cleanly(test_cc_obj):
    reg = bbrtest.StructOpsRegistration(test_cc_obj, cc_name=ABSENT_CC)
    with pytest.raises(bbrtest.RegistrationError, match="wrong .name"):
        with reg:
            pass
    assert not reg.pin_dir.exists()
    assert TEST_CC_NAME not in bbrtest.available_ccs()


@pytest.mark.parametrize("cc", ["reno", TEST_CC_NAME])
def test_shaped_goodput(request, make_topo, cc):
    if cc == TEST_CC_NAME:
        request.getfixturevalue("test_cc")
    topo = make_topo(rate_mbit=SHAPED_RATE_MBIT)

    res = bbrtest.run_transfer(topo, cc, seconds=SHAPED_SECONDS, sample_cb=time.monotonic,
                              sample_interval=SAMPLE_INTERVAL_S)
    stats = topo.bottleneck_stats()
    print(f"\n{cc} through {SHAPED_RATE_MBIT} Mbit/s: {res['mbps']:.2f} Mbit/s goodput, "
          f"{res['tcp_info']['retransmits']} retransmits, bottleneck {stats}")

    assert res["cc"] == cc
    assert res["bytes_received"] == res["bytes_sent"]
    error = abs(res["mbps"] - SHAPED_RATE_MBIT) / SHAPED_RATE_MBIT
    assert error <= GOODPUT_TOLERANCE, \
        f"goodput {res['mbps']:.2f} Mbit/s is {error:.0%} off {SHAPED_RATE_MBIT} Mbit/s"
    assert stats["overlimits"] > 0, "the shaper never had to hold a packet back"
    # The callback ran periodically while the transfer ran.
    expected_samples = SHAPED_SECONDS / SAMPLE_INTERVAL_S
    assert len(res["samples"]) >= expected_samples * 0.8, res["samples"]
    gaps = [b - a for a, b in zip(res["samples"], res["samples"][1:])]
    assert all(gap >= SAMPLE_INTERVAL_S * 0.5 for gap in gaps), gaps


def test_two_topologies_coexist(make_topo):
    a = make_topo()
    b = make_topo(rate_mbit=SHAPED_RATE_MBIT)
    assert not set(a.namespaces()) & set(b.namespaces())
    assert len({a.snd_addr, a.rcv_addr, b.snd_addr, b.rcv_addr}) == 4
    for t in (a, b):
        assert all(net.subnet_of(bbrtest.ADDR_SPACE) for net in (t.snd_net, t.rcv_net))
        res = bbrtest.run_transfer(t, "reno", nbytes=SMALL_TRANSFER_BYTES)
        assert res["bytes_received"] == SMALL_TRANSFER_BYTES


def test_half_built_topology_is_deleted(monkeypatch):
    def broken_shape(self):
        raise bbrtest.BbrtestError("injected failure")

    monkeypatch.setattr(bbrtest.Topology, "_shape", broken_shape)
    topo = bbrtest.Topology(rate_mbit=SHAPED_RATE_MBIT)
    with pytest.raises(bbrtest.BbrtestError, match="injected failure"):
        with topo:
            pass
    assert not set(topo.namespaces()) & set(bbrtest.list_netns())


def test_rates_are_capped_only_where_the_machine_says(monkeypatch):
    monkeypatch.delenv("BBRTEST_MAX_RATE_MBIT", raising=False)
    monkeypatch.delenv("BBRTEST_MAX_EMU_RATE_MBIT", raising=False)
    assert bbrtest.scaled_rate_mbit(100) == 100
    assert bbrtest.scaled_bytes(20_000_000, 100) == 20_000_000
    assert not bbrtest.rates_scaled()
    monkeypatch.setenv("BBRTEST_MAX_RATE_MBIT", "12.5")
    assert bbrtest.rates_scaled()
    got = (bbrtest.scaled_rate_mbit(100), bbrtest.scaled_rate_mbit(10),
           bbrtest.scaled_bytes(20_000_000, 100))
    print(f"capped at 12.5 Mbit/s: 100 -> {got[0]}, 10 -> {got[1]}, 20 MB at 100 -> {got[2]} B")
    # the same duration at the capped rate; rates under the cap unchanged
    assert got == (12.5, 10, 2_500_000)
    # the emulated path: the lower of both caps
    monkeypatch.delenv("BBRTEST_MAX_EMU_RATE_MBIT", raising=False)
    assert bbrtest.scaled_emulated_rate_mbit(100) == 12.5
    monkeypatch.setenv("BBRTEST_MAX_EMU_RATE_MBIT", "3")
    assert (bbrtest.scaled_emulated_rate_mbit(100), bbrtest.scaled_emulated_rate_mbit(2),
            bbrtest.scaled_rate_mbit(100)) == (3, 2, 12.5)
    monkeypatch.setenv("BBRTEST_MAX_RATE_MBIT", "0")
    with pytest.raises(ValueError):
        bbrtest.scaled_rate_mbit(100)
    monkeypatch.delenv("BBRTEST_MAX_RATE_MBIT")
    assert bbrtest.scaled_emulated_rate_mbit(100) == 3


def test_a_missing_qdisc_says_what_the_kernel_lacks(monkeypatch):
    """tc's unknown qdisc is bbrtest.KernelLacks (a skip only in a kernel
    matrix guest without modules, conftest); another tc error is not."""
    def fake_tc(ns, argv, check=True):
        return subprocess.CompletedProcess(argv, 2, "", fake_tc.stderr)
    monkeypatch.setattr(netns, "netns_exec", fake_tc)
    fake_tc.stderr = "Error: Specified qdisc kind is unknown.\n"
    with pytest.raises(bbrtest.KernelLacks, match="no tbf qdisc"):
        netns.add_tbf("nowhere", "dev0", 10, 100_000)
    fake_tc.stderr = "Error: Exclusivity flag on, cannot modify.\n"
    with pytest.raises(bbrtest.BbrtestError) as e:
        netns.add_tbf("nowhere", "dev0", 10, 100_000)
    assert not isinstance(e.value, bbrtest.KernelLacks)

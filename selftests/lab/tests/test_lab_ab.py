# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""labkit.ab's verdict: what makes the lab's A/B check pass or fail, on
reports shaped like `bbrctl ab report --json` (no kernel needed)."""

from labkit import ab


def report(diffs):
    """A two-arm report whose second arm differs from the first by diffs:
    {measure: (diff, ci95)}."""
    vs = {m: {"diff": d, "ci95": ci, "relative": None if d is None else d / BASE[m],
              "significant": d is not None and ci is not None and abs(d) > ci}
          for m, (d, ci) in diffs.items()}
    return {"arms": [{"arm": "a"}, {"arm": "b", "vs_first": vs}]}


BASE = {"goodput_bps": 5e6, "retrans_rate": 0.02, "srtt_us": 50000}   # the first arm's means
NONE = {"goodput_bps": (0.1e6, 1e6), "retrans_rate": (0.001, 0.006), "srtt_us": (200, 3000)}


def test_ab_found_and_aa_clean_pass():
    ab_rep = report({**NONE, "goodput_bps": (9.2e6, 1.6e6)})
    bad = ab.verdict(ab_rep, report(NONE))
    print(bad)
    assert bad == []


def test_wrong_sign_or_interval_through_zero_fails():
    for d, ci in ((-9.2e6, 1.6e6), (1.0e6, 1.6e6), (0.0, 0.0), (None, None), (5e6, None)):
        bad = ab.verdict(report({**NONE, "goodput_bps": (d, ci)}), report(NONE))
        print(d, ci, bad)
        assert len(bad) == 1 and bad[0].startswith("A/B")


def test_aa_difference_fails():
    ab_rep = report({**NONE, "goodput_bps": (9.2e6, 1.6e6)})
    for diff in (1.5e6, -1.5e6, 3.2e6):     # 30 % of 5 Mbit/s; a third of 9.2
        bad = ab.verdict(ab_rep, report({**NONE, "goodput_bps": (diff, 1e6)}))
        print(diff, bad)
        assert len(bad) == 1 and bad[0].startswith("A/A: goodput")


def test_aa_star_alone_does_not_fail():
    """An A/A interval that excludes 0 by chance, on a small difference."""
    aa = report({"goodput_bps": (0.3e6, 0.2e6), "retrans_rate": (0.004, 0.002),
                 "srtt_us": (5000, 3000)})
    assert ab.verdict(report({**NONE, "goodput_bps": (9.2e6, 1.6e6)}), aa) == []

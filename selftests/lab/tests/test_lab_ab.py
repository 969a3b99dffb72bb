# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""labkit.ab's verdict: what makes the lab's A/B check pass or fail, on
reports shaped like `bbrctl ab report --json` (no kernel needed)."""

from labkit import ab


def report(diffs):
    """A two-arm report whose second arm differs from the first by diffs:
    {measure: (diff, ci95)}."""
    vs = {m: {"diff": d, "ci95": ci, "relative": None,
              "significant": d is not None and ci is not None and abs(d) > ci}
          for m, (d, ci) in diffs.items()}
    return {"arms": [{"arm": "a"}, {"arm": "b", "vs_first": vs}]}


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
    aa = report({**NONE, "srtt_us": (5000, 3000)})
    bad = ab.verdict(report({**NONE, "goodput_bps": (9.2e6, 1.6e6)}), aa)
    print(bad)
    assert len(bad) == 1 and bad[0].startswith("A/A: srtt_us")

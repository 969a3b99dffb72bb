# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# The lab: selftests/lab/labkit, selftests/lab/run,
# selftests/lab/scenarios. `make lab` runs every shipped scenario and writes
# one report folder per scenario under selftests/lab/results/ (gitignored;
# results/bbr3_profiles/NAME for the set in scenarios/bbr3_profiles/), then
# the bbr3 profile scorecard of that set (labkit/scorecard.py, scorecard.md),
# then the A/B split check on a lossy path (labkit/ab.py, results/ab_lossy/). `make lab LAB_SET=bbr3_profiles` runs only that set.
# The lab's tests join `make test` through PYTEST_DIRS.

LAB_RUN       := selftests/lab/run
LAB_SET       ?=
LAB_SCENARIOS := $(sort $(if $(LAB_SET),$(wildcard selftests/lab/scenarios/$(LAB_SET)/*.toml),\
			$(wildcard selftests/lab/scenarios/*.toml selftests/lab/scenarios/*/*.toml)))
LAB_RESULTS   := selftests/lab/results

PYTEST_DIRS := $(filter-out selftests/lab/tests,$(PYTEST_DIRS)) selftests/lab/tests

lab: all
	@mkdir -p $(LAB_RESULTS)
	@echo "make lab: every scenario under each of its CCs; estimated time:"
	@PYTHON=$(PYTHON) $(LAB_RUN) --estimate $(LAB_SCENARIOS) | tail -1
	@failed=""; for s in $(LAB_SCENARIOS); do \
		echo "== $$s"; \
		PYTHON=$(PYTHON) $(LAB_RUN) $$s \
			--out $(LAB_RESULTS)/$$(echo $${s#selftests/lab/scenarios/} | sed 's/\.toml$$//') \
			|| failed="$$failed $$(basename $$s .toml)"; \
	done; \
	if [ -z "$(LAB_SET)" ]; then echo "== A/B split on a lossy path (labkit.ab)"; \
		PYTHON=$(PYTHON) selftests/pyrun labkit.ab --out $(LAB_RESULTS)/ab_lossy \
			|| failed="$$failed ab_lossy"; fi; \
	echo "reports: $(LAB_RESULTS)/*/report.md"; \
	if [ -d $(LAB_RESULTS)/bbr3_profiles ]; then \
		selftests/pyrun labkit.scorecard $(LAB_RESULTS)/bbr3_profiles \
			> $(LAB_RESULTS)/bbr3_profiles/scorecard.md \
		&& cat $(LAB_RESULTS)/bbr3_profiles/scorecard.md; fi; \
	if [ -n "$$failed" ]; then echo "lab: failed:$$failed" >&2; exit 1; fi

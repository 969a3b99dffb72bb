# ETS sockops: the option codec's fuzz target (bpf/ets.bpf.o and the unit
# tests in selftests/unit/test_ets*.c are built by the top-level rules).
#
#   make fuzz-ets-short   200 000 runs, fixed seed: part of `make test`
#   make fuzz-ets-long    >= 10^7 executions: for the bench
FUZZ_ETS_BIN := selftests/fuzz/fuzz_ets
# ETS_FUZZ_LONG_RUNS: the issue's bench size (>= 10^7 executions).
ETS_FUZZ_LONG_RUNS ?= 10000000

ALL_TARGETS += $(FUZZ_ETS_BIN)
FUZZ_SHORT  += fuzz-ets-short
CLEAN_FILES += $(FUZZ_ETS_BIN) $(FUZZ_ETS_BIN).short.log $(FUZZ_ETS_BIN).long.log

.PHONY: fuzz-ets-short fuzz-ets-long

$(FUZZ_ETS_BIN): selftests/fuzz/fuzz_ets.c bpf/core/ets_opt.h bpf/core/types.h
	$(CLANG) -g -O1 -fsanitize=fuzzer,address,undefined -Iinclude -Ibpf -o $@ $<

fuzz-ets-short: $(FUZZ_ETS_BIN)
	./$(FUZZ_ETS_BIN) $(FUZZ_ARTIFACTS) -runs=200000 -seed=1 -max_len=96 >$(FUZZ_ETS_BIN).short.log 2>&1; \
		rc=$$?; tail -2 $(FUZZ_ETS_BIN).short.log; exit $$rc

fuzz-ets-long: $(FUZZ_ETS_BIN)
	./$(FUZZ_ETS_BIN) -runs=$(ETS_FUZZ_LONG_RUNS) -seed=1 -max_len=96 >$(FUZZ_ETS_BIN).long.log 2>&1; \
		rc=$$?; tail -2 $(FUZZ_ETS_BIN).long.log; exit $$rc

# Test helper for selftests/integration/test_ets*.py.
ETS_ATTACH := selftests/integration/ets_attach
ALL_TARGETS += $(ETS_ATTACH)
CLEAN_FILES += $(ETS_ATTACH)
$(ETS_ATTACH): selftests/integration/ets_attach.c
	$(CC) $(USER_CFLAGS) -o $@ $< $(LIBBPF_LIBS)

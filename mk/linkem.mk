# linkem: the lab's userspace bottleneck emulator (selftests/lab/linkem/);
# its config is JSON, read with libjansson (as flowgen's flow specs).
LINKEM := selftests/lab/linkem/linkem
LINKEM_SRCS := $(wildcard selftests/lab/linkem/*.c)
LINKEM_HDRS := $(wildcard selftests/lab/linkem/*.h)

ALL_TARGETS += $(LINKEM)
PYTEST_DIRS := $(filter-out selftests/lab/tests,$(PYTEST_DIRS)) selftests/lab/tests
CLEAN_FILES += $(LINKEM)

$(LINKEM): $(LINKEM_SRCS) $(LINKEM_HDRS)
	$(CC) $(USER_CFLAGS) -o $@ $(LINKEM_SRCS) -lm -pthread $(JANSSON_LIBS)

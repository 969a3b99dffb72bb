// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Runner of the native unit tests: `run_unit [SUBSTRING...]` runs the tests
 * whose name contains one of the substrings (all without arguments).
 * Exit status 1 if any test failed.
 */
#include <stdlib.h>
#include <string.h>

#include "unit.h"
#include "bbr_env.h"

#define UNIT_MAX_TESTS 512

struct bbr_params bbr_test_param_sets[BBR_PARAM_SLOTS];

static struct {
	const char *name;
	const char *file;
	unit_fn fn;
} tests[UNIT_MAX_TESTS];
static int ntests;
int unit_failed_current;

void unit_register(const char *name, const char *file, unit_fn fn)
{
	if (ntests == UNIT_MAX_TESTS) {
		fprintf(stderr, "too many tests; raise UNIT_MAX_TESTS\n");
		exit(2);
	}
	tests[ntests].name = name;
	tests[ntests].file = file;
	tests[ntests].fn = fn;
	ntests++;
}

void unit_fail(const char *file, int line, const char *what,
	       long long a, long long b)
{
	printf("  %s:%d: expected %s (left=%lld, right=%lld)\n",
	       file, line, what, a, b);
	unit_failed_current = 1;
}

void unit_fail_f(const char *file, int line, const char *what,
		 double a, double b)
{
	printf("  %s:%d: expected %s (left=%.6g, right=%.6g)\n",
	       file, line, what, a, b);
	unit_failed_current = 1;
}

static int selected(const char *name, int argc, char **argv)
{
	int i;

	if (argc < 2)
		return 1;
	for (i = 1; i < argc; i++)
		if (strstr(name, argv[i]))
			return 1;
	return 0;
}

int main(int argc, char **argv)
{
	int i, passed = 0, failed = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (i = 0; i < ntests; i++) {
		if (!selected(tests[i].name, argc, argv))
			continue;
		/* Every test starts from the reference defaults. */
		for (int k = 0; k < BBR_PARAM_SLOTS; k++)
			bbr_test_param_sets[k] =
				(struct bbr_params)BBR_PARAMS_DEFAULT;
		unit_prandom_seed(1);
		unit_failed_current = 0;
		tests[i].fn();
		printf("%s %s\n", unit_failed_current ? "FAIL" : "ok  ",
		       tests[i].name);
		if (unit_failed_current)
			failed++;
		else
			passed++;
	}
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}

/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * Arbitration between priority classes (daemon/core/arb.c): the shares of
 * the capacity that docs/incad.md, "Priorities and arbitration", promises
 * for strict priority and weighted round robin, from given demands.
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>

#include "arb.h"

#define CAP 1000000ull

static void
shares(enum arb_policy pol, const uint32_t *w, const uint64_t *demand, uint64_t *allow)
{
	static const uint32_t none[ARB_CLASSES];

	arb_shares(pol, CAP, w != NULL ? w : none, demand, allow);
}

/* The highest class with traffic gets the whole capacity whatever it asks. */
START_TEST(test_strict_top_keeps_capacity)
{
	uint64_t d[ARB_CLASSES] = {0}, a[ARB_CLASSES];

	d[7] = 5 * CAP;
	d[0] = 5 * CAP;
	shares(ARB_STRICT, NULL, d, a);
	ck_assert_uint_eq(a[7], CAP);
	ck_assert_uint_eq(a[0], 0);
}
END_TEST

/* A class gets the capacity minus what the classes above it used. */
START_TEST(test_strict_leftover)
{
	uint64_t d[ARB_CLASSES] = {0}, a[ARB_CLASSES];

	d[6] = CAP / 4;
	d[3] = CAP / 2;
	d[1] = CAP;
	shares(ARB_STRICT, NULL, d, a);
	ck_assert_uint_eq(a[6], CAP);
	ck_assert_uint_eq(a[3], CAP - CAP / 4);
	ck_assert_uint_eq(a[1], CAP - CAP / 4 - CAP / 2);
	/* Classes without traffic may start in what is left below them. */
	ck_assert_uint_eq(a[7], CAP);
	ck_assert_uint_eq(a[5], CAP - CAP / 4);
	ck_assert_uint_eq(a[0], CAP - CAP / 4 - CAP / 2 - CAP / 4);
}
END_TEST

/* Two saturated classes of weights 3 and 1 share 3:1. */
START_TEST(test_wrr_saturated)
{
	uint32_t w[ARB_CLASSES] = {1, 3};
	uint64_t d[ARB_CLASSES] = {CAP, CAP}, a[ARB_CLASSES];

	shares(ARB_WRR, w, d, a);
	ck_assert_uint_eq(a[1], CAP * 3 / 4);
	ck_assert_uint_eq(a[0], CAP / 4);
}
END_TEST

/* Alone with traffic, a class gets the whole capacity. */
START_TEST(test_wrr_alone)
{
	uint32_t w[ARB_CLASSES] = {1, 3};
	uint64_t d[ARB_CLASSES] = {2 * CAP, 0}, a[ARB_CLASSES];

	shares(ARB_WRR, w, d, a);
	ck_assert_uint_eq(a[0], CAP);
	/* The idle one may start at its share beside it: 3 / (1 + 3). */
	ck_assert_uint_eq(a[1], CAP * 3 / 4);
}
END_TEST

/*
 * What a class leaves of its guarantee goes to the one that wants more,
 * and the light class keeps its guarantee to grow back into.
 */
START_TEST(test_wrr_lends_spare)
{
	uint32_t w[ARB_CLASSES] = {1, 3};
	uint64_t d[ARB_CLASSES] = {CAP, CAP / 10}, a[ARB_CLASSES];

	shares(ARB_WRR, w, d, a);
	ck_assert_uint_eq(a[1], CAP * 3 / 4);
	ck_assert_uint_eq(a[0], CAP - CAP / 10);
}
END_TEST

/* The spare is lent in weight order, each up to its demand. */
START_TEST(test_wrr_weight_order)
{
	uint32_t w[ARB_CLASSES] = {1, 2, 1};
	uint64_t d[ARB_CLASSES] = {CAP / 2, CAP / 2, 0}, a[ARB_CLASSES];

	/* Classes 0, 1 and 2 with traffic: guarantees 1/4, 1/2, 1/4. */
	d[2] = 1;
	shares(ARB_WRR, w, d, a);
	/* Class 2 leaves 1/4 - 1; class 1 (weight 2) wants 0 more, class 0
	 * wants 1/4 more: it gets all of the spare. */
	ck_assert_uint_eq(a[1], CAP / 2);
	ck_assert_uint_eq(a[0], CAP / 4 + CAP / 4 - 1);
	ck_assert_uint_eq(a[2], CAP / 4);

	/* Now class 1 wants more too: it is the heavier, it is served first. */
	d[1] = CAP;
	shares(ARB_WRR, w, d, a);
	ck_assert_uint_eq(a[1], CAP / 2 + CAP / 4 - 1);
	ck_assert_uint_eq(a[0], CAP / 4);
}
END_TEST

/* A class without a weight gets nothing; no traffic at all: shares by weight. */
START_TEST(test_wrr_no_weight)
{
	uint32_t w[ARB_CLASSES] = {0, 1};
	uint64_t d[ARB_CLASSES] = {CAP, CAP}, a[ARB_CLASSES];
	uint64_t idle[ARB_CLASSES] = {0};

	shares(ARB_WRR, w, d, a);
	ck_assert_uint_eq(a[0], 0);
	ck_assert_uint_eq(a[1], CAP);
	shares(ARB_WRR, w, idle, a);
	ck_assert_uint_eq(a[1], CAP);
	ck_assert_uint_eq(a[0], 0);
}
END_TEST

/* The estimate follows a rise at once and decays by an eighth per interval. */
START_TEST(test_demand_estimate)
{
	uint64_t e = 0;
	int i;

	e = arb_demand_estimate(e, 800);
	ck_assert_uint_eq(e, 800);
	e = arb_demand_estimate(e, 0);
	ck_assert_uint_eq(e, 700);
	e = arb_demand_estimate(e, 750);
	ck_assert_uint_eq(e, 750);
	for (i = 0; i < 200; i++)
		e = arb_demand_estimate(e, 0);
	ck_assert_uint_eq(e, 0);
}
END_TEST

static Suite *
arb_suite(void)
{
	Suite *s = suite_create("arb");
	struct {
		const char *name;
		const TTest *fn;
	} cases[] = {
		{"strict_top_keeps_capacity", test_strict_top_keeps_capacity},
		{"strict_leftover", test_strict_leftover},
		{"wrr_saturated", test_wrr_saturated},
		{"wrr_alone", test_wrr_alone},
		{"wrr_lends_spare", test_wrr_lends_spare},
		{"wrr_weight_order", test_wrr_weight_order},
		{"wrr_no_weight", test_wrr_no_weight},
		{"demand_estimate", test_demand_estimate},
	};
	unsigned int i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		TCase *tc = tcase_create(cases[i].name);

		tcase_set_timeout(tc, 10);
		tcase_add_test(tc, cases[i].fn);
		suite_add_tcase(s, tc);
	}
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(arb_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

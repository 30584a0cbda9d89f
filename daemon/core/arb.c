/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */
#include <stdbool.h>

#include "arb.h"

static uint64_t
min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

/*
 * Strict priority, highest class first. A class's allowance is what the
 * classes above it left, not its demand: a class may grow into what is
 * free at once, and a class with no traffic yet can start.
 */
static void
strict_shares(uint64_t capacity, const uint64_t *demand, uint64_t *allow)
{
	uint64_t left = capacity;
	int c;

	for (c = ARB_CLASSES - 1; c >= 0; c--) {
		allow[c] = left;
		left -= min_u64(demand[c], left);
	}
}

/*
 * The active class that comes first in weight order among those not yet
 * served (@done): the heaviest, and of equal weights the higher priority.
 * -1 when none is left.
 */
static int
next_by_weight(const uint32_t *weights, const uint64_t *demand, const bool *done)
{
	int c, best = -1;

	for (c = ARB_CLASSES - 1; c >= 0; c--)
		if (demand[c] > 0 && weights[c] > 0 && !done[c] &&
		    (best < 0 || weights[c] > weights[best]))
			best = c;
	return best;
}

/*
 * Weighted shares. Each class with traffic is guaranteed capacity * w / W
 * (W: the weights of the classes with traffic) and keeps that much even
 * when it used less, so that it can grow back at once. What the classes
 * below their guarantee leave is lent, in weight order, to those that
 * want more than theirs, each up to its demand; what still remains goes
 * to the heaviest class with traffic. A class without traffic may start
 * at the share it would have beside the active ones.
 */
static void
wrr_shares(uint64_t capacity, const uint32_t *weights, const uint64_t *demand, uint64_t *allow)
{
	bool done[ARB_CLASSES] = {false};
	uint64_t wsum = 0, spare = 0;
	int c, first = -1;

	for (c = 0; c < ARB_CLASSES; c++)
		if (demand[c] > 0)
			wsum += weights[c];
	for (c = 0; c < ARB_CLASSES; c++) {
		uint64_t w = weights[c];

		if (w == 0)
			allow[c] = 0;
		else if (demand[c] == 0)
			allow[c] = capacity * w / (wsum + w);
		else {
			allow[c] = capacity * w / wsum;
			if (demand[c] < allow[c])
				spare += allow[c] - demand[c];
		}
	}
	for (;;) {
		uint64_t more;

		c = next_by_weight(weights, demand, done);
		if (c < 0)
			break;
		done[c] = true;
		if (first < 0)
			first = c;
		if (demand[c] <= allow[c])
			continue;
		more = min_u64(spare, demand[c] - allow[c]);
		allow[c] += more;
		spare -= more;
	}
	if (first >= 0)
		allow[first] += spare;
}

void
arb_shares(enum arb_policy policy, uint64_t capacity, const uint32_t *weights,
	   const uint64_t *demand, uint64_t *allow)
{
	if (policy == ARB_WRR)
		wrr_shares(capacity, weights, demand, allow);
	else
		strict_shares(capacity, demand, allow);
}

uint64_t
arb_demand_estimate(uint64_t prev, uint64_t measured)
{
	/* Rounded up, so that it reaches 0. */
	uint64_t decayed = prev - (prev + 7) / 8;

	return measured > decayed ? measured : decayed;
}

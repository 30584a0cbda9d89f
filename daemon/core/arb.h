/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * Arbitration between priority classes: how a capacity is shared out from
 * the classes' measured demand (docs/incad.md, "Priorities and
 * arbitration"). DPDK-free, so that the policies are unit-tested on their
 * own; incad turns the shares into rte_meter profiles (daemon/arbiter.c).
 */
#ifndef INCA_ARB_H
#define INCA_ARB_H

#include <stdint.h>

/* Classes are priorities 0 (lowest) .. ARB_CLASSES - 1 (highest). */
#define ARB_CLASSES 8

enum arb_policy {
	ARB_STRICT, /* a class gets the capacity minus what the higher classes used */
	ARB_WRR,    /* a class with traffic gets capacity * w / sum(w of those with traffic) */
};

/*
 * The rate each class may pass in the next interval, from what each
 * offered in the last one (@demand, bytes per second, 0: no traffic).
 * @weights (ARB_WRR only): by class, 0 for a class that has none (it
 * gets nothing). Fills @allow (bytes per second) for every class.
 */
void arb_shares(enum arb_policy policy, uint64_t capacity, const uint32_t *weights,
		const uint64_t *demand, uint64_t *allow);

/*
 * A class's demand estimate after an interval in which it offered
 * @measured (bytes per second), from the last estimate @prev: the larger
 * of the two, the old one decaying by an eighth per interval. Traffic is
 * bursty at the scale of an interval (a window waits for its results):
 * were the shares computed from the last interval alone, a class idle for
 * one interval would have its share lent out just as its next burst
 * comes, and the classes together would pass more than the capacity.
 */
uint64_t arb_demand_estimate(uint64_t prev, uint64_t measured);

#endif /* INCA_ARB_H */

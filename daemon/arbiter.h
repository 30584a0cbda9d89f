/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * Arbitration between jobs' priority classes (config "arbitration"): one
 * srTCM meter per class on each dataplane lcore, whose rate the I/O lcore
 * recomputes every interval from the classes' measured demand
 * (core/arb.c says how the capacity is shared out). A contribution its
 * class's meter marks red is held back: dropped before it is counted, as
 * if lost (incad/PRIO_HELD), and answered with NACK HELD, on which its
 * sender retries that chunk only on its backed-off retransmission timer.
 */
#ifndef INCAD_ARBITER_H
#define INCAD_ARBITER_H

#include <rte_cycles.h>
#include <rte_meter.h>

#include "incad.h"

struct incad_arb_state {
	bool on;                 /* an arbitration section is configured */
	/*
	 * Two sets of profiles: the I/O lcore rewrites the one the lcores do
	 * not use, then flips @active. An lcore that read @active just
	 * before a flip and is stalled for a whole interval may see one
	 * profile being rewritten: one packet's colour, never a fault
	 * (neither field it divides by is ever 0).
	 */
	uint32_t active;
	struct rte_meter_srtcm_profile prof[2][INCAD_PRIO_CLASSES];
	/* The classes' demand estimates (core/arb.h) and the rates they were
	 * given, bytes per second; written by the I/O lcore only. */
	uint64_t demand[INCAD_PRIO_CLASSES];
	uint64_t allow[INCAD_PRIO_CLASSES];
	/* I/O lcore only. */
	uint64_t last_tsc;
	uint64_t last_offered[INCAD_PRIO_CLASSES];
	uint64_t period;         /* interval_ms in timer cycles */
};

extern struct incad_arb_state incad_arb;

/* Configure the meters (before the lcores start). 0 or a negative errno. */
int incad_arb_init(void);

/* The timer hook (dataplane.h) that recomputes the classes' rates. */
void incad_arb_timer(struct incad_lcore *lc, uint64_t now);

/*
 * Meter a contribution of @len bytes of a job of priority @prio on @lc:
 * true when it may go on, false when it is held back (counted here; the
 * caller drops it). Only with incad_arb.on.
 */
static inline bool
incad_arb_pass(struct incad_lcore *lc, unsigned int prio, uint32_t len)
{
	uint32_t a = __atomic_load_n(&incad_arb.active, __ATOMIC_ACQUIRE);

	lc->st.class_offered[prio] += len;
	if (rte_meter_srtcm_color_blind_check(&lc->class_meter[prio], &incad_arb.prof[a][prio],
					      rte_rdtsc(), len) == RTE_COLOR_RED) {
		lc->st.class_held[prio]++;
		return false;
	}
	lc->st.class_bytes[prio] += len;
	return true;
}

#endif /* INCAD_ARBITER_H */

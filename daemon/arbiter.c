/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * Arbitration between priority classes, control side: every interval the
 * I/O lcore sums what each class offered on all lcores, asks core/arb.c
 * for the classes' shares of the configured capacity and writes them into
 * the meters' profiles (arbiter.h). The dataplane only reads a profile.
 */
#include <errno.h>
#include <string.h>

#include "arb.h"
#include "arbiter.h"
#include "dataplane.h"

struct incad_arb_state incad_arb;

/*
 * Write the profiles of set @set for the rates @allow (bytes per second,
 * the whole incad's): each lcore meters the contributions of its slots,
 * so it gets an even share, as the tenants' meters do.
 */
static int
profiles_set(uint32_t set, const uint64_t *allow)
{
	const struct incad_arb_conf *a = &incad.cfg.arb;
	uint64_t frame = INCA_ENCAP_LEN + 4 + INCA_HDR_LEN + INCA_MAX_PAYLOAD_BYTES;
	unsigned int c;
	int ret;

	for (c = 0; c < INCAD_PRIO_CLASSES; c++) {
		struct rte_meter_srtcm_params p = {0};

		/* rte_meter refuses a rate of 0: 1 byte/s holds back all but
		 * what is left in the bucket. */
		p.cir = allow[c] / incad.nlcores;
		if (p.cir == 0)
			p.cir = 1;
		p.cbs = (uint64_t)a->burst_kb * 1024 / incad.nlcores;
		if (p.cbs < frame)
			p.cbs = frame;
		ret = rte_meter_srtcm_profile_config(&incad_arb.prof[set][c], &p);
		if (ret != 0)
			return ret;
	}
	return 0;
}

static void
shares(const uint64_t *demand, uint64_t *allow)
{
	const struct incad_arb_conf *a = &incad.cfg.arb;

	arb_shares(a->policy == INCAD_ARB_WRR ? ARB_WRR : ARB_STRICT,
		   (uint64_t)a->capacity_mbps * 125000, a->weights, demand, allow);
}

int
incad_arb_init(void)
{
	uint64_t demand[INCAD_PRIO_CLASSES] = {0}, allow[INCAD_PRIO_CLASSES];
	unsigned int i, c;
	int ret;

	RTE_BUILD_BUG_ON(INCAD_PRIO_CLASSES != ARB_CLASSES);
	memset(&incad_arb, 0, sizeof(incad_arb));
	if (incad.cfg.arb.policy == INCAD_ARB_OFF)
		return 0;
	/* Before any traffic: every class may start at its share. */
	shares(demand, allow);
	ret = profiles_set(0, allow);
	if (ret != 0)
		return ret;
	for (i = 0; i < incad.nlcores; i++)
		for (c = 0; c < INCAD_PRIO_CLASSES; c++) {
			ret = rte_meter_srtcm_config(&incad.lcores[i].class_meter[c],
						     &incad_arb.prof[0][c]);
			if (ret != 0)
				return ret;
		}
	memcpy(incad_arb.allow, allow, sizeof(allow));
	incad_arb.period = incad.hz * incad.cfg.arb.interval_ms / 1000;
	incad_arb.last_tsc = incad_now();
	incad_arb.on = true;
	return 0;
}

void
incad_arb_timer(struct incad_lcore *lc __rte_unused, uint64_t now)
{
	uint64_t demand[INCAD_PRIO_CLASSES], allow[INCAD_PRIO_CLASSES];
	uint64_t dt = now - incad_arb.last_tsc;
	uint32_t next = incad_arb.active ^ 1;
	unsigned int i, c;

	if (!incad_arb.on || dt < incad_arb.period)
		return;
	for (c = 0; c < INCAD_PRIO_CLASSES; c++) {
		uint64_t offered = 0, rate;

		for (i = 0; i < incad.nlcores; i++)
			offered += __atomic_load_n(&incad.lcores[i].st.class_offered[c],
						   __ATOMIC_RELAXED);
		/* In floating point: bytes times cycles per second overflows 64
		 * bits when the timer was late by seconds at line rate. */
		rate = (uint64_t)((double)(offered - incad_arb.last_offered[c]) *
				  (double)incad.hz / (double)dt);
		demand[c] = arb_demand_estimate(incad_arb.demand[c], rate);
		incad_arb.last_offered[c] = offered;
	}
	incad_arb.last_tsc = now;
	shares(demand, allow);
	/* Cannot fail: the same parameters were accepted at start-up but
	 * for the rates, and a rate of 0 is raised to 1. */
	if (profiles_set(next, allow) != 0)
		return;
	__atomic_store_n(&incad_arb.active, next, __ATOMIC_RELEASE);
	for (c = 0; c < INCAD_PRIO_CLASSES; c++) {
		__atomic_store_n(&incad_arb.demand[c], demand[c], __ATOMIC_RELAXED);
		__atomic_store_n(&incad_arb.allow[c], allow[c], __ATOMIC_RELAXED);
	}
}

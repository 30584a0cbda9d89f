/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * A tree leaf's link to its parent aggregator (uplink.c): the control side
 * of the jobs that have a 'parent' in the configuration. It sits above
 * the control plane (ctrl.h) and l2.h; the dataplane calls it for what the
 * parent sends.
 */
#ifndef INCAD_UPLINK_H
#define INCAD_UPLINK_H

#include <stdint.h>

#include "ctrl.h"

/* Set up every tree leaf job's uplink (after incad_ctrl_init()). 0 or -errno. */
int incad_uplink_init(void);

/* Timer hook: ARP, JOIN, HEARTBEAT and LEAVE towards the parents. */
void incad_uplink_timer(struct incad_lcore *lc, uint64_t now);

enum incad_uplink_verdict {
	INCAD_UPLINK_NOT_PARENT, /* not from a parent: the caller keeps @m */
	INCAD_UPLINK_DONE,       /* handled (and freed) here */
	/*
	 * A RESULT or a NACK about one chunk: msg.job now names the leaf's
	 * own job; the caller hands @m to the lcore that owns its slot.
	 */
	INCAD_UPLINK_DATA,
};

/*
 * A message that is not a CONTRIB or a request, on the I/O lcore: handled
 * if it comes from a tree leaf job's parent (address, port and job).
 */
enum incad_uplink_verdict incad_uplink_input(struct incad_lcore *lc, struct rte_mbuf *m,
					     uint64_t now);

/*
 * Control thread: restart the leaf jobs whose uplink lost its parent's
 * incarnation (requested by the I/O lcore), then let the uplink JOIN.
 */
void incad_uplink_restarts(void);

/* incad is stopping: LEAVE every parent joined (I/O lcore, after its loop). */
void incad_uplink_stop(struct incad_lcore *lc);

/* The state's name: "resolving", "hello", "holding", "joining", "up" or
 * "leaving" (telemetry). */
const char *incad_uplink_state_name(const struct incad_uplink *u);

#endif /* INCAD_UPLINK_H */

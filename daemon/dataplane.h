/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * The dataplane (dataplane.c): the lcore loops, INCA frame handling,
 * contributions and results. It sits on top: it dispatches to the control
 * plane (ctrl.h), the host/switch side (l2.h) and transmits through tx.h;
 * none of them calls back into it. Periodic work (the uplinks, statistics,
 * arbitration) reaches the I/O lcore as timer hooks registered before the
 * lcores start; eviction runs on the control thread (ctrl_thread.c).
 */
#ifndef INCAD_DATAPLANE_H
#define INCAD_DATAPLANE_H

#include <stdint.h>

#include "incad.h"

/* Entry point of a dataplane lcore; @arg is its struct incad_lcore. */
int incad_lcore_main(void *arg);

/* Work the I/O lcore runs every 10 ms. */
typedef void incad_timer_fn(struct incad_lcore *lc, uint64_t now);

/* Register a timer hook (before the lcores start); -1 when the table is full. */
int incad_timer_add(incad_timer_fn *fn);

#endif /* INCAD_DATAPLANE_H */

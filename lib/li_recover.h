/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * The recovery layer: agreements across ranks through the caller's oob
 * allgather or fallback allreduce (agree.c), the switch from the stream to
 * the fallback and back, and teardown (fallback.c). Owns in_fallback,
 * fb_from, fb_count.
 */
#ifndef INCA_LI_RECOVER_H
#define INCA_LI_RECOVER_H

#include "li_stream.h"

/* agree.c */
int li_fb_call(struct inca_comm *c, const void *sendbuf, void *recvbuf, size_t count,
	       unsigned dtype, unsigned op);
bool li_can_agree(const struct inca_comm *c);
int li_agree_minmax(struct inca_comm *c, const uint32_t *v, unsigned n, uint32_t *mn,
		    uint32_t *mx);
int li_agree_membership(struct inca_comm *c, int local);

/* fallback.c */
/* JOIN (membership) and a fresh stream for the grants; LEAVE if that fails. */
int li_join_stream(struct inca_comm *c);
int li_recover(struct inca_comm *c);
int li_teardown(struct inca_comm *c);
/*
 * Try to return a communicator in the fallback to its aggregator before
 * the head of its queue runs (every rank, one agreement each): 1 when
 * it did, 0 when all stay in the fallback, or an error. li_unprobe()
 * sends one that returned back to the fallback (a striped communicator
 * whose other stripes could not return).
 */
int li_probe(struct inca_comm *c);
void li_unprobe(struct inca_comm *c);

/*
 * API layer (collective.c): a striped communicator just created whose
 * stripes did not all join goes to the fallback as a whole.
 */
void li_stripes_settle(struct inca_comm *c);
int li_fb_run(struct inca_comm *c, struct li_req *r);

#endif /* INCA_LI_RECOVER_H */

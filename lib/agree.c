/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * Agreements across the ranks of a communicator, outside the aggregator:
 * all-or-none membership at creation and when returning from the
 * fallback. They run over the caller's out-of-band allgather (opts.oob)
 * or, without one, over the fallback allreduce used as an allgather (an
 * int32 sum in which every rank fills its own block; bit-exact).
 *
 * Every agreement is one call of the oob (or the fallback) by every rank,
 * so ranks that agree make the same sequence of calls; the wait is the
 * oob's own, which the caller bounds (docs/libinca.md, "Failures").
 */

#include <stdlib.h>
#include <string.h>

#include "li_recover.h"

int
li_fb_call(struct inca_comm *c, const void *sendbuf, void *recvbuf, size_t count,
	   unsigned dtype, unsigned op)
{
	struct inca_fallback_args a = {
		.sendbuf = sendbuf,
		.recvbuf = recvbuf,
		.count = count,
		.dtype = dtype,
		.op = op,
	};
	int ret;

	if (c->fb_fn == NULL)
		return INCA_EFALLBACK;
	c->st.fallback_calls++;
	ret = c->fb_fn(c->fb_ctx, &a);
	if (ret < 0) {
		li_log(INCA_LOG_ERR, "job %u rank %u: fallback allreduce failed (%d)", c->o.job,
		       c->o.rank, ret);
		return INCA_EFALLBACK;
	}
	return INCA_OK;
}

bool
li_can_agree(const struct inca_comm *c)
{
	return c->o.oob != NULL || c->fb_fn != NULL;
}

/* Gather @n words of every rank into @all (size x n), rank order. */
static int
gather(struct inca_comm *c, const uint32_t *v, unsigned n, uint32_t *all)
{
	size_t total = (size_t)c->o.size * n;
	int ret;

	if (c->o.oob != NULL) {
		ret = c->o.oob(c->o.oob_ctx, v, all, (size_t)n * sizeof(*v));
		if (ret < 0) {
			li_log(INCA_LOG_ERR, "job %u rank %u: out-of-band allgather failed (%d)",
			       c->o.job, c->o.rank, ret);
			return INCA_EFALLBACK;
		}
		return INCA_OK;
	}
	memset(all, 0, total * sizeof(*all));
	memcpy(all + (size_t)c->o.rank * n, v, (size_t)n * sizeof(*v));
	return li_fb_call(c, all, all, total, INCA_DTYPE_INT32, INCA_OP_SUM);
}

int
li_agree_minmax(struct inca_comm *c, const uint32_t *v, unsigned n, uint32_t *mn,
		uint32_t *mx)
{
	uint32_t *all;
	unsigned i, r;
	int ret;

	all = malloc((size_t)c->o.size * n * sizeof(*all));
	if (all == NULL)
		return INCA_ENOMEM;
	ret = gather(c, v, n, all);
	if (ret == INCA_OK) {
		for (i = 0; i < n; i++) {
			mn[i] = mx[i] = all[i];
			for (r = 1; r < c->o.size; r++) {
				uint32_t x = all[(size_t)r * n + i];

				mn[i] = x < mn[i] ? x : mn[i];
				mx[i] = x > mx[i] ? x : mx[i];
			}
		}
	}
	free(all);
	return ret;
}

/* What every rank brings to a membership agreement. */
enum {
	AG_ERR,      /* -error of this rank (0: joined) */
	AG_SESSION,  /* the rest: must be equal on every rank */
	AG_WINDOW,
	AG_ELEMS,
	AG_POOL,
	AG_FLOAT,
	AG_NWORDS_
};

int
li_agree_membership(struct inca_comm *c, int local)
{
	uint32_t v[AG_NWORDS_], mn[AG_NWORDS_], mx[AG_NWORDS_];
	unsigned i;
	int ret;

	if (local == INCA_OK && !c->joined)
		local = INCA_EPROTO;
	memset(v, 0, sizeof(v));
	v[AG_ERR] = (uint32_t)-local;
	if (local == INCA_OK) {
		v[AG_SESSION] = li_session(c);
		v[AG_WINDOW] = c->window;
		v[AG_ELEMS] = c->max_elems;
		v[AG_POOL] = c->pool;
		v[AG_FLOAT] = c->float_native;
	}
	ret = li_agree_minmax(c, v, AG_NWORDS_, mn, mx);
	if (ret < 0)
		return ret;
	if (mx[AG_ERR] != 0) {
		/* The same answer on every rank: the lowest error code (the
		 * largest negation) any rank had. */
		if (local == INCA_OK)
			li_log(INCA_LOG_WARN, "job %u rank %u: another rank did not join (%s): "
			       "nobody uses the aggregator", c->o.job, c->o.rank,
			       inca_strerror(-(int)mx[AG_ERR]));
		return -(int)mx[AG_ERR];
	}
	for (i = AG_SESSION; i < AG_NWORDS_; i++) {
		if (mn[i] != mx[i]) {
			li_log(INCA_LOG_ERR,
			       "job %u rank %u: the ranks joined with different %s (%u..%u): "
			       "nobody uses the aggregator", c->o.job, c->o.rank,
			       i == AG_SESSION ? "sessions" : i == AG_WINDOW ? "windows" :
			       i == AG_ELEMS ? "max_elems" : i == AG_POOL ? "pools" : "float modes",
			       mn[i], mx[i]);
			return INCA_EPROTO;
		}
	}
	return INCA_OK;
}

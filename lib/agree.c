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
	AG_AGG,      /* which aggregator of a tree's list it joined */
	AG_SESSION,  /* equal on the ranks of one aggregator */
	AG_WINDOW,   /* the rest: equal on every rank */
	AG_ELEMS,
	AG_POOL,
	AG_FLOAT,
	AG_ROUTED,   /* not compared: routed chunks only if every rank has ROUTED */
	AG_NWORDS_
};

static const char *const ag_names[AG_NWORDS_] = {
	[AG_SESSION] = "sessions", [AG_WINDOW] = "windows", [AG_ELEMS] = "max_elems",
	[AG_POOL] = "pools", [AG_FLOAT] = "float modes",
};

/*
 * Did every rank join, and do their grants agree? Every rank of one
 * aggregator must hold its one session; across the aggregators of a tree
 * the sessions differ (each leaf has its own), the grants must not.
 */
int
li_agree_membership(struct inca_comm *c, int local)
{
	uint32_t v[AG_NWORDS_], *all, maxerr = 0;
	unsigned i, r, q;
	int ret;

	if (local == INCA_OK && !c->joined)
		local = INCA_EPROTO;
	memset(v, 0, sizeof(v));
	v[AG_ERR] = (uint32_t)-local;
	v[AG_AGG] = c->agg_index;
	if (local == INCA_OK) {
		v[AG_SESSION] = li_session(c);
		v[AG_WINDOW] = c->window;
		v[AG_ELEMS] = c->max_elems;
		v[AG_POOL] = c->pool;
		v[AG_FLOAT] = c->float_native;
		v[AG_ROUTED] = (c->caps & INCA_CAP_ROUTED) != 0;
	}
	all = malloc((size_t)c->o.size * AG_NWORDS_ * sizeof(*all));
	if (all == NULL)
		return INCA_ENOMEM;
	ret = gather(c, v, AG_NWORDS_, all);
	if (ret < 0)
		goto out;
	for (r = 0; r < c->o.size; r++)
		maxerr = all[r * AG_NWORDS_ + AG_ERR] > maxerr ? all[r * AG_NWORDS_ + AG_ERR] :
								 maxerr;
	if (maxerr != 0) {
		/* The same answer on every rank: the lowest error code (the
		 * largest negation) any rank had. */
		if (local == INCA_OK)
			li_log(INCA_LOG_WARN, "job %u rank %u: another rank did not join (%s): "
			       "nobody uses the aggregator", c->o.job, c->o.rank,
			       inca_strerror(-(int)maxerr));
		ret = -(int)maxerr;
		goto out;
	}
	for (r = 1; r < c->o.size && ret == INCA_OK; r++) {
		const uint32_t *a = all + (size_t)r * AG_NWORDS_;

		for (i = AG_SESSION; i < AG_ROUTED; i++) {
			/* A session is compared with the first rank of the
			 * same aggregator, the grants with rank 0's. */
			for (q = 0; i == AG_SESSION && q < r; q++)
				if (all[(size_t)q * AG_NWORDS_ + AG_AGG] == a[AG_AGG])
					break;
			if (i == AG_SESSION && q == r)
				continue;
			q = i == AG_SESSION ? q : 0;
			if (a[i] != all[(size_t)q * AG_NWORDS_ + i]) {
				li_log(INCA_LOG_ERR,
				       "job %u rank %u: ranks %u and %u joined with different %s "
				       "(%u, %u): nobody uses the aggregator", c->o.job, c->o.rank,
				       q, r, ag_names[i], all[(size_t)q * AG_NWORDS_ + i], a[i]);
				ret = INCA_EPROTO;
				break;
			}
		}
	}
	/* A tree's leaves may differ (a switch leaf has no ROUTED): every
	 * rank must issue the same chunks, so routed ones only when all can
	 * (docs/protocol.md, "Routed chunks in a tree"). */
	for (r = 0; r < c->o.size && ret == INCA_OK; r++)
		if (all[(size_t)r * AG_NWORDS_ + AG_ROUTED] == 0)
			c->caps &= (uint16_t)~INCA_CAP_ROUTED;
out:
	free(all);
	return ret;
}

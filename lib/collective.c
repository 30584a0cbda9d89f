/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * The collectives of the public API, and what decides between the stream
 * and the recovery: issue a request into the stream (engine.c), drive the
 * stream until it completes, and when the stream cannot finish (the
 * aggregator is gone, a NACK), hand the communicator to the recovery
 * (fallback.c) or fail it. The top layer: it calls every layer below and
 * nothing below calls it.
 */

#define _GNU_SOURCE
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "li_recover.h"

#define NS_PER_MS 1000000ull

/* ---- failure ------------------------------------------------------------ */

static void
fail_all(struct inca_comm *c, int err)
{
	while (c->head != NULL)
		li_req_complete(c, c->head, err);
}

/* Fail every pending request and the communicator with @err. */
static int
fail_hard(struct inca_comm *c, int err)
{
	li_log(INCA_LOG_ERR, "job %u rank %u: communicator failed: %s", c->o.job, c->o.rank,
	       inca_strerror(err));
	li_ka_allow(c, 0);
	li_set_failed(c, err);
	fail_all(c, err);
	return err;
}

/*
 * The aggregator path is gone: agree with the other ranks and continue in
 * the fallback, or fail every pending request (and the communicator) when
 * there is none. A mismatch (INCA_EPROTO) or an abort (INCA_ECANCELED) is
 * not the aggregator's failure and never falls back: the fallback could
 * only run mismatched host collectives, or wait for a rank that gave up.
 */
static int
fail_stream(struct inca_comm *c, int err)
{
	int ret;

	if (c->fb_fn != NULL && err != INCA_EPROTO && err != INCA_ECANCELED) {
		ret = li_recover(c);
		if (ret == INCA_OK)
			return INCA_OK;
		err = ret;
	}
	return fail_hard(c, err);
}

/* Run until @r is done; with @r NULL and !@block, one round. */
static int
drive(struct inca_comm *c, struct li_req *r, bool block)
{
	uint64_t deadline = li_now_ns() + (uint64_t)c->o.op_timeout_ms * NS_PER_MS;
	int ret;

	for (;;) {
		if (r != NULL && r->state != LI_REQ_PENDING)
			return INCA_OK;
		if (c->failed) {
			fail_all(c, INCA_EFAILED);
			return INCA_OK;
		}
		if (li_aborted(c)) {
			fail_stream(c, INCA_ECANCELED);
			continue;
		}
		/* The aggregator may be alive and answering heartbeats while a
		 * peer never contributes (it stopped calling, or called
		 * another collective): only this bound ends that wait. */
		if (block && !c->in_fallback && li_now_ns() >= deadline) {
			li_log(INCA_LOG_ERR, "job %u rank %u: collective incomplete after %u ms",
			       c->o.job, c->o.rank, c->o.op_timeout_ms);
			fail_hard(c, INCA_ETIMEDOUT);
			continue;
		}
		if (c->stream_err != 0 && !c->in_fallback) {
			ret = c->stream_err;
			c->stream_err = 0;
			fail_stream(c, ret);
			continue;
		}
		if (c->in_fallback) {
			if (c->head == NULL)
				return INCA_OK;
			ret = li_fb_run(c, c->head);
			if (ret < 0) {
				li_set_failed(c, ret);
				fail_all(c, ret);
			}
			continue;
		}
		if (c->head == NULL)
			return INCA_OK;
		ret = li_progress(c, block ? 100 : 0);
		if (ret < 0) {
			fail_stream(c, ret);
			continue;
		}
		if (!block)
			return INCA_OK;
	}
}

/* ---- stripes ------------------------------------------------------------ */

/*
 * A striped communicator (comm.c) cuts each collective into one contiguous
 * part per stripe, each an ordinary request of that stripe's communicator
 * on its own aggregator (or tree). The parts' packets move whenever any
 * call drives the communicator. What needs care is the fallback: the
 * stripes share the caller's oob and fallback function, so every rank must
 * make the same sequence of calls to them, although ranks notice a broken
 * stream at different times. Hence two states only: every stripe on its
 * aggregator, or every stripe in the fallback.
 *
 *  - While all are on their aggregators, no rank calls the fallback. When a
 *    rank finds any stripe's stream broken, it runs the recovery of every
 *    stripe, in stripe order (a stripe whose stream is fine takes part
 *    with everything it has); every other rank does the same when it finds
 *    its own stream broken (the broken stripe stalls everybody), so the
 *    first fallback call of every rank is stripe 0's recovery.
 *  - In the fallback, the parts run in the order of the collectives and,
 *    within one, in stripe order: the same on every rank.
 *  - The stripes return to their aggregators together: every probe_every
 *    collectives run wholly in the fallback, each stripe probes (each
 *    probe ends in an agreement, so every rank knows which stripes could
 *    return); unless all could, those that did go back to the fallback.
 */

static int allreduce_issue(struct inca_comm *c, const void *sendbuf, void *recvbuf,
			   size_t count, unsigned dtype, unsigned op, struct li_req **out);

static bool
stripe_healthy(const struct inca_comm *x)
{
	return !x->in_fallback && !x->failed && x->stream_err == 0;
}

/*
 * A stripe in trouble (its stream broke, it failed, or it is in the
 * fallback) while another still streams: every stripe goes to the
 * fallback, in stripe order. A mismatch, an abort or a failure is every
 * stripe's end instead: no recovery (as fail_stream() never falls back on
 * those).
 */
static void
stripes_recover(struct inca_comm *c)
{
	bool trouble = false, hard = false, all_fb = true;
	int err = INCA_ETIMEDOUT;
	unsigned s;

	for (s = 0; s < c->nstripes; s++) {
		const struct inca_comm *x = c->stripe[s];

		trouble |= x->in_fallback || x->failed || x->stream_err != 0;
		all_fb &= x->in_fallback;
		if (x->failed || x->stream_err == INCA_EPROTO || x->stream_err == INCA_ECANCELED) {
			hard = true;
			err = x->failed ? INCA_EFAILED : x->stream_err;
		}
	}
	if (!trouble)
		return;
	for (s = 0; s < c->nstripes; s++) {
		struct inca_comm *x = c->stripe[s];
		int e = x->stream_err != 0 ? x->stream_err : err;

		x->stream_err = 0;
		if (x->failed || (all_fb && !hard))
			continue;
		if (hard)
			fail_hard(x, e == INCA_ETIMEDOUT ? INCA_EFAILED : e);
		else if (!x->in_fallback)
			fail_stream(x, e);
	}
}

void
li_stripes_settle(struct inca_comm *c)
{
	unsigned s;

	for (s = 0; s < c->nstripes; s++)
		if (c->stripe[s]->in_fallback)
			break;
	if (s < c->nstripes)
		stripes_recover(c);
}

/*
 * One round of the stripes' streams (no fallback calls): receive, resend,
 * send; then, with @wait_ms, wait at most that long for any of their
 * sockets. A broken stream is recorded for stripes_recover().
 */
static void
stripes_pump(struct inca_comm *c, int wait_ms)
{
	struct pollfd pfd[LI_MAX_STRIPES];
	unsigned s, n = 0;
	int ret;

	for (s = 0; s < c->nstripes; s++) {
		struct inca_comm *x = c->stripe[s];

		if (!stripe_healthy(x) || x->head == NULL)
			continue;
		if (li_aborted(x)) {
			x->stream_err = INCA_ECANCELED;
			continue;
		}
		ret = li_progress(x, 0);
		if (ret < 0) {
			x->stream_err = ret;
			continue;
		}
		if (x->head != NULL) {
			pfd[n].fd = x->tops->fd(x->tp);
			pfd[n].events = POLLIN;
			n++;
		}
	}
	if (wait_ms > 0 && n > 0)
		(void)poll(pfd, n, wait_ms);
}

static bool
stripes_all_fallback(const struct inca_comm *c)
{
	unsigned s;

	for (s = 0; s < c->nstripes; s++)
		if (!c->stripe[s]->in_fallback || c->stripe[s]->failed)
			return false;
	return true;
}

/* Every stripe tries its aggregator before @h runs: all return, or none. */
static void
stripes_probe(struct inca_comm *c)
{
	int back[LI_MAX_STRIPES];
	unsigned s, nback = 0;

	c->probe_mark = c->fb_count;
	for (s = 0; s < c->nstripes; s++) {
		back[s] = li_probe(c->stripe[s]);
		if (back[s] < 0) {
			/* The oob or the fallback failed: the caller's error,
			 * and every stripe's. */
			for (s = 0; s < c->nstripes; s++)
				if (!c->stripe[s]->failed)
					fail_hard(c->stripe[s], back[s] < 0 ? back[s] : INCA_EFAILED);
			return;
		}
		nback += back[s] == 1;
	}
	if (nback == 0 || nback == c->nstripes)
		return;
	for (s = 0; s < c->nstripes; s++)
		if (back[s] == 1)
			li_unprobe(c->stripe[s]);
}

/* Complete what can be completed of the oldest collectives, in order. */
static void
stripes_complete(struct inca_comm *c)
{
	struct li_req *h;
	unsigned s;

	while ((h = c->head) != NULL) {
		if (c->o.probe_every != UINT32_MAX && c->fb_count > 0 &&
		    c->fb_count % c->o.probe_every == 0 && c->probe_mark != c->fb_count &&
		    stripes_all_fallback(c))
			stripes_probe(c);
		for (s = 0; s < c->nstripes; s++) {
			struct li_req *sr = h->sub[s];
			struct inca_comm *x = c->stripe[s];

			if (sr == NULL)
				continue;
			if (sr->state == LI_REQ_PENDING) {
				if (!x->in_fallback && !x->failed)
					return; /* its results are still on the way */
				(void)drive(x, sr, true);
				if (sr->state == LI_REQ_PENDING)
					return;
			}
			if (sr->result < 0 && h->result == INCA_OK)
				h->result = sr->result;
			li_req_free(x, sr);
			h->sub[s] = NULL;
		}
		if (stripes_all_fallback(c))
			c->fb_count++;
		li_req_complete(c, h, h->result);
	}
}

/* Run until @r is done (or, without @block, one round). */
static void
stripes_drive(struct inca_comm *c, struct li_req *r, bool block)
{
	uint64_t deadline = li_now_ns() + (uint64_t)c->o.op_timeout_ms * NS_PER_MS;
	unsigned s;

	for (;;) {
		stripes_pump(c, 0);
		stripes_recover(c);
		stripes_complete(c);
		if (r == NULL ? c->head == NULL : r->state != LI_REQ_PENDING)
			return;
		if (!block)
			return;
		if (li_now_ns() >= deadline) {
			li_log(INCA_LOG_ERR, "job %u rank %u: striped collective incomplete after "
			       "%u ms", c->o.job, c->o.rank, c->o.op_timeout_ms);
			for (s = 0; s < c->nstripes; s++)
				if (!c->stripe[s]->failed)
					fail_hard(c->stripe[s], INCA_ETIMEDOUT);
			stripes_complete(c);
			return;
		}
		stripes_pump(c, 1);
	}
}

/* Issue one collective on a striped communicator: a part per stripe. */
static int
stripes_issue(struct inca_comm *c, const void *sendbuf, void *recvbuf, size_t count,
	      unsigned dtype, unsigned op, struct li_req **out)
{
	size_t esz = inca_dtype_size(dtype), per, off = 0;
	struct li_req *r, *sub;
	unsigned s;
	int ret = INCA_OK;

	if (c->nreqs >= LI_MAX_REQUESTS)
		return INCA_EBUSY;
	r = li_req_alloc(c);
	if (r == NULL)
		return INCA_ENOMEM;
	r->comm = c;
	r->kind = LI_KIND_STRIPE;
	r->count = count;
	r->state = LI_REQ_PENDING;
	r->result = INCA_OK;
	/* Equal parts, the first ones one element longer; a collective of
	 * fewer elements than stripes leaves the last ones without a part. */
	per = count / c->nstripes;
	for (s = 0; s < c->nstripes && ret == INCA_OK; s++) {
		size_t n = per + (s < count % c->nstripes);

		if (n == 0)
			continue;
		/* Queued only: the stripes' streams move in stripes_drive(),
		 * whose recovery keeps the stripes together. */
		ret = allreduce_issue(c->stripe[s],
				      sendbuf == INCA_IN_PLACE ? INCA_IN_PLACE :
				      (const uint8_t *)sendbuf + off * esz,
				      (uint8_t *)recvbuf + off * esz, n, dtype, op, &sub);
		if (ret == INCA_OK)
			r->sub[s] = sub;
		off += n;
	}
	/* Queued last: the parts already issued complete with it. */
	li_req_enqueue(c, r);
	if (ret < 0 && r->result == INCA_OK)
		r->result = ret;
	*out = r;
	return INCA_OK;
}

static int
check_common(struct inca_comm *c, size_t count)
{
	if (c == NULL)
		return INCA_EINVAL;
	if (c->failed)
		return INCA_EFAILED;
	if (count > UINT32_MAX)
		return INCA_EINVAL;
	if (c->nreqs >= LI_MAX_REQUESTS)
		return INCA_EBUSY;
	return INCA_OK;
}

/* Queue an allreduce on a communicator with a stream of its own. */
static int
allreduce_issue(struct inca_comm *c, const void *sendbuf, void *recvbuf, size_t count,
		unsigned dtype, unsigned op, struct li_req **out)
{
	struct li_req *r;
	int ret;

	ret = check_common(c, count);
	if (ret < 0)
		return ret;
	r = li_req_alloc(c);
	if (r == NULL)
		return INCA_ENOMEM;
	r->kind = LI_KIND_ALLREDUCE;
	r->sendbuf = sendbuf == INCA_IN_PLACE ? recvbuf : sendbuf;
	r->recvbuf = recvbuf;
	r->count = count;
	r->dtype = dtype;
	r->op = op;
	ret = li_issue(c, r);
	if (ret < 0) {
		li_req_free(c, r);
		return ret;
	}
	*out = r;
	return INCA_OK;
}

int
inca_iallreduce(struct inca_comm *c, const void *sendbuf, void *recvbuf, size_t count,
		unsigned dtype, unsigned op, struct inca_request **req)
{
	struct li_req *r;
	int ret;

	if (req == NULL)
		return INCA_EINVAL;
	*req = NULL;
	ret = check_common(c, count);
	if (ret < 0)
		return ret;
	if (dtype >= INCA_DTYPE_COUNT || op >= INCA_OP_COUNT ||
	    (count > 0 && (recvbuf == NULL || sendbuf == NULL)))
		return INCA_EINVAL;
	if (c->nstripes > 0) {
		ret = stripes_issue(c, sendbuf, recvbuf, count, dtype, op, &r);
		if (ret < 0)
			return ret;
		/* The parts start moving; recovery and the fallback's work wait
		 * for test / wait, as on one stream. */
		stripes_pump(c, 0);
		*req = (struct inca_request *)r;
		return INCA_OK;
	}
	ret = allreduce_issue(c, sendbuf, recvbuf, count, dtype, op, &r);
	if (ret < 0)
		return ret;
	/* Start streaming now, so that the data moves while the caller
	 * computes; failures surface in test / wait. */
	if (r->state == LI_REQ_PENDING && !c->in_fallback)
		(void)drive(c, NULL, false);
	*req = (struct inca_request *)r;
	return INCA_OK;
}

int
inca_test(struct inca_request **req, int *done)
{
	struct li_req *r;
	struct inca_comm *c;
	int ret;

	if (req == NULL || *req == NULL || done == NULL)
		return INCA_EINVAL;
	r = (struct li_req *)*req;
	c = r->comm;
	*done = 0;
	if (r->state == LI_REQ_PENDING && c->nstripes > 0)
		stripes_drive(c, r, false);
	else if (r->state == LI_REQ_PENDING)
		(void)drive(c, c->in_fallback ? r : NULL, false);
	if (r->state == LI_REQ_PENDING)
		return INCA_OK;
	ret = r->result;
	li_req_free(c, r);
	*req = NULL;
	*done = 1;
	return ret;
}

int
inca_wait(struct inca_request **req)
{
	struct li_req *r;
	struct inca_comm *c;
	int ret;

	if (req == NULL || *req == NULL)
		return INCA_EINVAL;
	r = (struct li_req *)*req;
	c = r->comm;
	if (c->nstripes > 0)
		stripes_drive(c, r, true);
	else
		(void)drive(c, r, true);
	ret = r->state == LI_REQ_PENDING ? INCA_EPROTO : r->result;
	li_req_free(c, r);
	*req = NULL;
	return ret;
}

int
inca_allreduce(struct inca_comm *c, const void *sendbuf, void *recvbuf, size_t count,
	       unsigned dtype, unsigned op)
{
	struct inca_request *req;
	int ret;

	ret = inca_iallreduce(c, sendbuf, recvbuf, count, dtype, op, &req);
	if (ret < 0)
		return ret;
	return inca_wait(&req);
}

int
inca_broadcast(struct inca_comm *c, void *buf, size_t bytes, unsigned root)
{
	struct inca_request *req;
	struct li_req *r;
	int ret;

	ret = check_common(c, bytes / 4 + 1);
	if (ret < 0)
		return ret;
	if (root >= c->o.size || (bytes > 0 && buf == NULL))
		return INCA_EINVAL;
	/* A striped communicator broadcasts on its first stripe, once the
	 * collectives before it are done (their fallback calls come first). */
	if (c->nstripes > 0) {
		stripes_drive(c, NULL, true);
		return inca_broadcast(c->stripe[0], buf, bytes, root);
	}
	r = li_req_alloc(c);
	if (r == NULL)
		return INCA_ENOMEM;
	r->kind = LI_KIND_BCAST;
	r->sendbuf = root == c->o.rank ? buf : NULL;
	r->recvbuf = buf;
	r->bytes = bytes;
	r->count = (bytes + 3) / 4;
	r->dtype = INCA_DTYPE_INT32;
	r->op = INCA_OP_SUM;
	ret = li_issue(c, r);
	if (ret < 0) {
		li_req_free(c, r);
		return ret;
	}
	req = (struct inca_request *)r;
	return inca_wait(&req);
}

/* ---- routed collectives (docs/protocol.md, "Routed chunks") -------------- */

/*
 * Can @c run a routed collective of @dtype on its aggregator? One stream
 * (a striped communicator cuts collectives by elements, not by blocks),
 * aggregators that advertised ROUTED to every rank (a tree's leaves too:
 * the creation agreement keeps ROUTED only then), and a dtype it sums natively
 * (routed chunks are not cut into BFP or order-preserving forms; INT64 and
 * FP64 have no other form). Where
 * not, the collective takes the form without routed chunks.
 */
static bool
routed_ok(const struct inca_comm *c, unsigned dtype)
{
	return c->nstripes == 0 && (c->caps & INCA_CAP_ROUTED) &&
	       (dtype == INCA_DTYPE_INT32 || dtype == INCA_DTYPE_INT64 ||
		dtype == INCA_DTYPE_FP64 || c->float_native) &&
	       (c->agg_dtypes & (1u << dtype));
}

/* Issue @r (kind, buffers, sizes filled) and wait for it. */
static int
routed_run(struct inca_comm *c, struct li_req *r)
{
	struct inca_request *req;
	int ret;

	ret = li_issue(c, r);
	if (ret < 0) {
		li_req_free(c, r);
		return ret;
	}
	if (r->state == LI_REQ_PENDING && !c->in_fallback)
		(void)drive(c, NULL, false);
	req = (struct inca_request *)r;
	return inca_wait(&req);
}

int
inca_reduce_scatter(struct inca_comm *c, const void *sendbuf, void *recvbuf, size_t recvcount,
		    unsigned dtype, unsigned op)
{
	size_t us = inca_dtype_size(dtype), total;
	struct li_req *r;
	uint8_t *tmp;
	int ret;

	if (c == NULL || dtype >= INCA_DTYPE_COUNT || op >= INCA_OP_COUNT ||
	    sendbuf == INCA_IN_PLACE || (recvcount > 0 && (sendbuf == NULL || recvbuf == NULL)))
		return INCA_EINVAL;
	if (recvcount > UINT32_MAX / c->o.size)
		return INCA_EINVAL;
	total = recvcount * c->o.size;
	ret = check_common(c, total);
	if (ret < 0)
		return ret;
	if (!routed_ok(c, dtype)) {
		/* An allreduce of which this rank keeps its block. */
		tmp = malloc(total * us + 1);
		if (tmp == NULL)
			return INCA_ENOMEM;
		ret = inca_allreduce(c, sendbuf, tmp, total, dtype, op);
		if (ret == INCA_OK)
			memcpy(recvbuf, tmp + (size_t)c->o.rank * recvcount * us, recvcount * us);
		free(tmp);
		return ret;
	}
	r = li_req_alloc(c);
	if (r == NULL)
		return INCA_ENOMEM;
	r->kind = LI_KIND_RSCAT;
	r->sendbuf = sendbuf;
	r->recvbuf = recvbuf;
	r->count = total;
	r->block = recvcount;
	r->dtype = dtype;
	r->op = op;
	return routed_run(c, r);
}

int
inca_allgather(struct inca_comm *c, const void *sendbuf, void *recvbuf, size_t bytes)
{
	size_t total, lanes;
	uint8_t *own, *tmp;
	struct li_req *r;
	int ret;

	if (c == NULL || (bytes > 0 && (sendbuf == NULL || recvbuf == NULL)))
		return INCA_EINVAL;
	if (bytes > (size_t)UINT32_MAX * 4 / c->o.size)
		return INCA_EINVAL;
	total = bytes * c->o.size;
	lanes = (total + 3) / 4;
	ret = check_common(c, lanes);
	if (ret < 0)
		return ret;
	own = (uint8_t *)recvbuf + (size_t)c->o.rank * bytes;
	if (sendbuf != INCA_IN_PLACE && sendbuf != own && bytes > 0)
		memmove(own, sendbuf, bytes);
	if (!routed_ok(c, INCA_DTYPE_INT32)) {
		/* The blocks' bytes are disjoint: their int32 sum is each
		 * block's bits, wherever a block starts in a lane. */
		tmp = calloc(lanes + 1, 4);
		if (tmp == NULL)
			return INCA_ENOMEM;
		memcpy(tmp + (own - (uint8_t *)recvbuf), own, bytes);
		ret = inca_allreduce(c, INCA_IN_PLACE, tmp, lanes, INCA_DTYPE_INT32, INCA_OP_SUM);
		if (ret == INCA_OK)
			memcpy(recvbuf, tmp, total);
		free(tmp);
		return ret;
	}
	r = li_req_alloc(c);
	if (r == NULL)
		return INCA_ENOMEM;
	r->kind = LI_KIND_AGATHER;
	r->sendbuf = own;
	r->recvbuf = recvbuf;
	r->bytes = bytes;
	r->block = (bytes + 3) / 4;
	r->count = r->block * c->o.size;
	r->dtype = INCA_DTYPE_INT32;
	r->op = INCA_OP_SUM;
	return routed_run(c, r);
}

int
inca_reduce(struct inca_comm *c, const void *sendbuf, void *recvbuf, size_t count,
	    unsigned dtype, unsigned op, unsigned root)
{
	size_t us = inca_dtype_size(dtype);
	struct li_req *r;
	uint8_t *tmp;
	bool me;
	int ret;

	if (c == NULL || dtype >= INCA_DTYPE_COUNT || op >= INCA_OP_COUNT || root >= c->o.size)
		return INCA_EINVAL;
	me = root == c->o.rank;
	if (sendbuf == INCA_IN_PLACE) {
		if (!me)
			return INCA_EINVAL;
		sendbuf = recvbuf;
	}
	if (count > 0 && (sendbuf == NULL || (me && recvbuf == NULL)))
		return INCA_EINVAL;
	ret = check_common(c, count);
	if (ret < 0)
		return ret;
	if (!routed_ok(c, dtype)) {
		if (me)
			return inca_allreduce(c, sendbuf, recvbuf, count, dtype, op);
		tmp = malloc(count * us + 1);
		if (tmp == NULL)
			return INCA_ENOMEM;
		ret = inca_allreduce(c, sendbuf, tmp, count, dtype, op);
		free(tmp);
		return ret;
	}
	r = li_req_alloc(c);
	if (r == NULL)
		return INCA_ENOMEM;
	r->kind = LI_KIND_REDUCE;
	r->sendbuf = sendbuf;
	r->recvbuf = me ? recvbuf : NULL;
	r->count = count;
	r->dtype = dtype;
	r->op = op;
	r->root = (uint16_t)root;
	return routed_run(c, r);
}

int
inca_barrier(struct inca_comm *c)
{
	int32_t in = 0, out;

	return inca_allreduce(c, &in, &out, 1, INCA_DTYPE_INT32, INCA_OP_SUM);
}

int
inca_comm_progress(struct inca_comm *c)
{
	int ret;

	if (c == NULL)
		return INCA_EINVAL;
	if (c->failed)
		return INCA_EFAILED;
	if (c->nstripes > 0) {
		/* The streams only: recovery may block, the next wait does it. */
		stripes_pump(c, 0);
		return INCA_OK;
	}
	if (c->in_fallback || !c->joined)
		return INCA_OK;
	ret = li_progress(c, 0);
	/* Recovery blocks in the fallback: leave it to the next call that
	 * may block (inca_wait, inca_test, a blocking collective). */
	if (ret < 0 && c->head != NULL && c->stream_err == 0)
		c->stream_err = ret;
	return INCA_OK;
}

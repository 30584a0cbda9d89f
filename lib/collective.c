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
	if (r->state == LI_REQ_PENDING)
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
	if (c->in_fallback || !c->joined)
		return INCA_OK;
	ret = li_progress(c, 0);
	/* Recovery blocks in the fallback: leave it to the next call that
	 * may block (inca_wait, inca_test, a blocking collective). */
	if (ret < 0 && c->head != NULL && c->stream_err == 0)
		c->stream_err = ret;
	return INCA_OK;
}

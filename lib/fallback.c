/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * The fallback: when the aggregator cannot complete the stream any more,
 * the ranks finish through the caller's host allreduce, and all of them
 * must make the same sequence of calls to it although they may be at
 * different points of the stream (a rank may have every result of
 * collective c and be streaming c+1 while another still misses the last
 * results of c).
 *
 * The window rule bounds the disagreement. If some rank has the result of
 * chunk j, every rank contributed j, so every rank's base is above j - W;
 * hence lo = min(base) >= base_r - W for every rank r, and no rank holds a
 * result at or beyond base_r + W <= lo + 2W. Recovery (li_recover), run by
 * every rank as its first fallback action:
 *
 *  1. int32 MIN over (base, window, payload size): lo, and the sizes of
 *     what follows;
 *  2. int32 MIN over owner[j] for j in [lo, lo + 2W): the lowest rank that
 *     has j's result; F = the first j nobody has;
 *  3. int32 SUM over the results of [lo, F), each contributed by its owner
 *     and zeros elsewhere (bit-exact): every rank completes those chunks;
 *  4. every chunk >= F, the rest of the collective holding F and every
 *     later collective, is reduced by the fallback on the user's data
 *     (li_fb_run). All ranks agree on F and issue identical collectives, so
 *     their calls match.
 *
 * Teardown shares round 1 with recovery: a rank that destroys its
 * communicator runs round 1 saying "I have every result"; when every rank
 * says so, nothing else happens. When one rank is still recovering its
 * last collective (it lost a result while its peers finished), the peers
 * answer rounds 2 and 3 from their rings and then run round 1 again, which
 * the recovered rank matches with its own teardown: the same sequence of
 * calls on every rank, so teardown cannot deadlock against recovery.
 *
 * Every probe_every collectives run wholly by the fallback, the ranks try
 * the aggregator again: HELLO, agree that all reached it, LEAVE, agree
 * that all left (a JOIN before another rank's LEAVE would join the
 * incarnation that LEAVE ends), JOIN (sequence numbers restart at 0),
 * agree that all joined the same incarnation with the same grants.
 */

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "li_recover.h"

/* uint32 <-> int32 preserving order, for MIN over unsigned values. */
static inline int32_t
omap(uint32_t u)
{
	return (int32_t)(u ^ 0x80000000u);
}

static inline uint32_t
ounmap(int32_t i)
{
	return (uint32_t)i ^ 0x80000000u;
}

static inline struct li_chunk *
ent_of(struct inca_comm *c, uint64_t seq)
{
	return &c->ring[seq % c->ring_n];
}

static bool
have_result(struct inca_comm *c, uint64_t k)
{
	struct li_chunk *e;

	if (c->ring == NULL)
		return false;
	e = ent_of(c, k);
	return e->seq == k && e->state == LI_CH_DONE;
}

/* Has this rank k's result with its elements (not a BRIEF one)? */
static bool
have_elems(struct inca_comm *c, uint64_t k)
{
	return have_result(c, k) && !ent_of(c, k)->brief;
}

/*
 * Round 3' for a routed chunk k that some rank completed but of which
 * nobody holds the elements: the root of a reduced chunk lost its result
 * (the others got theirs BRIEF), or every rank but the root of a gathered
 * one did. The aggregator summed every rank's contribution, so the ranks
 * sum them again through the fallback: a reduced chunk's with its dtype
 * and op (on the host's values), a gathered one's as int32 lanes in which
 * only the root's are not zero. Each rank has its contribution: kept in
 * its ring entry when its result was to come BRIEF (emit()), else the
 * request is still pending (it lacks the result) and encodes it again.
 */
static int
rebuild(struct inca_comm *c, uint64_t k, int32_t *lanes, size_t nlanes)
{
	struct li_chunk *e;
	size_t len = 0, us;
	void *host = NULL;
	int ret;

	memset(lanes, 0, nlanes * 4);
	if (c->ring == NULL)
		return INCA_EPROTO;
	e = ent_of(c, k);
	if (e->seq != k || e->route == LI_ROUTE_NONE) {
		li_log(INCA_LOG_ERR, "job %u rank %u: recovery: chunk %llu unknown here",
		       c->o.job, c->o.rank, (unsigned long long)k);
		return INCA_EPROTO;
	}
	if (e->kept)
		memcpy(lanes, e->payload, e->kept_len);
	else if (e->state == LI_CH_SENT && e->req != NULL)
		len = li_contrib_payload(c, e, (uint8_t *)lanes);
	else if (!(e->route == LI_ROUTE_GATHER && e->root != c->o.rank))
		return INCA_EPROTO;
	(void)len;
	us = inca_dtype_size(e->wdtype);
	if (e->route == LI_ROUTE_GATHER) {
		ret = li_fb_call(c, lanes, lanes, nlanes, INCA_DTYPE_INT32, INCA_OP_SUM);
	} else {
		host = malloc((size_t)e->count * us + 1);
		if (host == NULL)
			return INCA_ENOMEM;
		li_decode(host, lanes, e->count, e->wdtype, e->wop, LI_MODE_NATIVE, 0, c->o.size,
			  0);
		ret = li_fb_call(c, host, host, e->count, e->wdtype, e->wop);
		if (ret == INCA_OK)
			li_encode(lanes, host, e->count, e->wdtype, e->wop, LI_MODE_NATIVE, 0,
				  c->o.size, 0);
		free(host);
	}
	if (ret < 0)
		return ret;
	if (e->state != LI_CH_SENT)
		return INCA_OK;
	/* This rank lacked it: the elements if it receives them, else done. */
	e->brief = !li_gets_elems(c, e);
	if (!e->brief) {
		memcpy(e->payload, lanes, (size_t)e->count * us);
		e->res_len = (uint16_t)(e->count * us);
	}
	e->res_exp = 0;
	e->state = LI_CH_DONE;
	return INCA_OK;
}

/*
 * Recovery (teardown false) or one teardown round (true). Returns INCA_OK,
 * 1 when, in a teardown round, nobody was recovering, or an error.
 */
static int
recover(struct inca_comm *c, bool teardown)
{
	bool stream = c->ring != NULL && c->joined;
	uint32_t base32 = (uint32_t)c->base, lo32, min1, max1;
	uint32_t w = stream ? c->window : 0, pw = stream ? (c->max_payload + 3) / 4 : 0;
	int32_t v[6];
	int32_t *owners = NULL, *buf = NULL;
	uint64_t lo, f, k;
	size_t stride, i, n;
	int ret;

	if (!teardown) {
		c->st.recoveries++;
		li_ka_allow(c, 0);
		li_log(INCA_LOG_WARN, "job %u rank %u: switching to the fallback at chunk %llu",
		       c->o.job, c->o.rank, (unsigned long long)c->base);
	}
	if (!stream)
		c->base = 0;

	/* Round 1. The bases lie within a window of each other, but may
	 * straddle the 32-bit wrap: the minimum is taken in the frame (plain
	 * or rotated by half) in which they do not. */
	v[0] = omap(base32);
	v[1] = ~omap(base32);
	v[2] = omap(base32 + 0x80000000u);
	v[3] = -(int32_t)w;
	v[4] = -(int32_t)pw;
	v[5] = teardown;
	ret = li_fb_call(c, v, v, 6, INCA_DTYPE_INT32, INCA_OP_MIN);
	if (ret < 0)
		return ret;
	if (v[5] == 1)
		return 1;
	if (teardown)
		li_log(INCA_LOG_INFO, "job %u rank %u: teardown: a peer recovers its last results",
		       c->o.job, c->o.rank);
	min1 = ounmap(v[0]);
	max1 = ounmap(~v[1]);
	lo32 = max1 - min1 < 0x80000000u ? min1 : ounmap(v[2]) - 0x80000000u;
	lo = c->base - (uint32_t)(base32 - lo32);
	w = (uint32_t)-v[3];
	pw = (uint32_t)-v[4];
	f = lo;

	if (w > 0 && w <= LI_MAX_WINDOW) {
		/* Round 2: who has which result with its elements, and who
		 * has it at all (a routed chunk's BRIEF result has none). */
		n = 2 * (size_t)w;
		owners = malloc(2 * n * sizeof(*owners));
		if (owners == NULL)
			return INCA_ENOMEM;
		for (i = 0; i < n; i++) {
			owners[i] = have_elems(c, lo + i) ? (int32_t)c->o.rank : INT32_MAX;
			owners[n + i] = have_result(c, lo + i) ? (int32_t)c->o.rank : INT32_MAX;
		}
		ret = li_fb_call(c, owners, owners, 2 * n, INCA_DTYPE_INT32, INCA_OP_MIN);
		if (ret < 0)
			goto out;
		while (f < lo + n && (owners[f - lo] != INT32_MAX || owners[n + f - lo] != INT32_MAX))
			f++;
	}

	if (f > lo) {
		/* Round 3: hand the owned results around. Each entry is the
		 * payload length, the exponent and the payload. */
		stride = 2 + pw;
		buf = calloc((size_t)(f - lo) * stride, sizeof(*buf));
		if (buf == NULL) {
			ret = INCA_ENOMEM;
			goto out;
		}
		for (k = lo; k < f; k++) {
			int32_t *slot = buf + (size_t)(k - lo) * stride;
			struct li_chunk *e;

			if (owners[k - lo] != (int32_t)c->o.rank)
				continue;
			e = ent_of(c, k);
			slot[0] = e->res_len;
			slot[1] = e->res_exp;
			memcpy(slot + 2, e->payload, e->res_len);
		}
		ret = li_fb_call(c, buf, buf, (size_t)(f - lo) * stride, INCA_DTYPE_INT32,
				 INCA_OP_SUM);
		if (ret < 0)
			goto out;
		for (k = c->base; k < f; k++) {
			int32_t *slot = buf + (size_t)(k - lo) * stride;
			struct li_chunk *e;

			if (have_result(c, k) || owners[k - lo] == INT32_MAX)
				continue; /* done, or rebuilt below */
			e = ent_of(c, k);
			/* Someone has k's result, so every rank contributed
			 * k: this rank must have it in flight. */
			if (!stream || e->seq != k || e->state != LI_CH_SENT || slot[0] < 0 ||
			    (uint32_t)slot[0] > c->max_payload) {
				li_log(INCA_LOG_ERR,
				       "job %u rank %u: recovery: chunk %llu unknown here",
				       c->o.job, c->o.rank, (unsigned long long)k);
				ret = INCA_EPROTO;
				goto out;
			}
			memcpy(e->payload, slot + 2, (size_t)slot[0]);
			e->res_len = (uint16_t)slot[0];
			e->res_exp = (int8_t)slot[1];
			e->brief = 0;
			e->state = LI_CH_DONE;
		}
		/* Round 3': routed chunks done somewhere, elements nowhere. */
		for (k = lo; k < f; k++) {
			if (owners[k - lo] != INT32_MAX)
				continue;
			ret = rebuild(c, k, buf, pw);
			if (ret < 0)
				goto out;
		}
		li_deliver_ready(c);
	}
	if (!teardown) {
		c->in_fallback = true;
		c->fb_from = f;
		li_log(INCA_LOG_INFO, "job %u rank %u: fallback from chunk %llu (lowest base %llu)",
		       c->o.job, c->o.rank, (unsigned long long)f, (unsigned long long)lo);
	}
	ret = INCA_OK;
out:
	free(owners);
	free(buf);
	return ret;
}

int
li_join_stream(struct inca_comm *c)
{
	int ret = li_join(c, c->o.give_up_ms);

	if (ret == INCA_OK) {
		ret = li_stream_setup(c);
		if (ret < 0)
			li_leave(c, 0);
	}
	return ret;
}

int
li_recover(struct inca_comm *c)
{
	return recover(c, false);
}

int
li_teardown(struct inca_comm *c)
{
	unsigned rounds;
	int ret;

	/* Each round either ends it or completes at least one peer's
	 * recovery; a peer recovers once per collective, and its next call
	 * is its own teardown. */
	for (rounds = 0; rounds <= c->o.size; rounds++) {
		ret = recover(c, true);
		if (ret != INCA_OK)
			return ret < 0 ? ret : INCA_OK;
	}
	li_log(INCA_LOG_ERR, "job %u rank %u: teardown: peers keep recovering", c->o.job,
	       c->o.rank);
	return INCA_EPROTO;
}

/* Are the request's wire dtype and op available on the aggregator? */
static bool
supported(const struct inca_comm *c, const struct li_req *r)
{
	bool routed = r->kind == LI_KIND_RSCAT || r->kind == LI_KIND_AGATHER ||
		      r->kind == LI_KIND_REDUCE;

	return (c->agg_dtypes & (1u << r->wire_dtype)) && (c->agg_ops & (1u << r->wire_op)) &&
	       (!routed || (c->caps & INCA_CAP_ROUTED));
}

/*
 * Try to return to the aggregator before running @r (the head of the
 * queue, not started). Returns 1 when the stream took over, 0 to stay in
 * the fallback, or an error.
 */
static int
probe(struct inca_comm *c)
{
	uint32_t wait = 8 * c->o.timeout_ms;
	uint32_t ok, mn, mx;
	uint64_t saved_seq;
	struct li_req *q;
	int ret;

	if (wait < 100)
		wait = 100;
	if (wait > c->o.give_up_ms)
		wait = c->o.give_up_ms;
	c->st.probes++;
	if (c->tp == NULL)
		(void)li_transport_open(c->o.transport, &c->tops, &c->tp, &c->agg_addr,
					c->o.bind ? &c->bind_addr : NULL,
					(size_t)4 * c->o.window * c->o.mtu + 65536, c->o.window);
	ok = c->tp != NULL && li_hello(c, wait) == INCA_OK;
	ret = li_agree_minmax(c, &ok, 1, &mn, &mx);
	if (ret < 0)
		return ret;
	if (!mn)
		return 0;

	/* LEAVE first: it ends the incarnation whose sets may hold state of
	 * the abandoned stream. Every rank leaves before any joins. */
	saved_seq = c->next_seq;
	li_leave(c, wait);
	ok = 1;
	ret = li_agree_minmax(c, &ok, 1, &mn, &mx);
	if (ret < 0)
		return ret;
	ret = li_join_stream(c);
	if (ret == INCA_OK) {
		c->in_fallback = false;
		for (q = c->head; q != NULL; q = q->next) {
			li_req_layout(c, q);
			if (!supported(c, q))
				ret = INCA_ENOTSUP;
		}
		c->in_fallback = true;
	}
	ret = li_agree_membership(c, ret);
	if (ret < 0) {
		if (c->joined)
			li_leave(c, 0);
		/* A failed oob is the caller's error; anything else leaves
		 * every rank in the fallback. Keep numbering collectives as
		 * before: fb_from is a seq of the old numbering. */
		c->next_seq = saved_seq;
		return ret == INCA_EFALLBACK || ret == INCA_ENOMEM ? ret : 0;
	}
	/* Back on the aggregator: the stream restarts at seq 0 with the
	 * requests not yet run, in issue order. */
	c->in_fallback = false;
	c->next_seq = 0;
	for (q = c->head; q != NULL; q = q->next) {
		q->seq0 = c->next_seq;
		q->delivered = 0;
		c->next_seq += q->nprime + q->nchunks;
	}
	c->send_req = c->head;
	c->st.rejoins++;
	li_log(INCA_LOG_INFO, "job %u rank %u: back on the aggregator", c->o.job, c->o.rank);
	return 1;
}

/* Broadcast tail of @bytes at @buf through the fallback, as int32 lanes. */
static int
fb_bcast(struct inca_comm *c, uint8_t *buf, size_t bytes, bool root)
{
	size_t lanes = bytes / 4, rem = bytes % 4;
	uint8_t tail[4] = {0};
	int ret;

	if (!root)
		memset(buf, 0, bytes);
	if (lanes > 0) {
		ret = li_fb_call(c, buf, buf, lanes, INCA_DTYPE_INT32, INCA_OP_SUM);
		if (ret < 0)
			return ret;
	}
	if (rem > 0) {
		memcpy(tail, buf + lanes * 4, rem);
		ret = li_fb_call(c, tail, tail, 1, INCA_DTYPE_INT32, INCA_OP_SUM);
		if (ret < 0)
			return ret;
		memcpy(buf + lanes * 4, tail, rem);
	}
	return INCA_OK;
}

/*
 * A routed collective through the fallback, the forms without routed
 * chunks on the host collective. ReduceScatter and AllGather run whole
 * (their inputs are intact: a ReduceScatter's is apart from its output,
 * an AllGather's block is one no result is written to), Reduce from
 * element @start as the allreduce does.
 */
static int
fb_routed(struct inca_comm *c, struct li_req *r, size_t start)
{
	size_t us = inca_dtype_size(r->dtype), n, lanes;
	uint8_t *tmp;
	int ret;

	switch (r->kind) {
	case LI_KIND_RSCAT:
		n = r->count;
		tmp = malloc(n * us + 1);
		if (tmp == NULL)
			return INCA_ENOMEM;
		ret = li_fb_call(c, r->sendbuf, tmp, n, r->dtype, r->op);
		if (ret == INCA_OK)
			memcpy(r->recvbuf, tmp + (size_t)c->o.rank * r->block * us, r->block * us);
		break;
	case LI_KIND_AGATHER:
		n = r->bytes * c->o.size;
		lanes = (n + 3) / 4;
		tmp = calloc(lanes + 1, 4);
		if (tmp == NULL)
			return INCA_ENOMEM;
		memcpy(tmp + (size_t)c->o.rank * r->bytes, r->sendbuf, r->bytes);
		ret = li_fb_call(c, tmp, tmp, lanes, INCA_DTYPE_INT32, INCA_OP_SUM);
		if (ret == INCA_OK)
			memcpy(r->recvbuf, tmp, n);
		break;
	default: /* LI_KIND_REDUCE */
		n = r->count - start;
		tmp = malloc(n * us + 1);
		if (tmp == NULL)
			return INCA_ENOMEM;
		ret = li_fb_call(c, (const uint8_t *)r->sendbuf + start * us, tmp, n, r->dtype,
				 r->op);
		if (ret == INCA_OK && r->recvbuf != NULL)
			memcpy((uint8_t *)r->recvbuf + start * us, tmp, n * us);
		break;
	}
	free(tmp);
	return ret;
}

int
li_fb_run(struct inca_comm *c, struct li_req *r)
{
	uint64_t total = (uint64_t)r->nprime + r->nchunks;
	size_t start = 0, us;
	int ret;

	if (r->seq0 + total <= c->fb_from) {
		/* Everything arrived before the switch (recovery delivered
		 * it); nothing left to do. */
		li_req_complete(c, r, INCA_OK);
		return INCA_OK;
	}
	if (r->seq0 >= c->fb_from) {
		c->fb_count++;
		if (c->o.probe_every != UINT32_MAX && c->fb_count % c->o.probe_every == 0) {
			ret = probe(c);
			if (ret != 0)
				return ret < 0 ? ret : INCA_OK;
		}
	} else {
		uint64_t i = c->fb_from - r->seq0;

		start = i < r->nprime ? 0 : (size_t)(i - r->nprime) * r->chunk_elems;
	}

	if (r->kind == LI_KIND_RSCAT || r->kind == LI_KIND_AGATHER || r->kind == LI_KIND_REDUCE) {
		ret = fb_routed(c, r, r->kind == LI_KIND_REDUCE ? start : 0);
	} else if (r->kind == LI_KIND_BCAST) {
		ret = fb_bcast(c, (uint8_t *)r->recvbuf + start * 4, r->bytes - start * 4,
			       r->sendbuf != NULL);
	} else {
		us = inca_dtype_size(r->dtype);
		ret = li_fb_call(c, (const uint8_t *)r->sendbuf + start * us,
				 (uint8_t *)r->recvbuf + start * us, r->count - start, r->dtype,
				 r->op);
	}
	if (ret < 0)
		return ret;
	c->st.fallback_collectives++;
	li_req_complete(c, r, INCA_OK);
	return INCA_OK;
}

int
li_probe(struct inca_comm *c)
{
	return probe(c);
}

void
li_unprobe(struct inca_comm *c)
{
	uint32_t wait = 4 * c->o.timeout_ms;

	/* Every queued request was renumbered from seq 0 by the probe: with
	 * fb_from 0 each runs wholly in the fallback, as before it. */
	li_leave(c, wait < c->o.give_up_ms ? wait : c->o.give_up_ms);
	c->in_fallback = true;
	c->fb_from = 0;
	c->st.rejoins--;
	li_log(INCA_LOG_INFO, "job %u rank %u: back to the fallback with the other stripes",
	       c->o.job, c->o.rank);
}

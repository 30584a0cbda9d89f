/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * The protocol engine: requests become a stream of chunks with job-wide
 * sequence numbers k (slot k mod pool, shadow set (k / pool) mod 2), sent
 * through a sliding window of W chunks (chunk k only while k < base + W,
 * base being the lowest chunk whose result was not delivered), retransmitted
 * with exponential backoff until their result arrives.
 *
 * Results are copied into a ring of 2W entries and written into the
 * caller's buffer in sequence order, as base advances. Two things depend on
 * that order: an in-place allreduce keeps its input intact for every chunk
 * at or after base (the fallback may have to reduce it again), and the ring
 * keeps the last results the fallback agreement needs (fallback.c).
 *
 * Sequence numbers are 64-bit here and 32-bit on the wire, so slot and set
 * stay continuous when the wire value wraps.
 */

#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "li_stream.h"

#define NS_PER_MS 1000000ull

/* Allocate the chunk ring for the granted window (2 x window entries). */
static int
ring_alloc(struct inca_comm *c)
{
	uint32_t n = 2u * c->window;
	size_t bytes = (size_t)n * c->max_payload;

	if (c->ring != NULL && c->ring_n == n && c->ring_pay == c->max_payload)
		return INCA_OK;
	free(c->ring);
	free(c->ring_mem);
	c->footprint -= (size_t)c->ring_n * (sizeof(*c->ring) + c->ring_pay);
	c->ring_n = 0;
	c->ring = calloc(n, sizeof(*c->ring));
	c->ring_mem = malloc(bytes);
	if (c->ring == NULL || c->ring_mem == NULL) {
		free(c->ring);
		free(c->ring_mem);
		c->ring = NULL;
		c->ring_mem = NULL;
		return INCA_ENOMEM;
	}
	c->ring_n = n;
	c->ring_pay = c->max_payload;
	c->footprint += (size_t)n * (sizeof(*c->ring) + c->max_payload);
	return INCA_OK;
}

static void
stream_reset(struct inca_comm *c)
{
	uint32_t i;

	c->next_seq = 0;
	c->base = 0;
	c->next_send = 0;
	c->rtt_min_ns = 0;
	c->rtt_min_cur = 0;
	c->rtt_samples = 0;
	c->srtt_ns = 0;
	for (i = 0; i < c->ring_n; i++) {
		memset(&c->ring[i], 0, sizeof(c->ring[i]));
		c->ring[i].payload = c->ring_mem + (size_t)i * c->max_payload;
	}
	c->nack_err = 0;
}

int
li_stream_setup(struct inca_comm *c)
{
	int ret = ring_alloc(c);

	if (ret == INCA_OK)
		stream_reset(c);
	return ret;
}


static inline struct li_chunk *
ent_of(struct inca_comm *c, uint64_t seq)
{
	return &c->ring[seq % c->ring_n];
}

static inline uint32_t
req_total(const struct li_req *r)
{
	return r->nprime + r->nchunks;
}

static inline unsigned
user_size(const struct li_req *r)
{
	return r->kind == LI_KIND_BCAST || r->kind == LI_KIND_AGATHER ? 4 :
	       inca_dtype_size(r->dtype);
}

static inline bool
is_routed(const struct li_req *r)
{
	return r->kind == LI_KIND_RSCAT || r->kind == LI_KIND_AGATHER ||
	       r->kind == LI_KIND_REDUCE;
}

/*
 * The blocks of a ReduceScatter or an AllGather are interleaved: stream
 * chunk idx is chunk idx / N of block idx mod N. In block order one
 * block's chunks would keep one link busy at a time (an AllGather's root
 * uploading while its own downlink idles); interleaved, every rank's
 * uplink and downlink carry their share at once.
 */
static inline unsigned
chunk_root(const struct li_req *r, uint32_t idx)
{
	return r->kind == LI_KIND_REDUCE ? r->root : idx % r->nblocks;
}

/* Element (lane) offset of stream chunk @idx in its block. */
static inline size_t
chunk_in_block(const struct li_req *r, uint32_t idx)
{
	return (size_t)(idx / r->nblocks) * r->chunk_elems;
}

bool
li_gets_elems(const struct inca_comm *c, const struct li_chunk *e)
{
	if (e->route == LI_ROUTE_REDUCE)
		return c->o.rank == e->root;
	if (e->route == LI_ROUTE_GATHER)
		return c->o.rank != e->root;
	return true;
}

static inline bool
is_float(unsigned dtype)
{
	return dtype == INCA_DTYPE_FP32 || dtype == INCA_DTYPE_FP16 || dtype == INCA_DTYPE_BF16;
}

void
li_req_layout(struct inca_comm *c, struct li_req *r)
{
	unsigned room, wsize, elems;

	r->flags = 0;
	if (r->kind == LI_KIND_AGATHER) {
		/* Bytes as int32 lanes, copied by the aggregator unchanged. */
		r->mode = LI_MODE_RAW;
		r->wire_dtype = INCA_DTYPE_INT32;
		r->wire_op = INCA_OP_SUM;
	} else if (r->kind == LI_KIND_RSCAT || r->kind == LI_KIND_REDUCE) {
		/* Only issued where the aggregator sums the dtype natively. */
		r->mode = LI_MODE_NATIVE;
		r->wire_dtype = r->dtype;
		r->wire_op = r->op;
	} else if (r->kind == LI_KIND_BCAST) {
		r->mode = LI_MODE_RAW;
		r->wire_dtype = INCA_DTYPE_INT32;
		r->wire_op = INCA_OP_SUM;
	} else if (is_float(r->dtype) && !c->float_native) {
		r->wire_dtype = INCA_DTYPE_INT32;
		r->wire_op = r->op;
		if (r->op == INCA_OP_SUM) {
			r->mode = LI_MODE_BFP;
			r->flags = INCA_F_BFP;
		} else {
			r->mode = LI_MODE_ORDERED;
		}
	} else {
		r->mode = LI_MODE_NATIVE;
		r->wire_dtype = r->dtype;
		r->wire_op = r->op;
	}
	if (r->kind == LI_KIND_CLOSE) {
		r->mode = LI_MODE_NATIVE;
		r->wire_dtype = INCA_DTYPE_INT32;
		r->wire_op = INCA_OP_SUM;
		r->chunk_elems = 1;
		r->nchunks = (uint32_t)r->count;
		r->nprime = 0;
		return;
	}
	wsize = inca_dtype_size(r->wire_dtype);
	room = c->max_payload ? c->max_payload : 4;
	/* A 64-bit element takes two of the set's max_elems 32-bit lanes. */
	elems = c->max_elems ? c->max_elems / inca_dtype_lanes(r->wire_dtype) : 1;
	if (elems > room / wsize)
		elems = room / wsize;
	/* Never joined (room 4): one element a chunk, whatever its size. */
	if (elems == 0)
		elems = 1;
	r->chunk_elems = elems;
	r->nchunks = (uint32_t)((r->count + elems - 1) / elems);
	r->nprime = 0;
	if (r->kind == LI_KIND_RSCAT || r->kind == LI_KIND_AGATHER) {
		/* Chunks never straddle blocks: each has one root. */
		r->cpb = (uint32_t)((r->block + elems - 1) / elems);
		r->nblocks = (uint16_t)c->o.size;
		r->nchunks = r->cpb * c->o.size;
		return;
	}
	if (r->mode == LI_MODE_BFP)
		r->nprime = r->nchunks < c->window ? r->nchunks : c->window;
}

/* Element offset and element count of stream chunk @idx of @r. */
static inline void
chunk_geom(const struct li_req *r, uint32_t idx, size_t *off, unsigned *cnt)
{
	uint32_t d = idx < r->nprime ? idx : idx - r->nprime;

	if (r->kind == LI_KIND_RSCAT || r->kind == LI_KIND_AGATHER) {
		/* Element (lane) offset in the whole tensor: block, then chunk. */
		size_t in = chunk_in_block(r, idx);

		*off = (size_t)chunk_root(r, idx) * r->block + in;
		*cnt = r->block - in < r->chunk_elems ? (unsigned)(r->block - in) : r->chunk_elems;
		return;
	}
	*off = (size_t)d * r->chunk_elems;
	if (idx < r->nprime) {
		*cnt = 1;
		return;
	}
	*cnt = r->count - *off < r->chunk_elems ? (unsigned)(r->count - *off) : r->chunk_elems;
}

static void
req_unlink(struct inca_comm *c, struct li_req *r)
{
	struct li_req **pp;

	for (pp = &c->head; *pp != NULL; pp = &(*pp)->next) {
		if (*pp == r) {
			*pp = r->next;
			break;
		}
	}
	if (c->tail == r) {
		struct li_req *t = c->head;

		while (t != NULL && t->next != NULL)
			t = t->next;
		c->tail = t;
	}
	if (c->send_req == r)
		c->send_req = r->next;
	r->next = NULL;
	c->nreqs--;
}

void
li_req_complete(struct inca_comm *c, struct li_req *r, int result)
{
	if (r->state != LI_REQ_PENDING)
		return;
	r->state = LI_REQ_DONE;
	r->result = result;
	req_unlink(c, r);
}

/* ---- sending ---------------------------------------------------------- */

int
li_flush(struct inca_comm *c)
{
	unsigned done = 0;
	int ret;

	while (done < c->ntx) {
		ret = c->tops->send_batch(c->tp, c->tx + done, c->ntx - done);
		if (ret < 0) {
			c->ntx = 0;
			return ret;
		}
		if (ret == 0) {
			/* The socket is full or the route is gone: what did
			 * not go out is lost like a dropped packet, and the
			 * retransmission timer recovers it. */
			c->st.send_errors += c->ntx - done;
			break;
		}
		for (unsigned i = done; i < done + (unsigned)ret; i++) {
			c->st.tx_pkts++;
			c->st.tx_bytes += c->tx[i].len;
		}
		done += ret;
	}
	c->ntx = 0;
	li_set_last_tx(c, li_now_ns());
	return INCA_OK;
}

/* Is stream chunk @idx the last of its request? */
static inline bool
d_last(const struct li_req *r, uint32_t idx)
{
	return idx + 1 == r->nprime + r->nchunks;
}

size_t
li_contrib_payload(struct inca_comm *c, const struct li_chunk *e, uint8_t *buf)
{
	const struct li_req *r = e->req;
	const uint8_t *src = r->sendbuf;
	size_t off, in;
	unsigned cnt;

	chunk_geom(r, e->idx, &off, &cnt);
	if (r->kind == LI_KIND_AGATHER) {
		/* Only the root has elements: its own block, a byte string. */
		if (e->root != c->o.rank)
			return 0;
		in = chunk_in_block(r, e->idx) * 4;
		return li_encode(buf, src + in, cnt, INCA_DTYPE_INT32, INCA_OP_SUM, LI_MODE_RAW, 0,
				 c->o.size, r->bytes - in);
	}
	return li_encode(buf, src + off * inca_dtype_size(r->dtype), cnt, r->dtype, r->op,
			 LI_MODE_NATIVE, 0, c->o.size, 0);
}

/* Encode the CONTRIB of ring entry @e into the next tx slot. */
static int
emit(struct inca_comm *c, struct li_chunk *e, bool retx)
{
	struct li_req *r = e->req;
	const uint8_t *src = r->sendbuf;
	struct inca_msg m;
	uint8_t *buf;
	size_t off, plen, avail = 0;
	unsigned cnt, us = user_size(r);
	int ret;

	if (c->ntx == LI_BATCH) {
		ret = li_flush(c);
		if (ret < 0)
			return ret;
	}
	buf = c->tx_mem + (size_t)c->ntx * c->o.mtu;
	chunk_geom(r, e->idx, &off, &cnt);

	memset(&m, 0, sizeof(m));
	m.version = INCA_PROTO_VERSION;
	m.type = INCA_MSG_CONTRIB;
	m.dtype = r->wire_dtype;
	m.op = r->wire_op;
	m.job = c->o.job;
	m.rank = c->wrank;
	m.token = li_session(c);
	m.slot = (uint16_t)(e->seq % c->pool);
	m.flags = (uint8_t)(((e->seq / c->pool) & 1) ? INCA_F_SET : 0) | r->flags |
		  (retx ? INCA_F_RETX : 0);
	m.seq = (uint32_t)e->seq;
	m.offset = (uint32_t)off;
	m.count = (uint16_t)cnt;
	if (is_routed(r)) {
		uint32_t base = c->o.rank - c->wrank;

		m.flags |= INCA_F_ROUTED | (r->kind == LI_KIND_AGATHER ? INCA_F_GATHER : 0);
		/* The root by its rank at this rank's aggregator (a tree's
		 * leaf), or anonymous when it is under another leaf
		 * (docs/protocol.md, "Routed chunks in a tree"). */
		if (e->root >= base && e->root < base + c->wsize)
			m.bitmap = UINT32_C(1) << (e->root - base);
	}

	if (is_routed(r)) {
		plen = li_contrib_payload(c, e, buf + INCA_HDR_LEN);
		if (r->kind == LI_KIND_AGATHER && e->root != c->o.rank)
			m.flags |= INCA_F_BRIEF;
		if (d_last(r, e->idx))
			m.flags |= INCA_F_LAST;
		/* Kept for the recovery: nobody else will ever have it. */
		if (!retx && !li_gets_elems(c, e)) {
			memcpy(e->payload, buf + INCA_HDR_LEN, plen);
			e->kept = 1;
			e->kept_len = (uint16_t)plen;
		}
	} else if (e->idx < r->nprime) {
		/* Exponent round: one zero element; exp announces the local
		 * exponent of the data chunk with the same index. */
		m.op = INCA_OP_SUM;
		m.exp = li_bfp_local_exp(src + off * us, r->dtype,
					 r->count - off < r->chunk_elems ? r->count - off
									 : r->chunk_elems);
		memset(buf + INCA_HDR_LEN, 0, 4);
		plen = 4;
	} else {
		uint32_t d = e->idx - r->nprime;

		if (r->mode == LI_MODE_BFP) {
			/* Carry the exponent of the chunk W later, whose
			 * contribution goes out when this one's result is in. */
			size_t off2 = ((size_t)d + c->window) * r->chunk_elems;

			m.exp = LI_EXP_ZERO;
			if ((uint64_t)d + c->window < r->nchunks)
				m.exp = li_bfp_local_exp(src + off2 * us, r->dtype,
							 r->count - off2 < r->chunk_elems ?
								 r->count - off2 : r->chunk_elems);
		}
		if (r->mode == LI_MODE_RAW)
			avail = r->bytes - off * 4;
		if (d + 1 == r->nchunks)
			m.flags |= INCA_F_LAST;
		plen = li_encode(buf + INCA_HDR_LEN, src ? src + off * us : NULL, cnt, r->dtype,
				 r->op, r->mode, e->exp_used, c->o.size, avail);
	}
	if ((c->caps & INCA_CAP_FIXED_COUNT) &&
	    m.count < c->max_elems / inca_dtype_lanes(m.dtype) && !(m.flags & INCA_F_BRIEF)) {
		/* A switch counts only its payload class: zeros, neutral for
		 * SUM, up to max_elems lanes (the RESULT's extra elements are
		 * not read). */
		unsigned fixed = c->max_elems / inca_dtype_lanes(m.dtype);
		size_t full = (size_t)fixed * inca_dtype_size(m.dtype);

		if (full > plen && full <= c->max_payload) {
			memset(buf + INCA_HDR_LEN + plen, 0, full - plen);
			plen = full;
			m.count = (uint16_t)fixed;
		}
	}
	inca_hdr_encode(&m, buf);
	c->tx[c->ntx].buf = buf;
	c->tx[c->ntx].len = INCA_HDR_LEN + plen;
	c->ntx++;
	return INCA_OK;
}

/*
 * Retransmission timeout: timeout_ms, doubled per retry. Not estimated from
 * completion times, as TCP would: a chunk's completion includes waiting for
 * the slowest peer, and for that peer's own loss recovery, so an estimate
 * inflates whenever anyone loses a packet. The arming rule in pump() keeps a
 * short timer from resending whole windows while peers lag.
 */
static inline uint64_t
rto_ns(const struct inca_comm *c, unsigned retx)
{
	unsigned shift = retx < LI_MAX_BACKOFF_SHIFT ? retx : LI_MAX_BACKOFF_SHIFT;
	uint64_t rto = ((uint64_t)c->o.timeout_ms * NS_PER_MS) << shift;

	return rto < LI_RTO_MAX_NS ? rto : LI_RTO_MAX_NS;
}

/*
 * Retry timer of a chunk already presumed lost. Every peer contributed the
 * chunks after it, so nobody is late for it: only the network can be, and
 * the smallest completion time seen lately measures that. Four of those
 * (at least 1 ms), doubled per retry, never above the normal timer.
 */
static inline uint64_t
fast_rto_ns(const struct inca_comm *c, unsigned retx)
{
	unsigned shift = retx < LI_MAX_BACKOFF_SHIFT ? retx : LI_MAX_BACKOFF_SHIFT;
	uint64_t rto = 4 * c->rtt_min_ns, slow = rto_ns(c, retx);

	if (c->rtt_min_ns == 0)
		return slow;
	if (rto < LI_FAST_RTO_MIN_NS)
		rto = LI_FAST_RTO_MIN_NS;
	rto <<= shift;
	return rto < slow ? rto : slow;
}

static void
rtt_sample(struct inca_comm *c, uint64_t ns)
{
	if (c->rtt_min_cur == 0 || ns < c->rtt_min_cur)
		c->rtt_min_cur = ns;
	if (c->rtt_min_ns == 0 || ns < c->rtt_min_ns)
		c->rtt_min_ns = ns;
	if (c->srtt_ns == 0)
		c->srtt_ns = ns;
	else
		c->srtt_ns += ((int64_t)ns - (int64_t)c->srtt_ns) / 8;
	/* Epochs let the minimum rise again when the path gets slower. */
	if (++c->rtt_samples >= LI_RTT_EPOCH) {
		c->rtt_min_ns = c->rtt_min_cur;
		c->rtt_min_cur = 0;
		c->rtt_samples = 0;
	}
}

/*
 * The exponent a BFP data chunk is quantised with, from the result of the
 * chunk that announced it. Returns false while that result is missing.
 */
static bool
bfp_exp_ready(struct inca_comm *c, const struct li_req *r, uint32_t idx, int8_t *exp)
{
	uint32_t d = idx - r->nprime;
	uint64_t src = d < r->nprime ? r->seq0 + d : r->seq0 + r->nprime + d - c->window;
	struct li_chunk *s = ent_of(c, src);

	if (s->seq != src || s->state != LI_CH_DONE)
		return false;
	*exp = s->res_exp;
	return true;
}

/*
 * Retransmit chunks presumed lost, then send new chunks the window allows.
 * A chunk is presumed lost when LI_FAST_RETX chunks sent after it have
 * completed (peers send in sequence order, so a slow peer delays them all
 * alike and only a loss lets later chunks overtake), or when its timer
 * expired and it is the oldest chunk or some later chunk completed. Only
 * the oldest chunk retries on the timer alone: when a peer is late, every
 * chunk waits, and one probe is enough. Returns in *next the earliest
 * deadline that can fire.
 */
static int
pump(struct inca_comm *c, uint64_t now, uint64_t *next)
{
	uint64_t k, soonest = UINT64_MAX;
	struct li_req *r;
	int ret;

	for (k = c->base; k < c->next_send; k++) {
		struct li_chunk *e = ent_of(c, k);
		bool armed;

		if (e->state != LI_CH_SENT)
			continue;
		armed = k == c->base || e->later > 0 || e->lost || e->held;
		if ((e->later >= LI_FAST_RETX && !e->held) || (armed && e->deadline <= now)) {
			ret = emit(c, e, true);
			if (ret < 0)
				return ret;
			if (e->retx < UINT8_MAX)
				e->retx++;
			if (e->later > 0)
				e->lost = 1;
			e->later = 0;
			e->held = 0;
			e->sent_ns = now;
			e->deadline = now + (e->lost ? fast_rto_ns(c, e->retx - 1) :
						       rto_ns(c, e->retx));
			c->st.retransmits++;
		}
		if ((k == c->base || e->later > 0 || e->lost || e->held) && e->deadline < soonest)
			soonest = e->deadline;
	}

	r = c->send_req ? c->send_req : c->head;
	while (c->next_send < c->base + c->window) {
		struct li_chunk *e;
		uint32_t idx;
		int8_t exp = 0;

		while (r != NULL && c->next_send >= r->seq0 + req_total(r))
			r = r->next;
		if (r == NULL)
			break;
		idx = (uint32_t)(c->next_send - r->seq0);
		if (r->mode == LI_MODE_BFP && idx >= r->nprime && !bfp_exp_ready(c, r, idx, &exp))
			break;
		if (c->next_send == c->base)
			c->alive_ns = now; /* the silence clock starts with the wait */
		e = ent_of(c, c->next_send);
		e->seq = c->next_send;
		e->req = r;
		e->idx = idx;
		e->state = LI_CH_SENT;
		e->retx = 0;
		e->later = 0;
		e->lost = 0;
		e->held = 0;
		e->brief = 0;
		e->kept = 0;
		e->kept_len = 0;
		e->route = !is_routed(r) ? LI_ROUTE_NONE : r->kind == LI_KIND_AGATHER ?
			   LI_ROUTE_GATHER : LI_ROUTE_REDUCE;
		e->root = is_routed(r) ? (uint16_t)chunk_root(r, idx) : 0;
		e->wdtype = r->wire_dtype;
		e->wop = r->wire_op;
		e->sent_ns = now;
		e->exp_used = exp;
		{
			size_t off;
			unsigned cnt;

			chunk_geom(r, idx, &off, &cnt);
			e->count = (uint16_t)cnt;
		}
		ret = emit(c, e, false);
		if (ret < 0)
			return ret;
		e->deadline = now + rto_ns(c, 0);
		if (c->next_send == c->base && e->deadline < soonest)
			soonest = e->deadline;
		c->next_send++;
	}
	c->send_req = r;
	*next = soonest;
	return li_flush(c);
}

/* ---- receiving -------------------------------------------------------- */

static void
deliver(struct inca_comm *c, struct li_chunk *e)
{
	struct li_req *r = e->req;
	size_t off;
	unsigned cnt;

	if (r == NULL)
		return;
	if (is_routed(r)) {
		c->st.routed_chunks++;
		c->st.brief_results += e->brief;
		/* Only this rank's elements: none in a BRIEF result. */
		if (!e->brief && li_gets_elems(c, e) && r->recvbuf != NULL) {
			chunk_geom(r, e->idx, &off, &cnt);
			if (r->kind == LI_KIND_AGATHER) {
				size_t in = chunk_in_block(r, e->idx) * 4;

				li_decode((uint8_t *)r->recvbuf + (size_t)e->root * r->bytes + in,
					  e->payload, cnt, INCA_DTYPE_INT32, INCA_OP_SUM,
					  LI_MODE_RAW, 0, c->o.size, r->bytes - in);
			} else {
				if (r->kind == LI_KIND_RSCAT)
					off -= (size_t)e->root * r->block;
				li_decode((uint8_t *)r->recvbuf + off * inca_dtype_size(r->dtype),
					  e->payload, cnt, r->dtype, r->op, LI_MODE_NATIVE, 0,
					  c->o.size, 0);
			}
		}
	} else if (e->idx >= r->nprime && r->recvbuf != NULL) {
		chunk_geom(r, e->idx, &off, &cnt);
		if (r->kind == LI_KIND_BCAST)
			li_decode((uint8_t *)r->recvbuf + off * 4, e->payload, cnt,
				  INCA_DTYPE_INT32, INCA_OP_SUM, LI_MODE_RAW, 0, c->o.size,
				  r->bytes - off * 4);
		else
			li_decode((uint8_t *)r->recvbuf + off * inca_dtype_size(r->dtype),
				  e->payload, cnt, r->dtype, r->op, r->mode, e->exp_used,
				  c->o.size, 0);
		c->st.bfp_chunks += r->mode == LI_MODE_BFP;
	}
	c->st.chunks++;
	e->req = NULL;
	r->delivered++;
	if (r->delivered == req_total(r))
		li_req_complete(c, r, INCA_OK);
}

void
li_deliver_ready(struct inca_comm *c)
{
	while (c->base < c->next_send) {
		struct li_chunk *e = ent_of(c, c->base);

		if (e->seq != c->base || e->state != LI_CH_DONE)
			break;
		deliver(c, e);
		c->base++;
	}
}

static void
handle_result(struct inca_comm *c, const struct inca_msg *m)
{
	uint64_t k = c->base + (uint32_t)(m->seq - (uint32_t)c->base);
	struct li_chunk *e;
	struct li_req *r;

	if (c->ring == NULL || k >= c->next_send) {
		c->st.dup_results++; /* older than base, or never sent */
		return;
	}
	e = ent_of(c, k);
	if (e->seq != k || e->state != LI_CH_SENT) {
		c->st.dup_results++;
		return;
	}
	r = e->req;
	/* The result must answer exactly what we contributed. */
	if (m->slot != k % c->pool || (m->flags & INCA_F_SET) != (((k / c->pool) & 1) ?
								   INCA_F_SET : 0) ||
	    (m->count != e->count &&
	     !((c->caps & INCA_CAP_FIXED_COUNT) && m->count == c->max_elems)) ||
	    (m->flags & INCA_F_BFP) != r->flags ||
	    (m->flags & (INCA_F_ROUTED | INCA_F_GATHER)) !=
		    (e->route == LI_ROUTE_NONE ? 0 : e->route == LI_ROUTE_GATHER ?
		     INCA_F_ROUTED | INCA_F_GATHER : INCA_F_ROUTED) ||
	    !(m->flags & INCA_F_BRIEF) != li_gets_elems(c, e) ||
	    m->dtype != (e->idx < r->nprime ? INCA_DTYPE_INT32 : r->wire_dtype) ||
	    m->op != (e->idx < r->nprime ? INCA_OP_SUM : r->wire_op) ||
	    m->body_len > c->max_payload) {
		c->st.rx_invalid++;
		return;
	}
	{
		size_t off;
		unsigned cnt;

		chunk_geom(r, e->idx, &off, &cnt);
		if (m->offset != (uint32_t)off) {
			c->st.rx_invalid++;
			return;
		}
	}
	/* A BRIEF result has no body: a kept contribution stays. */
	e->brief = (m->flags & INCA_F_BRIEF) != 0;
	if (!e->brief)
		memcpy(e->payload, m->body, m->body_len);
	e->res_len = (uint16_t)m->body_len;
	e->res_exp = m->exp;
	e->state = LI_CH_DONE;
	if (m->flags & INCA_F_RETX)
		c->st.replays++;
	{
		uint64_t j;

		/* Karn: only a chunk sent once measures the completion time. */
		if (e->retx == 0)
			rtt_sample(c, li_now_ns() - e->sent_ns);
		/* Evidence of loss for the older chunks still waiting. */
		for (j = c->base; j < k; j++) {
			struct li_chunk *o = ent_of(c, j);

			if (o->state == LI_CH_SENT && o->sent_ns <= e->sent_ns &&
			    o->later < UINT8_MAX)
				o->later++;
		}
	}
	if (k == c->base)
		li_deliver_ready(c);
}

/*
 * NACK HELD: the aggregator's arbitration held the chunk back, uncounted.
 * Its sender is over its class's share, so retrying at once (fast
 * retransmission on evidence of loss) would only be held again: the chunk
 * waits for its normal timer, backed off by the retries it has had. Only a
 * chunk still waiting in this session, sent as the NACK says.
 */
static void
handle_held(struct inca_comm *c, const struct inca_msg *m)
{
	uint64_t k = c->base + (uint32_t)(m->seq - (uint32_t)c->base);
	struct li_chunk *e;

	if (c->ring == NULL || k >= c->next_send)
		return;
	e = ent_of(c, k);
	if (e->seq != k || e->state != LI_CH_SENT || m->slot != k % c->pool)
		return;
	e->held = 1;
	e->lost = 0;
	e->later = 0;
	e->deadline = e->sent_ns + rto_ns(c, e->retx);
}

void
li_handle_msg(struct inca_comm *c, const void *buf, size_t len)
{
	struct inca_msg m;

	c->st.rx_pkts++;
	c->st.rx_bytes += len;
	if (inca_msg_decode(buf, len, 0, &m) != INCA_WIRE_OK) {
		c->st.rx_invalid++;
		return;
	}
	if (m.type == INCA_MSG_CAPS) {
		c->alive_ns = li_now_ns();
		return;
	}
	if (m.job != c->o.job || m.rank != c->wrank || m.token != li_session(c)) {
		c->st.rx_invalid++;
		return;
	}
	switch (m.type) {
	case INCA_MSG_RESULT:
		c->alive_ns = li_now_ns();
		handle_result(c, &m);
		break;
	case INCA_MSG_NACK:
		c->alive_ns = li_now_ns();
		c->st.nacks++;
		if (m.reason < INCA_NACK_MAX_)
			c->st.nack_reasons[m.reason]++;
		if (m.reason == INCA_NACK_RATE_LIMITED)
			break;
		if (m.reason == INCA_NACK_HELD) {
			handle_held(c, &m);
			break;
		}
		/* Every other reason (evicted, member lost, unknown job after
		 * a restart, ...) means no chunk can complete any more. */
		if (c->nack_err == 0)
			li_log(INCA_LOG_WARN, "job %u rank %u: NACK %s", c->o.job, c->o.rank,
			       inca_nack_name(m.reason));
		/* A mismatch is the program's error, not the network's: the
		 * ranks' streams no longer agree, and no fallback can make
		 * them (it would run mismatched host collectives). */
		c->nack_err = m.reason == INCA_NACK_MISMATCH ? INCA_EPROTO : INCA_EREFUSED;
		c->nack_reason = m.reason;
		break;
	case INCA_MSG_HEARTBEAT_ACK:
	case INCA_MSG_JOIN_ACK:
	case INCA_MSG_LEAVE_ACK:
		c->alive_ns = li_now_ns();
		break;
	default:
		c->st.rx_invalid++;
		break;
	}
}

static int
receive(struct inca_comm *c)
{
	struct li_pkt pkts[LI_BATCH];
	int n, i, rounds;

	/* Bounded, so that a flood cannot keep us from sending. */
	for (rounds = 0; rounds < 16; rounds++) {
		for (i = 0; i < LI_BATCH; i++) {
			pkts[i].buf = c->rx_mem + (size_t)i * c->o.mtu;
			pkts[i].len = c->o.mtu;
		}
		n = c->tops->recv_batch(c->tp, pkts, LI_BATCH);
		if (n < 0)
			return n;
		for (i = 0; i < n; i++)
			li_handle_msg(c, pkts[i].buf, pkts[i].len);
		if (n < LI_BATCH)
			break;
	}
	return INCA_OK;
}

/*
 * How long to sleep before looking at the socket again, 0 to wait for the
 * first datagram. Waking at every result costs a context switch, a poll and
 * a recvmmsg per packet, which on a host whose cores are shared is CPU the
 * aggregator's and the peers' packets need. While the window is what holds
 * the sender back (more chunks to send) and many chunks are out, results
 * arrive at the pace of the bottleneck link, about inflight / srtt per
 * second (Little's law): sleeping srtt / LI_NAP_DIV collects about a
 * quarter of the window per wake-up, and the chunks still out keep the
 * link busy meanwhile. A small window (small collectives, latency) or a
 * stream's tail, where nothing is left to send, waits for the first
 * datagram as before.
 */
static uint64_t
nap_ns(const struct inca_comm *c)
{
	const struct li_req *t = c->tail;
	uint64_t nap;

	if (c->next_send - c->base < LI_NAP_MIN_INFLIGHT || c->srtt_ns == 0 || t == NULL ||
	    c->next_send >= t->seq0 + req_total(t) || c->next_send < c->base + c->window)
		return 0;
	nap = c->srtt_ns / LI_NAP_DIV;
	if (nap < LI_NAP_MIN_NS)
		return 0;
	return nap < LI_NAP_MAX_NS ? nap : LI_NAP_MAX_NS;
}

/*
 * One round of the engine: receive, retransmit, send, check liveness, and
 * if @wait_ms > 0 and nothing completed, wait for a datagram (or nap, see
 * nap_ns()) until the next deadline, at most @wait_ms. Returns INCA_OK or why the stream cannot go
 * on (silence beyond give_up_ms, a NACK, a socket error).
 */
int
li_progress(struct inca_comm *c, int wait_ms)
{
	uint64_t now, next = UINT64_MAX, hb_every, until, nap;
	bool pending;
	int ret;

	if (c->tp == NULL || !c->joined)
		return INCA_ETIMEDOUT;
	ret = receive(c);
	if (ret < 0)
		return ret;
	now = li_now_ns();
	ret = pump(c, now, &next);
	if (ret < 0)
		return ret;
	pending = c->next_send > c->base;
	if (pending && c->nack_err)
		return c->nack_err;

	/* A contribution the aggregator already counted is dropped without
	 * answer while the others are missing, so silence alone says nothing;
	 * heartbeats tell a live aggregator from a dead one. */
	hb_every = (uint64_t)c->o.give_up_ms * NS_PER_MS / 5;
	if (c->hb_ms && (uint64_t)c->hb_ms * NS_PER_MS / 2 < hb_every)
		hb_every = (uint64_t)c->hb_ms * NS_PER_MS / 2;
	if (pending) {
		uint64_t quiet = now - (c->alive_ns > c->last_hb_ns ? c->alive_ns : c->last_hb_ns);

		if (now - c->alive_ns >= (uint64_t)c->o.give_up_ms * NS_PER_MS) {
			li_log(INCA_LOG_WARN, "job %u rank %u: aggregator silent for %u ms",
			       c->o.job, c->o.rank, c->o.give_up_ms);
			return INCA_ETIMEDOUT;
		}
		if (quiet >= hb_every) {
			ret = li_send_ctrl(c, INCA_MSG_HEARTBEAT);
			if (ret < 0)
				return ret;
		}
	} else if (c->hb_ms && now - c->last_tx_ns >= (uint64_t)c->hb_ms * NS_PER_MS / 2) {
		ret = li_send_ctrl(c, INCA_MSG_HEARTBEAT);
		if (ret < 0)
			return ret;
	}
	if (wait_ms <= 0 || !pending)
		return INCA_OK;

	until = now + (uint64_t)wait_ms * NS_PER_MS;
	if (next < until)
		until = next;
	{
		uint64_t heard = c->alive_ns > c->last_hb_ns ? c->alive_ns : c->last_hb_ns;
		uint64_t hb = heard + hb_every;
		uint64_t gu = c->alive_ns + (uint64_t)c->o.give_up_ms * NS_PER_MS;

		if (hb < until)
			until = hb;
		if (gu < until)
			until = gu;
	}
	if (until <= now)
		return INCA_OK;
	nap = nap_ns(c);
	if (nap > 0) {
		struct timespec ts;

		if (nap > until - now)
			nap = until - now;
		ts.tv_sec = (time_t)(nap / 1000000000ull);
		ts.tv_nsec = (long)(nap % 1000000000ull);
		(void)clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL);
	} else {
		struct pollfd pfd = {.fd = c->tops->fd(c->tp), .events = POLLIN};
		struct timespec ts = {
			.tv_sec = (time_t)((until - now) / 1000000000ull),
			.tv_nsec = (long)((until - now) % 1000000000ull),
		};

		(void)ppoll(&pfd, 1, &ts, NULL);
	}
	return INCA_OK;
}

/* ---- requests ----------------------------------------------------------- */

struct li_req *
li_req_alloc(struct inca_comm *c)
{
	struct li_req *r = c->free_reqs;

	if (r != NULL)
		c->free_reqs = r->next;
	else
		r = malloc(sizeof(*r));
	if (r != NULL)
		memset(r, 0, sizeof(*r));
	return r;
}

void
li_req_free(struct inca_comm *c, struct li_req *r)
{
	r->next = c->free_reqs;
	c->free_reqs = r;
}

void
li_req_enqueue(struct inca_comm *c, struct li_req *r)
{
	r->next = NULL;
	if (c->tail != NULL)
		c->tail->next = r;
	else
		c->head = r;
	c->tail = r;
	c->nreqs++;
}

/* Queue a request already filled with kind, buffers, count, dtype, op. */
int
li_issue(struct inca_comm *c, struct li_req *r)
{
	r->comm = c;
	r->state = LI_REQ_PENDING;
	li_req_layout(c, r);
	if (!c->in_fallback && c->joined &&
	    (!(c->agg_dtypes & (1u << r->wire_dtype)) || !(c->agg_ops & (1u << r->wire_op))))
		return INCA_ENOTSUP;
	c->st.collectives++;
	r->seq0 = c->next_seq;
	c->next_seq += req_total(r);
	if (req_total(r) == 0) {
		r->state = LI_REQ_DONE;
		r->result = INCA_OK;
		return INCA_OK;
	}
	li_req_enqueue(c, r);
	if (c->send_req == NULL)
		c->send_req = r;
	return INCA_OK;
}

/*
 * Before LEAVE, which resets the job's sets: once the aggregator completed
 * chunk k, every rank has every result up to k - W, so a window of
 * one-element chunks after the last collective guarantees that no rank
 * still waits for a replay the reset would destroy. Bounded by give_up_ms:
 * a rank that never comes does not hold the others.
 */
void
li_close_stream(struct inca_comm *c)
{
	uint64_t end = li_now_ns() + (uint64_t)c->o.give_up_ms * NS_PER_MS;
	struct li_req *r;

	if (!c->joined || c->in_fallback || c->failed || c->ring == NULL)
		return;
	r = li_req_alloc(c);
	if (r == NULL)
		return;
	r->kind = LI_KIND_CLOSE;
	r->count = c->window;
	if (li_issue(c, r) < 0) {
		li_req_free(c, r);
		return;
	}
	c->st.collectives--; /* not the user's */
	while (r->state == LI_REQ_PENDING && li_now_ns() < end && !li_aborted(c)) {
		if (li_progress(c, 100) < 0)
			break;
	}
	if (r->state == LI_REQ_PENDING)
		li_req_complete(c, r, INCA_ECANCELED);
	li_req_free(c, r);
}


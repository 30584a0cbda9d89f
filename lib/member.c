/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * The membership layer: the control exchanges with the aggregator (HELLO
 * and CAPS, JOIN and its grants and session, LEAVE), each retried with
 * backoff and bounded; the control messages the stream sends (HEARTBEAT).
 */

#define _GNU_SOURCE
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "li_member.h"

/* ---- control exchanges ------------------------------------------------ */

static void
hdr_init(struct inca_comm *c, struct inca_msg *m, unsigned type)
{
	memset(m, 0, sizeof(*m));
	m->version = INCA_PROTO_VERSION;
	m->type = type;
	m->job = type == INCA_MSG_HELLO ? 0 : c->o.job;
	m->rank = c->wrank;
	/* Only HELLO and JOIN prove knowledge of the job token; everything
	 * after JOIN_ACK names the incarnation it belongs to. */
	m->token = type == INCA_MSG_HELLO || type == INCA_MSG_JOIN ? c->o.token : li_session(c);
	/* Only the member knows its secret: it makes a LEAVE or HEARTBEAT
	 * the member's, whoever can forge its addresses. */
	if (type == INCA_MSG_LEAVE || type == INCA_MSG_HEARTBEAT)
		m->bitmap = li_secret(c);
}

/* Bytes the payload of one chunk of @dtype may take inside the MTU. */
unsigned
li_payload_room(const struct inca_comm *c)
{
	unsigned room = c->o.mtu - LI_IP_UDP_LEN - INCA_HDR_LEN;

	return room > INCA_MAX_PAYLOAD_BYTES ? INCA_MAX_PAYLOAD_BYTES : room;
}

/*
 * Whether the JOIN offers a RoCEv2 binding: the aggregator said ROCE in
 * CAPS and the transport can bind (docs/protocol.md, "Binding a queue pair
 * at JOIN"). An aggregator without ROCE would drop such a JOIN.
 */
static bool
roce_offer(const struct inca_comm *c)
{
	return (c->caps & INCA_CAP_ROCE) && c->tops->join_ext != NULL &&
	       c->tops->join_ext(c->tp, NULL) > 0;
}

/* The control body the worker sends in HELLO and JOIN; @roce: the JOIN
 * offers a binding, so that its data messages must fit the RoCE MTU. */
static void
ctrl_request(const struct inca_comm *c, struct inca_ctrl_info *ci, bool join, bool roce)
{
	memset(ci, 0, sizeof(*ci));
	ci->ver_min = INCA_PROTO_VERSION;
	ci->ver_max = INCA_PROTO_VERSION;
	ci->max_elems = c->o.max_elems;
	if (roce && c->tops->max_elems != NULL) {
		unsigned fit = c->tops->max_elems(c->tp);

		if (fit != 0 && ci->max_elems > fit)
			ci->max_elems = (uint16_t)fit;
	}
	if (!join) {
		ci->dtypes = (1u << INCA_DTYPE_COUNT) - 1;
		ci->ops = (1u << INCA_OP_COUNT) - 1;
		return;
	}
	/* Ask only for what the aggregator said it has: floats need native
	 * support unless they travel as int32 anyway. */
	ci->dtypes = 1u << INCA_DTYPE_INT32;
	if (c->float_native)
		ci->dtypes = c->agg_dtypes;
	/* The 64-bit types go natively or not at all (INCA_ENOTSUP: the
	 * caller's host collective), whatever float_mode says. */
	ci->dtypes |= c->agg_dtypes & (1u << INCA_DTYPE_INT64 | 1u << INCA_DTYPE_FP64);
	ci->ops = c->agg_ops & ((1u << INCA_OP_COUNT) - 1);
	ci->nworkers = c->wsize;
	ci->pool_size = c->o.pool_size;
	ci->window = c->o.window;
	if (ci->pool_size != 0 && ci->window > ci->pool_size)
		ci->window = ci->pool_size;
}

int
li_send_ctrl(struct inca_comm *c, unsigned type)
{
	uint8_t buf[INCA_HDR_LEN + INCA_CTRL_LEN + INCA_ROCE_EXT_LEN];
	struct inca_ctrl_info ci;
	struct inca_msg m;
	struct li_pkt p = {.buf = buf, .len = INCA_HDR_LEN + INCA_CTRL_LEN};
	size_t ext = 0;
	int ret;

	hdr_init(c, &m, type);
	inca_hdr_encode(&m, buf);
	if (type == INCA_MSG_JOIN && roce_offer(c))
		ext = c->tops->join_ext(c->tp, buf + INCA_HDR_LEN + INCA_CTRL_LEN);
	ctrl_request(c, &ci, type == INCA_MSG_JOIN, ext > 0);
	if (type == INCA_MSG_HELLO || type == INCA_MSG_JOIN)
		inca_ctrl_encode(&ci, buf + INCA_HDR_LEN);
	else
		p.len = INCA_HDR_LEN; /* LEAVE, HEARTBEAT carry no body */
	p.len += ext;
	ret = c->tops->send_batch(c->tp, &p, 1);
	if (ret < 0)
		return ret;
	if (ret == 0) {
		c->st.send_errors++;
		return INCA_OK;
	}
	c->st.tx_pkts++;
	c->st.tx_bytes += p.len;
	li_set_last_tx(c, li_now_ns());
	if (type == INCA_MSG_HEARTBEAT) {
		c->st.heartbeats++;
		c->last_hb_ns = c->last_tx_ns;
	}
	return INCA_OK;
}

/*
 * Send a control message and wait for the answer of type @want for this
 * member, retransmitting with exponential backoff, until @give_up_ms.
 * Messages that are not the answer go through the normal handler (a late
 * RESULT must still be counted). Returns INCA_OK and the answer's control
 * body (and in @ext, unless NULL, its RoCEv2 extension: qpn 0 when it has
 * none), INCA_EREFUSED on a NACK (reason in c->nack_reason),
 * INCA_ETIMEDOUT, or a transport error.
 */
static int
exchange(struct inca_comm *c, unsigned type, unsigned want, uint32_t give_up_ms,
	 struct inca_ctrl_info *answer, struct inca_roce_ext *ext)
{
	uint64_t start = li_now_ns(), next = start;
	uint64_t rto = (uint64_t)c->o.timeout_ms * 1000000ull;
	uint64_t end = start + (uint64_t)give_up_ms * 1000000ull;
	struct li_pkt pkts[LI_BATCH];
	size_t slot = c->o.mtu;
	unsigned tries = 0;
	int n, i, ret;

	for (;;) {
		uint64_t now = li_now_ns();
		struct pollfd pfd;
		int wait_ms;

		if (now >= end)
			return INCA_ETIMEDOUT;
		if (li_aborted(c))
			return INCA_ECANCELED;
		if (now >= next) {
			ret = li_send_ctrl(c, type);
			if (ret < 0)
				return ret;
			next = now + (rto << (tries < LI_MAX_BACKOFF_SHIFT ? tries :
								 LI_MAX_BACKOFF_SHIFT));
			tries++;
		}
		wait_ms = (int)(((next < end ? next : end) - now + 999999) / 1000000);
		if (wait_ms > LI_WAIT_SLICE_MS)
			wait_ms = LI_WAIT_SLICE_MS;
		pfd.fd = c->tops->fd(c->tp);
		pfd.events = POLLIN;
		if (poll(&pfd, 1, wait_ms) <= 0)
			continue;
		for (i = 0; i < LI_BATCH; i++) {
			pkts[i].buf = c->rx_mem + (size_t)i * slot;
			pkts[i].len = slot;
		}
		n = c->tops->recv_batch(c->tp, pkts, LI_BATCH);
		if (n < 0)
			return n;
		for (i = 0; i < n; i++) {
			struct inca_msg m;

			c->st.rx_pkts++;
			c->st.rx_bytes += pkts[i].len;
			if (inca_msg_decode(pkts[i].buf, pkts[i].len, 0, &m) != INCA_WIRE_OK) {
				c->st.rx_invalid++;
				continue;
			}
			if (m.type == want &&
			    (want == INCA_MSG_CAPS ||
			     (m.job == c->o.job && m.rank == c->wrank))) {
				if (m.body_len >= INCA_CTRL_LEN)
					inca_ctrl_decode(m.body, answer);
				else
					memset(answer, 0, sizeof(*answer));
				if (ext != NULL && !inca_roce_ext_decode(&m, ext))
					memset(ext, 0, sizeof(*ext));
				/* The membership this JOIN_ACK grants is proven by
				 * its secret from now on (0 from an aggregator that
				 * issues none: echoed as such). */
				if (want == INCA_MSG_JOIN_ACK)
					__atomic_store_n(&c->secret, m.bitmap, __ATOMIC_RELEASE);
				c->alive_ns = li_now_ns();
				return INCA_OK;
			}
			/* A NACK echoes the refused message's job and rank: a
			 * HELLO's has job 0, so a late NACK of our job's data
			 * cannot pass for a refused HELLO. */
			if (m.type == INCA_MSG_NACK &&
			    (type == INCA_MSG_HELLO ? m.job == 0 :
						      m.job == c->o.job && m.rank == c->wrank)) {
				if (m.reason < INCA_NACK_MAX_)
					c->st.nack_reasons[m.reason]++;
				c->st.nacks++;
				c->alive_ns = li_now_ns();
				/* Rate limiting is a request to come back later.
				 * Answers to data (a late NACK of the stream that
				 * ended) never answer a control request, and incad
				 * never NACKs a LEAVE: taking one for the answer
				 * would stop retrying a LEAVE that was lost, and
				 * leave a stale member behind until eviction. */
				if (m.reason == INCA_NACK_RATE_LIMITED || type == INCA_MSG_LEAVE ||
				    m.reason == INCA_NACK_MEMBER_LOST ||
				    m.reason == INCA_NACK_EVICTED || m.reason == INCA_NACK_MISMATCH ||
				    m.reason == INCA_NACK_TOO_LARGE || m.reason == INCA_NACK_HELD)
					continue;
				c->nack_reason = m.reason;
				li_log(INCA_LOG_WARN, "job %u rank %u: %s refused: %s",
				       c->o.job, c->o.rank, inca_msg_type_name(type),
				       inca_nack_str(m.reason));
				return INCA_EREFUSED;
			}
			/* Anything else (late results, heartbeat answers) is
			 * counted as seen and dropped. */
			c->st.dup_results += m.type == INCA_MSG_RESULT;
		}
	}
}

int
li_hello(struct inca_comm *c, uint32_t wait_ms)
{
	struct inca_ctrl_info caps;
	int ret;

	ret = exchange(c, INCA_MSG_HELLO, INCA_MSG_CAPS, wait_ms, &caps, NULL);
	if (ret < 0)
		return ret;
	if (caps.ver_min > INCA_PROTO_VERSION || caps.ver_max < INCA_PROTO_VERSION) {
		li_log(INCA_LOG_ERR, "aggregator speaks protocol %u..%u, we speak %u",
		       caps.ver_min, caps.ver_max, INCA_PROTO_VERSION);
		return INCA_EREFUSED;
	}
	c->caps = caps.caps;
	c->agg_dtypes = caps.dtypes;
	c->agg_ops = caps.ops;
	switch (c->o.float_mode) {
	case INCA_FLOAT_BFP:
		c->float_native = false;
		break;
	default:
		c->float_native = (caps.caps & INCA_CAP_NATIVE_FLOAT) != 0;
		break;
	}
	return INCA_OK;
}

int
li_join(struct inca_comm *c, uint32_t give_up_ms)
{
	uint64_t start = li_now_ns();
	struct inca_ctrl_info ack;
	struct inca_roce_ext peer;
	unsigned room, want, tries;
	uint32_t spent;
	bool offered;
	int ret;

	ret = li_hello(c, give_up_ms);
	if (ret < 0)
		return ret;
	if (c->o.float_mode == INCA_FLOAT_NATIVE && !(c->caps & INCA_CAP_NATIVE_FLOAT)) {
		li_log(INCA_LOG_ERR, "float_mode native, but the aggregator has no native floats");
		return INCA_ENOTSUP;
	}
	/* Every incarnation binds anew: until its JOIN_ACK, data is UDP's. */
	if (c->tops->joined != NULL)
		(void)c->tops->joined(c->tp, NULL, 0);
	for (tries = 0;; tries++) {
		offered = roce_offer(c);
		spent = (uint32_t)((li_now_ns() - start) / 1000000ull);
		ret = exchange(c, INCA_MSG_JOIN, INCA_MSG_JOIN_ACK,
			       give_up_ms > spent ? give_up_ms - spent : 1, &ack, &peer);
		if (ret < 0)
			return ret;
		/* A JOIN_ACK without the extension: data stays on UDP. A
		 * binding that fails turns the transport's offer off, and the
		 * JOIN without it makes us an ordinary UDP member again. */
		if (!offered ||
		    c->tops->joined(c->tp, peer.qpn != 0 ? &peer : NULL, ack.max_elems) == 0)
			break;
		if (tries > 0)
			return INCA_EPROTO;
		li_log(INCA_LOG_WARN, "job %u rank %u: RoCEv2 binding failed; joining again "
		       "with data on udp", c->o.job, c->o.rank);
	}
	c->roce_bound = offered && peer.qpn != 0;
	if (ack.nworkers != 0 && ack.nworkers != c->wsize) {
		li_log(INCA_LOG_ERR, "JOIN_ACK for %u workers, we are %u", ack.nworkers,
		       c->wsize);
		li_leave(c, 0);
		return INCA_EPROTO;
	}
	if (ack.pool_size == 0 || ack.max_elems == 0 || ack.session == 0) {
		li_log(INCA_LOG_ERR, "JOIN_ACK grants no slots, no elements or no session");
		li_leave(c, 0);
		return INCA_EPROTO;
	}
	__atomic_store_n(&c->session, ack.session, __ATOMIC_RELEASE);
	if (ack.caps != 0)
		c->caps = ack.caps;
	c->pool = ack.pool_size;
	/*
	 * The grants are the job's, the same for every member: the window
	 * and the chunk geometry are used exactly as granted, never cut to a
	 * local wish, or the members' streams would diverge. What this host
	 * cannot carry is an error, not a silent change.
	 */
	want = ack.window ? ack.window : ack.pool_size;
	room = li_payload_room(c);
	if (want > ack.pool_size || want > LI_MAX_WINDOW) {
		li_log(INCA_LOG_ERR, "JOIN_ACK grants window %u over pool %u (at most %u here)",
		       want, ack.pool_size, LI_MAX_WINDOW);
		li_leave(c, 0);
		return INCA_EPROTO;
	}
	if ((unsigned)ack.max_elems * 4 > room) {
		li_log(INCA_LOG_ERR,
		       "the job's max_elems %u needs %u payload bytes per packet; mtu %u gives %u",
		       ack.max_elems, ack.max_elems * 4u, c->o.mtu, room);
		li_leave(c, 0);
		return INCA_EPROTO;
	}
	c->window = want;
	c->max_elems = ack.max_elems;
	c->hb_ms = ack.hb_ms;
	c->evict_ms = ack.evict_ms;
	c->max_payload = (uint16_t)(c->max_elems * 4u);
	c->joined = true;
	c->alive_ns = li_now_ns();
	li_ka_allow(c, 1);
	li_log(INCA_LOG_INFO,
	       "job %u rank %u/%u joined: pool %u window %u max_elems %u caps 0x%x floats %s "
	       "data %s", c->o.job, c->o.rank, c->o.size, c->pool, c->window, c->max_elems,
	       c->caps, c->float_native ? "native" : "bfp", c->roce_bound ? "roce" : "udp");
	return INCA_OK;
}

void
li_leave(struct inca_comm *c, uint32_t wait_ms)
{
	struct inca_ctrl_info ack;

	li_ka_allow(c, 0);
	if (wait_ms == 0)
		(void)li_send_ctrl(c, INCA_MSG_LEAVE);
	else
		(void)exchange(c, INCA_MSG_LEAVE, INCA_MSG_LEAVE_ACK, wait_ms, &ack, NULL);
	c->joined = false;
}


/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * Dataplane lcores. The I/O lcore (index 0) polls every port and decides
 * what each frame is; contributions go to the lcore that owns their slot
 * ((job + slot) % nlcores), so every set is only ever touched by one lcore
 * and the core needs no locks. Every mbuf has exactly one owner: a
 * function that takes an mbuf either queues it for transmission, hands it
 * to a ring, or frees it and counts why.
 */
#include <errno.h>
#include <stddef.h>
#include <sched.h>
#include <sys/prctl.h>
#include <time.h>

#include <rte_byteorder.h>
#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_ip.h>
#include <rte_udp.h>
#include <rte_lcore.h>
#include <rte_prefetch.h>
#include <rte_random.h>

#include "arbiter.h"
#include "csum.h"
#include "ctrl.h"
#include "dataplane.h"
#include "l2.h"
#include "uplink.h"

#define RX_BURST 32
/*
 * Smallest RESULT payload sent as a header mbuf chained to the set's shared
 * payload rather than as a copy. Below it a copy costs fewer instructions
 * than the second mbuf and its detach on free (docs/incad.md, "Frame path":
 * measured break-even about 1.6 KB).
 */
#define RESULT_CHAIN_MIN 2048
#define RING_BURST 64
/* How often the I/O lcore runs its timer hooks (uplinks, statistics, arbitration). */
#define TIMER_MS 10
/* First adaptive sleep; later ones double up to the configured maximum. */
#define FIRST_SLEEP_US 8

/*
 * Tenants' rates: contributions beyond a tenant's rate and burst are
 * dropped (incad/TENANT_RATE) after the member checks, so that nobody but
 * the tenant's own members can spend its budget, and answered with NACK
 * HELD: the member retries that chunk on its full, backed-off timer rather
 * than at once, which holds the tenant near its rate without a storm of
 * fast retransmissions. DPDK's srTCM meter with
 * only its committed bucket (no excess burst): green passes, red drops.
 */
static struct rte_meter_srtcm_profile tenant_profile[INCAD_MAX_TENANTS];
static bool tenant_metered[INCAD_MAX_TENANTS];

int
incad_tenant_meters_init(void)
{
	unsigned int t, i;
	int ret;

	for (t = 0; t < incad.cfg.ntenants; t++) {
		const struct incad_tenant_conf *tc = &incad.cfg.tenants[t];
		struct rte_meter_srtcm_params p = {0};

		if (tc->rate_mbps == 0)
			continue;
		/* Each lcore meters the contributions of its slots: a share. */
		p.cir = (uint64_t)tc->rate_mbps * 125000 / incad.nlcores;
		p.cbs = (uint64_t)tc->burst_kb * 1024 / incad.nlcores;
		/* Room for one frame of the largest payload, whatever the share. */
		if (p.cbs < INCA_ENCAP_LEN + 4 + INCA_HDR_LEN + INCA_MAX_PAYLOAD_BYTES)
			p.cbs = INCA_ENCAP_LEN + 4 + INCA_HDR_LEN + INCA_MAX_PAYLOAD_BYTES;
		ret = rte_meter_srtcm_profile_config(&tenant_profile[t], &p);
		if (ret != 0)
			return ret;
		for (i = 0; i < incad.nlcores; i++) {
			ret = rte_meter_srtcm_config(&incad.lcores[i].tenant_meter[t],
						     &tenant_profile[t]);
			if (ret != 0)
				return ret;
		}
		tenant_metered[t] = true;
	}
	return 0;
}

/*
 * Most contributions end here once counted: returned to the pool in bulk
 * at the end of the burst rather than one call each. Takes @m.
 */
static void
free_flush(struct incad_lcore *lc)
{
	if (lc->nfree == 0)
		return;
	rte_pktmbuf_free_bulk(lc->free, lc->nfree);
	lc->nfree = 0;
}

static inline void
free_later(struct incad_lcore *lc, struct rte_mbuf *m)
{
	lc->free[lc->nfree++] = m;
	if (lc->nfree == RTE_DIM(lc->free))
		free_flush(lc);
}

/*
 * Turn a copy of the RESULT frame built for member @a (rank @ra) into the
 * one for member @b (rank @rb): MACs, addresses, port, rank and both
 * checksums. The checksums are adjusted for what changed (RFC 1624,
 * eqn. 3: HC' = ~(~HC + ~m + m')) rather than recomputed, so a copy costs
 * a memcpy and a few adds, not a pass over the payload. Subtracting a
 * 32-bit word is adding its complement: 2^32 - 1 is 0 in this arithmetic.
 */
static inline void
result_patch(uint8_t *f, const struct incad_member *a, uint16_t ra,
	     const struct incad_member *b, uint16_t rb)
{
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(f + RTE_ETHER_HDR_LEN);
	struct rte_udp_hdr *udp = (struct rte_udp_hdr *)(ip + 1);
	rte_be32_t src = rte_cpu_to_be_32(b->local_ip), dst = rte_cpu_to_be_32(b->ip);
	rte_be16_t port = rte_cpu_to_be_16(b->udp_port);
	uint64_t addr;
	uint16_t c;

	memcpy(f, b->mac, 6);
	memcpy(f + 6, incad.ports[b->port].mac.addr_bytes, 6);

	/* The addresses are in the IPv4 header and in the UDP pseudo header. */
	addr = (uint64_t)(uint32_t)~rte_cpu_to_be_32(a->local_ip) + src +
	       (uint32_t)~rte_cpu_to_be_32(a->ip) + dst;
	ip->src_addr = src;
	ip->dst_addr = dst;
	ip->hdr_checksum = (uint16_t)~incad_csum_fold(addr + (uint16_t)~ip->hdr_checksum);
	udp->dst_port = port;
	agg_result_set_rank(udp + 1, rb);

	if (udp->dgram_cksum == 0)
		return;
	c = (uint16_t)~incad_csum_fold(addr + (uint16_t)~udp->dgram_cksum +
				       (uint16_t)~rte_cpu_to_be_16(a->udp_port) + port +
				       (uint16_t)~rte_cpu_to_be_16(ra) + rte_cpu_to_be_16(rb));
	/* 0 means "no checksum" in UDP: a computed 0 goes out as its twin. */
	udp->dgram_cksum = c == 0 ? 0xffff : c;
}

/*
 * An empty frame of @len bytes of INCA message after the encapsulation:
 * in @reuse (a contribution the caller gives up) when it can hold it, else
 * in a new mbuf. An answer is as long as the contribution it answers, so
 * reuse is the rule and saves an allocation and a free. Takes @reuse;
 * returns NULL (counted NO_MBUF) when there is no room; *@p: the frame.
 */
static struct rte_mbuf *
frame_room(struct incad_lcore *lc, struct rte_mbuf *reuse, size_t len, uint8_t **p)
{
	struct rte_mbuf *m = reuse;

	if (m != NULL && (rte_mbuf_refcnt_read(m) != 1 || !RTE_MBUF_DIRECT(m) ||
			  m->buf_len < RTE_PKTMBUF_HEADROOM + INCA_ENCAP_LEN + len)) {
		rte_pktmbuf_free(m);
		m = NULL;
	}
	if (m != NULL)
		rte_pktmbuf_reset(m);
	else
		m = rte_pktmbuf_alloc(incad.pool);
	if (m == NULL) {
		incad_drop(lc, INCAD_DROP_NO_MBUF);
		return NULL;
	}
	*p = (uint8_t *)rte_pktmbuf_append(m, INCA_ENCAP_LEN + len);
	if (*p == NULL) {
		incad_drop_mbuf(lc, m, INCAD_DROP_NO_MBUF);
		return NULL;
	}
	return m;
}

/*
 * Build the RESULT of @set for member @mb of rank @rank (in @reuse if it
 * fits): with the set's elements, or BRIEF for a rank a routed chunk's
 * elements do not go to.
 */
static struct rte_mbuf *
result_build(struct incad_lcore *lc, const struct incad_job *job, const struct agg_set *set,
	     const struct incad_member *mb, uint16_t rank, bool replay, struct rte_mbuf *reuse)
{
	size_t len = agg_result_len_to(job->agg, set, rank);
	struct rte_mbuf *m;
	uint8_t *p;

	m = frame_room(lc, reuse, len, &p);
	if (m == NULL)
		return NULL;
	agg_result_write(job->agg, set, rank, replay, p + INCA_ENCAP_LEN);
	incad_frame_headers(p, mb->mac, &incad.ports[mb->port].mac, mb->local_ip, mb->ip,
		      mb->udp_port, len);
	return m;
}

/*
 * The RESULT for member @b made from the template @first (built for member
 * @fm of rank @frank, @len bytes, untagged UDP): a header mbuf @h holding
 * the encapsulation and the INCA header, patched for @b, chained in front
 * of @pay, an indirect mbuf attached to @first's payload. The members'
 * RESULTs differ only in those first bytes (docs/incad.md, "Frame path"),
 * so a set's payload is written once and shared, as DPDK's ipv4_multicast
 * example shares a packet among its destinations; the UDP checksum is
 * patched as for a copy (it covers the payload, which is unchanged).
 * Takes @h and @pay; returns the chain (owned by the caller).
 */
static struct rte_mbuf *
result_chain(struct rte_mbuf *h, struct rte_mbuf *pay, struct rte_mbuf *first, uint16_t len,
	     const struct incad_member *fm, uint16_t frank, const struct incad_member *b,
	     uint16_t rb)
{
	const uint16_t hlen = INCA_ENCAP_LEN + INCA_HDR_LEN;

	memcpy(rte_pktmbuf_mtod(h, void *), rte_pktmbuf_mtod(first, void *), hlen);
	result_patch(rte_pktmbuf_mtod(h, uint8_t *), fm, frank, b, rb);
	h->data_len = hlen;
	/* Takes a reference on first's buffer, released when pay is freed. */
	rte_pktmbuf_attach(pay, first);
	pay->data_off += hlen;
	pay->data_len = len - hlen;
	pay->pkt_len = len - hlen;
	h->next = pay;
	h->nb_segs = 2;
	h->pkt_len = len;
	return h;
}

/*
 * The RESULT of @set to one member @mb of rank @rank, built in @reuse (a
 * replay, or a BRIEF RESULT of a routed chunk), on the member's transport
 * and VLAN. Takes @reuse.
 */
static void
send_result_one(struct incad_lcore *lc, const struct incad_job *job, const struct agg_set *set,
		const struct incad_member *mb, uint16_t rank, bool replay, struct rte_mbuf *reuse)
{
	struct rte_mbuf *r = result_build(lc, job, set, mb, rank, replay, reuse);

	if (r != NULL && mb->qpn != 0)
		r = incad_roce_wrap(lc, r, mb->qpn, mb->qkey);
	if (r != NULL)
		r = incad_vlan_tag(lc, r, mb->vlan);
	if (r == NULL)
		return;
	lc->st.cnt[replay ? INCAD_CNT_REPLAY_TX : INCAD_CNT_RESULT_TX]++;
	incad_tx(lc, r, mb->port);
}

/*
 * One RESULT per live member, the set's payload written (and summed) once
 * into @reuse, the template. A routed chunk's elements go only to the
 * members agg_result_dests() names; the others get a BRIEF RESULT each,
 * a header-only frame of its own. On a port that sends chained mbufs the other
 * members' RESULTs are header mbufs in front of the template's payload;
 * elsewhere, and for RoCE members (their ICRC covers the whole packet and
 * is appended to it), full copies. Either way only the headers are
 * patched, never the payload summed again. Takes @reuse; every mbuf is
 * queued for transmission or freed and counted.
 */
static void
send_results(struct incad_lcore *lc, const struct incad_job *job,
	     const struct incad_view *v, const struct agg_set *set, struct rte_mbuf *reuse)
{
	struct rte_mbuf *copy[2 * INCA_MAX_WORKERS], *first = NULL, *m, *pay;
	const struct incad_member *fm = NULL, *mb;
	uint32_t brief = v->live & ~agg_result_dests(job->agg, set);
	uint32_t live = v->live & ~brief;
	unsigned int r, n, i, step;
	uint16_t frank = 0, len;
	bool chain, share;

	while (first == NULL && live != 0) {
		r = __builtin_ctz(live);
		live &= live - 1;
		first = result_build(lc, job, set, &v->m[r], r, false, reuse);
		reuse = NULL;
		fm = &v->m[r];
		frank = r;
	}
	/* BRIEF RESULTs are independent of the template: sent first. */
	while (brief != 0) {
		r = __builtin_ctz(brief);
		brief &= brief - 1;
		send_result_one(lc, job, set, &v->m[r], r, false, reuse);
		reuse = NULL;
	}
	/* Nobody to send to (cannot happen with a contributing member). */
	rte_pktmbuf_free(reuse);
	if (first == NULL)
		return;
	len = first->data_len;
	/* Large: two mbufs for each member (header and payload; one is freed
	 * if the member gets a copy after all); else one, for a copy. */
	share = len - INCA_ENCAP_LEN - INCA_HDR_LEN >= RESULT_CHAIN_MIN;
	step = share ? 2 : 1;
	n = step * __builtin_popcount(live);
	if (n != 0 && rte_pktmbuf_alloc_bulk(incad.pool, copy, n) != 0) {
		/* The pool is short: as many as there are mbufs. */
		for (i = 0; i < n; i++)
			copy[i] = rte_pktmbuf_alloc(incad.pool);
	}
	for (i = 0; live != 0; i += step) {
		r = __builtin_ctz(live);
		live &= live - 1;
		mb = &v->m[r];
		m = copy[i];
		pay = share ? copy[i + 1] : NULL;
		chain = share && incad.ports[mb->port].tx_multi_seg && mb->qpn == 0;
		if (m == NULL || (chain && pay == NULL) || rte_pktmbuf_tailroom(m) < len) {
			rte_pktmbuf_free(m);
			rte_pktmbuf_free(pay);
			incad_drop(lc, INCAD_DROP_NO_MBUF);
			continue;
		}
		if (chain) {
			m = result_chain(m, pay, first, len, fm, frank, mb, r);
			lc->st.cnt[INCAD_CNT_RESULT_CHAINED]++;
		} else {
			if (pay != NULL)
				rte_pktmbuf_free(pay);
			m->data_len = len;
			m->pkt_len = len;
			memcpy(rte_pktmbuf_mtod(m, void *), rte_pktmbuf_mtod(first, void *), len);
			result_patch(rte_pktmbuf_mtod(m, uint8_t *), fm, frank, mb, r);
			if (mb->qpn != 0) {
				m = incad_roce_wrap(lc, m, mb->qpn, mb->qkey);
				if (m == NULL)
					continue;
			}
		}
		m = incad_vlan_tag(lc, m, mb->vlan);
		if (m == NULL)
			continue;
		lc->st.cnt[INCAD_CNT_RESULT_TX]++;
		incad_tx(lc, m, mb->port);
	}
	/* The template goes last (untagged and UDP until its copies are
	 * made): once queued it may be sent and freed. Its chained copies
	 * hold references to its buffer, which lives until the last is sent;
	 * the RoCE wrap and the tag below change only bytes none of them
	 * reads (its headers, and room beyond the payload's end). */
	if (fm->qpn != 0) {
		first = incad_roce_wrap(lc, first, fm->qpn, fm->qkey);
		if (first == NULL)
			return;
	}
	first = incad_vlan_tag(lc, first, fm->vlan);
	if (first == NULL)
		return;
	lc->st.cnt[INCAD_CNT_RESULT_TX]++;
	incad_tx(lc, first, fm->port);
}

/* NACK @reason to the sender of @meta, the member @mb (its Q_Key if RoCE). */
static void
send_nack(struct incad_lcore *lc, const struct incad_meta *meta, const struct incad_member *mb,
	  uint16_t reason)
{
	struct incad_dest d;
	struct inca_msg h;
	struct rte_mbuf *m;

	incad_dest_of(meta, &d);
	d.qkey = mb->qkey;
	incad_reply_hdr(&meta->msg, INCA_MSG_NACK, reason, &h);
	m = incad_build_msg(lc, &d, &h, NULL, 0);
	if (m == NULL)
		return;
	lc->st.cnt[INCAD_CNT_NACK_TX]++;
	lc->st.nack[reason]++;
	incad_tx(lc, m, d.port);
}

/*
 * NACK @reason for the chunk of @msg to every live member of the view, each
 * copy with the member's own rank (a failed chunk concerns all of them).
 */
static void
nack_members(struct incad_lcore *lc, const struct incad_view *v, const struct inca_msg *msg,
	     uint16_t reason)
{
	uint32_t live = v->live;
	struct incad_dest d;
	struct inca_msg h;
	struct rte_mbuf *m;
	unsigned int r;

	while (live != 0) {
		r = __builtin_ctz(live);
		live &= live - 1;
		d.port = v->m[r].port;
		memcpy(d.mac, v->m[r].mac, 6);
		d.ip = v->m[r].ip;
		d.local_ip = v->m[r].local_ip;
		d.udp_port = v->m[r].udp_port;
		d.vlan = v->m[r].vlan;
		d.qpn = v->m[r].qpn;
		d.qkey = v->m[r].qkey;
		incad_reply_hdr(msg, INCA_MSG_NACK, reason, &h);
		h.rank = (uint16_t)r;
		m = incad_build_msg(lc, &d, &h, NULL, 0);
		if (m == NULL)
			continue;
		lc->st.cnt[INCAD_CNT_NACK_TX]++;
		lc->st.nack[reason]++;
		incad_tx(lc, m, d.port);
	}
}

/*
 * Tree leaf: send the partial sum of @set to the parent, in @reuse (the
 * contribution that completed it, or a retransmission into it), as this
 * leaf's CONTRIB in the parent's job. Without a parent session (not
 * joined, or the job is being reset) it waits: the members' next
 * retransmission sends it. Takes @reuse.
 */
static void
send_partial(struct incad_lcore *lc, const struct incad_job *job, const struct agg_set *set,
	     struct rte_mbuf *reuse, bool retx)
{
	const struct incad_uplink *u = job->up;
	uint32_t session = __atomic_load_n(&u->session, __ATOMIC_ACQUIRE);
	size_t len = agg_partial_len(set);
	struct rte_mbuf *m;
	uint8_t *p;

	if (session == 0) {
		incad_drop_mbuf(lc, reuse, INCAD_DROP_UPLINK_WAIT);
		return;
	}
	m = frame_room(lc, reuse, len, &p);
	if (m == NULL)
		return;
	agg_partial_write(job->agg, set, u->job, u->rank, session, retx, p + INCA_ENCAP_LEN);
	incad_frame_headers(p, u->d.mac, &incad.ports[u->d.port].mac, u->d.local_ip, u->d.ip,
			    u->d.udp_port, len);
	m = incad_vlan_tag(lc, m, u->d.vlan);
	if (m == NULL)
		return;
	lc->st.cnt[retx ? INCAD_CNT_PARTIAL_RETX : INCAD_CNT_PARTIAL_TX]++;
	incad_tx(lc, m, u->d.port);
}

/*
 * Tree leaf: the parent's RESULT, or its NACK about one chunk, on the
 * lcore that owns the slot (the I/O lcore matched the parent and put the
 * leaf's job id into msg.job). A RESULT for the set that waits for it
 * completes the set: the members get it as if it had been summed here.
 * A failed chunk fails the set and every member is told with the same
 * reason. Anything else (a duplicate, a late copy, another session) is
 * a counted drop. Takes @m.
 */
static void
parent_input(struct incad_lcore *lc, struct rte_mbuf *m)
{
	struct incad_meta *meta = incad_meta(m);
	const struct inca_msg *msg = &meta->msg;
	struct incad_job *job = incad_job_get(msg->job);
	const struct incad_view *v;
	struct inca_msg echo;
	struct agg_out out;

	if (job == NULL || job->up == NULL || msg->token == 0 ||
	    msg->token != __atomic_load_n(&job->up->session, __ATOMIC_ACQUIRE) ||
	    __atomic_load_n(&job->paused, __ATOMIC_ACQUIRE)) {
		incad_drop_mbuf(lc, m, INCAD_DROP_PARENT_STALE);
		return;
	}
	v = incad_job_view(job);
	if (msg->type == INCA_MSG_RESULT) {
		enum agg_verdict vd = agg_parent_result(job->agg, msg, &out);

		if (vd == AGG_COMPLETE) {
			lc->st.cnt[INCAD_CNT_PARENT_RESULT]++;
			lc->st.cnt[INCAD_CNT_COMPLETE]++;
			job->st[lc->idx].c[INCAD_JOB_COMPLETE]++;
			send_results(lc, job, v, out.set, m);
			return;
		}
		if (vd != AGG_MISMATCH) {
			incad_drop_mbuf(lc, m, INCAD_DROP_PARENT_STALE);
			return;
		}
		/* A routed chunk the parent sent another way than this
		 * leaf's members named its root: failed, as a MISMATCH. */
		lc->st.agg[AGG_DROP_MISMATCH]++;
		echo = *msg;
		echo.job = job->id;
		echo.token = v->session;
		echo.flags &= (uint8_t)~INCA_F_BRIEF;
		nack_members(lc, v, &echo, INCA_NACK_MISMATCH);
		free_later(lc, m);
		return;
	}
	if (agg_parent_fail(job->agg, msg, &out) != AGG_MISMATCH) {
		incad_drop_mbuf(lc, m, INCAD_DROP_PARENT_STALE);
		return;
	}
	/* The members' chunk, in their job and incarnation. */
	echo = *msg;
	echo.job = job->id;
	echo.token = v->session;
	nack_members(lc, v, &echo, msg->reason);
	free_later(lc, m);
}

/*
 * A contribution on the lcore that owns its slot. The sender must be the
 * member its rank was admitted as (address and port), or the packet is
 * dropped without an answer: a spoofed source must not make incad a
 * reflector. Takes @m.
 */
static void
contrib_input(struct incad_lcore *lc, struct rte_mbuf *m, uint64_t now)
{
	struct incad_meta *meta = incad_meta(m);
	const struct inca_msg *msg = &meta->msg;
	struct incad_job_stats *js;
	const struct incad_member *mb;
	const struct incad_view *v;
	struct incad_job *job;
	struct agg_out out;
	uint32_t bit;
	bool addr_ok;

	if (unlikely(msg->type != INCA_MSG_CONTRIB)) {
		parent_input(lc, m);
		return;
	}
	job = incad_job_get(msg->job);
	if (job == NULL) {
		incad_drop_mbuf(lc, m, INCAD_DROP_UNKNOWN_JOB);
		return;
	}
	js = &job->st[lc->idx];
	v = incad_job_view(job);
	bit = 1u << msg->rank;
	mb = &v->m[msg->rank];
	if (unlikely(msg->token != v->session)) {
		js->c[INCAD_JOB_DROP]++;
		/* A late packet of the incarnation before this one: never
		 * counted; its sender, if it is the member, must rejoin. */
		if (incad_prev_session(v, msg->token) && incad_member_data_match(mb, meta)) {
			send_nack(lc, meta, mb, (v->evicted & bit) ? INCA_NACK_EVICTED :
								 INCA_NACK_MEMBER_LOST);
			incad_drop_mbuf(lc, m, INCAD_DROP_STALE_SESSION);
			return;
		}
		lc->st.agg[AGG_DROP_BAD_TOKEN]++;
		rte_pktmbuf_free(m);
		return;
	}
	addr_ok = incad_member_data_match(mb, meta);
	if (!(v->live & bit) || !addr_ok) {
		js->c[INCAD_JOB_DROP]++;
		if ((v->evicted & bit) && addr_ok) {
			send_nack(lc, meta, mb, INCA_NACK_EVICTED);
			incad_drop_mbuf(lc, m, INCAD_DROP_EVICTED);
		} else {
			incad_drop_mbuf(lc, m, INCAD_DROP_NOT_MEMBER_ADDR);
		}
		return;
	}
	__atomic_store_n(&job->last_seen[msg->rank], now, __ATOMIC_RELAXED);
	if (v->lost != 0) {
		js->c[INCAD_JOB_DROP]++;
		send_nack(lc, meta, mb, INCA_NACK_MEMBER_LOST);
		incad_drop_mbuf(lc, m, INCAD_DROP_MEMBER_LOST);
		return;
	}
	if (__atomic_load_n(&job->paused, __ATOMIC_ACQUIRE)) {
		js->c[INCAD_JOB_DROP]++;
		incad_drop_mbuf(lc, m, INCAD_DROP_JOB_RESETTING);
		return;
	}

	/* max_elems counts 32-bit lanes: a 64-bit element takes two. */
	if (unlikely((unsigned)msg->count * inca_dtype_lanes(msg->dtype) > v->g.max_elems)) {
		js->c[INCAD_JOB_DROP]++;
		send_nack(lc, meta, mb, INCA_NACK_TOO_LARGE);
		incad_drop_mbuf(lc, m, INCAD_DROP_CONTRIB_REFUSED);
		return;
	}
	if (unlikely(tenant_metered[job->tenant]) &&
	    rte_meter_srtcm_color_blind_check(&lc->tenant_meter[job->tenant],
					      &tenant_profile[job->tenant], rte_rdtsc(),
					      rte_pktmbuf_pkt_len(m)) == RTE_COLOR_RED) {
		lc->st.tenant_rate_drops[job->tenant]++;
		js->c[INCAD_JOB_DROP]++;
		send_nack(lc, meta, mb, INCA_NACK_HELD);
		incad_drop_mbuf(lc, m, INCAD_DROP_TENANT_RATE);
		return;
	}
	lc->st.tenant_bytes[job->tenant] += rte_pktmbuf_pkt_len(m);
	/* After the tenant's own meter: what a tenant may not send anyway is
	 * no demand of its class. */
	if (unlikely(incad_arb.on) && !incad_arb_pass(lc, job->prio, rte_pktmbuf_pkt_len(m))) {
		js->c[INCAD_JOB_DROP]++;
		js->c[INCAD_JOB_PRIO_HELD]++;
		/* The member (its address was checked above) backs the chunk
		 * off to its full timer instead of retrying it at once: a
		 * header-only frame that saves a storm of retransmissions. */
		send_nack(lc, meta, mb, INCA_NACK_HELD);
		incad_drop_mbuf(lc, m, INCAD_DROP_PRIO_HELD);
		return;
	}

	/* A leaf whose parent does not take routed chunks did not offer
	 * them (ctrl.c, join_ack()): its partial could not go up. */
	if (unlikely((msg->flags & INCA_F_ROUTED) && job->up != NULL &&
		     !(job->up->caps & INCA_CAP_ROUTED))) {
		lc->st.agg[AGG_DROP_ROUTE]++;
		js->c[INCAD_JOB_DROP]++;
		free_later(lc, m);
		return;
	}
	switch (agg_contribute(job->agg, msg, &out)) {
	case AGG_PENDING:
		lc->st.cnt[INCAD_CNT_CONTRIB]++;
		js->c[INCAD_JOB_CONTRIB]++;
		break;
	case AGG_COMPLETE:
		lc->st.cnt[INCAD_CNT_CONTRIB]++;
		lc->st.cnt[INCAD_CNT_COMPLETE]++;
		js->c[INCAD_JOB_CONTRIB]++;
		js->c[INCAD_JOB_COMPLETE]++;
		/* From here on m is a RESULT (its contribution was counted). */
		send_results(lc, job, v, out.set, m);
		return;
	case AGG_PARTIAL:
		lc->st.cnt[INCAD_CNT_CONTRIB]++;
		js->c[INCAD_JOB_CONTRIB]++;
		send_partial(lc, job, out.set, m, false);
		return;
	case AGG_RESEND_UP:
		send_partial(lc, job, out.set, m, true);
		return;
	case AGG_REPLAY:
		js->c[INCAD_JOB_REPLAY]++;
		/* msg->rank is read before m is reset into the replay. */
		send_result_one(lc, job, out.set, mb, msg->rank, true, m);
		return;
	case AGG_MISMATCH:
		lc->st.agg[AGG_DROP_MISMATCH]++;
		js->c[INCAD_JOB_DROP]++;
		if (out.first)
			nack_members(lc, v, msg, INCA_NACK_MISMATCH);
		else
			send_nack(lc, meta, mb, INCA_NACK_MISMATCH);
		break;
	case AGG_DROP:
	default:
		lc->st.agg[out.reason < AGG_DROP_COUNT ? out.reason : AGG_DROP_NOT_CONTRIB]++;
		js->c[INCAD_JOB_DROP]++;
		/* What the job does not allow is the member's to know; the
		 * other reasons are the normal wake of retransmissions. */
		if (out.reason == AGG_DROP_DTYPE)
			send_nack(lc, meta, mb, INCA_NACK_UNSUPPORTED_DTYPE);
		else if (out.reason == AGG_DROP_OP)
			send_nack(lc, meta, mb, INCA_NACK_UNSUPPORTED_OP);
		else if (out.reason == AGG_DROP_TOO_LARGE)
			send_nack(lc, meta, mb, INCA_NACK_TOO_LARGE);
		break;
	}
	free_later(lc, m);
}

/*
 * Loss on purpose (/incad/drop_prob), for testing the workers' recovery:
 * when it is off, the cost is one load and a branch per contribution.
 */
static inline bool
injected_loss(void)
{
	uint64_t t = __atomic_load_n(&incad.drop_thresh, __ATOMIC_RELAXED);

	return unlikely(t != 0) && (rte_rand() & UINT32_MAX) < t;
}

/*
 * Byte order on the per-frame path: DPDK's x86 rte_be_to_cpu_16/32 are
 * inline asm (xchgb, bswap) the compiler cannot merge with a load or a
 * comparison; its builtins can (rol, movbe), some 50 instructions a frame.
 */
#if RTE_BYTE_ORDER == RTE_LITTLE_ENDIAN
#define BE16(x) ((uint16_t)__builtin_bswap16(x))
#define BE32(x) ((uint32_t)__builtin_bswap32(x))
#else
#define BE16(x) ((uint16_t)(x))
#define BE32(x) ((uint32_t)(x))
#endif

/* struct inca_msg starts with the header's fields at their wire offsets. */
#define MSG_AT(f, off) \
	_Static_assert(offsetof(struct inca_msg, f) == (off), "inca_msg." #f " not at " #off)
MSG_AT(job, 4);
MSG_AT(rank, 6);
MSG_AT(token, 8);
MSG_AT(slot, 12);
MSG_AT(flags, 14);
MSG_AT(exp, 15);
MSG_AT(seq, 16);
MSG_AT(offset, 20);
MSG_AT(count, 24);
MSG_AT(reason, 26);
MSG_AT(bitmap, 28);

/*
 * The CONTRIB fast path: decode @len bytes at @p as inca_msg_decode()
 * would, for a valid CONTRIB only. The header is copied as one block (the
 * struct mirrors it) and its multi-byte fields swapped in place, and the
 * checks that decide a CONTRIB's validity are made together, instead of
 * the codec's field-by-field decode and its per-type dispatch. Returns
 * false for anything else, valid or not, leaving it to inca_msg_decode()
 * to decode and classify: it accepts nothing that function refuses
 * (tests/dpdk's malformed and fuzz cases run both).
 */
static inline bool
contrib_decode(const uint8_t *p, size_t len, unsigned int max_elems, struct inca_msg *m)
{
	size_t size;

	if (unlikely(len < INCA_HDR_LEN) || p[0] != INCA_PROTO_VERSION ||
	    p[1] != INCA_MSG_CONTRIB)
		return false;
	memcpy(m, p, INCA_HDR_LEN);
	m->job = BE16(m->job);
	m->rank = BE16(m->rank);
	m->token = BE32(m->token);
	m->slot = BE16(m->slot);
	m->seq = BE32(m->seq);
	m->offset = BE32(m->offset);
	m->count = BE16(m->count);
	m->bitmap = BE32(m->bitmap);
	m->body = p + INCA_HDR_LEN;
	m->body_len = len - INCA_HDR_LEN;
	size = inca_dtype_size(m->dtype);
	/* Unknown dtype: size 0, refused by the length check below. Routed
	 * chunks (ROUTED, GATHER, BRIEF) take the codec's ROUTE check. */
	return m->op < INCA_OP_COUNT &&
	       (m->flags & ~(INCA_F_MASK & ~(INCA_F_ROUTED | INCA_F_GATHER | INCA_F_BRIEF))) == 0 &&
	       m->rank < INCA_MAX_WORKERS && m->job != 0 && m->reason == 0 &&
	       m->count != 0 && (unsigned)m->count * inca_dtype_lanes(m->dtype) <= max_elems &&
	       size != 0 &&
	       m->body_len == m->count * size && m->body_len <= INCA_MAX_PAYLOAD_BYTES &&
	       (!(m->flags & INCA_F_BFP) || m->dtype == INCA_DTYPE_INT32);
}

/*
 * A data message (a CONTRIB, or a tree parent's RESULT or NACK for a
 * chunk), decoded, to the lcore that owns its slot. Takes @m.
 */
static void
data_dispatch(struct incad_lcore *lc, struct rte_mbuf *m, uint64_t now)
{
	const struct inca_msg *msg = &incad_meta(m)->msg;
	unsigned int owner;

	owner = incad.nlcores == 1 ? 0 : (msg->job + msg->slot) % incad.nlcores;
	if (owner == lc->idx) {
		contrib_input(lc, m, now);
		return;
	}
	if (rte_ring_sp_enqueue(incad.lcores[owner].rx_ring, m) != 0) {
		incad_drop_mbuf(lc, m, INCAD_DROP_RING_FULL);
		return;
	}
	lc->st.cnt[INCAD_CNT_DISPATCH]++;
}

/*
 * The control thread's answers, then the data messages held behind the
 * JOINs and LEAVEs it has handled (ctrl.h, "Order per job"): a JOIN_ACK
 * leaves before the RESULT of a CONTRIB that came after the JOIN.
 */
static unsigned int
io_ctrl(struct incad_lcore *lc, uint64_t now)
{
	struct rte_mbuf *b[RING_BURST];
	unsigned int i, n, answers;

	n = incad_ctrl_release(lc, b, RING_BURST, &answers);
	for (i = 0; i < n; i++)
		data_dispatch(lc, b[i], now);
	return n + answers;
}

/*
 * A valid UDP datagram to the INCA port of a local address, or the INCA
 * message of a valid RoCEv2 packet from queue pair @qpn (@roce). Takes @m.
 */
static void
inca_input(struct incad_lcore *lc, struct rte_mbuf *m, uint16_t in_port,
	   const struct inca_frame *f, uint64_t now, bool roce, uint32_t qpn)
{
	struct incad_meta *meta = incad_meta(m);
	struct inca_msg *msg = &meta->msg;
	enum inca_wire_err err;

	if (likely(contrib_decode(f->msg, f->msg_len, incad.cfg.max_elems, msg)))
		err = INCA_WIRE_OK;
	else
		err = inca_msg_decode(f->msg, f->msg_len, incad.cfg.max_elems, msg);
	meta->roce = roce;
	meta->qpn = qpn;
	meta->src_ip = f->src_ip;
	meta->dst_ip = f->dst_ip;
	meta->src_port = f->src_port;
	meta->in_port = in_port;
	memcpy(meta->src_mac, f->eth + 6, 6);
	/* The VLAN: the frame's own 802.1Q tag, or the one the PMD stripped
	 * (net_af_packet strips every tag the kernel parsed, 802.1ad too). */
	if (f->eth[12] == 0x81 && f->eth[13] == 0x00)
		meta->vlan = (uint16_t)(((f->eth[14] << 8) | f->eth[15]) & 0xfff);
	else if (m->ol_flags & RTE_MBUF_F_RX_VLAN_STRIPPED)
		meta->vlan = m->vlan_tci & 0xfff;
	else
		meta->vlan = 0;
	if (err != INCA_WIRE_OK) {
		lc->st.wire[err]++;
		/* A worker of another protocol version asking to talk is told
		 * what incad speaks; the answer is no larger than the question,
		 * so a spoofed one gains nothing. */
		if (err == INCA_WIRE_VERSION && !roce && f->msg_len >= INCA_HDR_LEN + INCA_CTRL_LEN &&
		    (msg->type == INCA_MSG_HELLO || msg->type == INCA_MSG_JOIN)) {
			/* Answered by the control thread, in order with the
			 * others (it sees msg.version). */
			incad_ctrl_enqueue(lc, m);
			return;
		}
		rte_pktmbuf_free(m);
		return;
	}
	lc->st.cnt[INCAD_CNT_INCA_RX]++;
	/* RoCEv2 carries data only: control stays on the UDP port. */
	if (unlikely(roce) && msg->type != INCA_MSG_CONTRIB) {
		incad_drop_mbuf(lc, m, INCAD_DROP_ROCE_NOT_DATA);
		return;
	}
	/* An answer to these would go to nobody (or to everybody, or to
	 * incad itself); a worker never sends them. */
	if (unlikely(f->eth[0] & 1)) {
		incad_drop_mbuf(lc, m, INCAD_DROP_GROUP_DST);
		return;
	}
	/* Only control messages: a contribution from such a source cannot
	 * match a member address (its JOIN was refused here), so the member
	 * check drops it, and the hot path does not pay for this one. */
	if (msg->type != INCA_MSG_CONTRIB && unlikely(incad_martian_src(f->src_ip))) {
		incad_drop_mbuf(lc, m, INCAD_DROP_MARTIAN_SRC);
		return;
	}

	switch (msg->type) {
	case INCA_MSG_RESULT:
	case INCA_MSG_NACK:
	case INCA_MSG_JOIN_ACK:
	case INCA_MSG_LEAVE_ACK:
	case INCA_MSG_HEARTBEAT_ACK:
	case INCA_MSG_CAPS:
		/* Only a tree's parent sends these to incad. */
		switch (incad_uplink_input(lc, m, now)) {
		case INCAD_UPLINK_DONE:
			return;
		case INCAD_UPLINK_DATA:
			break;
		default:
			incad_drop_mbuf(lc, m, INCAD_DROP_UNEXPECTED_MSG);
			return;
		}
		/* fall through - a RESULT goes where the contributions go */
	case INCA_MSG_CONTRIB:
		if (injected_loss()) {
			incad_drop_mbuf(lc, m, INCAD_DROP_INJECTED_LOSS);
			return;
		}
		/* Behind its job's JOIN or LEAVE while the control thread has
		 * not handled it (ctrl.h, "Order per job"). */
		if (unlikely(incad_ctrl_fenced(msg->job))) {
			incad_ctrl_hold(lc, m);
			return;
		}
		data_dispatch(lc, m, now);
		return;
	case INCA_MSG_HELLO:
	case INCA_MSG_JOIN:
	case INCA_MSG_LEAVE:
	case INCA_MSG_HEARTBEAT:
		/* The per-source meter here, so that a flood is dropped before
		 * the ring; the rest on the control thread (ctrl_thread.c). */
		if (incad_ctrl_admit(lc, m))
			incad_ctrl_enqueue(lc, m);
		return;
	default:
		incad_drop_mbuf(lc, m, INCAD_DROP_UNEXPECTED_MSG);
		return;
	}
}

/*
 * A valid UDP datagram to port 4791 of a local address (RoCE members
 * configured): the RoCEv2 checks of docs/protocol.md in their order, then
 * the INCA message inside as any other. Takes @m.
 */
static void
roce_input(struct incad_lcore *lc, struct rte_mbuf *m, uint16_t in_port,
	   const struct inca_frame *f, uint64_t now)
{
	/* The IPv4 header: after the Ethernet header and its 802.1Q tag. */
	uint8_t *ip = (uint8_t *)f->eth + RTE_ETHER_HDR_LEN +
		      (f->eth[12] == 0x81 && f->eth[13] == 0x00 ? 4 : 0);
	struct inca_roce_info r;
	struct inca_frame in = *f;
	enum inca_wire_err err;

	err = inca_roce_parse(f->msg, f->msg_len, &r, &in.msg, &in.msg_len);
	if (err == INCA_WIRE_OK && !incad_roce_icrc_ok(ip))
		err = INCA_WIRE_ROCE_ICRC;
	if (err == INCA_WIRE_OK && r.dqpn != incad.cfg.roce_qpn)
		err = INCA_WIRE_ROCE_QPN;
	if (err == INCA_WIRE_OK && r.qkey != incad.cfg.roce_qkey)
		err = INCA_WIRE_ROCE_QKEY;
	if (err != INCA_WIRE_OK) {
		lc->st.wire[err]++;
		rte_pktmbuf_free(m);
		return;
	}
	lc->st.cnt[INCAD_CNT_ROCE_RX]++;
	inca_input(lc, m, in_port, &in, now, true, r.sqpn);
}

/*
 * The frames incad exists for, checked in one pass with the checksums of
 * csum.h: IPv4 without options or fragments, UDP to the INCA port, the
 * IPv4 header checksum right and the UDP checksum absent or right (by the
 * NIC's flag where it offers one, else summed here). Returns true and
 * fills @f as inca_frame_parse() would; returns false for anything else,
 * bad checksums included, and leaves the frame to inca_frame_parse() to
 * judge and classify, so it accepts nothing that function would refuse.
 */
static inline bool
fast_frame_parse(const struct rte_mbuf *m, const uint8_t *eth, uint32_t len, size_t l3,
		 struct inca_frame *f)
{
	const struct rte_ipv4_hdr *ip = (const struct rte_ipv4_hdr *)(eth + l3);
	const struct rte_udp_hdr *udp = (const struct rte_udp_hdr *)(ip + 1);
	uint32_t tot, ulen;

	if (len < l3 + sizeof(*ip) + sizeof(*udp) || ip->version_ihl != RTE_IPV4_VHL_DEF ||
	    ip->next_proto_id != IPPROTO_UDP ||
	    (ip->fragment_offset & rte_cpu_to_be_16(RTE_IPV4_HDR_MF_FLAG |
						    RTE_IPV4_HDR_OFFSET_MASK)) != 0 ||
	    (udp->dst_port != rte_cpu_to_be_16(incad.cfg.inca_port) &&
	     !(incad.cfg.roce && udp->dst_port == rte_cpu_to_be_16(INCA_ROCE_PORT))))
		return false;
	tot = BE16(ip->total_length);
	ulen = BE16(udp->dgram_len);
	if (tot > len - l3 || ulen < sizeof(*udp) || ulen != tot - sizeof(*ip) ||
	    incad_ipv4_sum20(ip) != 0xffff)
		return false;
	if (udp->dgram_cksum != 0 &&
	    (m->ol_flags & RTE_MBUF_F_RX_L4_CKSUM_MASK) != RTE_MBUF_F_RX_L4_CKSUM_GOOD &&
	    incad_udp_sum20(ip, ulen) != 0xffff)
		return false;
	f->eth = eth;
	f->src_ip = BE32(ip->src_addr);
	f->dst_ip = BE32(ip->dst_addr);
	f->src_port = BE16(udp->src_port);
	f->dst_port = BE16(udp->dst_port);
	f->msg = (const uint8_t *)(udp + 1);
	f->msg_len = ulen - sizeof(*udp);
	return true;
}

/* Every frame the I/O lcore receives starts here. Takes @m. */
static void
io_input(struct incad_lcore *lc, struct rte_mbuf *m, uint16_t in_port, uint64_t now)
{
	const struct incad_port *port = &incad.ports[in_port];
	bool sw = incad.cfg.mode == INCAD_MODE_SWITCH;
	struct rte_ether_hdr *eth;
	struct inca_frame f;
	enum inca_wire_err err;
	uint16_t type;
	size_t l3 = RTE_ETHER_HDR_LEN;
	bool group;
	uint32_t len;

	lc->st.cnt[INCAD_CNT_RX]++;
	lc->st.port_rx[in_port]++;
	if (m->nb_segs > 1 && rte_pktmbuf_linearize(m) != 0) {
		incad_drop_mbuf(lc, m, INCAD_DROP_MULTI_SEG);
		return;
	}
	len = rte_pktmbuf_data_len(m);
	if (len < RTE_ETHER_HDR_LEN) {
		lc->st.wire[INCA_WIRE_ETH_SHORT]++;
		rte_pktmbuf_free(m);
		return;
	}
	eth = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
	group = rte_is_multicast_ether_addr(&eth->dst_addr);
	if (sw)
		incad_l2_learn(&eth->src_addr, in_port, now);
	if (!group && !rte_is_same_ether_addr(&eth->dst_addr, &port->mac)) {
		if (sw)
			incad_l2_forward(lc, m, in_port, now);
		else
			incad_drop_mbuf(lc, m, INCAD_DROP_NOT_LOCAL);
		return;
	}

	type = BE16(eth->ether_type);
	if (type == RTE_ETHER_TYPE_VLAN && len >= RTE_ETHER_HDR_LEN + 4) {
		type = BE16(*(rte_be16_t *)((uint8_t *)eth + 16));
		l3 += 4;
	}
	if (type == RTE_ETHER_TYPE_ARP) {
		incad_l2_arp(lc, m, in_port, l3, now);
		return;
	}
	if (type == RTE_ETHER_TYPE_IPV4) {
		/* Only datagrams to one of incad's addresses are incad's. */
		if (len >= l3 + sizeof(struct rte_ipv4_hdr)) {
			const struct rte_ipv4_hdr *ip =
				rte_pktmbuf_mtod_offset(m, struct rte_ipv4_hdr *, l3);

			if (incad_local_port(BE32(ip->dst_addr)) < 0) {
				if (sw && group)
					incad_l2_flood(lc, m, in_port);
				else
					incad_drop_mbuf(lc, m, INCAD_DROP_NOT_LOCAL);
				return;
			}
		}
		if (likely(fast_frame_parse(m, (uint8_t *)eth, len, l3, &f))) {
			if (unlikely(f.dst_port != incad.cfg.inca_port))
				roce_input(lc, m, in_port, &f, now);
			else
				inca_input(lc, m, in_port, &f, now, false, 0);
			return;
		}
		err = inca_frame_parse(eth, len, incad.cfg.inca_port, &f);
		if (err == INCA_WIRE_WRONG_PORT && incad.cfg.roce)
			err = inca_frame_parse(eth, len, INCA_ROCE_PORT, &f);
		if (err == INCA_WIRE_OK) {
			if (f.dst_port != incad.cfg.inca_port)
				roce_input(lc, m, in_port, &f, now);
			else
				inca_input(lc, m, in_port, &f, now, false, 0);
			return;
		}
		if (err == INCA_WIRE_NOT_UDP) {
			const struct rte_ipv4_hdr *ip =
				rte_pktmbuf_mtod_offset(m, struct rte_ipv4_hdr *, l3);

			if (ip->next_proto_id == IPPROTO_ICMP) {
				incad_l2_icmp(lc, m, in_port, l3);
				return;
			}
			incad_drop_mbuf(lc, m, INCAD_DROP_UNHANDLED);
			return;
		}
		lc->st.wire[err]++;
		rte_pktmbuf_free(m);
		return;
	}
	if (sw && group) {
		incad_l2_flood(lc, m, in_port);
		return;
	}
	incad_drop_mbuf(lc, m, INCAD_DROP_UNHANDLED);
}

/* Frames the other lcores produced: send them from here. */
static unsigned int
io_drain_tx_rings(struct incad_lcore *lc)
{
	struct rte_mbuf *b[RING_BURST];
	unsigned int i, k, n, total = 0;

	for (i = 1; i < incad.nlcores; i++) {
		n = rte_ring_sc_dequeue_burst(incad.lcores[i].tx_ring, (void **)b, RING_BURST,
					      NULL);
		for (k = 0; k < n; k++)
			incad_tx(lc, b[k], b[k]->port);
		total += n;
	}
	return total;
}

/*
 * Adaptive idle: sleep only when the lcore has found nothing for
 * idle.empty_polls polls *and* idle.hot_us: traffic that is sparse but
 * latency-bound (a small collective every few hundred microseconds: a
 * round trip through incad, then the next) finds it polling, not asleep;
 * a sleep that had just begun when a contribution arrived would cost a
 * wake-up on the critical path of every collective. Longer silences sleep,
 * from 8 us doubling up to idle.max_sleep_us.
 */
static void
idle(struct incad_lcore *lc, unsigned int work, uint64_t now)
{
	if (work != 0) {
		lc->st.busy_polls++;
		lc->empty_run = 0;
		lc->sleep_us = FIRST_SLEEP_US;
		lc->last_work = now;
		return;
	}
	lc->st.empty_polls++;
	if (incad.cfg.idle != INCAD_IDLE_ADAPTIVE || ++lc->empty_run < incad.cfg.idle_empty_polls)
		return;
	if (now - lc->last_work < incad.hz / 1000000 * incad.cfg.idle_hot_us) {
		/* Hot, but not greedy: a thread waiting for this core (a
		 * worker, the kernel's packet work) runs first. */
		sched_yield();
		return;
	}
	/* Offline while asleep, so that the control plane's grace periods
	 * do not wait for a sleeping lcore. */
	rte_rcu_qsbr_thread_offline(incad.qs, lc->idx);
	rte_delay_us_sleep(lc->sleep_us);
	rte_rcu_qsbr_thread_online(incad.qs, lc->idx);
	lc->st.cnt[INCAD_CNT_IDLE_SLEEP]++;
	lc->sleep_us *= 2;
	if (lc->sleep_us > incad.cfg.idle_max_sleep_us)
		lc->sleep_us = incad.cfg.idle_max_sleep_us;
}

#define MAX_TIMERS 4
static incad_timer_fn *timers[MAX_TIMERS];
static unsigned int ntimers;

int
incad_timer_add(incad_timer_fn *fn)
{
	if (ntimers == MAX_TIMERS)
		return -1;
	timers[ntimers++] = fn;
	return 0;
}

/* Marked hot: GCC otherwise places the loops in incad_lcore_main's cold
 * part, optimised for size (rep movsb for memcpy and so on). */
static __attribute__((hot)) void
io_loop(struct incad_lcore *lc)
{
	struct rte_mbuf *b[RX_BURST];
	uint64_t timer_period = incad.hz * TIMER_MS / 1000;
	uint64_t next_timer = incad_now() + timer_period;
	unsigned int p, i, n, work;
	uint64_t now;

	while (!incad.quit && !incad.stopping) {
		/* The control thread's answers and the data they release
		 * first: they came before what the ports hold now. */
		work = io_ctrl(lc, incad_now());
		now = incad_now();
		for (p = 0; p < incad.nports; p++) {
			n = rte_eth_rx_burst(incad.ports[p].port_id, 0, b, RX_BURST);
			/* Ahead across the burst: the headers two frames on,
			 * and the next frame's private area, which inca_input()
			 * writes (a NIC's DMA leaves neither in the cache). */
			for (i = 0; i < n && i < 2; i++)
				rte_prefetch0(rte_pktmbuf_mtod(b[i], void *));
			for (i = 0; i < n; i++) {
				if (i + 2 < n)
					rte_prefetch0(rte_pktmbuf_mtod(b[i + 2], void *));
				if (i + 1 < n)
					rte_prefetch0(incad_meta(b[i + 1]));
				io_input(lc, b[i], p, now);
			}
			work += n;
		}
		work += io_drain_tx_rings(lc);
		incad_ctrl_kick(lc);
		free_flush(lc);
		incad_tx_flush_io(lc);
		if (now >= next_timer) {
			for (i = 0; i < ntimers; i++)
				timers[i](lc, now);
			incad_tx_flush_io(lc);
			next_timer = now + timer_period;
		}
		rte_rcu_qsbr_quiescent(incad.qs, lc->idx);
		idle(lc, work, now);
	}
}

/* At shutdown the I/O lcore waits this long at most for the control thread. */
#define QUIESCE_MS 5000

/*
 * A signal came: receive nothing more, but let the control thread finish
 * what it was given, send its answers and aggregate the data held behind
 * them, as when the control plane ran inline (the dpdk tests stop
 * incad once it has received their frames); then stop every lcore.
 * Bounded: a thread held by the test hook is let go by incad.stopping.
 */
static void
io_quiesce(struct incad_lcore *lc)
{
	uint64_t end = incad_now() + incad.hz * QUIESCE_MS / 1000, now;
	unsigned int work;

	incad_ctrl_wake();
	do {
		now = incad_now();
		work = io_ctrl(lc, now) + io_drain_tx_rings(lc);
		free_flush(lc);
		incad_tx_flush_io(lc);
		rte_rcu_qsbr_quiescent(incad.qs, lc->idx);
		if (work == 0 && incad_ctrl_idle())
			break;
		if (work == 0)
			rte_delay_us_sleep(50);
	} while (now < end);
	incad.quit = true;
}

static __attribute__((hot)) void
agg_loop(struct incad_lcore *lc)
{
	struct rte_mbuf *b[RING_BURST];
	unsigned int i, n;
	uint64_t now;

	while (!incad.quit) {
		n = rte_ring_sc_dequeue_burst(lc->rx_ring, (void **)b, RING_BURST, NULL);
		now = incad_now();
		for (i = 0; i < n; i++)
			contrib_input(lc, b[i], now);
		free_flush(lc);
		incad_tx_flush_lcore(lc);
		rte_rcu_qsbr_quiescent(incad.qs, lc->idx);
		idle(lc, n, now);
	}
}

int
incad_lcore_main(void *arg)
{
	struct incad_lcore *lc = arg;

	/* Short sleeps must stay short: the default 50 us timer slack would
	 * make every adaptive sleep at least that long. */
	prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
	lc->sleep_us = FIRST_SLEEP_US;
	INCAD_LOG(dp, INFO, "lcore %u: %s", rte_lcore_id(),
		  lc->idx == 0 ? "I/O and aggregation" : "aggregation");
	rte_rcu_qsbr_thread_online(incad.qs, lc->idx);
	if (lc->idx == 0) {
		io_loop(lc);
		io_quiesce(lc);
	} else {
		agg_loop(lc);
	}
	rte_rcu_qsbr_thread_offline(incad.qs, lc->idx);
	free_flush(lc);
	if (lc->idx != 0) {
		incad_tx_flush_lcore(lc);
	} else {
		incad_uplink_stop(lc);
		incad_tx_flush_io(lc);
	}
	return 0;
}

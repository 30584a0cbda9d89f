/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * A tree leaf's uplink: the control plane of the jobs that have a parent
 * aggregator (docs/protocol.md, "Aggregation trees"). To its parent the
 * leaf is one worker: it resolves the parent's MAC, JOINs the parent's job
 * as its configured rank, keeps the membership alive with HEARTBEATs and
 * LEAVEs when its own job resets. The partial sums themselves and the
 * parent's RESULTs are the dataplane's (dataplane.c); everything here runs
 * on the I/O lcore, from the timer hook and from incad_uplink_input(),
 * except incad_uplink_restarts(), on the control thread. The uplink stays
 * on the I/O lcore because it needs the neighbour table (ARP) only that
 * lcore writes, and costs a few frames per heartbeat; what it would
 * change in the job itself, a restart, it asks the control thread for.
 *
 * The one rule that keeps a tree exactly-once across resets: an
 * incarnation of the leaf's job sends under at most one parent session.
 * The leaf's own resets zero the published session first (ctrl.c) and the
 * uplink then leaves that parent incarnation; a lost parent incarnation
 * (NACK MEMBER_LOST or EVICTED, or a silent parent) zeroes it and has the
 * control thread restart the leaf's job before the uplink joins again:
 * while a reset or a restart is under way (ctrl.h, 'resetting' and
 * 'restart_req') the uplink neither JOINs nor keeps a granted session.
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include <rte_cycles.h>

#include "ctrl.h"
#include "l2.h"
#include "uplink.h"

enum up_state {
	UP_RESOLVE,   /* waiting for the parent's MAC (ARP) */
	UP_JOINING,   /* JOIN sent, no JOIN_ACK yet */
	UP_UP,        /* joined: partials flow */
	UP_LEAVING,   /* LEAVE of the old parent session sent, no LEAVE_ACK yet */
	UP_HELLO,     /* first start: HELLO sent for the parent's evict_ms */
	UP_HOLD,      /* first start: waiting out a previous run's membership */
};

static const char *const state_names[] = {"resolving", "joining", "up", "leaving", "hello",
					  "holding"};

/* Retries of JOIN, LEAVE and ARP start at this and double up to 1 s. */
#define FIRST_RETRY_MS 20
#define MAX_RETRY_MS 1000

static struct incad_job *leaves[INCAD_MAX_STATIC_JOBS];
static unsigned int nleaves;

/* The job's incarnation is being replaced: no parent session now. */
static bool
held(const struct incad_uplink *u)
{
	return __atomic_load_n(&u->resetting, __ATOMIC_SEQ_CST) != 0 ||
	       __atomic_load_n(&u->restart_req, __ATOMIC_SEQ_CST) != 0;
}

static uint64_t
ms_cycles(uint32_t ms)
{
	return incad.hz * ms / 1000;
}

const char *
incad_uplink_state_name(const struct incad_uplink *u)
{
	return u->state >= 0 && u->state <= UP_HOLD ? state_names[u->state] : "?";
}

static void
enter(struct incad_uplink *u, enum up_state st, uint64_t now)
{
	u->state = st;
	u->since = now;
	u->next_tx = now;
	u->backoff_ms = FIRST_RETRY_MS;
}

static void
retry_later(struct incad_uplink *u, uint64_t now)
{
	u->next_tx = now + ms_cycles(u->backoff_ms);
	u->backoff_ms = u->backoff_ms * 2 > MAX_RETRY_MS ? MAX_RETRY_MS : u->backoff_ms * 2;
}

/*
 * Send a control message of @type to the parent: HELLO and JOIN with a
 * control body saying what this job is, the others without one.
 */
static void
send_ctrl(struct incad_lcore *lc, struct incad_job *j, uint8_t type, uint32_t token)
{
	const struct incad_job_conf *jc = j->up->conf;
	struct inca_ctrl_info c;
	uint8_t body[INCA_CTRL_LEN];
	struct inca_msg h;
	struct rte_mbuf *m;
	bool with_body = type == INCA_MSG_JOIN || type == INCA_MSG_HELLO;

	memset(&h, 0, sizeof(h));
	h.version = INCA_PROTO_VERSION;
	h.type = type;
	h.job = jc->parent_job;
	h.rank = jc->parent_rank;
	h.token = token;
	/* The parent's member secret proves a LEAVE or HEARTBEAT is this
	 * leaf's (docs/protocol.md, "Member secrets"). */
	if (type == INCA_MSG_LEAVE || type == INCA_MSG_HEARTBEAT)
		h.bitmap = j->up->secret;
	if (type == INCA_MSG_JOIN) {
		/* The job's main type and op: its lowest allowed ones. */
		h.dtype = (uint8_t)__builtin_ctz(j->agg->p.dtypes);
		h.op = (uint8_t)__builtin_ctz(j->agg->p.ops);
	}
	if (with_body) {
		memset(&c, 0, sizeof(c));
		c.ver_min = INCA_PROTO_VERSION;
		c.ver_max = INCA_PROTO_VERSION;
		c.dtypes = j->agg->p.dtypes;
		c.ops = j->agg->p.ops;
		c.max_elems = j->agg->p.max_elems;
		if (type == INCA_MSG_JOIN) {
			c.nworkers = jc->parent_nworkers;
			c.pool_size = j->agg->p.pool_size;
			c.window = j->window;
		}
		inca_ctrl_encode(&c, body);
	}
	m = incad_build_msg(lc, &j->up->d, &h, body, with_body ? INCA_CTRL_LEN : 0);
	if (m == NULL)
		return;
	lc->st.cnt[INCAD_CNT_UPLINK_TX]++;
	incad_tx(lc, m, j->up->d.port);
}

/*
 * The parent's incarnation this leaf was part of has ended (or the parent
 * fell silent): the leaf's own incarnation must end with it, so that its
 * members restart their numbering with everybody else's.
 */
static void
parent_lost(struct incad_job *j, uint64_t now, const char *why)
{
	struct incad_uplink *u = j->up;

	INCAD_LOG(ctrl, NOTICE, "job %u: parent job %u session 0x%08x lost (%s): members rejoin",
		  j->id, u->conf->parent_job, u->joined, why);
	u->losses++;
	u->left = u->joined;
	u->joined = 0;
	/* Nothing more goes up under the lost session; the control thread
	 * restarts the job at its next wake-up or timer tick (10 ms,
	 * incad_uplink_restarts()) and clears the request, and only then
	 * does the uplink JOIN again. */
	__atomic_store_n(&u->session, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&u->restart_req, 1, __ATOMIC_SEQ_CST);
	enter(u, UP_JOINING, now);
}

void
incad_uplink_restarts(void)
{
	unsigned int i;

	for (i = 0; i < nleaves; i++) {
		struct incad_uplink *u = leaves[i]->up;

		if (__atomic_load_n(&u->restart_req, __ATOMIC_ACQUIRE) == 0)
			continue;
		incad_ctrl_job_restart(leaves[i]);
		__atomic_store_n(&u->restart_req, 0, __ATOMIC_RELEASE);
	}
}

static void
leaf_timer(struct incad_lcore *lc, struct incad_job *j, uint64_t now)
{
	struct incad_uplink *u = j->up;
	const struct incad_job_conf *jc = u->conf;
	char ip[16];

	/* The job reset itself (a member left or was evicted): everybody
	 * else in the tree must learn it, through the parent's reset. */
	if (u->state == UP_UP && __atomic_load_n(&u->session, __ATOMIC_ACQUIRE) == 0) {
		INCAD_LOG(ctrl, INFO, "job %u: reset here, leaving parent session 0x%08x", j->id,
			  u->joined);
		enter(u, UP_LEAVING, now);
	}
	switch (u->state) {
	case UP_RESOLVE:
		if (jc->parent_has_mac || incad_l2_neigh_lookup(jc->parent_ip, u->d.mac, &u->d.port)) {
			if (jc->parent_has_mac)
				memcpy(u->d.mac, jc->parent_mac, 6);
			/* Answers come from the address of the port it is on. */
			u->d.local_ip = incad.ports[u->d.port].ipv4;
			INCAD_LOG(ctrl, INFO, "job %u: parent %s reached through port %s", j->id,
				  incad_ipv4_str(jc->parent_ip, ip, sizeof(ip)),
				  incad.ports[u->d.port].name);
			enter(u, u->fresh ? UP_HELLO : UP_JOINING, now);
			break;
		}
		if (now >= u->next_tx) {
			incad_l2_arp_request(lc, u->d.port, jc->parent_ip);
			retry_later(u, now);
		}
		return;
	case UP_UP:
		if ((int64_t)(now - u->last_rx) > (int64_t)ms_cycles(u->evict_ms)) {
			parent_lost(j, now, "the parent is silent");
			/* It may come back with another MAC (a replaced host). */
			if (!jc->parent_has_mac) {
				incad_l2_neigh_forget(jc->parent_ip);
				enter(u, UP_RESOLVE, now);
				return;
			}
			break;
		}
		if (now >= u->next_tx) {
			send_ctrl(lc, j, INCA_MSG_HEARTBEAT, u->joined);
			u->next_tx = now + ms_cycles(u->hb_ms);
		}
		return;
	case UP_HELLO:
		/*
		 * A JOIN from this leaf's address is idempotent at the parent:
		 * right after a restart it would be answered with the
		 * incarnation the previous run of this leaf was part of, whose
		 * other members are in the middle of their stream while ours
		 * restart at chunk 0. So the first JOIN waits out the parent's
		 * evict_ms (CAPS tells it): by then the parent has evicted the
		 * previous run's membership, if there was one, and the tree
		 * starts a new incarnation together.
		 */
		if (now >= u->next_tx) {
			send_ctrl(lc, j, INCA_MSG_HELLO, jc->parent_token);
			retry_later(u, now);
		}
		return;
	case UP_HOLD:
		if (now >= u->hold_until) {
			u->fresh = false;
			enter(u, UP_JOINING, now);
			break;
		}
		return;
	case UP_LEAVING:
		/* A parent that does not answer evicts this leaf anyway. */
		if ((int64_t)(now - u->since) > (int64_t)ms_cycles(u->evict_ms)) {
			u->left = u->joined;
			u->joined = 0;
			enter(u, UP_JOINING, now);
			break;
		}
		if (now >= u->next_tx) {
			send_ctrl(lc, j, INCA_MSG_LEAVE, u->joined);
			retry_later(u, now);
		}
		return;
	default:
		break;
	}
	if (u->state == UP_JOINING && now >= u->next_tx && !held(u)) {
		send_ctrl(lc, j, INCA_MSG_JOIN, jc->parent_token);
		retry_later(u, now);
	}
}

void
incad_uplink_timer(struct incad_lcore *lc, uint64_t now)
{
	unsigned int i;

	for (i = 0; i < nleaves; i++)
		leaf_timer(lc, leaves[i], now);
}

/* The leaf job whose parent sent @meta's message, or NULL. */
static struct incad_job *
leaf_of(const struct incad_meta *meta)
{
	unsigned int i;

	for (i = 0; i < nleaves; i++) {
		const struct incad_job_conf *jc = leaves[i]->up->conf;

		if (jc->parent_ip == meta->src_ip && jc->parent_udp_port == meta->src_port &&
		    jc->parent_job == meta->msg.job)
			return leaves[i];
	}
	return NULL;
}

static void
join_ack(struct incad_lcore *lc, struct incad_job *j, const struct inca_msg *msg,
	 uint64_t now)
{
	struct incad_uplink *u = j->up;
	struct inca_ctrl_info c;

	inca_ctrl_decode(msg->body, &c);
	/* A late answer to a JOIN of an incarnation already left. */
	if (c.session == 0 || c.session == u->left) {
		incad_drop(lc, INCAD_DROP_PARENT_STALE);
		return;
	}
	if (c.pool_size != j->agg->p.pool_size || c.max_elems == 0 || c.window == 0 ||
	    c.window > c.pool_size || (c.dtypes & j->agg->p.dtypes) != j->agg->p.dtypes ||
	    (c.ops & j->agg->p.ops) != j->agg->p.ops) {
		/* Chunk k must land in the same slot and set on both levels,
		 * and the parent must aggregate what the members may send. */
		INCAD_LOG(ctrl, ERR, "job %u: the parent's job %u grants pool %u, window %u, "
			  "max_elems %u, dtypes 0x%x, ops 0x%x; this job has pool %u, dtypes 0x%x, "
			  "ops 0x%x: fix the configurations (a tree needs equal pools)", j->id,
			  u->conf->parent_job, c.pool_size, c.window, c.max_elems, c.dtypes, c.ops,
			  j->agg->p.pool_size, j->agg->p.dtypes, j->agg->p.ops);
		u->last_nack = INCA_NACK_BAD_PARAMS;
		u->next_tx = now + ms_cycles(MAX_RETRY_MS);
		u->backoff_ms = MAX_RETRY_MS;
		return;
	}
	u->max_elems = c.max_elems;
	u->window = c.window;
	u->secret = msg->bitmap;
	u->hb_ms = c.hb_ms != 0 ? c.hb_ms : incad.cfg.hb_ms;
	u->evict_ms = c.evict_ms != 0 ? c.evict_ms : incad.cfg.evict_ms;
	/* Heartbeats well inside the parent's patience. */
	if (u->hb_ms > u->evict_ms / 3)
		u->hb_ms = u->evict_ms / 3 > 0 ? u->evict_ms / 3 : 1;
	u->caps = c.caps;
	u->joined = c.session;
	u->joins++;
	u->last_nack = 0;
	enter(u, UP_UP, now);
	u->last_rx = now;
	u->next_tx = now + ms_cycles(u->hb_ms);
	/* Published last: the grants above are read by JOINs once it is set.
	 * A reset that began meanwhile takes it back (ctrl.c, uplink_hold()):
	 * the session is then left, as after any reset of the job. */
	__atomic_store_n(&u->session, c.session, __ATOMIC_SEQ_CST);
	if (held(u))
		__atomic_store_n(&u->session, 0, __ATOMIC_SEQ_CST);
	INCAD_LOG(ctrl, INFO, "job %u: joined parent job %u as rank %u, session 0x%08x, "
		  "window %u, max_elems %u", j->id, u->conf->parent_job, u->conf->parent_rank,
		  c.session, c.window, c.max_elems);
}

static void
parent_nack(struct incad_lcore *lc, struct incad_job *j, const struct inca_msg *msg,
	    uint64_t now)
{
	struct incad_uplink *u = j->up;

	u->last_nack = msg->reason;
	if (u->state == UP_JOINING && msg->token == u->conf->parent_token) {
		/* The JOIN was refused: say why once per refusal, retry slowly. */
		INCAD_LOG(ctrl, ERR, "job %u: parent job %u refused the JOIN: %s", j->id,
			  u->conf->parent_job, inca_nack_name(msg->reason));
		u->next_tx = now + ms_cycles(MAX_RETRY_MS);
		u->backoff_ms = MAX_RETRY_MS;
		return;
	}
	if (u->state == UP_UP && msg->token == u->joined &&
	    (msg->reason == INCA_NACK_MEMBER_LOST || msg->reason == INCA_NACK_EVICTED ||
	     msg->reason == INCA_NACK_NOT_MEMBER || msg->reason == INCA_NACK_UNKNOWN_JOB)) {
		parent_lost(j, now, inca_nack_name(msg->reason));
		return;
	}
	/* The parent's arbitration held a partial back: the members'
	 * retransmissions resend it (AGG_RESEND_UP), paced by their timers. */
	if (u->state == UP_UP && msg->token == u->joined && msg->reason == INCA_NACK_HELD) {
		u->last_rx = now;
		return;
	}
	incad_drop(lc, INCAD_DROP_PARENT_STALE);
}

enum incad_uplink_verdict
incad_uplink_input(struct incad_lcore *lc, struct rte_mbuf *m, uint64_t now)
{
	struct incad_meta *meta = incad_meta(m);
	struct inca_msg *msg = &meta->msg;
	struct incad_job *j = leaf_of(meta);
	struct incad_uplink *u;

	if (j == NULL)
		return INCAD_UPLINK_NOT_PARENT;
	u = j->up;
	switch (msg->type) {
	case INCA_MSG_RESULT:
		/* The dataplane checks the session against the published one. */
		if (u->state == UP_UP && msg->token == u->joined)
			u->last_rx = now;
		msg->job = j->id;
		return INCAD_UPLINK_DATA;
	case INCA_MSG_NACK:
		if (msg->reason == INCA_NACK_MISMATCH || msg->reason == INCA_NACK_TOO_LARGE ||
		    msg->reason == INCA_NACK_UNSUPPORTED_DTYPE ||
		    msg->reason == INCA_NACK_UNSUPPORTED_OP) {
			/* About one chunk: its set fails, the members are told. */
			if (u->state == UP_UP && msg->token == u->joined)
				u->last_rx = now;
			msg->job = j->id;
			return INCAD_UPLINK_DATA;
		}
		parent_nack(lc, j, msg, now);
		break;
	case INCA_MSG_JOIN_ACK:
		if (u->state == UP_JOINING && msg->token == u->conf->parent_token &&
		    msg->rank == u->conf->parent_rank)
			join_ack(lc, j, msg, now);
		else
			incad_drop(lc, INCAD_DROP_PARENT_UNEXPECTED);
		break;
	case INCA_MSG_LEAVE_ACK:
		if (u->state == UP_LEAVING && msg->token == u->joined) {
			u->left = u->joined;
			u->joined = 0;
			enter(u, UP_JOINING, now);
		} else {
			incad_drop(lc, INCAD_DROP_PARENT_UNEXPECTED);
		}
		break;
	case INCA_MSG_HEARTBEAT_ACK:
		if (u->state == UP_UP && msg->token == u->joined)
			u->last_rx = now;
		else
			incad_drop(lc, INCAD_DROP_PARENT_UNEXPECTED);
		break;
	case INCA_MSG_CAPS:
		if (u->state == UP_HELLO && msg->rank == u->conf->parent_rank) {
			struct inca_ctrl_info c;
			uint64_t wait;

			inca_ctrl_decode(msg->body, &c);
			/* The parent's eviction, its 10 ms timer and a margin. */
			wait = (uint64_t)c.evict_ms + c.evict_ms / 8 + 100;
			u->hold_until = now + ms_cycles((uint32_t)wait);
			INCAD_LOG(ctrl, INFO, "job %u: first JOIN to the parent in %" PRIu64 " ms "
				  "(its evict_ms %u: a previous run's membership must be gone)",
				  j->id, wait, c.evict_ms);
			enter(u, UP_HOLD, now);
		} else {
			incad_drop(lc, INCAD_DROP_PARENT_UNEXPECTED);
		}
		break;
	default:
		incad_drop(lc, INCAD_DROP_PARENT_UNEXPECTED);
		break;
	}
	rte_pktmbuf_free(m);
	return INCAD_UPLINK_DONE;
}

void
incad_uplink_stop(struct incad_lcore *lc)
{
	unsigned int i;

	/* Best effort, once: the parent resets now instead of evicting this
	 * leaf after its evict_ms, so the rest of the tree learns it sooner. */
	for (i = 0; i < nleaves; i++) {
		struct incad_uplink *u = leaves[i]->up;

		if (u->state != UP_UP)
			continue;
		__atomic_store_n(&u->session, 0, __ATOMIC_RELEASE);
		send_ctrl(lc, leaves[i], INCA_MSG_LEAVE, u->joined);
		INCAD_LOG(ctrl, INFO, "job %u: stopping: left parent session 0x%08x",
			  leaves[i]->id, u->joined);
		enter(u, UP_LEAVING, incad_now());
	}
}

int
incad_uplink_init(void)
{
	unsigned int i;
	uint64_t now = incad_now();

	nleaves = 0;
	for (i = 0; i < incad.cfg.njobs; i++) {
		const struct incad_job_conf *jc = &incad.cfg.jobs[i];
		struct incad_job *j;
		struct incad_uplink *u;

		if (!jc->has_parent)
			continue;
		j = incad_job_get(jc->id);
		if (j == NULL || j->up == NULL)
			return -ENOENT;
		u = j->up;
		u->job = jc->parent_job;
		u->rank = jc->parent_rank;
		u->d.ip = jc->parent_ip;
		u->d.udp_port = jc->parent_udp_port;
		u->d.port = (uint16_t)jc->parent_via;
		u->d.local_ip = incad.ports[jc->parent_via].ipv4;
		u->d.vlan = 0;
		u->d.qpn = 0; /* a parent is spoken to over UDP */
		u->d.qkey = 0;
		u->hb_ms = incad.cfg.hb_ms;
		u->evict_ms = incad.cfg.evict_ms;
		u->fresh = true;
		enter(u, UP_RESOLVE, now);
		leaves[nleaves++] = j;
	}
	return 0;
}

/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * Control plane: admission of members into jobs, job life cycle, tenants'
 * slot quotas, liveness. It runs on the control thread (ctrl_thread.c,
 * see ctrl.h), which is the only writer of the job table, the member
 * views and the tenants' bookkeeping; only the per-source meter
 * (incad_ctrl_admit()) and the version NACKs run on the I/O lcore.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <rte_lcore.h>
#include <rte_cycles.h>
#include <rte_hash_crc.h>
#include <rte_malloc.h>
#include <rte_meter.h>
#include <rte_random.h>

#include "ctrl.h"
#include "tx.h"

#define ALL_DTYPES ((1u << INCA_DTYPE_COUNT) - 1)
#define ALL_OPS ((1u << INCA_OP_COUNT) - 1)
#define CAPS_BITS (INCA_CAP_NATIVE_FLOAT | INCA_CAP_BFP | INCA_CAP_SEQ_CHECK | INCA_CAP_ROUTED)

struct incad_job *incad_jobs[65536];

static TAILQ_HEAD(, incad_job) job_list = TAILQ_HEAD_INITIALIZER(job_list);
static uint32_t tenant_used[INCAD_MAX_TENANTS];
static uint32_t slots_used;
static size_t jobs_bytes;
/* Global slot space: a bit per slot, first-fit allocation of a job's range. */
static uint64_t *slot_map;

uint32_t
incad_tenant_used(unsigned int t)
{
	return t < INCAD_MAX_TENANTS ? __atomic_load_n(&tenant_used[t], __ATOMIC_RELAXED) : 0;
}

uint32_t
incad_slots_used(void)
{
	return __atomic_load_n(&slots_used, __ATOMIC_RELAXED);
}

size_t
incad_jobs_bytes(void)
{
	return __atomic_load_n(&jobs_bytes, __ATOMIC_RELAXED);
}

static inline bool
slot_busy(uint32_t i)
{
	return slot_map[i / 64] & (1ull << (i % 64));
}

static void
slot_mark(uint32_t base, uint32_t n, bool busy)
{
	uint32_t i;

	for (i = base; i < base + n; i++) {
		if (busy)
			slot_map[i / 64] |= 1ull << (i % 64);
		else
			slot_map[i / 64] &= ~(1ull << (i % 64));
	}
}

/* First fit of @n contiguous slots; -ENOSPC when memory is exhausted. */
static int64_t
slot_alloc(uint32_t n)
{
	uint32_t max = incad.cfg.max_slots, i = 0, run = 0;

	if (n > max - slots_used)
		return -ENOSPC;
	while (i < max) {
		if (slot_busy(i)) {
			run = 0;
			i++;
			continue;
		}
		if (++run == n) {
			slot_mark(i + 1 - n, n, true);
			return i + 1 - n;
		}
		i++;
	}
	return -ENOSPC;
}

static void
caps_info(struct inca_ctrl_info *c)
{
	memset(c, 0, sizeof(*c));
	c->ver_min = INCA_PROTO_VERSION;
	c->ver_max = INCA_PROTO_VERSION;
	c->dtypes = ALL_DTYPES;
	c->ops = ALL_OPS;
	c->max_elems = incad.cfg.max_elems;
	c->pool_size = incad.cfg.pool_size;
	c->window = incad.cfg.window < incad.cfg.pool_size ? incad.cfg.window :
							      incad.cfg.pool_size;
	c->caps = CAPS_BITS | (incad.cfg.roce ? INCA_CAP_ROCE : 0);
	c->hb_ms = incad.cfg.hb_ms;
	c->evict_ms = incad.cfg.evict_ms;
}

/*
 * Answer the request in @m with @type (+ control body @c, + the RoCEv2
 * extension @x after it); frees @m.
 */
static void
reply_ext(struct incad_lcore *lc, struct rte_mbuf *m, uint8_t type, uint16_t reason,
	  const struct inca_ctrl_info *c, const struct inca_roce_ext *x, uint32_t bitmap)
{
	const struct incad_meta *meta = incad_meta(m);
	uint8_t body[INCA_CTRL_LEN + INCA_ROCE_EXT_LEN];
	size_t len = 0;
	struct incad_dest d;
	struct inca_msg h;
	struct rte_mbuf *r;

	incad_dest_of(meta, &d);
	incad_reply_hdr(&meta->msg, type, reason, &h);
	h.bitmap = bitmap;
	if (c != NULL) {
		inca_ctrl_encode(c, body);
		len = INCA_CTRL_LEN;
		if (x != NULL) {
			inca_roce_ext_encode(x, body + len);
			len += INCA_ROCE_EXT_LEN;
		}
	}
	r = incad_build_msg(lc, &d, &h, body, len);
	rte_pktmbuf_free(m);
	if (r == NULL)
		return;
	if (type == INCA_MSG_NACK) {
		lc->st.cnt[INCAD_CNT_NACK_TX]++;
		lc->st.nack[reason]++;
	} else {
		lc->st.cnt[INCAD_CNT_CTRL_TX]++;
	}
	incad_tx(lc, r, d.port);
}

static void
reply(struct incad_lcore *lc, struct rte_mbuf *m, uint8_t type, uint16_t reason,
      const struct inca_ctrl_info *c)
{
	reply_ext(lc, m, type, reason, c, NULL, 0);
}

static void
nack(struct incad_lcore *lc, struct rte_mbuf *m, uint16_t reason)
{
	const struct incad_meta *meta = incad_meta(m);
	struct inca_ctrl_info c;
	char ip[16];

	INCAD_LOG(ctrl, DEBUG, "%s from %s:%u job %u rank %u refused: %s",
		  inca_msg_type_name(meta->msg.type), incad_ipv4_str(meta->src_ip, ip, sizeof(ip)),
		  meta->src_port, meta->msg.job, meta->msg.rank, inca_nack_name(reason));
	lc->st.drop[INCAD_DROP_CTRL_REFUSED]++;
	/* Only BAD_VERSION tells the worker what incad speaks instead. */
	if (reason == INCA_NACK_BAD_VERSION) {
		caps_info(&c);
		reply(lc, m, INCA_MSG_NACK, reason, &c);
	} else {
		reply(lc, m, INCA_MSG_NACK, reason, NULL);
	}
}

/*
 * The session token of incarnation @n of job @j: never 0 (a worker's
 * "none"), never the job token (which only JOIN carries), never @prev, the
 * one of the incarnation before, so that every late packet of that one is
 * told apart. Random, so that it cannot be derived from the job token;
 * with aggregation.session_seed, a function of (seed, job, n) that tests
 * and conformance vectors compute too (docs/incad.md).
 */
static uint32_t
new_session(const struct incad_job *j, uint32_t n, uint32_t prev)
{
	uint32_t s;

	if (incad.cfg.has_session_seed)
		s = incad.cfg.session_seed ^ ((uint32_t)j->id * 0x9e3779b1u) ^
		    (n * 0x85ebca77u);
	else
		s = (uint32_t)rte_rand();
	while (s == 0 || s == j->token || s == prev)
		s++;
	return s;
}

/*
 * The member secret of rank @rank joining incarnation @n of @j: what its
 * JOIN_ACK carries in the header's bitmap and its LEAVE and HEARTBEAT must
 * carry back, so that a host that forges the member's addresses and has
 * seen the job's token still cannot end its membership (docs/protocol.md,
 * "Member secrets"). Random, never 0; with aggregation.session_seed a
 * function of (seed, job, n, rank) that tests compute too.
 */
/*
 * Membership INFO lines (a job created or deleted, a rank joined or left)
 * are written at most CTRL_LOG_BURST at once and CTRL_LOG_PER_S a second
 * after that; the rest are counted and the count logged when lines are
 * allowed again. A tenant looping JOIN and LEAVE must not make the I/O
 * lcore spend its time in the console and syslog (a log line is a write
 * and a syslog() call: several microseconds, more than a JOIN's work).
 */
#define CTRL_LOG_PER_S 20
#define CTRL_LOG_BURST 100

static uint64_t log_tokens = CTRL_LOG_BURST, log_last, log_suppressed;

/* Refill the budget; say how many lines were left out once it allows. */
static void
ctrl_log_refill(void)
{
	uint64_t now = rte_get_timer_cycles(), per = rte_get_timer_hz() / CTRL_LOG_PER_S;

	if (log_last == 0)
		log_last = now;
	if (now - log_last >= per) {
		log_tokens += (now - log_last) / per;
		if (log_tokens > CTRL_LOG_BURST)
			log_tokens = CTRL_LOG_BURST;
		log_last = now - (now - log_last) % per;
	}
	if (log_suppressed != 0 && log_tokens != 0) {
		log_tokens--;
		INCAD_LOG(ctrl, NOTICE, "%" PRIu64 " membership log lines suppressed (more than "
			  "%d a second)", log_suppressed, CTRL_LOG_PER_S);
		log_suppressed = 0;
	}
}

static bool
ctrl_log_ok(void)
{
	ctrl_log_refill();
	if (log_tokens == 0) {
		log_suppressed++;
		return false;
	}
	log_tokens--;
	return true;
}

#define CTRL_INFO(...) \
	do { \
		if (ctrl_log_ok()) \
			INCAD_LOG(ctrl, INFO, __VA_ARGS__); \
	} while (0)

static uint32_t
new_secret(const struct incad_job *j, uint32_t n, unsigned int rank)
{
	uint32_t s;

	if (incad.cfg.has_session_seed)
		s = incad.cfg.session_seed ^ ((uint32_t)j->id * 0x9e3779b1u) ^
		    (n * 0x85ebca77u) ^ ((rank + 1) * 0xc2b2ae3du);
	else
		s = (uint32_t)rte_rand();
	return s != 0 ? s : 1;
}

static struct incad_job *
job_create(uint16_t id, unsigned int tenant, uint32_t token, uint16_t nworkers,
	   uint16_t pool_size, uint16_t max_elems, uint16_t dtypes, uint16_t ops,
	   uint16_t window, const struct incad_job_conf *conf, int *err)
{
	struct agg_job_params p = {
		.job = id,
		.token = token,
		.nworkers = nworkers,
		.pool_size = pool_size,
		.max_elems = max_elems,
		.dtypes = dtypes,
		.ops = ops,
		.seq_check = true,
		.tree = conf != NULL && conf->has_parent,
	};
	struct incad_job *j;
	int64_t base;

	base = slot_alloc(pool_size);
	if (base < 0) {
		*err = (int)base;
		return NULL;
	}
	j = rte_zmalloc("incad_job", sizeof(*j), RTE_CACHE_LINE_SIZE);
	if (j == NULL)
		goto err_slots;
	j->view = calloc(1, sizeof(*j->view));
	if (j->view == NULL)
		goto err_job;
	if (p.tree) {
		j->up = calloc(1, sizeof(*j->up));
		if (j->up == NULL)
			goto err_view;
		j->up->conf = conf;
	}
	j->agg = agg_job_create(&p);
	if (j->agg == NULL)
		goto err_view;
	j->id = id;
	j->token = token;
	j->incarnations = 1;
	j->view->session = new_session(j, 1, 0);
	agg_job_set_token(j->agg, j->view->session);
	j->id = id;
	j->token = token;
	j->dynamic = conf == NULL;
	j->tenant = tenant;
	j->prio = conf != NULL ? conf->priority : incad.cfg.tenants[tenant].priority;
	j->conf = conf;
	j->window = window < pool_size ? window : pool_size;
	j->pool_base = (uint32_t)base;
	j->created = incad_now();
	TAILQ_INSERT_TAIL(&job_list, j, next);
	__atomic_store_n(&tenant_used[tenant], tenant_used[tenant] + pool_size,
			 __ATOMIC_RELAXED);
	__atomic_store_n(&slots_used, slots_used + pool_size, __ATOMIC_RELAXED);
	__atomic_store_n(&jobs_bytes, jobs_bytes + agg_job_footprint(&p) + sizeof(*j),
			 __ATOMIC_RELAXED);
	/* Published last: a reader that finds the job finds it whole. */
	__atomic_store_n(&incad_jobs[id], j, __ATOMIC_RELEASE);
	CTRL_INFO("job %u created (%s, tenant %s): %u workers, %u slots at %u, "
		  "%u elements", id, conf ? "static" : "dynamic", incad.cfg.tenants[tenant].name,
		  nworkers, pool_size, j->pool_base, max_elems);
	return j;

err_view:
	free(j->up);
	free(j->view);
err_job:
	rte_free(j);
err_slots:
	slot_mark((uint32_t)base, pool_size, false);
	*err = -ENOMEM;
	return NULL;
}

/*
 * Objects unpublished but perhaps still read by an lcore or a telemetry
 * thread: freed once an RCU grace period started after their removal has
 * passed. Deferring keeps the common control operations (a JOIN, a job
 * deletion) from waiting for the other lcores; only a reset of a job's
 * sets still waits, since it must not race agg_contribute().
 */
#define RETIRE_MAX 1024

enum retire_kind {
	RETIRE_VIEW,
	RETIRE_JOB,
};

static struct {
	void *p;
	enum retire_kind kind;
	uint64_t token;
} retired[RETIRE_MAX];
static unsigned int retired_head, retired_tail;

static void
retired_free(void *p, enum retire_kind kind)
{
	struct incad_job *j = p;

	if (kind == RETIRE_VIEW) {
		free(p);
		return;
	}
	agg_job_destroy(j->agg);
	free(j->up);
	free(j->view);
	rte_free(j);
}

/*
 * Wait for a grace period, as rte_rcu_qsbr_synchronize() would, but
 * sleeping between looks instead of spinning: the control thread may share
 * its CPU with the I/O lcore whose quiescent state it waits for (EAL puts
 * control threads on the main lcore's CPU when the lcores take the rest).
 */
static void
grace_period(void)
{
	uint64_t t = rte_rcu_qsbr_start(incad.qs);

	while (rte_rcu_qsbr_check(incad.qs, t, false) != 1)
		rte_delay_us_sleep(2);
}

/*
 * Free what every reader has let go of; with @wait, everything. The
 * control thread is no RCU reader (it is the writer), so it reports no
 * quiescent state and its waits never wait for itself.
 */
static void
reclaim(bool wait)
{
	while (retired_tail != retired_head) {
		unsigned int i = retired_tail % RETIRE_MAX;

		if (rte_rcu_qsbr_check(incad.qs, retired[i].token, wait) != 1)
			break;
		retired_free(retired[i].p, retired[i].kind);
		retired_tail++;
	}
}

static void
retire(void *p, enum retire_kind kind)
{
	unsigned int i;

	if (retired_head - retired_tail == RETIRE_MAX) {
		/* Full: wait for a grace period, which frees everything queued. */
		grace_period();
		reclaim(false);
	}
	i = retired_head++ % RETIRE_MAX;
	retired[i].p = p;
	retired[i].kind = kind;
	retired[i].token = rte_rcu_qsbr_start(incad.qs);
}

/* Unpublish @j, give its slots back and free it once no reader holds it. */
static void
job_destroy(struct incad_job *j)
{
	uint16_t pool = j->agg->p.pool_size;

	__atomic_store_n(&incad_jobs[j->id], NULL, __ATOMIC_RELEASE);
	TAILQ_REMOVE(&job_list, j, next);
	slot_mark(j->pool_base, pool, false);
	__atomic_store_n(&tenant_used[j->tenant], tenant_used[j->tenant] - pool,
			 __ATOMIC_RELAXED);
	__atomic_store_n(&slots_used, slots_used - pool, __ATOMIC_RELAXED);
	__atomic_store_n(&jobs_bytes, jobs_bytes - agg_job_footprint(&j->agg->p) - sizeof(*j),
			 __ATOMIC_RELAXED);
	CTRL_INFO("job %u deleted, %u slots returned", j->id, pool);
	retire(j, RETIRE_JOB);
}

/*
 * Publish a new member view. With @reset the job is paused first and its
 * sets are reset once every lcore has left agg_contribute(): a job that
 * lost a member can never complete its open sets. The grace period is
 * waited for here, on the control thread: the dataplane lcores go on
 * with every other job meanwhile (this one's contributions are dropped,
 * JOB_RESETTING, until its sets are reset).
 */
static int
view_update(struct incad_job *j, const struct incad_view *nv, bool reset)
{
	struct incad_view *n = malloc(sizeof(*n));
	struct incad_view *old = j->view;

	if (n == NULL)
		return -ENOMEM;
	*n = *nv;
	if (reset)
		__atomic_store_n(&j->paused, 1, __ATOMIC_RELEASE);
	agg_job_set_members(j->agg, n->live);
	__atomic_store_n(&j->view, n, __ATOMIC_RELEASE);
	if (!reset) {
		retire(old, RETIRE_VIEW);
		return 0;
	}
	grace_period();
	agg_job_reset(j->agg);
	agg_job_set_token(j->agg, n->session);
	j->resets++;
	__atomic_store_n(&j->paused, 0, __ATOMIC_RELEASE);
	free(old);
	return 0;
}

/*
 * The token of dynamic job @job of a tenant with a job_key: the first four
 * bytes (big endian) of HMAC-SHA256(job_key, "INCA job token" || job as
 * two bytes, big endian), 1 instead of 0. Knowing one job's token tells
 * nothing of another's (docs/incad.md, "job_key"); `incactl job-token`
 * computes the same.
 */
uint32_t
incad_job_token(const struct incad_tenant_conf *tc, uint16_t job)
{
	static const char label[] = "INCA job token";
	uint8_t msg[sizeof(label) - 1 + 2], mac[EVP_MAX_MD_SIZE];
	unsigned int len = 0;
	uint32_t token;

	memcpy(msg, label, sizeof(label) - 1);
	msg[sizeof(label) - 1] = (uint8_t)(job >> 8);
	msg[sizeof(label)] = (uint8_t)job;
	if (HMAC(EVP_sha256(), tc->job_key, (int)tc->job_key_len, msg, sizeof(msg), mac,
		 &len) == NULL || len < 4)
		return 0; /* matches no JOIN: a token is never 0 */
	token = (uint32_t)mac[0] << 24 | (uint32_t)mac[1] << 16 | (uint32_t)mac[2] << 8 | mac[3];
	return token != 0 ? token : 1;
}

/* The tenant a JOIN of a job that does not exist belongs to, or -1. */
static int
tenant_find(uint16_t job, uint32_t token)
{
	unsigned int t;

	for (t = 0; t < incad.cfg.ntenants; t++) {
		const struct incad_tenant_conf *tc = &incad.cfg.tenants[t];

		if (job < tc->job_min || job > tc->job_max)
			continue;
		if (tc->job_key_len != 0 ? incad_job_token(tc, job) == token :
					   tc->has_token && tc->token == token)
			return (int)t;
	}
	return -1;
}

static bool
source_allowed(const struct incad_tenant_conf *tc, uint32_t ip)
{
	unsigned int i;

	if (tc->nprefixes == 0)
		return true;
	for (i = 0; i < tc->nprefixes; i++)
		if ((ip & tc->prefixes[i].mask) == tc->prefixes[i].addr)
			return true;
	return false;
}

/* A tenant bound to VLANs admits JOINs only from them (0: untagged). */
static bool
vlan_allowed(const struct incad_tenant_conf *tc, uint16_t vlan)
{
	unsigned int i;

	if (tc->nvlans == 0)
		return true;
	for (i = 0; i < tc->nvlans; i++)
		if (tc->vlans[i] == vlan)
			return true;
	return false;
}

/*
 * JOINs per tenant (its control_rate per second, control_burst at once):
 * an srTCM meter per tenant, with the per-source meter's colours, run on
 * the control thread once the JOIN's token has named its tenant, so that
 * only holders of the tenant's tokens spend its budget. A tenant whose
 * hosts are many (each under control.rate) still gets no more of the
 * control thread's JOINs than this, and another tenant's JOIN is admitted
 * beside it. Only the control thread touches these meters.
 */
static struct rte_meter_srtcm_profile trl_profile[INCAD_MAX_TENANTS];
static struct rte_meter_srtcm trl[INCAD_MAX_TENANTS];
static bool trl_on[INCAD_MAX_TENANTS];

static int
tenant_rate_init(void)
{
	unsigned int t;
	int ret;

	for (t = 0; t < incad.cfg.ntenants; t++) {
		const struct incad_tenant_conf *tc = &incad.cfg.tenants[t];
		struct rte_meter_srtcm_params p = {
			.cir = tc->ctrl_rate,
			.cbs = tc->ctrl_burst,
			.ebs = tc->ctrl_burst,
		};

		trl_on[t] = false;
		if (tc->ctrl_rate == 0)
			continue;
		ret = rte_meter_srtcm_profile_config(&trl_profile[t], &p);
		if (ret == 0)
			ret = rte_meter_srtcm_config(&trl[t], &trl_profile[t]);
		if (ret != 0)
			return ret;
		trl_on[t] = true;
	}
	return 0;
}

/* True when the JOIN in @m of tenant @t may go on; else answered or dropped. */
static bool
tenant_rate_ok(struct incad_lcore *lc, struct rte_mbuf *m, unsigned int t)
{
	enum rte_color col;

	if (!trl_on[t])
		return true;
	col = rte_meter_srtcm_color_blind_check(&trl[t], &trl_profile[t], rte_get_tsc_cycles(),
						1);
	if (col == RTE_COLOR_GREEN)
		return true;
	lc->st.tenant_ctrl_limited[t]++;
	if (col == RTE_COLOR_YELLOW)
		nack(lc, m, INCA_NACK_RATE_LIMITED);
	else
		incad_drop_mbuf(lc, m, INCAD_DROP_CTRL_TENANT_RATE);
	return false;
}

static void
join_ack(struct incad_lcore *lc, struct rte_mbuf *m, const struct incad_job *j)
{
	const struct incad_member *mb = &j->view->m[incad_meta(m)->msg.rank];
	const struct incad_grant *g = &j->view->g;
	struct inca_ctrl_info c;

	caps_info(&c);
	c.dtypes = g->dtypes;
	c.ops = g->ops;
	c.max_elems = g->max_elems;
	c.nworkers = j->agg->p.nworkers;
	c.pool_size = j->agg->p.pool_size;
	c.window = g->window;
	c.pool_base = j->pool_base;
	c.session = j->view->session;
	/* A tree leaf routes chunks upward only to a parent that takes them
	 * (docs/protocol.md, "Routed chunks in a tree"); else its workers use
	 * the forms without ROUTED. JOINs are answered only while the
	 * uplink holds a session, so its caps are the parent's. */
	if (j->agg->p.tree && (j->up == NULL || !(j->up->caps & INCA_CAP_ROUTED)))
		c.caps &= ~INCA_CAP_ROUTED;
	/* The member's secret rides in the header; a RoCE member also
	 * learns where its CONTRIBs go. */
	if (mb->qpn != 0) {
		struct inca_roce_ext x = {.qpn = incad.cfg.roce_qpn, .qkey = incad.cfg.roce_qkey};

		reply_ext(lc, m, INCA_MSG_JOIN_ACK, 0, &c, &x, mb->secret);
		return;
	}
	reply_ext(lc, m, INCA_MSG_JOIN_ACK, 0, &c, NULL, mb->secret);
}

static void
ctrl_join(struct incad_lcore *lc, struct rte_mbuf *m, uint64_t now)
{
	const struct incad_meta *meta = incad_meta(m);
	const struct inca_msg *msg = &meta->msg;
	const struct incad_tenant_conf *tc;
	const struct incad_member_conf *fixed;
	struct incad_job *j = incad_jobs[msg->job];
	uint32_t bit = 1u << msg->rank;
	struct inca_ctrl_info c;
	struct incad_grant g;
	struct incad_view nv;
	struct inca_roce_ext x = {0};
	uint16_t wanted_d, wanted_o, nworkers;
	bool created = false, roce;
	int t, err = 0;

	inca_ctrl_decode(msg->body, &c);
	/* A queue pair to bind: only when incad offers RoCE, as CAPS says;
	 * otherwise the JOIN is one incad does not understand. */
	roce = inca_roce_ext_decode(msg, &x) != 0;
	if (roce && !incad.cfg.roce) {
		lc->st.wire[INCA_WIRE_CTRL_LEN]++;
		rte_pktmbuf_free(m);
		return;
	}
	if (c.ver_min > INCA_PROTO_VERSION || c.ver_max < INCA_PROTO_VERSION) {
		nack(lc, m, INCA_NACK_BAD_VERSION);
		return;
	}
	if (j != NULL) {
		if (msg->token != j->token) {
			nack(lc, m, INCA_NACK_BAD_TOKEN);
			return;
		}
		t = (int)j->tenant;
		/* A tree leaf not joined to its parent could not complete a
		 * chunk: the worker retries, or falls back when it gives up. */
		if (j->up != NULL && __atomic_load_n(&j->up->session, __ATOMIC_ACQUIRE) == 0) {
			incad_drop_mbuf(lc, m, INCAD_DROP_UPLINK_DOWN);
			return;
		}
	} else {
		t = tenant_find(msg->job, msg->token);
		if (t < 0 || !incad.cfg.tenants[t].dynamic_jobs) {
			nack(lc, m, INCA_NACK_UNKNOWN_JOB);
			return;
		}
	}
	if (!tenant_rate_ok(lc, m, (unsigned int)t))
		return;
	tc = &incad.cfg.tenants[t];
	if (!source_allowed(tc, meta->src_ip) || !vlan_allowed(tc, meta->vlan)) {
		nack(lc, m, INCA_NACK_NOT_MEMBER);
		return;
	}
	nworkers = j != NULL ? j->agg->p.nworkers : c.nworkers;
	if (c.nworkers != nworkers || msg->rank >= nworkers) {
		nack(lc, m, INCA_NACK_BAD_PARAMS);
		return;
	}
	if (j != NULL && j->conf != NULL && (j->conf->fixed & bit)) {
		fixed = &j->conf->members[msg->rank];
		if (fixed->ip != meta->src_ip ||
		    (fixed->udp_port != 0 && fixed->udp_port != meta->src_port)) {
			nack(lc, m, INCA_NACK_NOT_MEMBER);
			return;
		}
	}
	wanted_d = c.dtypes != 0 ? c.dtypes : (uint16_t)(1u << msg->dtype);
	wanted_o = c.ops != 0 ? c.ops : (uint16_t)(1u << msg->op);
	if (wanted_d & ~(j != NULL ? j->agg->p.dtypes : ALL_DTYPES)) {
		nack(lc, m, INCA_NACK_UNSUPPORTED_DTYPE);
		return;
	}
	if (wanted_o & ~(j != NULL ? j->agg->p.ops : ALL_OPS)) {
		nack(lc, m, INCA_NACK_UNSUPPORTED_OP);
		return;
	}

	if (j == NULL) {
		uint16_t max_e = c.max_elems != 0 && c.max_elems < incad.cfg.max_elems ?
			c.max_elems : incad.cfg.max_elems;
		uint32_t pool = c.pool_size != 0 ? c.pool_size : incad.cfg.pool_size;
		uint32_t avail = tc->slot_quota - tenant_used[t];

		/* A worker asking for more than is left gets what is left. */
		if (avail == 0) {
			nack(lc, m, INCA_NACK_QUOTA_EXHAUSTED);
			return;
		}
		if (pool > avail)
			pool = avail;
		/* The first JOIN fixes what the job may aggregate. */
		j = job_create(msg->job, (unsigned int)t, msg->token, nworkers, (uint16_t)pool,
			       max_e, wanted_d, wanted_o, incad.cfg.window, NULL, &err);
		if (j == NULL) {
			nack(lc, m, INCA_NACK_NO_SLOTS);
			return;
		}
		created = true;
	}

	if ((j->view->live & bit) && !incad_member_match(&j->view->m[msg->rank], meta)) {
		nack(lc, m, INCA_NACK_JOB_FULL);
		return;
	}
	if ((j->view->cur & bit) && j->view->m[msg->rank].qpn == x.qpn) {
		/* A repeated JOIN from the member's address gets the same answer. */
		__atomic_store_n(&j->last_seen[msg->rank], now, __ATOMIC_RELAXED);
		join_ack(lc, m, j);
		return;
	}

	/*
	 * The first JOIN of an incarnation fixes window and max_elems for all
	 * its members: min(ask, the job's). A later JOIN that asks for less
	 * could not use the others' chunk geometry or window: refused.
	 */
	nv = *j->view;
	if (nv.cur == 0) {
		uint16_t jmax = j->agg->p.max_elems, jwin = j->window;

		/* A tree leaf grants no more than its parent granted it. */
		if (j->up != NULL) {
			jmax = j->up->max_elems < jmax ? j->up->max_elems : jmax;
			jwin = j->up->window < jwin ? j->up->window : jwin;
		}
		nv.g.max_elems = c.max_elems != 0 && c.max_elems < jmax ? c.max_elems : jmax;
		nv.g.window = c.window != 0 && c.window < jwin ? c.window : jwin;
		nv.g.dtypes = j->agg->p.dtypes;
		nv.g.ops = j->agg->p.ops;
	} else if ((c.max_elems != 0 && c.max_elems < nv.g.max_elems) ||
		   (c.window != 0 && c.window < nv.g.window)) {
		nack(lc, m, INCA_NACK_BAD_PARAMS);
		return;
	}
	g = nv.g;
	nv.cur |= bit;
	nv.live |= bit;
	nv.evicted &= ~bit;
	nv.lost &= ~bit;
	nv.m[msg->rank].ip = meta->src_ip;
	nv.m[msg->rank].local_ip = meta->dst_ip;
	nv.m[msg->rank].udp_port = meta->src_port;
	nv.m[msg->rank].port = meta->in_port;
	nv.m[msg->rank].vlan = meta->vlan;
	memcpy(nv.m[msg->rank].mac, meta->src_mac, 6);
	nv.m[msg->rank].qpn = roce ? x.qpn : 0;
	nv.m[msg->rank].qkey = roce ? x.qkey : 0;
	nv.m[msg->rank].secret = new_secret(j, __atomic_load_n(&j->incarnations, __ATOMIC_RELAXED),
					    msg->rank);
	__atomic_store_n(&j->last_seen[msg->rank], now, __ATOMIC_RELAXED);
	if (view_update(j, &nv, false) != 0) {
		if (created)
			job_destroy(j);
		nack(lc, m, INCA_NACK_NO_SLOTS);
		return;
	}
	j->grant[msg->rank] = g;
	CTRL_INFO("job %u: rank %u joined from port %s", j->id, msg->rank,
		  incad.ports[meta->in_port].name);
	join_ack(lc, m, j);
}

/*
 * A tree leaf's incarnation is about to be replaced: nothing of the next
 * one goes up under the parent session of this one (the uplink, on the
 * I/O lcore, leaves it and joins anew), and no parent session is
 * published until uplink_release(). The uplink stores a session and then
 * loads 'resetting'; here 'resetting' is stored and then the session:
 * with both sequentially consistent, either it sees 'resetting' and takes
 * its session back, or the zero stored here overwrites it.
 */
static void
uplink_hold(struct incad_job *j)
{
	if (j->up == NULL)
		return;
	__atomic_store_n(&j->up->resetting, 1, __ATOMIC_SEQ_CST);
	__atomic_store_n(&j->up->session, 0, __ATOMIC_SEQ_CST);
}

static void
uplink_release(struct incad_job *j)
{
	if (j->up != NULL)
		__atomic_store_n(&j->up->resetting, 0, __ATOMIC_RELEASE);
}

/* Remove the ranks in @gone (evicted when @evicted); may delete the job. */
static void
members_remove(struct incad_job *j, uint32_t gone, bool evicted)
{
	struct incad_view nv = *j->view;

	uplink_hold(j);

	nv.live &= ~gone;
	if (evicted)
		nv.evicted |= gone;
	/*
	 * A new incarnation, whose session nobody knows until they join
	 * again. When nobody has joined the current one yet (members leaving
	 * one after the other), it stays: its predecessor's late LEAVEs must
	 * still be recognised (ctrl_leave()).
	 */
	if (nv.cur != 0) {
		nv.prev_session = nv.session;
		nv.session = new_session(j, __atomic_add_fetch(&j->incarnations, 1, __ATOMIC_RELAXED),
					 nv.session);
		nv.cur = 0;
	}
	/* The others learn of the loss through MEMBER_LOST; with nobody left
	 * there is nobody to tell. */
	nv.lost = nv.live != 0 ? nv.lost | gone : 0;
	if (view_update(j, &nv, true) != 0) {
		/* Keep the old view, but never aggregate with a missing member. */
		__atomic_store_n(&j->paused, 1, __ATOMIC_RELEASE);
		INCAD_LOG(ctrl, ERR, "job %u: out of memory, job paused", j->id);
		uplink_release(j);
		return;
	}
	uplink_release(j);
	if (nv.live == 0 && j->dynamic)
		job_destroy(j);
}

void
incad_ctrl_job_restart(struct incad_job *j)
{
	struct incad_view nv = *j->view;

	uplink_hold(j);
	if (nv.cur == 0) {
		uplink_release(j);
		return;   /* nobody knows this incarnation: nothing of it to end */
	}
	nv.prev_session = nv.session;
	nv.session = new_session(j, __atomic_add_fetch(&j->incarnations, 1, __ATOMIC_RELAXED),
				 nv.session);
	nv.cur = 0;
	if (view_update(j, &nv, true) != 0) {
		__atomic_store_n(&j->paused, 1, __ATOMIC_RELEASE);
		INCAD_LOG(ctrl, ERR, "job %u: out of memory, job paused", j->id);
	}
	uplink_release(j);
}

static void
ctrl_leave(struct incad_lcore *lc, struct rte_mbuf *m)
{
	const struct incad_meta *meta = incad_meta(m);
	const struct inca_msg *msg = &meta->msg;
	struct incad_job *j = incad_jobs[msg->job];
	uint32_t bit = 1u << msg->rank;
	const struct incad_view *v;
	struct incad_view nv;

	/* A LEAVE is answered even when there is nothing left to do, so a
	 * worker whose LEAVE_ACK was lost can retransmit. */
	if (j == NULL) {
		reply(lc, m, INCA_MSG_LEAVE_ACK, 0, NULL);
		return;
	}
	v = j->view;
	/* Neither the member nor its session: not worth an answer. */
	if (!incad_member_match(&v->m[msg->rank], meta)) {
		incad_drop_mbuf(lc, m, INCAD_DROP_CTRL_NOT_MEMBER);
		return;
	}
	if (msg->token != v->session && !incad_prev_session(v, msg->token)) {
		incad_drop_mbuf(lc, m, INCAD_DROP_CTRL_BAD_TOKEN);
		return;
	}
	/*
	 * The previous incarnation's session frees a rank only if it has not
	 * joined the current one: a late copy of the LEAVE of a rank that has
	 * rejoined since must not reset the job under its new members. (It
	 * carries the secret of the membership it ended, not the new one's.)
	 */
	if (incad_prev_session(v, msg->token) && (v->cur & bit)) {
		lc->st.drop[INCAD_DROP_STALE_SESSION]++;
		reply(lc, m, INCA_MSG_LEAVE_ACK, 0, NULL);
		return;
	}
	/* The address and the token are seen by anyone on the path: only the
	 * member knows its secret. */
	if (msg->bitmap != v->m[msg->rank].secret) {
		incad_drop_mbuf(lc, m, INCAD_DROP_CTRL_BAD_SECRET);
		return;
	}
	if (v->live & bit) {
		CTRL_INFO("job %u: rank %u left", j->id, msg->rank);
		members_remove(j, bit, false);
	} else if (v->evicted & bit) {
		nv = *v;
		nv.evicted &= ~bit;
		view_update(j, &nv, false);
	}
	reply(lc, m, INCA_MSG_LEAVE_ACK, 0, NULL);
}

static void
ctrl_heartbeat(struct incad_lcore *lc, struct rte_mbuf *m, uint64_t now)
{
	const struct incad_meta *meta = incad_meta(m);
	const struct inca_msg *msg = &meta->msg;
	struct incad_job *j = incad_jobs[msg->job];
	uint32_t bit = 1u << msg->rank;
	const struct incad_view *v;

	if (j == NULL) {
		nack(lc, m, INCA_NACK_UNKNOWN_JOB);
		return;
	}
	v = j->view;
	/* A non-member is never answered: no reflection, no oracle. */
	if (!incad_member_match(&v->m[msg->rank], meta)) {
		incad_drop_mbuf(lc, m, INCAD_DROP_CTRL_NOT_MEMBER);
		return;
	}
	if (msg->token != v->session && !incad_prev_session(v, msg->token)) {
		incad_drop_mbuf(lc, m, INCAD_DROP_CTRL_BAD_TOKEN);
		return;
	}
	if (msg->bitmap != v->m[msg->rank].secret) {
		incad_drop_mbuf(lc, m, INCAD_DROP_CTRL_BAD_SECRET);
		return;
	}
	if (v->evicted & bit) {
		nack(lc, m, INCA_NACK_EVICTED);
	} else if (!(v->live & bit)) {
		nack(lc, m, INCA_NACK_NOT_MEMBER);
	} else if (msg->token != v->session) {
		/* Alive, but in an incarnation that has ended: rejoin. */
		__atomic_store_n(&j->last_seen[msg->rank], now, __ATOMIC_RELAXED);
		nack(lc, m, INCA_NACK_MEMBER_LOST);
	} else {
		__atomic_store_n(&j->last_seen[msg->rank], now, __ATOMIC_RELAXED);
		reply(lc, m, INCA_MSG_HEARTBEAT_ACK, 0, NULL);
	}
}

static void
ctrl_hello(struct incad_lcore *lc, struct rte_mbuf *m)
{
	struct inca_ctrl_info c;

	/* Whatever versions the HELLO names: CAPS says which incad speaks. */
	caps_info(&c);
	reply(lc, m, INCA_MSG_CAPS, 0, &c);
}


/*
 * Answer a HELLO or JOIN of another protocol version (decoded with the v1
 * layout) with NACK BAD_VERSION and incad's capabilities. Takes @m.
 */
static void
ctrl_bad_version(struct incad_lcore *lc, struct rte_mbuf *m)
{
	lc->st.cnt[INCAD_CNT_CTRL_RX]++;
	if (incad_meta(m)->msg.type == INCA_MSG_HELLO)
		ctrl_hello(lc, m);
	else
		nack(lc, m, INCA_NACK_BAD_VERSION);
}

/*
 * HELLO and JOIN per source address (control.rate per second, control.burst
 * at once): a single-rate three-colour meter (rte_meter srTCM, counting
 * messages as bytes) per bucket of source addresses. Green passes; yellow
 * (the excess burst) gets NACK RATE_LIMITED; red is dropped silently: "gets
 * RATE_LIMITED and then nothing" (docs/protocol.md). Sources that share a
 * bucket share its rate. The I/O lcore runs these meters, before the ring
 * to the control thread, so that one source's flood is dropped there and
 * never fills the ring; only it touches them, so they need no lock.
 */
#define RL_BUCKETS 4096
static struct rte_meter_srtcm_profile rl_profile;
static struct rte_meter_srtcm *rl;

static int
rate_init(void)
{
	struct rte_meter_srtcm_params p = {
		.cir = incad.cfg.ctrl_rate,
		.cbs = incad.cfg.ctrl_burst,
		.ebs = incad.cfg.ctrl_burst,
	};
	unsigned int i;
	int ret;

	if (incad.cfg.ctrl_rate == 0)
		return 0;
	ret = rte_meter_srtcm_profile_config(&rl_profile, &p);
	if (ret != 0)
		return ret;
	rl = rte_zmalloc("incad_ctrl_rate", RL_BUCKETS * sizeof(*rl), RTE_CACHE_LINE_SIZE);
	if (rl == NULL)
		return -ENOMEM;
	for (i = 0; i < RL_BUCKETS; i++) {
		ret = rte_meter_srtcm_config(&rl[i], &rl_profile);
		if (ret != 0)
			return ret;
	}
	return 0;
}

bool
incad_ctrl_admit(struct incad_lcore *lc, struct rte_mbuf *m)
{
	uint8_t type = incad_meta(m)->msg.type;
	uint32_t b;
	enum rte_color col;

	if (rl == NULL || (type != INCA_MSG_HELLO && type != INCA_MSG_JOIN))
		return true;
	b = rte_hash_crc_4byte(incad_meta(m)->src_ip, 0) & (RL_BUCKETS - 1);
	col = rte_meter_srtcm_color_blind_check(&rl[b], &rl_profile, rte_get_tsc_cycles(), 1);
	if (col == RTE_COLOR_GREEN)
		return true;
	if (col == RTE_COLOR_YELLOW)
		nack(lc, m, INCA_NACK_RATE_LIMITED);
	else
		incad_drop_mbuf(lc, m, INCAD_DROP_CTRL_RATE_LIMITED);
	return false;
}

void
incad_ctrl_handle(struct incad_lcore *lc, struct rte_mbuf *m, uint64_t now)
{
	uint8_t type = incad_meta(m)->msg.type;

	if (incad_meta(m)->msg.version != INCA_PROTO_VERSION) {
		ctrl_bad_version(lc, m);
		return;
	}
	lc->st.cnt[INCAD_CNT_CTRL_RX]++;
	switch (type) {
	case INCA_MSG_HELLO:
		ctrl_hello(lc, m);
		break;
	case INCA_MSG_JOIN:
		ctrl_join(lc, m, now);
		break;
	case INCA_MSG_LEAVE:
		ctrl_leave(lc, m);
		break;
	case INCA_MSG_HEARTBEAT:
		ctrl_heartbeat(lc, m, now);
		break;
	default:
		incad_drop_mbuf(lc, m, INCAD_DROP_UNEXPECTED_MSG);
		break;
	}
}

/*
 * An eviction an operator asked for (/incad/evict): the member is made to
 * look silent for longer than evict_ms, so that the eviction timer, which
 * runs next on the control thread, removes it as it removes any silent
 * member.
 */
static void
evict_requested(uint64_t now)
{
	uint32_t req = __atomic_exchange_n(&incad.evict_req, 0, __ATOMIC_ACQUIRE);
	uint64_t limit = incad.hz * incad.cfg.evict_ms / 1000;
	unsigned int rank = req & 0xff;
	struct incad_job *j;

	if (req == 0)
		return;
	j = incad_job_get((uint16_t)(req >> 8));
	if (j == NULL || rank >= INCA_MAX_WORKERS || !((incad_job_view(j)->live >> rank) & 1))
		return;
	INCAD_LOG(ctrl, NOTICE, "job %u: evicting rank %u on request", j->id, rank);
	__atomic_store_n(&j->last_seen[rank], now - limit - 1, __ATOMIC_RELAXED);
}

void
incad_ctrl_timer(struct incad_lcore *lc, uint64_t now)
{
	int64_t limit = (int64_t)(incad.hz * incad.cfg.evict_ms / 1000);
	struct incad_job *j, *tmp;
	uint32_t live, gone;
	unsigned int r;

	evict_requested(now);
	reclaim(false);
	ctrl_log_refill();
	for (j = TAILQ_FIRST(&job_list); j != NULL; j = tmp) {
		tmp = TAILQ_NEXT(j, next);
		live = j->view->live;
		gone = 0;
		while (live != 0) {
			r = __builtin_ctz(live);
			live &= live - 1;
			/* Signed: another lcore may have stored a later time. */
			if ((int64_t)(now - __atomic_load_n(&j->last_seen[r], __ATOMIC_RELAXED)) >
			    limit)
				gone |= 1u << r;
		}
		if (gone == 0)
			continue;
		lc->st.cnt[INCAD_CNT_EVICT] += __builtin_popcount(gone);
		INCAD_LOG(ctrl, NOTICE, "job %u: evicting ranks 0x%x (silent for %u ms)", j->id,
			  gone, incad.cfg.evict_ms);
		members_remove(j, gone, true);
	}
}

int
incad_ctrl_init(void)
{
	const struct incad_config *cfg = &incad.cfg;
	unsigned int i;
	int err = 0;

	slot_map = calloc((cfg->max_slots + 63) / 64, sizeof(*slot_map));
	if (slot_map == NULL)
		return -ENOMEM;
	err = rate_init();
	if (err == 0)
		err = tenant_rate_init();
	if (err != 0) {
		INCAD_LOG(ctrl, ERR, "control rate limit: %s", strerror(-err));
		return err;
	}
	for (i = 0; i < cfg->njobs; i++) {
		const struct incad_job_conf *jc = &cfg->jobs[i];

		if (job_create(jc->id, jc->tenant, jc->token, jc->nworkers,
			       jc->pool_size, jc->max_elems, jc->dtypes, jc->ops, jc->window, jc,
			       &err) == NULL) {
			INCAD_LOG(ctrl, ERR, "static job %u: %s", jc->id, strerror(-err));
			return err;
		}
	}
	return 0;
}

void
incad_ctrl_fini(void)
{
	struct incad_job *j;

	while ((j = TAILQ_FIRST(&job_list)) != NULL)
		job_destroy(j);
	/* Every reader is offline by now. */
	reclaim(true);
	free(slot_map);
	slot_map = NULL;
	rte_free(rl);
	rl = NULL;
}

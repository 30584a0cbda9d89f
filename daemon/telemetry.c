/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * rte_telemetry commands under /incad/. They run on DPDK's telemetry
 * threads and only read: counters without synchronisation, jobs inside an
 * RCU read-side section (incad_reader_enter, taken by tel_dispatch for
 * every command) so that a job deleted meanwhile is not freed under them,
 * and nothing once incad has started to tear down.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <rte_ethdev.h>
#include <rte_telemetry.h>

#include "arbiter.h"
#include "ctrl.h"
#include "l2.h"
#include "uplink.h"

static const char *
mode_name(void)
{
	return incad.cfg.mode == INCAD_MODE_SWITCH ? "switch" : "aggregator";
}

static int
tel_ports(const char *cmd __rte_unused, const char *params __rte_unused,
	  struct rte_tel_data *d)
{
	struct incad_lcore_stats s;
	char buf[32];
	unsigned int i;

	incad_stats_sum(&s);
	rte_tel_data_start_dict(d);
	for (i = 0; i < incad.nports; i++) {
		const struct incad_port *p = &incad.ports[i];
		struct rte_tel_data *pd = rte_tel_data_alloc();
		struct rte_eth_stats es;

		if (pd == NULL)
			return -ENOMEM;
		memset(&es, 0, sizeof(es));
		rte_eth_stats_get(p->port_id, &es);
		rte_tel_data_start_dict(pd);
		rte_tel_data_add_dict_int(pd, "ethdev", p->port_id);
		rte_tel_data_add_dict_string(pd, "device", p->devname);
		rte_ether_format_addr(buf, sizeof(buf), &p->mac);
		rte_tel_data_add_dict_string(pd, "mac", buf);
		rte_tel_data_add_dict_string(pd, "ipv4",
					     incad_ipv4_str(p->ipv4, buf, sizeof(buf)));
		rte_tel_data_add_dict_u64(pd, "rx", s.port_rx[i]);
		rte_tel_data_add_dict_u64(pd, "tx", s.port_tx[i]);
		rte_tel_data_add_dict_u64(pd, "dev_ipackets", es.ipackets);
		rte_tel_data_add_dict_u64(pd, "dev_opackets", es.opackets);
		rte_tel_data_add_dict_u64(pd, "dev_imissed", es.imissed);
		rte_tel_data_add_dict_u64(pd, "dev_ierrors", es.ierrors);
		rte_tel_data_add_dict_u64(pd, "dev_oerrors", es.oerrors);
		rte_tel_data_add_dict_container(d, p->name, pd, 0);
	}
	return 0;
}

static void
job_counters(const struct incad_job *j, uint64_t *c)
{
	unsigned int i, k;

	memset(c, 0, sizeof(uint64_t) * INCAD_JOB_CNT_COUNT);
	for (i = 0; i < incad.nlcores; i++)
		for (k = 0; k < INCAD_JOB_CNT_COUNT; k++)
			c[k] += __atomic_load_n(&j->st[i].c[k], __ATOMIC_RELAXED);
}

static const char *const job_counter_names[] = {
#define INCAD_X_(n, d) #n,
	INCAD_JOB_COUNTERS(INCAD_X_)
#undef INCAD_X_
};

static void
job_summary(struct rte_tel_data *jd, const struct incad_job *j)
{
	const struct incad_view *v = incad_job_view((struct incad_job *)j);
	uint64_t c[INCAD_JOB_CNT_COUNT];
	unsigned int k;

	job_counters(j, c);
	rte_tel_data_start_dict(jd);
	rte_tel_data_add_dict_int(jd, "id", j->id);
	rte_tel_data_add_dict_string(jd, "tenant", incad.cfg.tenants[j->tenant].name);
	rte_tel_data_add_dict_string(jd, "kind", j->dynamic ? "dynamic" : "static");
	rte_tel_data_add_dict_int(jd, "priority", j->prio);
	rte_tel_data_add_dict_int(jd, "nworkers", j->agg->p.nworkers);
	rte_tel_data_add_dict_int(jd, "members", __builtin_popcount(v->live));
	rte_tel_data_add_dict_u64(jd, "live_mask", v->live);
	rte_tel_data_add_dict_u64(jd, "evicted_mask", v->evicted);
	rte_tel_data_add_dict_u64(jd, "lost_mask", v->lost);
	rte_tel_data_add_dict_int(jd, "pool_size", j->agg->p.pool_size);
	rte_tel_data_add_dict_int(jd, "pool_base", (int)j->pool_base);
	rte_tel_data_add_dict_int(jd, "max_elems", j->agg->p.max_elems);
	rte_tel_data_add_dict_int(jd, "window", j->window);
	rte_tel_data_add_dict_int(jd, "slots_busy", (int)agg_job_busy_slots(j->agg));
	rte_tel_data_add_dict_u64(jd, "resets", j->resets);
	/* The incarnation, not its session token: that one is the members'. */
	rte_tel_data_add_dict_u64(jd, "incarnation",
				  __atomic_load_n(&j->incarnations, __ATOMIC_RELAXED));
	rte_tel_data_add_dict_u64(jd, "joined_mask", v->cur);
	rte_tel_data_add_dict_int(jd, "grant_window", v->g.window);
	rte_tel_data_add_dict_int(jd, "grant_max_elems", v->g.max_elems);
	for (k = 0; k < INCAD_JOB_CNT_COUNT; k++)
		rte_tel_data_add_dict_u64(jd, job_counter_names[k], c[k]);
	if (j->up != NULL) {
		const struct incad_uplink *u = j->up;
		char ip[16];

		/* Racy reads of the uplink's bookkeeping: a snapshot to show. */
		rte_tel_data_add_dict_string(jd, "parent",
					     incad_ipv4_str(u->d.ip, ip, sizeof(ip)));
		rte_tel_data_add_dict_int(jd, "parent_udp_port", u->d.udp_port);
		rte_tel_data_add_dict_int(jd, "parent_job", u->job);
		rte_tel_data_add_dict_int(jd, "parent_rank", u->rank);
		rte_tel_data_add_dict_string(jd, "parent_state", incad_uplink_state_name(u));
		rte_tel_data_add_dict_string(jd, "parent_port", incad.ports[u->d.port].name);
		rte_tel_data_add_dict_u64(jd, "parent_joins", u->joins);
		rte_tel_data_add_dict_u64(jd, "parent_losses", u->losses);
		rte_tel_data_add_dict_string(jd, "parent_last_nack",
					     u->last_nack ? inca_nack_name(u->last_nack) : "none");
	}
}

/* Telemetry answers are at most 16 KiB: list this many jobs, compactly. */
#define TEL_MAX_JOBS 100

static int
tel_jobs(const char *cmd __rte_unused, const char *params __rte_unused,
	 struct rte_tel_data *d)
{
	uint64_t c[INCAD_JOB_CNT_COUNT];
	unsigned int i, n = 0;
	char key[16], buf[128];

	rte_tel_data_start_dict(d);
	for (i = 1; i < RTE_DIM(incad_jobs) && n < TEL_MAX_JOBS; i++) {
		const struct incad_job *j = incad_job_get(i);
		const struct incad_view *v;

		if (j == NULL)
			continue;
		v = incad_job_view((struct incad_job *)j);
		job_counters(j, c);
		snprintf(key, sizeof(key), "%u", i);
		snprintf(buf, sizeof(buf), "tenant=%s prio=%u members=%d/%u slots=%u busy=%u "
			 "complete=%" PRIu64 " drop=%" PRIu64 "%s%s", incad.cfg.tenants[j->tenant].name,
			 j->prio,
			 __builtin_popcount(v->live), j->agg->p.nworkers, j->agg->p.pool_size,
			 agg_job_busy_slots(j->agg), c[INCAD_JOB_COMPLETE], c[INCAD_JOB_DROP],
			 j->up != NULL ? " parent=" : "",
			 j->up != NULL ? incad_uplink_state_name(j->up) : "");
		rte_tel_data_add_dict_string(d, key, buf);
		n++;
	}
	return 0;
}

static int
tel_job(const char *cmd __rte_unused, const char *params, struct rte_tel_data *d)
{
	const struct incad_job *j;
	const struct incad_view *v;
	struct rte_tel_data *md;
	unsigned long id;
	char *end, key[16], buf[96], ip[16], lip[16], qp[24];
	unsigned int r;
	uint32_t known;

	if (params == NULL || *params == '\0')
		return -EINVAL;
	errno = 0;
	id = strtoul(params, &end, 0);
	if (errno != 0 || *end != '\0' || id == 0 || id > 65535)
		return -EINVAL;
	j = incad_job_get((uint16_t)id);
	if (j == NULL) {
			rte_tel_data_string(d, "no such job");
		return 0;
	}
	job_summary(d, j);
	v = incad_job_view((struct incad_job *)j);
	md = rte_tel_data_alloc();
	if (md != NULL) {
		rte_tel_data_start_dict(md);
		known = v->live | v->evicted;
		while (known != 0) {
			r = __builtin_ctz(known);
			known &= known - 1;
			snprintf(key, sizeof(key), "%u", r);
			/* A RoCE member's data comes from its queue pair. */
			qp[0] = '\0';
			if (v->m[r].qpn != 0)
				snprintf(qp, sizeof(qp), " roce qp 0x%06x", v->m[r].qpn);
			snprintf(buf, sizeof(buf), "%s:%u via %s to %s%s%s",
				 incad_ipv4_str(v->m[r].ip, ip, sizeof(ip)), v->m[r].udp_port,
				 incad.ports[v->m[r].port].name,
				 incad_ipv4_str(v->m[r].local_ip, lip, sizeof(lip)), qp,
				 (v->live >> r) & 1 ? "" : " (evicted)");
			rte_tel_data_add_dict_string(md, key, buf);
		}
		rte_tel_data_add_dict_container(d, "member_addrs", md, 0);
	}
	/* Milliseconds since each known member was last heard from. */
	md = rte_tel_data_alloc();
	if (md != NULL) {
		uint64_t now = incad_now();

		rte_tel_data_start_dict(md);
		known = v->live | v->evicted;
		while (known != 0) {
			r = __builtin_ctz(known);
			known &= known - 1;
			snprintf(key, sizeof(key), "%u", r);
			rte_tel_data_add_dict_u64(md, key, (now - __atomic_load_n(&j->last_seen[r],
						  __ATOMIC_RELAXED)) * 1000 / incad.hz);
		}
		rte_tel_data_add_dict_container(d, "member_last_seen_ms", md, 0);
	}
	return 0;
}

/*
 * Evict a live member, as if it had been silent for evict_ms: the request
 * is carried out by the control thread within one timer tick (10 ms); the
 * answer only says it was accepted. Parameters: job id, rank.
 */
static int
tel_evict(const char *cmd __rte_unused, const char *params, struct rte_tel_data *d)
{
	const struct incad_job *j;
	unsigned long id, rank;
	uint32_t req, none = 0;
	char *end;

	if (params == NULL)
		return -EINVAL;
	errno = 0;
	id = strtoul(params, &end, 10);
	if (errno != 0 || end == params || *end != ',' || id == 0 || id > 65535)
		return -EINVAL;
	params = end + 1;
	rank = strtoul(params, &end, 10);
	if (errno != 0 || end == params || *end != '\0' || rank >= INCA_MAX_WORKERS)
		return -EINVAL;
	rte_tel_data_start_dict(d);
	rte_tel_data_add_dict_int(d, "job", (int)id);
	rte_tel_data_add_dict_int(d, "rank", (int)rank);
	j = incad_job_get((uint16_t)id);
	if (j == NULL) {
		rte_tel_data_add_dict_string(d, "error", "no such job");
		return 0;
	}
	if (!((incad_job_view((struct incad_job *)j)->live >> rank) & 1)) {
		rte_tel_data_add_dict_string(d, "error", "rank is not a live member");
		return 0;
	}
	if (incad.cfg.evict_ms == 0) {
		rte_tel_data_add_dict_string(d, "error", "eviction is off (evict_ms = 0)");
		return 0;
	}
	req = (uint32_t)(id << 8 | rank);
	if (!__atomic_compare_exchange_n(&incad.evict_req, &none, req, false, __ATOMIC_RELEASE,
					 __ATOMIC_RELAXED)) {
		rte_tel_data_add_dict_string(d, "error", "another eviction is pending, retry");
		return 0;
	}
	rte_tel_data_add_dict_string(d, "status", "requested");
	return 0;
}

static void
add_drop_prob(struct rte_tel_data *d)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%.9g",
		 (double)__atomic_load_n(&incad.drop_thresh, __ATOMIC_RELAXED) / 4294967296.0);
	rte_tel_data_add_dict_string(d, "drop_prob", buf);
}

/*
 * Probability of dropping each contribution received (counted as
 * incad/INJECTED_LOSS), to test recovery from loss. Parameter: a number
 * in [0, 1]; 0 turns it off; none: only report it.
 */
static int
tel_drop_prob(const char *cmd __rte_unused, const char *params, struct rte_tel_data *d)
{
	double p;
	char *end;

	if (params != NULL && *params != '\0') {
		errno = 0;
		p = strtod(params, &end);
		if (errno != 0 || end == params || *end != '\0' || !(p >= 0.0 && p <= 1.0))
			return -EINVAL;
		__atomic_store_n(&incad.drop_thresh, (uint64_t)llround(p * 4294967296.0),
				 __ATOMIC_RELAXED);
	}
	rte_tel_data_start_dict(d);
	add_drop_prob(d);
	return 0;
}

static int
tel_lcores(const char *cmd __rte_unused, const char *params __rte_unused,
	   struct rte_tel_data *d)
{
	unsigned int i;
	char key[16];

	rte_tel_data_start_dict(d);
	for (i = 0; i < incad.nlcores; i++) {
		const struct incad_lcore *lc = &incad.lcores[i];
		struct rte_tel_data *ld = rte_tel_data_alloc();

		if (ld == NULL)
			return -ENOMEM;
		rte_tel_data_start_dict(ld);
		rte_tel_data_add_dict_int(ld, "lcore_id", (int)lc->lcore_id);
		rte_tel_data_add_dict_string(ld, "role", i == 0 ? "io+aggregation" :
								  "aggregation");
		rte_tel_data_add_dict_u64(ld, "busy_polls", lc->st.busy_polls);
		rte_tel_data_add_dict_u64(ld, "empty_polls", lc->st.empty_polls);
		rte_tel_data_add_dict_u64(ld, "sleeps", lc->st.cnt[INCAD_CNT_IDLE_SLEEP]);
		rte_tel_data_add_dict_u64(ld, "contributions", lc->st.cnt[INCAD_CNT_CONTRIB]);
		rte_tel_data_add_dict_u64(ld, "rx", lc->st.cnt[INCAD_CNT_RX]);
		rte_tel_data_add_dict_u64(ld, "tx", lc->st.cnt[INCAD_CNT_TX]);
		if (lc->rx_ring != NULL)
			rte_tel_data_add_dict_int(ld, "rx_ring_used",
						  (int)rte_ring_count(lc->rx_ring));
		snprintf(key, sizeof(key), "%u", i);
		rte_tel_data_add_dict_container(d, key, ld, 0);
	}
	return 0;
}

static int
tel_drops(const char *cmd __rte_unused, const char *params __rte_unused,
	  struct rte_tel_data *d)
{
	struct incad_lcore_stats s;
	char key[64];
	unsigned int i;

	incad_stats_sum(&s);
	rte_tel_data_start_dict(d);
	for (i = 1; i < INCA_WIRE_ERR_COUNT; i++) {
		snprintf(key, sizeof(key), "wire/%s", inca_wire_err_name(i));
		rte_tel_data_add_dict_u64(d, key, s.wire[i]);
	}
	for (i = 0; i < AGG_DROP_COUNT; i++) {
		snprintf(key, sizeof(key), "core/%s", agg_drop_name(i));
		rte_tel_data_add_dict_u64(d, key, s.agg[i]);
	}
	for (i = 0; i < INCAD_DROP_COUNT; i++) {
		snprintf(key, sizeof(key), "incad/%s", incad_drop_name(i));
		rte_tel_data_add_dict_u64(d, key, s.drop[i]);
	}
	return 0;
}

static int
tel_stats(const char *cmd __rte_unused, const char *params __rte_unused,
	  struct rte_tel_data *d)
{
	struct incad_lcore_stats s;
	char key[64];
	unsigned int i, njobs = 0;

	incad_stats_sum(&s);
	rte_tel_data_start_dict(d);
	rte_tel_data_add_dict_string(d, "mode", mode_name());
	rte_tel_data_add_dict_u64(d, "uptime_ms",
				  (incad_now() - incad.start_tsc) * 1000 / incad.hz);
	rte_tel_data_add_dict_int(d, "ports", (int)incad.nports);
	rte_tel_data_add_dict_int(d, "lcores", (int)incad.nlcores);
	for (i = 1; i < RTE_DIM(incad_jobs); i++)
		njobs += incad_job_get(i) != NULL;
	rte_tel_data_add_dict_int(d, "jobs", (int)njobs);
	rte_tel_data_add_dict_u64(d, "slots_used", incad_slots_used());
	rte_tel_data_add_dict_u64(d, "max_slots", incad.cfg.max_slots);
	rte_tel_data_add_dict_u64(d, "mac_entries", incad_l2_macs());
	rte_tel_data_add_dict_u64(d, "neighbours", incad_l2_neighbours());
	rte_tel_data_add_dict_u64(d, "mem_mbufs_bytes", incad.mbuf_bytes);
	rte_tel_data_add_dict_u64(d, "mem_slots_max_bytes", incad.slot_bytes_max);
	rte_tel_data_add_dict_u64(d, "mem_jobs_bytes", incad_jobs_bytes());
	rte_tel_data_add_dict_u64(d, "mem_tables_bytes", incad.table_bytes);
	rte_tel_data_add_dict_u64(d, "evict_ms", incad.cfg.evict_ms);
	/* RoCEv2 members: incad's queue pair and Q_Key, 0 when not enabled. */
	rte_tel_data_add_dict_u64(d, "roce_qpn", incad.cfg.roce ? incad.cfg.roce_qpn : 0);
	rte_tel_data_add_dict_u64(d, "roce_qkey", incad.cfg.roce ? incad.cfg.roce_qkey : 0);
	add_drop_prob(d);
	for (i = 0; i < INCAD_CNT_COUNT; i++)
		rte_tel_data_add_dict_u64(d, incad_counter_name(i), s.cnt[i]);
	for (i = 1; i < INCA_NACK_MAX_; i++) {
		snprintf(key, sizeof(key), "nack/%s", inca_nack_name(i));
		rte_tel_data_add_dict_u64(d, key, s.nack[i]);
	}
	return 0;
}

static int
tel_tenants(const char *cmd __rte_unused, const char *params __rte_unused,
	    struct rte_tel_data *d)
{
	struct incad_lcore_stats s;
	unsigned int t;

	incad_stats_sum(&s);
	rte_tel_data_start_dict(d);
	for (t = 0; t < incad.cfg.ntenants; t++) {
		const struct incad_tenant_conf *tc = &incad.cfg.tenants[t];
		struct rte_tel_data *td = rte_tel_data_alloc();

		if (td == NULL)
			return -ENOMEM;
		rte_tel_data_start_dict(td);
		rte_tel_data_add_dict_int(td, "job_min", tc->job_min);
		rte_tel_data_add_dict_int(td, "job_max", tc->job_max);
		rte_tel_data_add_dict_u64(td, "slot_quota", tc->slot_quota);
		rte_tel_data_add_dict_u64(td, "slots_used", incad_tenant_used(t));
		rte_tel_data_add_dict_int(td, "dynamic_jobs", tc->dynamic_jobs);
		/* The configured rate (0: none) and what its members sent. */
		rte_tel_data_add_dict_u64(td, "rate_mbps", tc->rate_mbps);
		rte_tel_data_add_dict_u64(td, "burst_kb", tc->burst_kb);
		rte_tel_data_add_dict_u64(td, "contrib_bytes", s.tenant_bytes[t]);
		rte_tel_data_add_dict_u64(td, "rate_drops", s.tenant_rate_drops[t]);
		/* Its JOINs' meter on the control thread (0: none). */
		rte_tel_data_add_dict_u64(td, "control_rate", tc->ctrl_rate);
		rte_tel_data_add_dict_u64(td, "control_burst", tc->ctrl_burst);
		rte_tel_data_add_dict_u64(td, "control_limited", s.tenant_ctrl_limited[t]);
		rte_tel_data_add_dict_container(d, tc->name, td, 0);
	}
	return 0;
}

/*
 * The control thread: its rings, what went through them and what they
 * dropped, whether the test hook holds it.
 */
static int
tel_ctrl(const char *cmd __rte_unused, const char *params __rte_unused,
	 struct rte_tel_data *d)
{
	const struct incad_lcore *c = incad.ctrl;
	struct incad_lcore_stats s;

	incad_stats_sum(&s);
	rte_tel_data_start_dict(d);
	rte_tel_data_add_dict_u64(d, "ring_size", incad.cfg.ctrl_ring_size);
	rte_tel_data_add_dict_u64(d, "rx_ring_used", rte_ring_count(c->rx_ring));
	rte_tel_data_add_dict_u64(d, "tx_ring_used", rte_ring_count(c->tx_ring));
	rte_tel_data_add_dict_u64(d, "queued", s.cnt[INCAD_CNT_CTRL_QUEUED]);
	rte_tel_data_add_dict_u64(d, "handled", c->st.cnt[INCAD_CNT_CTRL_RX]);
	rte_tel_data_add_dict_u64(d, "ring_full", s.drop[INCAD_DROP_CTRL_RING_FULL]);
	rte_tel_data_add_dict_u64(d, "tx_ring_answers", s.cnt[INCAD_CNT_CTRL_TX_RING]);
	rte_tel_data_add_dict_u64(d, "tx_ring_full", c->st.drop[INCAD_DROP_TX_RING_FULL]);
	rte_tel_data_add_dict_u64(d, "wakeups", s.cnt[INCAD_CNT_CTRL_WAKEUP]);
	rte_tel_data_add_dict_u64(d, "source_rate_limited", s.drop[INCAD_DROP_CTRL_RATE_LIMITED]);
	rte_tel_data_add_dict_u64(d, "tenant_rate_limited", s.drop[INCAD_DROP_CTRL_TENANT_RATE]);
	rte_tel_data_add_dict_int(d, "test_stall", incad.cfg.ctrl_test_stall);
	rte_tel_data_add_dict_int(d, "stalled", incad_ctrl_stalled());
	return 0;
}

/*
 * Test hook: hold the control thread for N ms (1..60000), as a slow
 * control plane would be held; refused unless control.test_stall is set.
 * The answer says it was accepted; /incad/ctrl says "stalled" meanwhile.
 */
static int
tel_ctrl_stall(const char *cmd __rte_unused, const char *params, struct rte_tel_data *d)
{
	unsigned long ms;
	char *end;

	if (params == NULL || *params == '\0')
		return -EINVAL;
	errno = 0;
	ms = strtoul(params, &end, 10);
	if (errno != 0 || *end != '\0' || ms == 0 || ms > 60000)
		return -EINVAL;
	rte_tel_data_start_dict(d);
	if (!incad.cfg.ctrl_test_stall) {
		rte_tel_data_add_dict_string(d, "error", "test hook off (control.test_stall)");
		return 0;
	}
	__atomic_store_n(&incad.ctrl_stall_ms, (uint32_t)ms, __ATOMIC_RELEASE);
	incad_ctrl_wake();
	rte_tel_data_add_dict_string(d, "status", "requested");
	return 0;
}

/*
 * The arbitration between priority classes: its configuration and, per
 * class, the share it is configured for, the demand and allowance of the
 * last interval and its running totals (incactl arbitration --measure
 * turns passed_bytes into a rate).
 */
static int
tel_arbitration(const char *cmd __rte_unused, const char *params __rte_unused,
		struct rte_tel_data *d)
{
	static const char *const policies[] = {
		[INCAD_ARB_OFF] = "off", [INCAD_ARB_STRICT] = "strict", [INCAD_ARB_WRR] = "wrr",
	};
	const struct incad_arb_conf *a = &incad.cfg.arb;
	struct incad_lcore_stats s;
	uint64_t wsum = 0;
	unsigned int c;
	char key[16];

	incad_stats_sum(&s);
	rte_tel_data_start_dict(d);
	rte_tel_data_add_dict_string(d, "policy", policies[a->policy]);
	if (a->policy == INCAD_ARB_OFF)
		return 0;
	rte_tel_data_add_dict_u64(d, "capacity_mbps", a->capacity_mbps);
	rte_tel_data_add_dict_u64(d, "burst_kb", a->burst_kb);
	rte_tel_data_add_dict_u64(d, "interval_ms", a->interval_ms);
	for (c = 0; c < INCAD_PRIO_CLASSES; c++)
		wsum += a->weights[c];
	for (c = 0; c < INCAD_PRIO_CLASSES; c++) {
		struct rte_tel_data *cd = rte_tel_data_alloc();
		uint64_t share;

		if (cd == NULL)
			return -ENOMEM;
		/* Configured share: wrr's guarantee when every weighted class
		 * has traffic; under strict any class may take the whole
		 * capacity that the higher ones leave. */
		if (a->policy == INCAD_ARB_WRR)
			share = wsum ? (uint64_t)a->capacity_mbps * a->weights[c] / wsum : 0;
		else
			share = a->capacity_mbps;
		rte_tel_data_start_dict(cd);
		rte_tel_data_add_dict_u64(cd, "weight", a->weights[c]);
		rte_tel_data_add_dict_u64(cd, "share_mbps", share);
		rte_tel_data_add_dict_u64(cd, "demand_kbps",
			__atomic_load_n(&incad_arb.demand[c], __ATOMIC_RELAXED) * 8 / 1000);
		rte_tel_data_add_dict_u64(cd, "allowed_kbps",
			__atomic_load_n(&incad_arb.allow[c], __ATOMIC_RELAXED) * 8 / 1000);
		rte_tel_data_add_dict_u64(cd, "offered_bytes", s.class_offered[c]);
		rte_tel_data_add_dict_u64(cd, "passed_bytes", s.class_bytes[c]);
		rte_tel_data_add_dict_u64(cd, "held", s.class_held[c]);
		snprintf(key, sizeof(key), "%u", c);
		rte_tel_data_add_dict_container(d, key, cd, 0);
	}
	return 0;
}

static const struct {
	const char *cmd;
	telemetry_cb fn;
	const char *help;
} cmds[] = {
	{"/incad/ports", tel_ports, "incad ports: addresses and counters"},
	{"/incad/jobs", tel_jobs, "incad jobs, one summary each"},
	{"/incad/job", tel_job, "one incad job, members included. Parameter: job id"},
	{"/incad/lcores", tel_lcores, "incad dataplane lcores: roles and polls"},
	{"/incad/drops", tel_drops, "incad drops by reason"},
	{"/incad/stats", tel_stats, "incad counters, NACKs sent and memory"},
	{"/incad/tenants", tel_tenants, "incad tenants and their slot use"},
	{"/incad/arbitration", tel_arbitration,
	 "arbitration between priority classes: policy, capacity, each class's share and use"},
	{"/incad/evict", tel_evict, "evict a live member. Parameters: job id, rank"},
	{"/incad/ctrl", tel_ctrl, "incad's control thread: its rings, counters and drops"},
	{"/incad/ctrl_stall", tel_ctrl_stall,
	 "test hook (control.test_stall): hold the control thread. Parameter: ms"},
	{"/incad/drop_prob", tel_drop_prob,
	 "probability of dropping each contribution received. Parameter: 0..1 (0: off)"},
};

static int
tel_dispatch(const char *cmd, const char *params, struct rte_tel_data *d)
{
	unsigned int i;
	int ret;

	for (i = 0; i < RTE_DIM(cmds); i++)
		if (strcmp(cmd, cmds[i].cmd) == 0)
			break;
	if (i == RTE_DIM(cmds))
		return -EINVAL;
	if (!incad_reader_enter())
		return -EAGAIN;
	ret = cmds[i].fn(cmd, params, d);
	incad_reader_exit();
	return ret;
}

int
incad_telemetry_init(void)
{
	unsigned int i;
	int ret;

	for (i = 0; i < RTE_DIM(cmds); i++) {
		ret = rte_telemetry_register_cmd(cmds[i].cmd, tel_dispatch, cmds[i].help);
		if (ret != 0)
			return ret;
	}
	return 0;
}

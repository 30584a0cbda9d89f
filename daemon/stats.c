/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * Counter names, sums over the lcores, the statistics incad prints
 * (periodically and when it stops) and its memory footprint. Counters are
 * written by one lcore each and read here without synchronisation: a sum
 * may be a few packets behind, never torn (64-bit aligned loads).
 */
#include <inttypes.h>
#include <pthread.h>
#include <string.h>

#include <rte_ethdev.h>
#include <rte_lcore.h>

#include "ctrl.h"
#include "incad.h"

static const char *const counter_names[] = {
#define INCAD_X_(n, d) #n,
	INCAD_COUNTERS(INCAD_X_)
#undef INCAD_X_
};

static const char *const drop_names[] = {
#define INCAD_X_(n, d) #n,
	INCAD_DROPS(INCAD_X_)
#undef INCAD_X_
};

static const char *const drop_descs[] = {
#define INCAD_X_(n, d) d,
	INCAD_DROPS(INCAD_X_)
#undef INCAD_X_
};

const char *
incad_counter_name(unsigned int c)
{
	return c < INCAD_CNT_COUNT ? counter_names[c] : "?";
}

const char *
incad_drop_name(unsigned int d)
{
	return d < INCAD_DROP_COUNT ? drop_names[d] : "?";
}

const char *
incad_drop_str(unsigned int d)
{
	return d < INCAD_DROP_COUNT ? drop_descs[d] : "?";
}

static pthread_mutex_t reader_lock = PTHREAD_MUTEX_INITIALIZER;
static bool readers_open;

bool
incad_reader_enter(void)
{
	/* Several telemetry clients each have a thread; they share one RCU
	 * thread id, so they take turns. Dataplane lcores never take this. */
	pthread_mutex_lock(&reader_lock);
	if (!readers_open) {
		pthread_mutex_unlock(&reader_lock);
		return false;
	}
	rte_rcu_qsbr_thread_online(incad.qs, incad.tel_tid);
	return true;
}

void
incad_reader_exit(void)
{
	rte_rcu_qsbr_thread_offline(incad.qs, incad.tel_tid);
	pthread_mutex_unlock(&reader_lock);
}

void
incad_readers_open(bool open)
{
	pthread_mutex_lock(&reader_lock);
	readers_open = open;
	pthread_mutex_unlock(&reader_lock);
}

void
incad_stats_sum(struct incad_lcore_stats *out)
{
	const uint64_t *src;
	uint64_t *dst = (uint64_t *)out;
	unsigned int i, k, n = sizeof(*out) / sizeof(uint64_t);

	memset(out, 0, sizeof(*out));
	/* The dataplane lcores, then the control thread (index nlcores). */
	for (i = 0; i <= incad.nlcores; i++) {
		if (i == incad.nlcores && incad.ctrl == NULL)
			break;
		src = (const uint64_t *)(i < incad.nlcores ? &incad.lcores[i].st : &incad.ctrl->st);
		for (k = 0; k < n; k++)
			dst[k] += __atomic_load_n(&src[k], __ATOMIC_RELAXED);
	}
}

static void
print_job(FILE *f, const struct incad_job *j)
{
	const struct incad_view *v = incad_job_view((struct incad_job *)j);
	uint64_t c[INCAD_JOB_CNT_COUNT] = {0};
	unsigned int i, k;

	for (i = 0; i < incad.nlcores; i++)
		for (k = 0; k < INCAD_JOB_CNT_COUNT; k++)
			c[k] += j->st[i].c[k];
	fprintf(f, "job %u: tenant %s %s nworkers %u members 0x%x evicted 0x%x lost 0x%x "
		"slots %u busy %u contrib %" PRIu64 " complete %" PRIu64 " replay %" PRIu64
		" drop %" PRIu64 " resets %" PRIu64 "\n",
		j->id, incad.cfg.tenants[j->tenant].name, j->dynamic ? "dynamic" : "static",
		j->agg->p.nworkers, v->live, v->evicted, v->lost, j->agg->p.pool_size,
		agg_job_busy_slots(j->agg), c[INCAD_JOB_CONTRIB], c[INCAD_JOB_COMPLETE],
		c[INCAD_JOB_REPLAY], c[INCAD_JOB_DROP], j->resets);
}

void
incad_stats_print(FILE *f, const char *title)
{
	struct incad_lcore_stats s;
	struct rte_eth_stats es;
	uint64_t total = 0;
	unsigned int i;

	if (!incad_reader_enter())
		return;
	incad_stats_sum(&s);
	fprintf(f, "incad: %s after %.3f s\n", title,
		(double)(incad_now() - incad.start_tsc) / (double)incad.hz);
	for (i = 0; i < incad.nports; i++) {
		const struct incad_port *p = &incad.ports[i];

		memset(&es, 0, sizeof(es));
		rte_eth_stats_get(p->port_id, &es);
		fprintf(f, "port %s: rx %" PRIu64 " tx %" PRIu64 " dev_ipackets %" PRIu64
			" dev_opackets %" PRIu64 " dev_imissed %" PRIu64 " dev_ierrors %" PRIu64
			" dev_oerrors %" PRIu64 "\n",
			p->name, s.port_rx[i], s.port_tx[i], es.ipackets, es.opackets, es.imissed,
			es.ierrors, es.oerrors);
	}
	for (i = 1; i < RTE_DIM(incad_jobs); i++) {
		const struct incad_job *j = incad_job_get(i);

		if (j != NULL)
			print_job(f, j);
	}
	for (i = 0; i < INCAD_CNT_COUNT; i++)
		if (s.cnt[i] != 0)
			fprintf(f, "counter %s %" PRIu64 "\n", counter_names[i], s.cnt[i]);
	for (i = 1; i < INCA_NACK_MAX_; i++)
		if (s.nack[i] != 0)
			fprintf(f, "nack %s %" PRIu64 "\n", inca_nack_name(i), s.nack[i]);
	for (i = 1; i < INCA_WIRE_ERR_COUNT; i++)
		if (s.wire[i] != 0) {
			fprintf(f, "drop wire/%s %" PRIu64 "\n", inca_wire_err_name(i), s.wire[i]);
			total += s.wire[i];
		}
	for (i = 0; i < AGG_DROP_COUNT; i++)
		if (s.agg[i] != 0) {
			fprintf(f, "drop core/%s %" PRIu64 "\n", agg_drop_name(i), s.agg[i]);
			total += s.agg[i];
		}
	for (i = 0; i < INCAD_DROP_COUNT; i++)
		if (s.drop[i] != 0) {
			fprintf(f, "drop incad/%s %" PRIu64 "\n", drop_names[i], s.drop[i]);
			total += s.drop[i];
		}
	fprintf(f, "drops total %" PRIu64 "\n", total);
	fflush(f);
	incad_reader_exit();
}

void
incad_stats_timer(struct incad_lcore *lc, uint64_t now)
{
	if (lc->lcore_id == rte_get_main_lcore())
		incad_stats_periodic(now);
}

void
incad_stats_periodic(uint64_t now)
{
	static uint64_t next;

	if (incad.cfg.stats_interval == 0)
		return;
	if (next == 0)
		next = now + incad.cfg.stats_interval * incad.hz;
	if (now < next)
		return;
	next = now + incad.cfg.stats_interval * incad.hz;
	incad_stats_print(stdout, "statistics");
}

void
incad_footprint_print(FILE *f)
{
	const double mib = 1024.0 * 1024.0;

	fprintf(f, "incad: memory footprint: mbufs %.1f MiB (%u x %u bytes), slots up to "
		"%.1f MiB (%u slots x %u elements), tables %.1f MiB, total up to %.1f MiB\n",
		incad.mbuf_bytes / mib, incad.cfg.mbufs, incad.pool->elt_size,
		incad.slot_bytes_max / mib, incad.cfg.max_slots, incad.cfg.max_elems,
		incad.table_bytes / mib,
		(incad.mbuf_bytes + incad.slot_bytes_max + incad.table_bytes) / mib);
	fflush(f);
}

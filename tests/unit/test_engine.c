/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * libinca's protocol engine against the real aggregation core.
 *
 * Each test runs a tiny aggregator in a thread: a UDP socket on 127.0.0.1
 * (ephemeral port) that answers HELLO / JOIN / LEAVE / HEARTBEAT, feeds
 * CONTRIBs to agg_contribute() and sends agg_result_write() results to
 * every member's address. It can drop, duplicate and reorder packets
 * deterministically, hide the results of one chunk, and stop answering
 * after a number of completed chunks (an aggregator that dies), then come
 * back with no state (a restart).
 *
 * Workers are threads, each with its own communicator; their fallback is a
 * real host allreduce among the threads through shared memory.
 * Every result is compared with a reference the test computes from the
 * data generators of all ranks.
 */

#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <inca/inca.h>

#include "agg.h"

/* ---- the test aggregator ------------------------------------------------ */

struct tagg_cfg {
	uint16_t job;
	uint32_t token;
	bool native;          /* advertise INCA_CAP_NATIVE_FLOAT */
	uint16_t pool;
	uint16_t window;
	uint16_t max_elems;
	unsigned drop_contrib_every; /* drop every n-th CONTRIB (0: none) */
	unsigned held_every;         /* answer every n-th CONTRIB NACK HELD, uncounted */
	unsigned drop_result_every;  /* drop every n-th RESULT copy */
	unsigned dup_result_every;   /* send every n-th RESULT copy twice */
	bool reorder;                /* swap every 3rd RESULT copy with the next */
	int64_t blackhole_seq;       /* never send this seq's results (-1: none) */
	unsigned die_after;          /* go silent after this many completions */
	uint32_t hb_ms, evict_ms;    /* told in CAPS / JOIN_ACK; evict_ms 0: never */
	uint32_t last_mask;          /* ranks that get the last result before dying */
	bool fixed_count;            /* like a switch: FIXED_COUNT, other counts dropped */
	bool routed;                 /* advertise INCA_CAP_ROUTED (routed chunks) */
	bool wide;                   /* with native: advertise INT64 and FP64 too */
};

/* The dtypes mask of an aggregator of @cfg. */
static uint16_t
tagg_dtypes(const struct tagg_cfg *cfg)
{
	if (!cfg->native)
		return 1u << INCA_DTYPE_INT32;
	return cfg->wide ? (1u << INCA_DTYPE_COUNT) - 1 : 0xf;
}

struct tagg {
	struct tagg_cfg cfg;
	int fd;
	uint16_t port;
	pthread_t th;
	atomic_bool stop;
	atomic_bool mute;
	atomic_bool restart;
	struct agg_job *job;
	uint32_t session;     /* session token of the job's incarnation */
	unsigned incarnations;
	uint16_t nworkers;
	uint32_t members;
	bool was_full;        /* all ranks joined once: a missing one was lost */
	uint32_t evicted;     /* ranks evicted for silence, until they rejoin */
	uint64_t seen_ms[INCA_MAX_WORKERS];
	struct sockaddr_in addr[INCA_MAX_WORKERS];
	unsigned ncontrib, nresult;
	uint8_t held[INCA_HDR_LEN + INCA_MAX_PAYLOAD_BYTES];
	size_t held_len;
	struct sockaddr_in held_to;
	atomic_uint completions;
	atomic_uint replays;
	atomic_uint short_contribs;   /* fixed_count: CONTRIBs of another count */
	atomic_uint joins;
	atomic_uint leaves;
	atomic_uint nacks;
	atomic_uint routed_contribs;  /* CONTRIBs with ROUTED */
	atomic_uint brief_results;    /* BRIEF RESULT copies sent */
};

static void
tagg_send(struct tagg *a, const void *buf, size_t len, const struct sockaddr_in *to)
{
	(void)sendto(a->fd, buf, len, 0, (const struct sockaddr *)to, sizeof(*to));
}

/* A RESULT copy, through the configured faults. */
static void
tagg_send_result(struct tagg *a, const void *buf, size_t len, const struct sockaddr_in *to)
{
	a->nresult++;
	if (a->cfg.drop_result_every && a->nresult % a->cfg.drop_result_every == 0)
		return;
	if (a->cfg.reorder) {
		if (a->held_len == 0 && a->nresult % 3 == 0) {
			memcpy(a->held, buf, len);
			a->held_len = len;
			a->held_to = *to;
			return;
		}
	}
	tagg_send(a, buf, len, to);
	if (a->cfg.dup_result_every && a->nresult % a->cfg.dup_result_every == 0)
		tagg_send(a, buf, len, to);
	if (a->held_len) {
		tagg_send(a, a->held, a->held_len, &a->held_to);
		a->held_len = 0;
	}
}

static void
tagg_reply(struct tagg *a, const struct inca_msg *req, unsigned type, unsigned reason,
	   const struct inca_ctrl_info *ci, const struct sockaddr_in *to)
{
	uint8_t buf[INCA_HDR_LEN + INCA_CTRL_LEN];
	struct inca_msg m = *req;

	m.type = type;
	m.reason = reason;
	m.count = 0;
	m.bitmap = 0;
	inca_hdr_encode(&m, buf);
	if (ci != NULL)
		inca_ctrl_encode(ci, buf + INCA_HDR_LEN);
	if (type == INCA_MSG_NACK)
		atomic_fetch_add(&a->nacks, 1);
	tagg_send(a, buf, ci ? sizeof(buf) : INCA_HDR_LEN, to);
}

static void
tagg_caps(const struct tagg *a, struct inca_ctrl_info *ci)
{
	memset(ci, 0, sizeof(*ci));
	ci->ver_min = INCA_PROTO_VERSION;
	ci->ver_max = INCA_PROTO_VERSION;
	ci->dtypes = tagg_dtypes(&a->cfg);
	ci->ops = 0x7;
	ci->max_elems = a->cfg.max_elems;
	ci->caps = INCA_CAP_BFP | INCA_CAP_SEQ_CHECK | (a->cfg.native ? INCA_CAP_NATIVE_FLOAT : 0) |
		   (a->cfg.fixed_count ? INCA_CAP_FIXED_COUNT : 0) |
		   (a->cfg.routed ? INCA_CAP_ROUTED : 0);
	ci->hb_ms = a->cfg.hb_ms ? a->cfg.hb_ms : 1000;
	ci->evict_ms = a->cfg.evict_ms ? a->cfg.evict_ms : 60000;
}

static uint64_t
mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Members silent for evict_ms lose their rank and the job its sets. */
static void
tagg_evict(struct tagg *a)
{
	uint64_t now = mono_ms();
	unsigned r;

	if (!a->cfg.evict_ms || a->job == NULL)
		return;
	for (r = 0; r < a->nworkers; r++) {
		if (!(a->members & (1u << r)) || now - a->seen_ms[r] <= a->cfg.evict_ms)
			continue;
		a->members &= ~(1u << r);
		a->evicted |= 1u << r;
		agg_job_set_members(a->job, a->members);
		agg_job_reset(a->job);
	}
}

static bool
same_addr(const struct sockaddr_in *x, const struct sockaddr_in *y)
{
	return x->sin_addr.s_addr == y->sin_addr.s_addr && x->sin_port == y->sin_port;
}

static void
tagg_handle(struct tagg *a, const uint8_t *buf, size_t len, const struct sockaddr_in *from)
{
	static uint8_t out[INCA_HDR_LEN + INCA_MAX_PAYLOAD_BYTES];
	struct inca_ctrl_info ci, req;
	struct agg_out res;
	struct inca_msg m;
	unsigned r;

	if (inca_msg_decode(buf, len, 0, &m) != INCA_WIRE_OK)
		return;
	if (m.type == INCA_MSG_HELLO) {
		tagg_caps(a, &ci);
		tagg_reply(a, &m, INCA_MSG_CAPS, 0, &ci, from);
		return;
	}
	if (m.job != a->cfg.job) {
		if (m.type != INCA_MSG_CONTRIB)
			tagg_reply(a, &m, INCA_MSG_NACK, INCA_NACK_UNKNOWN_JOB, NULL, from);
		return;
	}
	/* JOIN proves the job token; everything after it names the session. */
	if (m.type == INCA_MSG_JOIN ? m.token != a->cfg.token :
				      a->job == NULL || m.token != a->session)
		return; /* a counted drop in incad; never answered */
	bool member = a->job && (a->members & (1u << m.rank)) && same_addr(&a->addr[m.rank], from);

	if (member)
		a->seen_ms[m.rank] = mono_ms();
	if (a->job && (a->evicted & (1u << m.rank)) && m.type != INCA_MSG_JOIN &&
	    same_addr(&a->addr[m.rank], from)) {
		tagg_reply(a, &m, INCA_MSG_NACK, INCA_NACK_EVICTED, NULL, from);
		return;
	}

	switch (m.type) {
	case INCA_MSG_JOIN: {
		inca_ctrl_decode(m.body, &req);
		if (a->job == NULL) {
			a->session = (a->cfg.token * 2654435761u + ++a->incarnations) | 1;
			struct agg_job_params p = {
				.job = a->cfg.job,
				.token = a->session,
				.nworkers = req.nworkers,
				.pool_size = a->cfg.pool,
				.max_elems = a->cfg.max_elems,
				.dtypes = tagg_dtypes(&a->cfg),
				.ops = 0x7,
				.seq_check = true,
			};
			a->job = agg_job_create(&p);
			ck_assert_ptr_nonnull(a->job);
			a->nworkers = req.nworkers;
			a->members = 0;
			a->evicted = 0;
			a->was_full = false;
		}
		if (req.nworkers != a->nworkers || m.rank >= a->nworkers) {
			tagg_reply(a, &m, INCA_MSG_NACK, INCA_NACK_BAD_PARAMS, NULL, from);
			return;
		}
		a->addr[m.rank] = *from;
		a->members |= 1u << m.rank;
		a->evicted &= ~(1u << m.rank);
		a->seen_ms[m.rank] = mono_ms();
		agg_job_set_members(a->job, a->members);
		a->was_full |= a->members == a->job->full_mask;
		atomic_fetch_add(&a->joins, 1);
		tagg_caps(a, &ci);
		ci.nworkers = a->nworkers;
		ci.pool_size = a->cfg.pool;
		ci.window = a->cfg.window;
		ci.max_elems = req.max_elems && req.max_elems < a->cfg.max_elems ?
				       req.max_elems : a->cfg.max_elems;
		ci.session = a->session;
		tagg_reply(a, &m, INCA_MSG_JOIN_ACK, 0, &ci, from);
		return;
	}
	case INCA_MSG_LEAVE:
		if (!member) {
			tagg_reply(a, &m, INCA_MSG_NACK, INCA_NACK_NOT_MEMBER, NULL, from);
			return;
		}
		a->members &= ~(1u << m.rank);
		atomic_fetch_add(&a->leaves, 1);
		agg_job_set_members(a->job, a->members);
		agg_job_reset(a->job);
		tagg_reply(a, &m, INCA_MSG_LEAVE_ACK, 0, NULL, from);
		if (a->members == 0) {
			agg_job_destroy(a->job);
			a->job = NULL;
		}
		return;
	case INCA_MSG_HEARTBEAT:
		tagg_reply(a, &m, member ? INCA_MSG_HEARTBEAT_ACK : INCA_MSG_NACK,
			   member ? 0 : INCA_NACK_NOT_MEMBER, NULL, from);
		return;
	case INCA_MSG_CONTRIB:
		break;
	default:
		return;
	}

	if (!member)
		return; /* never answer a data message from a non-member */
	if (a->was_full && a->members != a->job->full_mask) {
		tagg_reply(a, &m, INCA_MSG_NACK, INCA_NACK_MEMBER_LOST, NULL, from);
		return;
	}
	if (a->cfg.fixed_count && m.count != a->cfg.max_elems) {
		atomic_fetch_add(&a->short_contribs, 1);
		return;
	}
	a->ncontrib++;
	if (m.flags & INCA_F_ROUTED)
		atomic_fetch_add(&a->routed_contribs, 1);
	if (a->cfg.drop_contrib_every && a->ncontrib % a->cfg.drop_contrib_every == 0)
		return;
	if (a->cfg.held_every && a->ncontrib % a->cfg.held_every == 0) {
		/* As incad's arbitration: not counted, the sender told so. */
		tagg_reply(a, &m, INCA_MSG_NACK, INCA_NACK_HELD, NULL, from);
		return;
	}
	switch (agg_contribute(a->job, &m, &res)) {
	case AGG_COMPLETE: {
		unsigned done = atomic_fetch_add(&a->completions, 1) + 1;
		bool last = a->cfg.die_after && done == a->cfg.die_after;
		size_t n;

		if (a->cfg.blackhole_seq >= 0 && m.seq == (uint32_t)a->cfg.blackhole_seq)
			break;
		for (r = 0; r < a->nworkers; r++) {
			if (last && !(a->cfg.last_mask & (1u << r)))
				continue;
			/* Each member's form: a routed chunk's elements or BRIEF. */
			n = agg_result_write(a->job, res.set, r, false, out);
			if (n == INCA_HDR_LEN)
				atomic_fetch_add(&a->brief_results, 1);
			tagg_send_result(a, out, n, &a->addr[r]);
		}
		if (last)
			atomic_store(&a->mute, true);
		break;
	}
	case AGG_REPLAY: {
		size_t n;

		if (a->cfg.blackhole_seq >= 0 && m.seq == (uint32_t)a->cfg.blackhole_seq)
			break;
		atomic_fetch_add(&a->replays, 1);
		n = agg_result_write(a->job, res.set, m.rank, true, out);
		tagg_send_result(a, out, n, from);
		break;
	}
	default:
		break;
	}
}

static void *
tagg_main(void *arg)
{
	struct tagg *a = arg;
	enum { B = 64 };
	static __thread uint8_t bufs[B][INCA_HDR_LEN + INCA_MAX_PAYLOAD_BYTES + 64];
	struct mmsghdr msgs[B];
	struct iovec iov[B];
	struct sockaddr_in from[B];
	int i, n;

	while (!atomic_load(&a->stop)) {
		struct pollfd pfd = {.fd = a->fd, .events = POLLIN};

		if (atomic_load(&a->restart)) {
			/* A restarted aggregator knows nothing of the job. */
			agg_job_destroy(a->job);
			a->job = NULL;
			a->members = 0;
			a->cfg.die_after = 0;
			a->cfg.blackhole_seq = -1;
			atomic_store(&a->restart, false);
			atomic_store(&a->mute, false);
		}
		tagg_evict(a);
		if (poll(&pfd, 1, 10) <= 0)
			continue;
		for (i = 0; i < B; i++) {
			iov[i].iov_base = bufs[i];
			iov[i].iov_len = sizeof(bufs[i]);
			memset(&msgs[i].msg_hdr, 0, sizeof(msgs[i].msg_hdr));
			msgs[i].msg_hdr.msg_iov = &iov[i];
			msgs[i].msg_hdr.msg_iovlen = 1;
			msgs[i].msg_hdr.msg_name = &from[i];
			msgs[i].msg_hdr.msg_namelen = sizeof(from[i]);
		}
		n = recvmmsg(a->fd, msgs, B, MSG_DONTWAIT, NULL);
		for (i = 0; i < n; i++) {
			if (atomic_load(&a->mute))
				continue; /* a dead aggregator reads nothing */
			tagg_handle(a, bufs[i], msgs[i].msg_len, &from[i]);
		}
		if (a->held_len && !atomic_load(&a->mute)) {
			tagg_send(a, a->held, a->held_len, &a->held_to);
			a->held_len = 0;
		}
	}
	return NULL;
}

static void
tagg_cfg_init(struct tagg_cfg *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->job = 7;
	cfg->token = 0xC0FFEE;
	cfg->native = true;
	cfg->wide = true;
	cfg->pool = 64;
	cfg->window = 16;
	cfg->max_elems = 1024;
	cfg->blackhole_seq = -1;
}

static struct tagg *
tagg_start(const struct tagg_cfg *cfg)
{
	struct tagg *a = calloc(1, sizeof(*a));
	struct sockaddr_in sa = {.sin_family = AF_INET};
	socklen_t sl = sizeof(sa);
	int v = 8 << 20;

	ck_assert_ptr_nonnull(a);
	a->cfg = *cfg;
	a->fd = socket(AF_INET, SOCK_DGRAM, 0);
	ck_assert_int_ge(a->fd, 0);
	(void)setsockopt(a->fd, SOL_SOCKET, SO_RCVBUFFORCE, &v, sizeof(v));
	(void)setsockopt(a->fd, SOL_SOCKET, SO_SNDBUFFORCE, &v, sizeof(v));
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(bind(a->fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(getsockname(a->fd, (struct sockaddr *)&sa, &sl), 0);
	a->port = ntohs(sa.sin_port);
	ck_assert_int_eq(pthread_create(&a->th, NULL, tagg_main, a), 0);
	return a;
}

static void
tagg_stop(struct tagg *a)
{
	atomic_store(&a->stop, true);
	pthread_join(a->th, NULL);
	agg_job_destroy(a->job);
	close(a->fd);
	free(a);
}

/* ---- the fallback: a host allreduce among threads ------------------------ */

struct shm {
	unsigned n;
	pthread_barrier_t bar;
	void *stage[INCA_MAX_WORKERS];
	atomic_uint calls;
};

struct shm_rank {
	struct shm *g;
	unsigned rank;
};

static float
load_f(const void *p, unsigned dtype, size_t i)
{
	uint16_t h;
	float f;

	switch (dtype) {
	case INCA_DTYPE_FP16:
		memcpy(&h, (const uint8_t *)p + 2 * i, 2);
		return inca_fp16_to_fp32(h);
	case INCA_DTYPE_BF16:
		memcpy(&h, (const uint8_t *)p + 2 * i, 2);
		return inca_bf16_to_fp32(h);
	default:
		memcpy(&f, (const uint8_t *)p + 4 * i, 4);
		return f;
	}
}

static void
store_f(void *p, unsigned dtype, size_t i, float f)
{
	uint16_t h;

	switch (dtype) {
	case INCA_DTYPE_FP16:
		h = inca_fp32_to_fp16(f);
		memcpy((uint8_t *)p + 2 * i, &h, 2);
		break;
	case INCA_DTYPE_BF16:
		h = inca_fp32_to_bf16(f);
		memcpy((uint8_t *)p + 2 * i, &h, 2);
		break;
	default:
		memcpy((uint8_t *)p + 4 * i, &f, 4);
		break;
	}
}

/* IEEE 754-2019 minimum / maximum: NaN wins, -0 < +0. */
static float
fminmax(float x, float y, unsigned op)
{
	if (isnan(x) || isnan(y))
		return NAN;
	if (x == y && x == 0)
		return (op == INCA_OP_MIN) == (signbit(x) != 0) ? x : y;
	return (op == INCA_OP_MIN) == (x < y) ? x : y;
}

static double
dminmax(double x, double y, unsigned op)
{
	if (isnan(x) || isnan(y))
		return NAN;
	if (x == y && x == 0)
		return (op == INCA_OP_MIN) == (signbit(x) != 0) ? x : y;
	return (op == INCA_OP_MIN) == (x < y) ? x : y;
}

/* The protocol's fp64 NaN, 0x7FF8000000000000. */
static double
canon_nan64(void)
{
	uint64_t u = UINT64_C(0x7ff8000000000000);
	double d;

	memcpy(&d, &u, 8);
	return d;
}

static int
shm_allreduce(void *ctx, const struct inca_fallback_args *a)
{
	struct shm_rank *me = ctx;
	struct shm *g = me->g;
	size_t es = inca_dtype_size(a->dtype), i;
	unsigned r;

	atomic_fetch_add(&g->calls, 1);
	g->stage[me->rank] = malloc(a->count * es + 1);
	if (g->stage[me->rank] == NULL)
		return -ENOMEM;
	memcpy(g->stage[me->rank], a->sendbuf, a->count * es);
	pthread_barrier_wait(&g->bar);
	for (i = 0; i < a->count; i++) {
		if (a->dtype == INCA_DTYPE_INT64) {
			int64_t acc, v;

			memcpy(&acc, (uint8_t *)g->stage[0] + 8 * i, 8);
			for (r = 1; r < g->n; r++) {
				memcpy(&v, (uint8_t *)g->stage[r] + 8 * i, 8);
				if (a->op == INCA_OP_SUM)
					acc = (int64_t)((uint64_t)acc + (uint64_t)v);
				else if ((a->op == INCA_OP_MIN) == (v < acc))
					acc = v;
			}
			memcpy((uint8_t *)a->recvbuf + 8 * i, &acc, 8);
		} else if (a->dtype == INCA_DTYPE_FP64) {
			double acc, v;

			memcpy(&acc, (uint8_t *)g->stage[0] + 8 * i, 8);
			for (r = 1; r < g->n; r++) {
				memcpy(&v, (uint8_t *)g->stage[r] + 8 * i, 8);
				acc = a->op == INCA_OP_SUM ? acc + v : dminmax(acc, v, a->op);
			}
			if (isnan(acc))
				acc = canon_nan64();
			memcpy((uint8_t *)a->recvbuf + 8 * i, &acc, 8);
		} else if (a->dtype == INCA_DTYPE_INT32) {
			int32_t acc, v;

			memcpy(&acc, (uint8_t *)g->stage[0] + 4 * i, 4);
			for (r = 1; r < g->n; r++) {
				memcpy(&v, (uint8_t *)g->stage[r] + 4 * i, 4);
				if (a->op == INCA_OP_SUM)
					acc = (int32_t)((uint32_t)acc + (uint32_t)v);
				else if ((a->op == INCA_OP_MIN) == (v < acc))
					acc = v;
			}
			memcpy((uint8_t *)a->recvbuf + 4 * i, &acc, 4);
		} else {
			float acc = load_f(g->stage[0], a->dtype, i);

			for (r = 1; r < g->n; r++) {
				float v = load_f(g->stage[r], a->dtype, i);

				acc = a->op == INCA_OP_SUM ? acc + v : fminmax(acc, v, a->op);
			}
			store_f(a->recvbuf, a->dtype, i, acc);
		}
	}
	pthread_barrier_wait(&g->bar);
	free(g->stage[me->rank]);
	return 0;
}

/* ---- workers ------------------------------------------------------------- */

struct world;
typedef void body_fn(struct world *w, unsigned rank, struct inca_comm *c);

struct world {
	unsigned n;
	struct tagg *agg;
	struct inca_comm_opts opts;
	bool with_fallback;
	bool fallback_at_create;
	int expect_create;
	body_fn *body;
	struct shm fb;
	struct shm_rank fbr[INCA_MAX_WORKERS];
	pthread_barrier_t bar;
	struct inca_stats st[INCA_MAX_WORKERS];
	unsigned create_delay_ms[INCA_MAX_WORKERS]; /* a slow launcher, per rank */
	void *user;
};

struct wctx {
	struct world *w;
	unsigned rank;
};

/* The world running now, and the collectives each rank ran on the host. */
static struct world *cur_world;
static unsigned host_runs[INCA_MAX_WORKERS];

/*
 * Does the running world's aggregator lack @dtype, so that libinca refuses
 * it (INCA_ENOTSUP) and the caller reduces on the host? Only INT64 and
 * FP64 ever are: every other dtype has a form every aggregator takes.
 */
static bool
host_only(unsigned dtype)
{
	return inca_dtype_lanes(dtype) == 2 && cur_world != NULL && cur_world->agg != NULL &&
	       !(tagg_dtypes(&cur_world->agg->cfg) & (1u << dtype));
}

static void *
worker_main(void *arg)
{
	struct wctx *x = arg;
	struct world *w = x->w;
	struct inca_comm_opts o = w->opts;
	struct inca_comm *c = NULL;
	int ret;

	o.rank = x->rank;
	o.size = w->n;
	if (w->fallback_at_create) {
		o.fallback = shm_allreduce;
		o.fallback_ctx = &w->fbr[x->rank];
	}
	if (w->create_delay_ms[x->rank])
		usleep(w->create_delay_ms[x->rank] * 1000u);
	ret = inca_comm_create(&o, &c);
	ck_assert_msg(ret == w->expect_create, "rank %u: create: %s", x->rank,
		      inca_strerror(ret));
	if (ret == INCA_OK) {
		if (w->with_fallback)
			inca_comm_set_fallback(c, shm_allreduce, &w->fbr[x->rank]);
		w->body(w, x->rank, c);
		inca_comm_stats(c, &w->st[x->rank]);
	}
	inca_comm_destroy(c);
	return NULL;
}

static char agg_addr_buf[64];

static void
world_init(struct world *w, unsigned n, struct tagg *agg, body_fn *body)
{
	memset(w, 0, sizeof(*w));
	w->n = n;
	w->agg = agg;
	w->body = body;
	inca_comm_opts_init(&w->opts);
	if (agg != NULL) {
		snprintf(agg_addr_buf, sizeof(agg_addr_buf), "127.0.0.1:%u", agg->port);
		w->opts.aggregator = agg_addr_buf;
		w->opts.job = agg->cfg.job;
		w->opts.token = agg->cfg.token;
	}
	w->opts.timeout_ms = 5;
	w->opts.give_up_ms = 400;
	w->expect_create = INCA_OK;
}

static void
world_run(struct world *w)
{
	pthread_t th[INCA_MAX_WORKERS];
	struct wctx x[INCA_MAX_WORKERS];
	unsigned r;

	cur_world = w;
	memset(host_runs, 0, sizeof(host_runs));
	w->fb.n = w->n;
	pthread_barrier_init(&w->fb.bar, NULL, w->n);
	pthread_barrier_init(&w->bar, NULL, w->n);
	for (r = 0; r < w->n; r++) {
		w->fbr[r].g = &w->fb;
		w->fbr[r].rank = r;
		x[r].w = w;
		x[r].rank = r;
		ck_assert_int_eq(pthread_create(&th[r], NULL, worker_main, &x[r]), 0);
	}
	for (r = 0; r < w->n; r++)
		pthread_join(th[r], NULL);
	pthread_barrier_destroy(&w->fb.bar);
	pthread_barrier_destroy(&w->bar);
}

/* ---- data and references --------------------------------------------------- */

static int32_t
gen_i32(unsigned rank, size_t i, unsigned salt)
{
	/* Large values, so that sums wrap. */
	return (int32_t)((uint32_t)i * 2654435761u + rank * 40503u * 65537u + salt * 977u);
}

/* Quarter-integers in [-7.5, 7.5]: every partial sum of up to 32 of them is
 * exact in fp32, fp16 and bf16, so any arrival order gives one result. */
static float
gen_f(unsigned rank, size_t i, unsigned salt)
{
	int v = (int)((i * 7 + rank * 13 + salt * 3) % 61) - 30;

	return (float)v * 0.25f;
}

/* Float data for min/max: a few signed zeros and NaNs mixed in. */
static float
gen_f_minmax(unsigned rank, size_t i, unsigned salt)
{
	if (i % 89 == 3)
		return rank == 0 ? -0.0f : 0.0f;
	if (i % 97 == 5 && rank == 1)
		return NAN;
	return gen_f(rank, i, salt);
}

/* Large int64 values whose sums wrap and carry across the 32-bit halves. */
static int64_t
gen_i64(unsigned rank, size_t i, unsigned salt)
{
	return (int64_t)((uint64_t)i * UINT64_C(0x9e3779b97f4a7c15) +
			 rank * UINT64_C(0x7fffffff00000003) + salt * 977u);
}

/* fp64 data: gen_f()'s and gen_f_minmax()'s values, exact in any order. */
static double
gen_d(unsigned op, unsigned rank, size_t i, unsigned salt)
{
	return op == INCA_OP_SUM ? (double)gen_f(rank, i, salt) :
				   (double)gen_f_minmax(rank, i, salt);
}

static void
fill(void *buf, unsigned dtype, unsigned op, unsigned rank, size_t count, unsigned salt)
{
	size_t i;

	for (i = 0; i < count; i++) {
		if (dtype == INCA_DTYPE_INT64) {
			int64_t v = gen_i64(rank, i, salt);

			memcpy((uint8_t *)buf + 8 * i, &v, 8);
		} else if (dtype == INCA_DTYPE_FP64) {
			double d = gen_d(op, rank, i, salt);
			uint64_t u;

			memcpy(&u, &d, 8);
			if (isnan(d))
				u = UINT64_C(0xfff0000000000001); /* a signalling NaN */
			memcpy((uint8_t *)buf + 8 * i, &u, 8);
		} else if (dtype == INCA_DTYPE_INT32) {
			int32_t v = gen_i32(rank, i, salt);

			memcpy((uint8_t *)buf + 4 * i, &v, 4);
		} else {
			float f = op == INCA_OP_SUM ? gen_f(rank, i, salt) :
						      gen_f_minmax(rank, i, salt);

			if (dtype == INCA_DTYPE_FP16 && isnan(f)) {
				uint16_t h = 0x7e01; /* a non-canonical NaN */

				memcpy((uint8_t *)buf + 2 * i, &h, 2);
				continue;
			}
			store_f(buf, dtype, i, f);
		}
	}
}

/* The expected result bits of element @i. */
static uint64_t
expect_bits(unsigned dtype, unsigned op, unsigned n, size_t i, unsigned salt)
{
	unsigned r;

	if (dtype == INCA_DTYPE_INT64) {
		uint64_t acc = (uint64_t)gen_i64(0, i, salt);

		for (r = 1; r < n; r++) {
			int64_t v = gen_i64(r, i, salt);

			if (op == INCA_OP_SUM)
				acc += (uint64_t)v;
			else if ((op == INCA_OP_MIN) == (v < (int64_t)acc))
				acc = (uint64_t)v;
		}
		return acc;
	}
	if (dtype == INCA_DTYPE_FP64) {
		double acc = gen_d(op, 0, i, salt);
		uint64_t u;

		for (r = 1; r < n; r++)
			acc = op == INCA_OP_SUM ? acc + gen_d(op, r, i, salt) :
						  dminmax(acc, gen_d(op, r, i, salt), op);
		if (isnan(acc))
			return UINT64_C(0x7ff8000000000000);
		memcpy(&u, &acc, 8);
		return u;
	}

	if (dtype == INCA_DTYPE_INT32) {
		uint32_t acc = (uint32_t)gen_i32(0, i, salt);

		for (r = 1; r < n; r++) {
			int32_t v = gen_i32(r, i, salt);

			if (op == INCA_OP_SUM)
				acc += (uint32_t)v;
			else if ((op == INCA_OP_MIN) == (v < (int32_t)acc))
				acc = (uint32_t)v;
		}
		return acc;
	}

	float acc = op == INCA_OP_SUM ? gen_f(0, i, salt) : gen_f_minmax(0, i, salt);

	for (r = 1; r < n; r++) {
		float v = op == INCA_OP_SUM ? gen_f(r, i, salt) : gen_f_minmax(r, i, salt);

		acc = op == INCA_OP_SUM ? acc + v : fminmax(acc, v, op);
	}
	if (isnan(acc))
		return dtype == INCA_DTYPE_FP32 ? 0x7fc00000u :
		       dtype == INCA_DTYPE_FP16 ? 0x7e00u : 0x7fc0u;
	uint8_t tmp[4];

	store_f(tmp, dtype, 0, acc);
	if (dtype == INCA_DTYPE_FP32) {
		uint32_t u;

		memcpy(&u, tmp, 4);
		return u;
	}
	uint16_t h;

	memcpy(&h, tmp, 2);
	return h;
}

static uint64_t
got_bits(const void *buf, unsigned dtype, size_t i)
{
	if (inca_dtype_size(dtype) == 8) {
		uint64_t u;

		memcpy(&u, (const uint8_t *)buf + 8 * i, 8);
		return u;
	}
	if (inca_dtype_size(dtype) == 2) {
		uint16_t h;

		memcpy(&h, (const uint8_t *)buf + 2 * i, 2);
		return h;
	}
	uint32_t u;

	memcpy(&u, (const uint8_t *)buf + 4 * i, 4);
	return u;
}

static void
check_result(const void *buf, unsigned dtype, unsigned op, unsigned n, size_t count,
	     unsigned salt, unsigned rank)
{
	size_t i;

	for (i = 0; i < count; i++) {
		uint64_t want = expect_bits(dtype, op, n, i, salt);
		uint64_t got = got_bits(buf, dtype, i);

		if (got != want)
			ck_abort_msg("rank %u: %s %s count %zu salt %u: element %zu is 0x%llx, "
				     "want 0x%llx", rank, inca_dtype_name(dtype), inca_op_name(op),
				     count, salt, i, (unsigned long long)got,
				     (unsigned long long)want);
	}
}

/* One allreduce with generated data, checked; in place when @inplace. */
static void
run_checked(struct inca_comm *c, unsigned rank, unsigned n, unsigned dtype, unsigned op,
	    size_t count, unsigned salt, bool inplace)
{
	size_t bytes = count * inca_dtype_size(dtype);
	void *in = malloc(bytes + 1), *out = malloc(bytes + 1), *copy = malloc(bytes + 1);
	int ret;

	ck_assert(in && out && copy);
	fill(in, dtype, op, rank, count, salt);
	memcpy(copy, in, bytes);
	if (inplace)
		ret = inca_allreduce(c, INCA_IN_PLACE, in, count, dtype, op);
	else
		ret = inca_allreduce(c, in, out, count, dtype, op);
	if (host_only(dtype)) {
		struct inca_fallback_args fa = {
			.sendbuf = in, .recvbuf = inplace ? in : out, .count = count,
			.dtype = dtype, .op = op,
		};

		/* Refused before anything is sent: the caller's host collective. */
		ck_assert_msg(ret == INCA_ENOTSUP, "rank %u: %s on an aggregator without it: %s",
			      rank, inca_dtype_name(dtype), inca_strerror(ret));
		ret = shm_allreduce(&cur_world->fbr[rank], &fa);
		host_runs[rank]++;
	}
	ck_assert_msg(ret == INCA_OK, "rank %u: allreduce %s %s %zu: %s", rank,
		      inca_dtype_name(dtype), inca_op_name(op), count, inca_strerror(ret));
	check_result(inplace ? in : out, dtype, op, n, count, salt, rank);
	if (!inplace)
		ck_assert_msg(memcmp(in, copy, bytes) == 0, "sendbuf modified");
	free(in);
	free(out);
	free(copy);
}

/* ---- tests ------------------------------------------------------------------- */

static const size_t matrix_sizes[] = {1, 3, 255, 256, 257, 1000, 4099};

static void
body_matrix(struct world *w, unsigned rank, struct inca_comm *c)
{
	unsigned d, op, s, salt = 0;

	for (d = 0; d < INCA_DTYPE_COUNT; d++)
		for (op = 0; op < INCA_OP_COUNT; op++)
			for (s = 0; s < sizeof(matrix_sizes) / sizeof(matrix_sizes[0]); s++)
				run_checked(c, rank, w->n, d, op, matrix_sizes[s], salt++,
					    s % 2 == 1);
}

static void
matrix_for(unsigned n, bool native, bool fixed_count)
{
	struct tagg_cfg cfg;
	struct tagg *a;
	struct world w;
	unsigned r;

	tagg_cfg_init(&cfg);
	cfg.native = native;
	if (fixed_count) {
		cfg.fixed_count = true;
		cfg.max_elems = 64;
	}
	a = tagg_start(&cfg);
	world_init(&w, n, a, body_matrix);
	world_run(&w);
	for (r = 0; r < n; r++) {
		ck_assert_uint_eq(w.st[r].recoveries, 0);
		ck_assert_uint_eq(w.st[r].fallback_calls, 0);
		ck_assert_uint_gt(w.st[r].chunks, 0);
		if (!native)
			ck_assert_uint_gt(w.st[r].bfp_chunks, 0);
	}
	ck_assert_uint_eq(atomic_load(&a->short_contribs), 0);
	tagg_stop(a);
}

/* Every dtype x op, sizes across chunk boundaries, in place and not. */
START_TEST(test_matrix_2)
{
	matrix_for(2, true, false);
}
END_TEST

START_TEST(test_matrix_4)
{
	matrix_for(4, true, false);
}
END_TEST

START_TEST(test_matrix_8)
{
	matrix_for(8, true, false);
}
END_TEST

/* An int32-only aggregator: floats go as BFP (sum; exact here because the
 * data has few significant bits) and ordered int32 (min, max; exact). */
START_TEST(test_matrix_int_only)
{
	matrix_for(4, false, false);
}
END_TEST

/* A switch's aggregator (int32 only, FIXED_COUNT, 64-element class) drops
 * every CONTRIB of another count: sizes that are not multiples of 64, the
 * one-element BFP exponent rounds, all padded, all exact. */
START_TEST(test_matrix_fixed_count)
{
	matrix_for(4, false, true);
}
END_TEST

static void
body_large(struct world *w, unsigned rank, struct inca_comm *c)
{
	run_checked(c, rank, w->n, INCA_DTYPE_INT32, INCA_OP_SUM, (size_t)1 << 20, 1, false);
	run_checked(c, rank, w->n, INCA_DTYPE_FP32, INCA_OP_SUM, (size_t)3 << 18, 2, true);
	run_checked(c, rank, w->n, INCA_DTYPE_BF16, INCA_OP_MAX, (size_t)1 << 20, 3, false);
}

/* Several MiB, with jumbo packets (4 KiB payloads). */
START_TEST(test_large)
{
	static const unsigned ns[] = {2, 4, 8};
	struct tagg_cfg cfg;
	struct tagg *a;
	struct world w;

	tagg_cfg_init(&cfg);
	cfg.window = 32;
	a = tagg_start(&cfg);
	world_init(&w, ns[_i], a, body_large);
	w.opts.mtu = 9000;
	w.opts.max_elems = 1024;
	w.opts.window = 32;
	world_run(&w);
	tagg_stop(a);
}
END_TEST

/* Several requests in flight, of different types, waited in any order. */
static void
body_inflight(struct world *w, unsigned rank, struct inca_comm *c)
{
	enum { K = 6 };
	static const unsigned dt[K] = {INCA_DTYPE_INT32, INCA_DTYPE_FP32, INCA_DTYPE_FP16,
				       INCA_DTYPE_BF16, INCA_DTYPE_INT32, INCA_DTYPE_FP32};
	static const unsigned op[K] = {INCA_OP_SUM, INCA_OP_SUM, INCA_OP_MAX, INCA_OP_SUM,
				       INCA_OP_MIN, INCA_OP_MIN};
	static const size_t cnt[K] = {5000, 1, 3000, 700, 12345, 257};
	struct inca_request *req[K];
	void *in[K], *out[K];
	unsigned k, round;
	int done;

	for (round = 0; round < 3; round++) {
		for (k = 0; k < K; k++) {
			size_t b = cnt[k] * inca_dtype_size(dt[k]);

			in[k] = malloc(b);
			out[k] = malloc(b);
			fill(in[k], dt[k], op[k], rank, cnt[k], 100 + k + round);
			ck_assert_int_eq(inca_iallreduce(c, in[k], out[k], cnt[k], dt[k], op[k],
							 &req[k]), INCA_OK);
		}
		if (round == 0) {
			/* In issue order. */
			for (k = 0; k < K; k++)
				ck_assert_int_eq(inca_wait(&req[k]), INCA_OK);
		} else if (round == 1) {
			/* The last first: it completes the others on the way. */
			ck_assert_int_eq(inca_wait(&req[K - 1]), INCA_OK);
			for (k = 0; k + 1 < K; k++) {
				ck_assert_int_eq(inca_test(&req[k], &done), INCA_OK);
				ck_assert_int_eq(done, 1);
				ck_assert_ptr_null(req[k]);
			}
		} else {
			/* Polling with inca_test only. */
			for (k = 0; k < K; k++) {
				done = 0;
				while (!done)
					ck_assert_int_eq(inca_test(&req[k], &done), INCA_OK);
			}
		}
		for (k = 0; k < K; k++) {
			check_result(out[k], dt[k], op[k], w->n, cnt[k], 100 + k + round, rank);
			free(in[k]);
			free(out[k]);
		}
	}
}

START_TEST(test_inflight)
{
	struct tagg_cfg cfg;
	struct tagg *a;
	struct world w;

	tagg_cfg_init(&cfg);
	a = tagg_start(&cfg);
	world_init(&w, 4, a, body_inflight);
	world_run(&w);
	tagg_stop(a);
}
END_TEST

/* Broadcast of arbitrary bytes from every root, bit-exact. */
static void
body_bcast(struct world *w, unsigned rank, struct inca_comm *c)
{
	static const size_t lens[] = {1, 5, 1027, 70001};
	unsigned root, l;
	size_t i;

	for (root = 0; root < w->n; root++) {
		for (l = 0; l < 4; l++) {
			uint8_t *buf = malloc(lens[l] + 8), *want = malloc(lens[l]);

			for (i = 0; i < lens[l]; i++)
				want[i] = (uint8_t)(i * 131 + root * 7 + l);
			if (rank == root)
				memcpy(buf, want, lens[l]);
			else
				memset(buf, 0xA5, lens[l]); /* garbage, must be overwritten */
			memset(buf + lens[l], 0x5A, 8);
			ck_assert_int_eq(inca_broadcast(c, buf, lens[l], root), INCA_OK);
			ck_assert_msg(memcmp(buf, want, lens[l]) == 0, "rank %u root %u len %zu",
				      rank, root, lens[l]);
			for (i = 0; i < 8; i++)
				ck_assert_uint_eq(buf[lens[l] + i], 0x5A); /* no overrun */
			free(buf);
			free(want);
		}
	}
	uint32_t word = 0;

	ck_assert_int_eq(inca_broadcast(c, NULL, 0, 0), INCA_OK);
	ck_assert_int_eq(inca_broadcast(c, &word, 4, w->n), INCA_EINVAL);
}

START_TEST(test_broadcast)
{
	static const unsigned ns[] = {2, 4, 8};
	struct tagg_cfg cfg;
	struct tagg *a;
	struct world w;

	tagg_cfg_init(&cfg);
	a = tagg_start(&cfg);
	world_init(&w, ns[_i], a, body_bcast);
	world_run(&w);
	tagg_stop(a);
}
END_TEST

/* Nobody leaves the barrier before everybody entered it. */
static atomic_uint barrier_entered;

static void
body_barrier(struct world *w, unsigned rank, struct inca_comm *c)
{
	unsigned round;

	for (round = 1; round <= 5; round++) {
		struct timespec ts = {0, (long)((rank * 7 + round * 3) % 11) * 2000000L};

		nanosleep(&ts, NULL);
		atomic_fetch_add(&barrier_entered, 1);
		ck_assert_int_eq(inca_barrier(c), INCA_OK);
		ck_assert_uint_ge(atomic_load(&barrier_entered), round * w->n);
		/* Keep the next round's increments behind everyone's check. */
		pthread_barrier_wait(&w->bar);
	}
}

START_TEST(test_barrier)
{
	struct tagg_cfg cfg;
	struct tagg *a;
	struct world w;

	tagg_cfg_init(&cfg);
	a = tagg_start(&cfg);
	atomic_store(&barrier_entered, 0);
	world_init(&w, 8, a, body_barrier);
	world_run(&w);
	tagg_stop(a);
}
END_TEST

/* Lost contributions, lost, duplicated and reordered results: exact
 * results all the same, through retransmissions and replays. */
static void
body_lossy(struct world *w, unsigned rank, struct inca_comm *c)
{
	unsigned d, salt = 50;

	for (d = 0; d < INCA_DTYPE_COUNT; d++) {
		run_checked(c, rank, w->n, d, INCA_OP_SUM, 3001, salt++, false);
		run_checked(c, rank, w->n, d, INCA_OP_MAX, 999, salt++, true);
	}
	body_inflight(w, rank, c);
}

START_TEST(test_lossy)
{
	struct tagg_cfg cfg;
	struct tagg *a;
	struct world w;
	unsigned r;
	uint64_t retx = 0, dups = 0;

	tagg_cfg_init(&cfg);
	cfg.drop_contrib_every = 7;
	cfg.drop_result_every = 11;
	cfg.dup_result_every = 5;
	cfg.reorder = true;
	a = tagg_start(&cfg);
	world_init(&w, 4, a, body_lossy);
	world_run(&w);
	for (r = 0; r < w.n; r++) {
		retx += w.st[r].retransmits;
		dups += w.st[r].dup_results;
		ck_assert_uint_eq(w.st[r].fallback_calls, 0);
	}
	ck_assert_uint_gt(retx, 0);
	ck_assert_uint_gt(dups, 0);
	ck_assert_uint_gt(atomic_load(&a->replays), 0);
	tagg_stop(a);
}
END_TEST

/*
 * NACK HELD (an aggregator's arbitration held the contribution back) is
 * not a refusal: the chunk is sent again and the stream goes on, with
 * exact results and no fallback.
 */
START_TEST(test_held)
{
	struct tagg_cfg cfg;
	struct tagg *a;
	struct world w;
	unsigned r;
	uint64_t retx = 0, held = 0;

	tagg_cfg_init(&cfg);
	cfg.held_every = 5;
	a = tagg_start(&cfg);
	world_init(&w, 4, a, body_lossy);
	world_run(&w);
	for (r = 0; r < w.n; r++) {
		retx += w.st[r].retransmits;
		held += w.st[r].nack_reasons[INCA_NACK_HELD];
		ck_assert_uint_eq(w.st[r].fallback_calls, 0);
		ck_assert_uint_eq(w.st[r].recoveries, 0);
	}
	/* The last ones may reach a rank after it has finished. */
	ck_assert_uint_gt(held, 0);
	ck_assert_uint_le(held, atomic_load(&a->nacks));
	ck_assert_uint_ge(retx, held);
	tagg_stop(a);
}
END_TEST

/* ---- refusal, unreachable aggregator, fallback ------------------------------ */

/* A job the aggregator does not know: NACK, INCA_EREFUSED, no waiting. */
START_TEST(test_nack_unknown_job)
{
	struct tagg_cfg cfg;
	struct inca_comm_opts o;
	struct inca_comm *c = (struct inca_comm *)1;
	struct tagg *a;
	char addr[64];

	tagg_cfg_init(&cfg);
	a = tagg_start(&cfg);
	snprintf(addr, sizeof(addr), "127.0.0.1:%u", a->port);
	inca_comm_opts_init(&o);
	o.aggregator = addr;
	o.job = cfg.job + 1;
	o.token = cfg.token;
	o.size = 2;
	/* Longer than the test case may run: only the NACK can end it. */
	o.give_up_ms = 600000;
	ck_assert_int_eq(inca_comm_create(&o, &c), INCA_EREFUSED);
	ck_assert_ptr_null(c);
	ck_assert_uint_ge(atomic_load(&a->nacks), 1);
	tagg_stop(a);
}
END_TEST

/* A UDP port where nobody answers. */
static int
silent_port(int *fd)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	socklen_t sl = sizeof(sa);

	*fd = socket(AF_INET, SOCK_DGRAM, 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(bind(*fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(getsockname(*fd, (struct sockaddr *)&sa, &sl), 0);
	return ntohs(sa.sin_port);
}

START_TEST(test_unreachable_error)
{
	struct inca_comm_opts o;
	struct inca_comm *c = NULL;
	char addr[64];
	unsigned hellos = 0;
	char junk[2048];
	int fd;

	snprintf(addr, sizeof(addr), "127.0.0.1:%d", silent_port(&fd));
	inca_comm_opts_init(&o);
	o.aggregator = addr;
	o.job = 3;
	o.size = 2;
	o.timeout_ms = 5;
	o.give_up_ms = 300;
	ck_assert_int_eq(inca_comm_create(&o, &c), INCA_ETIMEDOUT);
	ck_assert_ptr_null(c);
	/* It asked again (backoff) before it gave up; that it gave up at all
	 * is the outcome (a hang would end in the test case's timeout). */
	while (recv(fd, junk, sizeof(junk), MSG_DONTWAIT) > 0)
		hellos++;
	ck_assert_uint_ge(hellos, 2);
	close(fd);
}
END_TEST

static void
body_fallback_only(struct world *w, unsigned rank, struct inca_comm *c)
{
	struct inca_comm_info info;
	uint8_t b[33];
	unsigned d, i;

	inca_comm_info(c, &info);
	ck_assert_int_eq(info.in_fallback, 1);
	for (d = 0; d < INCA_DTYPE_COUNT; d++)
		run_checked(c, rank, w->n, d, d == INCA_DTYPE_FP16 ? INCA_OP_MIN : INCA_OP_SUM,
			    1000 + d, 7 + d, d % 2);
	for (i = 0; i < sizeof(b); i++)
		b[i] = rank == 2 ? (uint8_t)(i * 3 + 1) : 0xEE;
	ck_assert_int_eq(inca_broadcast(c, b, sizeof(b), 2), INCA_OK);
	for (i = 0; i < sizeof(b); i++)
		ck_assert_uint_eq(b[i], (uint8_t)(i * 3 + 1));
	ck_assert_int_eq(inca_barrier(c), INCA_OK);
}

/* No aggregator at all, a fallback registered: everything works through it. */
START_TEST(test_unreachable_fallback)
{
	struct world w;
	unsigned r;
	int fd;

	world_init(&w, 4, NULL, body_fallback_only);
	snprintf(agg_addr_buf, sizeof(agg_addr_buf), "127.0.0.1:%d", silent_port(&fd));
	w.opts.aggregator = agg_addr_buf;
	w.opts.job = 3;
	w.opts.give_up_ms = 200;
	w.fallback_at_create = true;
	world_run(&w);
	for (r = 0; r < w.n; r++) {
		/* Agreed at creation: every rank starts in the fallback, none
		 * has a stream to recover. */
		ck_assert_uint_eq(w.st[r].recoveries, 0);
		/* An allreduce of every dtype, the broadcast, the barrier. */
		ck_assert_uint_eq(w.st[r].fallback_collectives, INCA_DTYPE_COUNT + 2);
		ck_assert_uint_eq(w.st[r].chunks, 0);
	}
	close(fd);
}
END_TEST

/* Without a fallback, an aggregator that dies mid-collective gives
 * INCA_ETIMEDOUT within give_up_ms, and the communicator stays failed. */
static void
body_die_nofb(struct world *w, unsigned rank, struct inca_comm *c)
{
	int32_t *buf = calloc(20000, 4);
	int ret;

	(void)w;
	(void)rank;
	ret = inca_allreduce(c, INCA_IN_PLACE, buf, 20000, INCA_DTYPE_INT32, INCA_OP_SUM);
	ck_assert_int_eq(ret, INCA_ETIMEDOUT);
	ck_assert_int_eq(inca_barrier(c), INCA_EFAILED);
	free(buf);
}

static void
body_one_int_sum(struct world *w, unsigned rank, struct inca_comm *c)
{
	run_checked(c, rank, w->n, INCA_DTYPE_INT32, INCA_OP_SUM, 3000, 77, false);
}

/*
 * Rank 1 is created long after rank 0 (a slow launcher), longer than the
 * aggregator's evict_ms: rank 0, waiting in the creation agreement, stays
 * a member (it heartbeats meanwhile), and the job runs on the aggregator.
 */
START_TEST(test_slow_launcher)
{
	struct tagg_cfg cfg;
	struct tagg *a;
	struct world w;
	unsigned r;

	tagg_cfg_init(&cfg);
	cfg.hb_ms = 100;
	cfg.evict_ms = 300;
	a = tagg_start(&cfg);
	world_init(&w, 2, a, body_one_int_sum);
	w.fallback_at_create = true;
	w.create_delay_ms[1] = 1200;
	world_run(&w);
	ck_assert_uint_eq(a->evicted, 0);
	for (r = 0; r < 2; r++) {
		ck_assert_uint_eq(w.st[r].recoveries, 0);
		ck_assert_uint_eq(w.st[r].fallback_collectives, 0);
		ck_assert_uint_gt(w.st[r].chunks, 0);
	}
	tagg_stop(a);
}
END_TEST

START_TEST(test_die_without_fallback)
{
	struct tagg_cfg cfg;
	struct tagg *a;
	struct world w;

	tagg_cfg_init(&cfg);
	cfg.die_after = 5;
	cfg.last_mask = 1;
	a = tagg_start(&cfg);
	world_init(&w, 2, a, body_die_nofb);
	world_run(&w);
	tagg_stop(a);
}
END_TEST

/*
 * The aggregator dies mid-stream. The last result it sends reaches only
 * the ranks in last_mask, so ranks stop at different points (some have
 * finished a collective the others have not); in-flight requests and in
 * place buffers are involved. Every result must still be exact, through
 * the agreement and the fallback. Later the aggregator restarts and the
 * ranks return to it.
 */
struct die_plan {
	unsigned rounds;
	bool restart_at;   /* restart the aggregator after this many rounds */
	unsigned restart_round;
};

static void
body_die(struct world *w, unsigned rank, struct inca_comm *c)
{
	const struct die_plan *plan = w->user;
	unsigned round;

	for (round = 0; round < plan->rounds; round++) {
		struct inca_request *req[3];
		size_t cnt[3] = {1500, 777, 2048};
		unsigned dt[3] = {INCA_DTYPE_INT32, INCA_DTYPE_FP32, INCA_DTYPE_BF16};
		unsigned op[3] = {INCA_OP_SUM, INCA_OP_MAX, INCA_OP_SUM};
		void *buf[3];
		unsigned k;

		if (plan->restart_at && round == plan->restart_round) {
			pthread_barrier_wait(&w->bar);
			if (rank == 0)
				atomic_store(&w->agg->restart, true);
			while (atomic_load(&w->agg->restart))
				usleep(1000);
		}
		for (k = 0; k < 3; k++) {
			buf[k] = malloc(cnt[k] * inca_dtype_size(dt[k]));
			fill(buf[k], dt[k], op[k], rank, cnt[k], round * 3 + k);
			ck_assert_int_eq(inca_iallreduce(c, INCA_IN_PLACE, buf[k], cnt[k], dt[k],
							 op[k], &req[k]), INCA_OK);
		}
		for (k = 0; k < 3; k++) {
			int ret = inca_wait(&req[k]);

			ck_assert_msg(ret == INCA_OK, "rank %u round %u req %u: %s", rank, round,
				      k, inca_strerror(ret));
			check_result(buf[k], dt[k], op[k], w->n, cnt[k], round * 3 + k, rank);
			free(buf[k]);
		}
		run_checked(c, rank, w->n, INCA_DTYPE_FP16, INCA_OP_SUM, 300, 1000 + round,
			    round % 2);
	}
}

static void
die_case(unsigned n, unsigned die_after, uint32_t last_mask, bool native,
	 const struct die_plan *plan, struct world *w)
{
	struct tagg_cfg cfg;
	struct tagg *a;
	unsigned r;

	tagg_cfg_init(&cfg);
	cfg.native = native;
	cfg.window = 8;
	cfg.max_elems = 256;
	cfg.die_after = die_after;
	cfg.last_mask = last_mask;
	a = tagg_start(&cfg);
	world_init(w, n, a, body_die);
	w->user = (void *)plan;
	w->with_fallback = true;
	w->opts.give_up_ms = 250;
	w->opts.probe_every = 2;
	world_run(w);
	for (r = 0; r < n; r++) {
		ck_assert_uint_ge(w->st[r].recoveries, 1);
		ck_assert_uint_gt(w->st[r].fallback_collectives, 0);
	}
	tagg_stop(a);
}

/* Dies in the first collective; the last result reaches rank 0 only. */
START_TEST(test_die_early)
{
	static const struct die_plan plan = {.rounds = 3};
	struct world w;

	die_case(4, 4, 0x1, true, &plan, &w);
}
END_TEST

/* Dies at the boundary between in-flight collectives, for each set of
 * ranks that got the last result; BFP streams as well. */
START_TEST(test_die_mid)
{
	static const struct die_plan plan = {.rounds = 3};
	static const unsigned after[] = {6, 7, 8, 9, 13, 17, 22, 23, 30, 31};
	static const uint32_t masks[] = {0x1, 0x2, 0x3, 0x5, 0x6, 0x4, 0x7};
	struct world w;

	die_case(3, after[_i % 10], masks[_i % 7], _i % 2 == 0, &plan, &w);
}
END_TEST

/* Results of later chunks arrive while an earlier chunk's never does:
 * the fallback redoes from the missing chunk on, with in-place buffers
 * intact. */
START_TEST(test_die_hole)
{
	static const struct die_plan plan = {.rounds = 2};
	struct tagg_cfg cfg;
	struct tagg *a;
	struct world w;
	unsigned r;

	tagg_cfg_init(&cfg);
	cfg.window = 8;
	cfg.max_elems = 256;
	cfg.blackhole_seq = 3;
	cfg.die_after = 9;
	cfg.last_mask = 0x3;
	a = tagg_start(&cfg);
	world_init(&w, 2, a, body_die);
	w.user = (void *)&plan;
	w.with_fallback = true;
	w.opts.give_up_ms = 250;
	w.opts.probe_every = UINT32_MAX;
	world_run(&w);
	for (r = 0; r < w.n; r++) {
		ck_assert_uint_eq(w.st[r].recoveries, 1);
		ck_assert_uint_eq(w.st[r].probes, 0);
	}
	tagg_stop(a);
}
END_TEST

/* The aggregator comes back: the ranks probe and rejoin, and the later
 * collectives go through it again. */
START_TEST(test_die_and_rejoin)
{
	static const struct die_plan plan = {.rounds = 6, .restart_at = true,
					     .restart_round = 2};
	struct world w;
	unsigned r;

	die_case(4, 10, 0x9, true, &plan, &w);
	for (r = 0; r < w.n; r++) {
		ck_assert_uint_ge(w.st[r].probes, 1);
		ck_assert_uint_eq(w.st[r].rejoins, 1);
		/* Rounds after the rejoin went through the aggregator. */
		ck_assert_uint_gt(w.st[r].chunks, 40);
	}
}
END_TEST

/* A compute phase longer than the eviction time between collectives:
 * with the keepalive thread the membership survives; without it the
 * aggregator evicts and the next collective is refused. */
static void
body_keepalive(struct world *w, unsigned rank, struct inca_comm *c)
{
	bool keep = w->user != NULL;
	struct inca_comm_info info;
	int ret;

	inca_comm_info(c, &info);
	ck_assert_uint_eq(info.evict_ms, 300);
	ck_assert_int_eq(inca_comm_keepalive(c, keep), INCA_OK);
	run_checked(c, rank, w->n, INCA_DTYPE_INT32, INCA_OP_SUM, 1000, 1, false);
	usleep(800 * 1000);
	if (keep) {
		run_checked(c, rank, w->n, INCA_DTYPE_FP32, INCA_OP_SUM, 1000, 2, false);
		ck_assert_int_eq(inca_comm_keepalive(c, 0), INCA_OK);
	} else {
		int32_t x[10] = {0};

		ret = inca_allreduce(c, INCA_IN_PLACE, x, 10, INCA_DTYPE_INT32, INCA_OP_SUM);
		ck_assert_int_eq(ret, INCA_EREFUSED);
	}
}

START_TEST(test_keepalive)
{
	struct tagg_cfg cfg;
	struct tagg *a;
	struct world w;
	unsigned r;

	tagg_cfg_init(&cfg);
	cfg.hb_ms = 100;
	cfg.evict_ms = 300;
	a = tagg_start(&cfg);
	world_init(&w, 2, a, body_keepalive);
	world_run(&w);
	tagg_stop(a);

	a = tagg_start(&cfg);
	world_init(&w, 2, a, body_keepalive);
	w.user = &w; /* keepalive on */
	world_run(&w);
	for (r = 0; r < w.n; r++) {
		ck_assert_uint_ge(w.st[r].heartbeats, 3);
		ck_assert_uint_eq(w.st[r].nacks, 0);
	}
	tagg_stop(a);
}
END_TEST

/* ---- BFP accuracy ------------------------------------------------------------ */

/* Data of widely different magnitudes per chunk. */
static float
gen_bfp(unsigned rank, size_t i, unsigned dtype)
{
	uint32_t h = (uint32_t)(i * 2654435761u) ^ (rank * 0x9E3779B9u);
	int mant = (int)(h % 2001) - 1000;
	int e = dtype == INCA_DTYPE_FP32 ? (int)((i / 300) % 40) - 20 : (int)((i / 300) % 12) - 8;

	h = h * 1103515245u + 12345u;
	return ldexpf((float)mant + (float)(h % 1000) / 1000.0f, e);
}

/* The library's local exponent rule, restated: |x| < 2^E. */
static int
local_exp(float x)
{
	uint32_t u;

	memcpy(&u, &x, 4);
	u = (u >> 23) & 0xff;
	if (u == 0)
		return -126;
	return (int)u - 126;
}

static void
body_bfp(struct world *w, unsigned rank, struct inca_comm *c)
{
	static const unsigned dts[] = {INCA_DTYPE_FP32, INCA_DTYPE_FP16, INCA_DTYPE_BF16};
	const size_t count = 20000;
	struct inca_comm_info info;
	unsigned di, r;
	size_t i;

	inca_comm_info(c, &info);
	ck_assert_int_eq(info.float_native, 0);
	for (di = 0; di < 3; di++) {
		unsigned dt = dts[di];
		size_t es = inca_dtype_size(dt);
		/* A BFP chunk holds as many elements as an int32 one. */
		size_t ce = info.max_elems;
		uint8_t *buf = malloc(count * es);
		double rel = dt == INCA_DTYPE_FP32 ? 0 : dt == INCA_DTYPE_FP16 ? ldexp(1, -10) :
										   ldexp(1, -7);

		for (i = 0; i < count; i++)
			store_f(buf, dt, i, gen_bfp(rank, i, dt));
		ck_assert_int_eq(inca_allreduce(c, INCA_IN_PLACE, buf, count, dt, INCA_OP_SUM),
				 INCA_OK);
		for (size_t c0 = 0; c0 < count; c0 += ce) {
			size_t c1 = c0 + ce < count ? c0 + ce : count;
			int e = -127;

			for (i = c0; i < c1; i++)
				for (r = 0; r < w->n; r++) {
					uint8_t t[4];

					store_f(t, dt, 0, gen_bfp(r, i, dt));
					int le = local_exp(load_f(t, dt, 0));

					if (le > e)
						e = le;
				}
			for (i = c0; i < c1; i++) {
				double exact = 0, y = load_f(buf, dt, i), bound;

				for (r = 0; r < w->n; r++) {
					uint8_t t[4];

					store_f(t, dt, 0, gen_bfp(r, i, dt));
					exact += load_f(t, dt, 0);
				}
				bound = inca_bfp_error_bound(w->n, e, y) + rel * fabs(y);
				if (!(fabs(y - exact) <= bound))
					ck_abort_msg("%s element %zu: %.9g vs exact %.9g, "
						     "bound %.3g", inca_dtype_name(dt), i, y,
						     exact, bound);
			}
		}
		free(buf);
	}

	/* inf and NaN in BFP: the non-finite elements reduce by IEEE rules,
	 * and never pass for finite numbers. */
	float v[600];

	for (i = 0; i < 600; i++)
		v[i] = 1.5f;
	if (rank == 0)
		v[10] = INFINITY;
	if (rank == 1)
		v[11] = -INFINITY;
	if (rank == 0)
		v[12] = INFINITY;
	if (rank == 1)
		v[12] = -INFINITY;
	if (rank == 1)
		v[13] = NAN;
	ck_assert_int_eq(inca_allreduce(c, INCA_IN_PLACE, v, 600, INCA_DTYPE_FP32, INCA_OP_SUM),
			 INCA_OK);
	ck_assert(isinf(v[10]) && v[10] > 0);
	ck_assert(isinf(v[11]) && v[11] < 0);
	ck_assert(isnan(v[12]));
	ck_assert(isnan(v[13]));
	for (i = 0; i < 600; i++) {
		if (i >= 10 && i <= 13)
			continue;
		/* Same chunk as the specials: poisoned; others exact. */
		if (i / info.max_elems == 0)
			ck_assert_msg(isnan(v[i]), "element %zu", i);
		else
			ck_assert_msg(v[i] == 1.5f * w->n, "element %zu: %g", i, v[i]);
	}
}

START_TEST(test_bfp_bound)
{
	static const unsigned ns[] = {2, 4, 8};
	struct tagg_cfg cfg;
	struct tagg *a;
	struct world w;
	unsigned r;

	tagg_cfg_init(&cfg);
	cfg.native = false;
	a = tagg_start(&cfg);
	world_init(&w, ns[_i], a, body_bfp);
	world_run(&w);
	for (r = 0; r < w.n; r++)
		ck_assert_uint_gt(w.st[r].bfp_chunks, 0);
	tagg_stop(a);
}
END_TEST

/* float_mode bfp forces BFP on a native aggregator; native on an int-only
 * one is refused at creation. */
START_TEST(test_float_mode)
{
	struct tagg_cfg cfg;
	struct tagg *a;
	struct world w;

	tagg_cfg_init(&cfg);
	a = tagg_start(&cfg);
	world_init(&w, 2, a, body_bfp);
	w.opts.float_mode = INCA_FLOAT_BFP;
	world_run(&w);
	tagg_stop(a);

	cfg.native = false;
	a = tagg_start(&cfg);
	world_init(&w, 2, a, body_bfp);
	w.opts.float_mode = INCA_FLOAT_NATIVE;
	w.opts.give_up_ms = 300;
	w.expect_create = INCA_ENOTSUP;
	world_run(&w);
	tagg_stop(a);
}
END_TEST

/* ---- routed collectives: ReduceScatter, AllGather, Reduce ------------------ */

/* The byte @i of rank @rank's AllGather block. */
static uint8_t
gen_byte(unsigned rank, size_t i, unsigned salt)
{
	return (uint8_t)(i * 7 + rank * 31 + salt * 13 + (i >> 8));
}

/* One ReduceScatter of @recvcount elements a rank, checked against the
 * allreduce's reference, block by block. */
static void
rscat_checked(struct inca_comm *c, unsigned rank, unsigned n, unsigned dtype, unsigned op,
	      size_t recvcount, unsigned salt)
{
	size_t us = inca_dtype_size(dtype), i;
	void *in = malloc(n * recvcount * us + 1), *out = malloc(recvcount * us + 1);
	int ret;

	ck_assert(in && out);
	fill(in, dtype, op, rank, n * recvcount, salt);
	ret = inca_reduce_scatter(c, in, out, recvcount, dtype, op);
	if (host_only(dtype)) {
		ck_assert_int_eq(ret, INCA_ENOTSUP);
		free(in);
		free(out);
		return;
	}
	ck_assert_msg(ret == INCA_OK, "rank %u: reduce_scatter %s %s %zu: %s", rank,
		      inca_dtype_name(dtype), inca_op_name(op), recvcount, inca_strerror(ret));
	for (i = 0; i < recvcount; i++) {
		uint64_t want = expect_bits(dtype, op, n, rank * recvcount + i, salt);
		uint64_t got = got_bits(out, dtype, i);

		if (got != want)
			ck_abort_msg("rank %u: reduce_scatter %s %s %zu salt %u: element %zu is "
				     "0x%llx, want 0x%llx", rank, inca_dtype_name(dtype),
				     inca_op_name(op), recvcount, salt, i, (unsigned long long)got,
				     (unsigned long long)want);
	}
	free(in);
	free(out);
}

/* One AllGather of @bytes a rank (in place when @inplace), every block checked. */
static void
agather_checked(struct inca_comm *c, unsigned rank, unsigned n, size_t bytes, unsigned salt,
		bool inplace)
{
	uint8_t *in = malloc(bytes + 1), *out = malloc(n * bytes + 1);
	size_t i;
	unsigned r;
	int ret;

	ck_assert(in && out);
	memset(out, 0xa5, n * bytes + 1);
	for (i = 0; i < bytes; i++)
		in[i] = gen_byte(rank, i, salt);
	if (inplace) {
		memcpy(out + rank * bytes, in, bytes);
		ret = inca_allgather(c, INCA_IN_PLACE, out, bytes);
	} else {
		ret = inca_allgather(c, in, out, bytes);
	}
	ck_assert_msg(ret == INCA_OK, "rank %u: allgather %zu: %s", rank, bytes,
		      inca_strerror(ret));
	for (r = 0; r < n; r++)
		for (i = 0; i < bytes; i++)
			if (out[r * bytes + i] != gen_byte(r, i, salt))
				ck_abort_msg("rank %u: allgather %zu salt %u: block %u byte %zu is "
					     "0x%02x, want 0x%02x", rank, bytes, salt, r, i,
					     out[r * bytes + i], gen_byte(r, i, salt));
	ck_assert_msg(out[n * bytes] == 0xa5, "allgather wrote past the buffer");
	free(in);
	free(out);
}

/* One Reduce to @root; the other ranks pass no receive buffer. */
static void
reduce_checked(struct inca_comm *c, unsigned rank, unsigned n, unsigned dtype, unsigned op,
	       size_t count, unsigned salt, unsigned root)
{
	size_t us = inca_dtype_size(dtype);
	void *in = malloc(count * us + 1), *out = malloc(count * us + 1);
	int ret;

	ck_assert(in && out);
	fill(in, dtype, op, rank, count, salt);
	ret = inca_reduce(c, in, rank == root ? out : NULL, count, dtype, op, root);
	if (host_only(dtype)) {
		ck_assert_int_eq(ret, INCA_ENOTSUP);
		free(in);
		free(out);
		return;
	}
	ck_assert_msg(ret == INCA_OK, "rank %u: reduce %zu: %s", rank, count, inca_strerror(ret));
	if (rank == root)
		check_result(out, dtype, op, n, count, salt, rank);
	free(in);
	free(out);
}

static const size_t routed_sizes[] = {1, 3, 255, 257, 1000};

static void
body_routed(struct world *w, unsigned rank, struct inca_comm *c)
{
	unsigned d, op, s, salt = 0;
	int32_t x[2 * INCA_MAX_WORKERS] = {0};

	/* Refused before anything is sent, on every rank alike. */
	ck_assert_int_eq(inca_reduce_scatter(c, INCA_IN_PLACE, x, 1, INCA_DTYPE_INT32, INCA_OP_SUM),
			 INCA_EINVAL);
	ck_assert_int_eq(inca_reduce_scatter(c, x, x, 1, INCA_DTYPE_COUNT, INCA_OP_SUM),
			 INCA_EINVAL);
	ck_assert_int_eq(inca_reduce(c, x, x, 1, INCA_DTYPE_INT32, INCA_OP_SUM, w->n), INCA_EINVAL);
	ck_assert_int_eq(inca_allgather(c, NULL, x, 4), INCA_EINVAL);
	for (d = 0; d < INCA_DTYPE_COUNT; d++)
		for (op = 0; op < INCA_OP_COUNT; op++)
			for (s = 0; s < sizeof(routed_sizes) / sizeof(routed_sizes[0]); s++)
				rscat_checked(c, rank, w->n, d, op, routed_sizes[s], salt++);
	for (s = 0; s < sizeof(routed_sizes) / sizeof(routed_sizes[0]); s++) {
		agather_checked(c, rank, w->n, routed_sizes[s] * 5, salt++, s % 2);
		agather_checked(c, rank, w->n, routed_sizes[s] * 4, salt++, s % 2 == 0);
	}
	for (d = 0; d < INCA_DTYPE_COUNT; d++)
		for (op = 0; op < INCA_OP_COUNT; op++)
			reduce_checked(c, rank, w->n, d, op, 700, salt++, (d + op) % w->n);
	/* Interleaved with an allreduce: one stream, one window. */
	run_checked(c, rank, w->n, INCA_DTYPE_INT32, INCA_OP_SUM, 3000, salt++, false);
	rscat_checked(c, rank, w->n, INCA_DTYPE_FP32, INCA_OP_SUM, 2000, salt++);
}

/*
 * Every dtype and op through an aggregator with routed chunks, and the
 * same through one without (the forms without them), exact both ways.
 */
static void
routed_for(unsigned n, bool routed, bool native)
{
	struct tagg_cfg cfg;
	struct tagg *a;
	struct world w;
	unsigned r;

	tagg_cfg_init(&cfg);
	cfg.routed = routed;
	cfg.native = native;
	a = tagg_start(&cfg);
	world_init(&w, n, a, body_routed);
	world_run(&w);
	for (r = 0; r < n; r++) {
		ck_assert_uint_eq(w.st[r].recoveries, 0);
		ck_assert_uint_eq(w.st[r].fallback_calls, 0);
	}
	if (routed && native) {
		ck_assert_uint_gt(atomic_load(&a->routed_contribs), 0);
		ck_assert_uint_gt(atomic_load(&a->brief_results), 0);
	} else if (!routed) {
		ck_assert_uint_eq(atomic_load(&a->routed_contribs), 0);
	}
	tagg_stop(a);
}

START_TEST(test_routed)
{
	static const unsigned ns[] = {2, 3, 4};

	routed_for(ns[_i], true, true);
}
END_TEST

/*
 * INT64 and FP64, every op, sizes across chunk boundaries (a chunk holds
 * max_elems / 2 of them), as allreduce, ReduceScatter and Reduce.
 */
static void
body_wide(struct world *w, unsigned rank, struct inca_comm *c)
{
	static const unsigned dts[] = {INCA_DTYPE_INT64, INCA_DTYPE_FP64};
	static const size_t sizes[] = {1, 49, 50, 51, 2000};
	unsigned d, op, s, salt = 0;

	for (d = 0; d < 2; d++) {
		for (op = 0; op < INCA_OP_COUNT; op++) {
			for (s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
				run_checked(c, rank, w->n, dts[d], op, sizes[s], salt++, s % 2);
			rscat_checked(c, rank, w->n, dts[d], op, 700, salt++);
			reduce_checked(c, rank, w->n, dts[d], op, 1100, salt++, op % w->n);
		}
	}
}

/*
 * @wide: the aggregator has INT64 and FP64, and everything goes through it
 * (max_elems 100: chunks of 50 elements, fewer than the MTU holds, so the
 * lane rule is what cuts them); else libinca refuses them on
 * every rank and the host reduces them, to the same bits.
 */
static void
wide_for(unsigned n, bool wide)
{
	struct tagg_cfg cfg;
	struct tagg *a;
	struct world w;
	unsigned r;

	tagg_cfg_init(&cfg);
	cfg.wide = wide;
	cfg.routed = true;
	cfg.max_elems = 100;
	a = tagg_start(&cfg);
	world_init(&w, n, a, body_wide);
	world_run(&w);
	for (r = 0; r < n; r++) {
		ck_assert_uint_eq(w.st[r].recoveries, 0);
		ck_assert_uint_eq(w.st[r].fallback_calls, 0);
		if (wide) {
			ck_assert_uint_gt(w.st[r].chunks, 0);
			ck_assert_uint_eq(host_runs[r], 0);
		} else {
			ck_assert_uint_eq(w.st[r].chunks, 0);
			ck_assert_uint_eq(host_runs[r], 2 * INCA_OP_COUNT * 5);
		}
	}
	ck_assert_uint_eq(atomic_load(&a->short_contribs), 0);
	if (wide)
		ck_assert_uint_gt(atomic_load(&a->routed_contribs), 0);
	tagg_stop(a);
}

START_TEST(test_wide)
{
	wide_for(_i ? 3 : 4, true);
}
END_TEST

START_TEST(test_wide_host)
{
	wide_for(3, false);
}
END_TEST

START_TEST(test_routed_without_cap)
{
	routed_for(3, false, true);
	/* Floats without native aggregation: routed for int32 only. */
	routed_for(2, true, false);
}
END_TEST

/* Loss, duplication and reordering of routed chunks and their results. */
START_TEST(test_routed_lossy)
{
	struct tagg_cfg cfg;
	struct tagg *a;
	struct world w;

	tagg_cfg_init(&cfg);
	cfg.routed = true;
	cfg.drop_contrib_every = 7;
	cfg.drop_result_every = 5;
	cfg.dup_result_every = 4;
	cfg.reorder = true;
	cfg.max_elems = 256;
	a = tagg_start(&cfg);
	world_init(&w, 3, a, body_routed);
	world_run(&w);
	ck_assert_uint_gt(atomic_load(&a->replays), 0);
	ck_assert_uint_gt(atomic_load(&a->brief_results), 0);
	tagg_stop(a);
}
END_TEST

/*
 * The aggregator dies mid-stream of routed collectives, its last result
 * reaching only the ranks of last_mask: a reduced chunk's root may lack
 * its elements while the others have their BRIEF results (or every rank
 * but a gather's root its elements). The recovery rebuilds those from
 * the kept contributions; every result exact, then the aggregator comes
 * back and the ranks return to it.
 */
static void
body_routed_die(struct world *w, unsigned rank, struct inca_comm *c)
{
	unsigned round, salt = 500;

	for (round = 0; round < 4; round++) {
		if (round == 2) {
			pthread_barrier_wait(&w->bar);
			if (rank == 0)
				atomic_store(&w->agg->restart, true);
			while (atomic_load(&w->agg->restart))
				usleep(1000);
		}
		/* Small ones first: a collective of one chunk per block ends
		 * where the aggregator dies, so that its results must come from
		 * the recovery (the fallback redoes only what is after them). */
		rscat_checked(c, rank, w->n, INCA_DTYPE_INT32, INCA_OP_SUM, 10, salt++);
		agather_checked(c, rank, w->n, 40, salt++, round % 2);
		reduce_checked(c, rank, w->n, INCA_DTYPE_INT32, INCA_OP_SUM, 50, salt++,
			       (round + 2) % w->n);
		rscat_checked(c, rank, w->n, INCA_DTYPE_FP16, INCA_OP_MAX, 30, salt++);
		rscat_checked(c, rank, w->n, INCA_DTYPE_INT32, INCA_OP_SUM, 300, salt++);
		agather_checked(c, rank, w->n, 1001, salt++, round % 2);
		rscat_checked(c, rank, w->n, INCA_DTYPE_FP32, INCA_OP_MAX, 200, salt++);
		reduce_checked(c, rank, w->n, INCA_DTYPE_BF16, INCA_OP_SUM, 600, salt++,
			       round % w->n);
		reduce_checked(c, rank, w->n, INCA_DTYPE_INT32, INCA_OP_MIN, 700, salt++,
			       (round + 1) % w->n);
	}
}

/*
 * Where the aggregator dies (its die_after-th completion) and which ranks
 * got that last result (last_mask). In round 0 of body_routed_die, with
 * three ranks and 64 elements a chunk, completions 1-3 are the blocks of
 * the first ReduceScatter (block k's root is rank k), 4-6 the AllGather's
 * blocks (owner k), 7 the Reduce (root 2), 8-10 the fp16 ReduceScatter's
 * blocks, 11-25 the 15 chunks of the 300-element one (chunk j to block
 * j mod 3). Chunks complete in stream order, so these positions are the
 * same in every run.
 *
 * A covering set rather than all 12 x 5 pairs: the pairs differ only in
 * where the fallback starts (F) and in who holds the last chunk's elements
 * or its BRIEF result. A death inside a collective makes the fallback redo
 * that collective from its start, whatever the mask, so those positions
 * get one mask each (every mask among them). A death at a collective's last
 * chunk (3, 6, 7, 10; the root is rank 2 each time) leaves F at the next
 * collective, so that chunk must come from round 3 or be rebuilt from the
 * contributions (round 3'): those get most masks. On the full product,
 * skipping the rebuild failed (3, 7 or 10; 0x1 or 0x2) and (6, 0x4), and
 * counting a BRIEF result as one with elements failed those and, in one
 * run of two, (3, 0x4); no other pair. This set has all of them but
 * (10, 0x1), the twin of (10, 0x2) (a rank other than the root got the
 * result), and fails on those six under either break.
 */
static const struct {
	unsigned after;
	uint32_t mask;
} routed_die_cases[] = {
	/* The first ReduceScatter's last block, root 2: every mask. */
	{3, 0x1}, {3, 0x2}, {3, 0x4}, {3, 0x6}, {3, 0x0},
	/* The AllGather's last block: only its owner (whose own block comes
	 * BRIEF, so its elements are nowhere), the others, both, nobody. */
	{6, 0x4}, {6, 0x1}, {6, 0x6}, {6, 0x0},
	/* The Reduce to rank 2. */
	{7, 0x1}, {7, 0x2}, {7, 0x4}, {7, 0x0},
	/* The fp16 MAX ReduceScatter's last block: a float rebuild. */
	{10, 0x2}, {10, 0x4}, {10, 0x6},
	/* Inside the first collectives (one chunk per block). */
	{1, 0x2}, {2, 0x4}, {4, 0x6}, {5, 0x0}, {8, 0x1}, {9, 0x6},
	/* Inside a collective of several chunks per block (roots 2 and 0). */
	{13, 0x1}, {17, 0x6},
};

#define ROUTED_DIE_CASES (sizeof(routed_die_cases) / sizeof(routed_die_cases[0]))

START_TEST(test_routed_die)
{
	struct tagg_cfg cfg;
	struct tagg *a;
	struct world w;
	unsigned r;

	tagg_cfg_init(&cfg);
	cfg.routed = true;
	cfg.window = 8;
	cfg.max_elems = 64;
	cfg.die_after = routed_die_cases[_i].after;
	cfg.last_mask = routed_die_cases[_i].mask;
	a = tagg_start(&cfg);
	world_init(&w, 3, a, body_routed_die);
	w.with_fallback = true;
	/* Many runs of three ranks' creation: under ASan on a loaded host one
	 * JOIN round trip took longer than 250 ms (CI, stop 25). */
	w.opts.give_up_ms = 600;
	w.opts.probe_every = 2;
	world_run(&w);
	for (r = 0; r < w.n; r++) {
		ck_assert_uint_ge(w.st[r].recoveries, 1);
		ck_assert_uint_gt(w.st[r].fallback_collectives, 0);
	}
	tagg_stop(a);
}
END_TEST

Suite *engine_suite(void);

Suite *
engine_suite(void)
{
	Suite *s = suite_create("engine");
	TCase *tc;

#define TC(name, fn, timeout) \
	tc = tcase_create(name); \
	tcase_add_test(tc, fn); \
	tcase_set_timeout(tc, timeout); \
	suite_add_tcase(s, tc)
#define TCL(name, fn, n, timeout) \
	tc = tcase_create(name); \
	tcase_add_loop_test(tc, fn, 0, n); \
	tcase_set_timeout(tc, timeout); \
	suite_add_tcase(s, tc)

	TC("matrix_2_workers", test_matrix_2, 60);
	TC("matrix_4_workers", test_matrix_4, 60);
	TC("matrix_8_workers", test_matrix_8, 60);
	TC("matrix_int32_only_aggregator", test_matrix_int_only, 60);
	TC("matrix_fixed_count_aggregator", test_matrix_fixed_count, 60);
	TC("slow_launcher", test_slow_launcher, 60);
	TCL("large_2_4_8_workers", test_large, 3, 120);
	TC("requests_in_flight", test_inflight, 60);
	TCL("broadcast_every_root", test_broadcast, 3, 60);
	TC("barrier", test_barrier, 30);
	TC("loss_dup_reorder", test_lossy, 60);
	TC("nack_held", test_held, 60);
	TC("nack_unknown_job", test_nack_unknown_job, 20);
	TC("unreachable_error", test_unreachable_error, 20);
	TC("unreachable_fallback", test_unreachable_fallback, 30);
	TC("die_without_fallback", test_die_without_fallback, 30);
	TC("die_early_fallback", test_die_early, 30);
	TCL("die_mid_fallback", test_die_mid, 10, 30);
	TC("die_hole_fallback", test_die_hole, 30);
	TC("die_and_rejoin", test_die_and_rejoin, 60);
	TC("keepalive", test_keepalive, 30);
	TCL("bfp_error_bound", test_bfp_bound, 3, 60);
	TC("float_mode", test_float_mode, 30);
	TCL("routed_2_3_4_workers", test_routed, 3, 120);
	TC("routed_without_cap", test_routed_without_cap, 120);
	tc = tcase_create("wide_int64_fp64");
	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, test_wide, 0, 2);
	suite_add_tcase(s, tc);
	TC("wide_on_the_host", test_wide_host, 60);
	TC("routed_loss_dup_reorder", test_routed_lossy, 120);
	TCL("routed_die_fallback", test_routed_die, (int)ROUTED_DIE_CASES, 60);
	/* Mostly waits for give_up_ms and probes: meson runs it as its own
	 * test (engine_routed_die), beside the rest (tests/unit/meson.build). */
	tcase_set_tags(tc, "routed_die");
	return s;
}

static void
log_stderr(void *ctx, int level, const char *msg)
{
	(void)ctx;
	fprintf(stderr, "inca[%d]: %s\n", level, msg);
}

int
main(void)
{
	SRunner *sr = srunner_create(engine_suite());
	int failed;

	/* INCA_TEST_LOG=<level> shows what the library does. */
	if (getenv("INCA_TEST_LOG") != NULL)
		inca_set_log_fn(log_stderr, NULL, atoi(getenv("INCA_TEST_LOG")));
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

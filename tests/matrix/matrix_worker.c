/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * One rank of a hang-and-corruption matrix row (tests/matrix/matrix.py):
 * libinca against the real incad, a TCP rendezvous group as the
 * out-of-band allgather and (unless --no-fallback) as the fallback, a list
 * of collectives whose results it verifies, and the fault this rank
 * brings to the row.
 *
 *   matrix_worker --agg IP --group IP:PORT --job J --rank R --size N
 *                 --token T [--ops dtype:op:count,...] [--iters K]
 *                 [--mtu M] [--window W] [--op-timeout MS] [--give-up MS]
 *                 [--no-fallback] [--join-delay MS] [--sleep-at I:MS]
 *                 [--stop-at I] [--die-at I] [--mismatch-at I:count|dtype|op]
 *                 [--abort-after MS] [--bind IP:PORT] [--group-timeout MS]
 *                 [--probe-every K] [--keepalive]
 *
 * Collective i is element (i mod #ops) of --ops, the list repeated --iters
 * times. Prints one JSON object per line: the creation, every collective
 * (its return value, whether the result was exact, milliseconds), the
 * destruction. Exit status 0 when it ran to the end (whatever the
 * collectives returned), 2 on bad arguments.
 */

#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <inca/inca.h>

#define MAX_OPS 16

struct coll {
	unsigned dtype, op;
	size_t count;
};

static struct {
	const char *agg, *group, *bind;
	unsigned group_timeout, probe_every;
	unsigned job, rank, size;
	uint32_t token;
	struct coll ops[MAX_OPS];
	unsigned nops, iters;
	unsigned mtu, window, op_timeout, give_up;
	bool no_fallback, keepalive;
	unsigned join_delay;
	int sleep_at, sleep_ms, stop_at, die_at, mismatch_at;
	char mismatch[16];
	unsigned abort_after;
} a = {
	.iters = 1,
	.sleep_at = -1,
	.stop_at = -1,
	.die_at = -1,
	.mismatch_at = -1,
};

static double
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void
log_fn(void *ctx, int level, const char *msg)
{
	(void)ctx;
	fprintf(stderr, "rank %u [%d] %s\n", a.rank, level, msg);
}

/* Input element j of rank r in collective i: small integers, exact in
 * every dtype and in block fixed point. */
static int
val(unsigned r, unsigned i, size_t j)
{
	return (int)((r * 7 + i * 3 + j * 5) % 61) - 30;
}

static float
half_to_f(unsigned dtype, uint16_t h)
{
	return dtype == INCA_DTYPE_FP16 ? inca_fp16_to_fp32(h) : inca_bf16_to_fp32(h);
}

static void
fill(void *buf, unsigned dtype, size_t count, unsigned r, unsigned i)
{
	size_t j;

	for (j = 0; j < count; j++) {
		int v = val(r, i, j);

		switch (dtype) {
		case INCA_DTYPE_INT32:
			((int32_t *)buf)[j] = v;
			break;
		case INCA_DTYPE_FP32:
			((float *)buf)[j] = (float)v;
			break;
		case INCA_DTYPE_FP16:
			((uint16_t *)buf)[j] = inca_fp32_to_fp16((float)v);
			break;
		default:
			((uint16_t *)buf)[j] = inca_fp32_to_bf16((float)v);
			break;
		}
	}
}

static bool
check(const void *buf, const struct coll *c, unsigned i)
{
	size_t j;
	unsigned r;

	for (j = 0; j < c->count; j++) {
		int e = val(0, i, j), v;
		double got;

		for (r = 1; r < a.size; r++) {
			v = val(r, i, j);
			e = c->op == INCA_OP_SUM ? e + v : c->op == INCA_OP_MIN ? (v < e ? v : e) :
										(v > e ? v : e);
		}
		switch (c->dtype) {
		case INCA_DTYPE_INT32:
			got = ((const int32_t *)buf)[j];
			break;
		case INCA_DTYPE_FP32:
			got = ((const float *)buf)[j];
			break;
		default:
			got = half_to_f(c->dtype, ((const uint16_t *)buf)[j]);
			break;
		}
		if (got != (double)e) {
			fprintf(stderr, "rank %u: collective %u element %zu: %g, expected %d\n",
				a.rank, i, j, got, e);
			return false;
		}
	}
	return true;
}

static int
parse_ops(char *s)
{
	static const char *const dn[] = {"int32", "fp32", "fp16", "bf16"};
	static const char *const on[] = {"sum", "min", "max"};
	char *tok, *save = NULL;
	unsigned d, o;

	for (tok = strtok_r(s, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char dt[16], op[16];
		unsigned long n;

		if (a.nops == MAX_OPS || sscanf(tok, "%15[^:]:%15[^:]:%lu", dt, op, &n) != 3)
			return -1;
		for (d = 0; d < 4 && strcmp(dt, dn[d]); d++)
			;
		for (o = 0; o < 3 && strcmp(op, on[o]); o++)
			;
		if (d == 4 || o == 3)
			return -1;
		a.ops[a.nops].dtype = d;
		a.ops[a.nops].op = o;
		a.ops[a.nops].count = n;
		a.nops++;
	}
	return a.nops ? 0 : -1;
}

static void *
aborter(void *arg)
{
	struct inca_comm *c = arg;

	usleep(a.abort_after * 1000u);
	inca_comm_abort(c);
	return NULL;
}

static void
usage(void)
{
	fprintf(stderr, "usage: matrix_worker --agg IP --group IP:PORT --job J --rank R "
		"--size N --token T [options] (see the source)\n");
	exit(2);
}

int
main(int argc, char **argv)
{
	static const struct option lo[] = {
		{"agg", 1, 0, 'a'}, {"group", 1, 0, 'g'}, {"job", 1, 0, 'j'},
		{"rank", 1, 0, 'r'}, {"size", 1, 0, 'n'}, {"token", 1, 0, 't'},
		{"ops", 1, 0, 'o'}, {"iters", 1, 0, 'i'}, {"mtu", 1, 0, 'M'},
		{"window", 1, 0, 'w'}, {"op-timeout", 1, 0, 'T'}, {"give-up", 1, 0, 'G'},
		{"no-fallback", 0, 0, 'F'}, {"join-delay", 1, 0, 'J'}, {"sleep-at", 1, 0, 'S'},
		{"stop-at", 1, 0, 'P'}, {"die-at", 1, 0, 'D'}, {"mismatch-at", 1, 0, 'X'},
		{"abort-after", 1, 0, 'A'}, {"bind", 1, 0, 'B'}, {"group-timeout", 1, 0, 'U'},
		{"probe-every", 1, 0, 'p'}, {"keepalive", 0, 0, 'K'}, {0, 0, 0, 0},
	};
	char default_ops[] = "int32:sum:1000,fp32:sum:700,int32:max:300,fp16:sum:129";
	struct inca_tcp_group *g = NULL;
	struct inca_comm_opts o;
	struct inca_comm_info info;
	struct inca_stats st;
	struct inca_comm *c = NULL;
	pthread_t abort_thr;
	bool exact;
	unsigned i, total;
	double t0, t1;
	int ch, ret;
	void *in, *out;

	while ((ch = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (ch) {
		case 'a': a.agg = optarg; break;
		case 'g': a.group = optarg; break;
		case 'j': a.job = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'r': a.rank = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'n': a.size = (unsigned)strtoul(optarg, NULL, 0); break;
		case 't': a.token = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'o': if (parse_ops(optarg) < 0) usage(); break;
		case 'i': a.iters = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'M': a.mtu = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'w': a.window = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'T': a.op_timeout = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'G': a.give_up = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'F': a.no_fallback = true; break;
		case 'K': a.keepalive = true; break;
		case 'J': a.join_delay = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'S': if (sscanf(optarg, "%d:%d", &a.sleep_at, &a.sleep_ms) != 2) usage(); break;
		case 'P': a.stop_at = atoi(optarg); break;
		case 'D': a.die_at = atoi(optarg); break;
		case 'X':
			if (sscanf(optarg, "%d:%15s", &a.mismatch_at, a.mismatch) != 2)
				usage();
			break;
		case 'A': a.abort_after = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'B': a.bind = optarg; break;
		case 'U': a.group_timeout = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'p': a.probe_every = (unsigned)strtoul(optarg, NULL, 0); break;
		default: usage();
		}
	}
	if (a.agg == NULL || a.group == NULL || a.job == 0 || a.size == 0 || a.rank >= a.size)
		usage();
	if (a.nops == 0 && parse_ops(default_ops) < 0)
		usage();
	setvbuf(stdout, NULL, _IOLBF, 0);
	inca_set_log_fn(log_fn, NULL, INCA_LOG_INFO);

	/* The group's rendezvous is the row's start line; its bound covers
	 * the slowest rank's start. */
	ret = inca_tcp_group_create(a.group, a.rank, a.size,
				    a.group_timeout ? a.group_timeout : 20000, &g);
	if (ret < 0) {
		printf("{\"ev\": \"group\", \"ret\": %d}\n", ret);
		return 0;
	}
	if (a.join_delay)
		usleep(a.join_delay * 1000u);

	inca_comm_opts_init(&o);
	o.aggregator = a.agg;
	o.job = (uint16_t)a.job;
	o.rank = (uint16_t)a.rank;
	o.size = (uint16_t)a.size;
	o.token = a.token;
	o.mtu = (uint16_t)a.mtu;
	o.window = (uint16_t)a.window;
	o.op_timeout_ms = a.op_timeout;
	o.give_up_ms = a.give_up;
	o.probe_every = a.probe_every ? a.probe_every : UINT32_MAX;
	o.bind = a.bind;
	o.oob = inca_tcp_group_allgather;
	o.oob_ctx = g;
	if (!a.no_fallback) {
		o.fallback = inca_tcp_group_allreduce;
		o.fallback_ctx = g;
	}
	t0 = now_ms();
	ret = inca_comm_create(&o, &c);
	t1 = now_ms();
	memset(&info, 0, sizeof(info));
	if (ret == INCA_OK)
		inca_comm_info(c, &info);
	printf("{\"ev\": \"create\", \"ret\": %d, \"ms\": %.1f, \"fallback\": %d, "
	       "\"session\": %u, \"window\": %u, \"max_elems\": %u}\n",
	       ret, t1 - t0, info.in_fallback, info.session, info.window, info.max_elems);
	if (ret < 0) {
		inca_tcp_group_destroy(g);
		return 0;
	}
	if (a.abort_after)
		pthread_create(&abort_thr, NULL, aborter, c);
	if (a.keepalive)
		(void)inca_comm_keepalive(c, 1);

	in = malloc(1 << 20);
	out = malloc(1 << 20);
	total = a.nops * a.iters;
	for (i = 0; i < total; i++) {
		struct coll cl = a.ops[i % a.nops];

		if ((int)i == a.die_at) {
			printf("{\"ev\": \"die\", \"i\": %u}\n", i);
			fflush(stdout);
			_exit(0); /* no LEAVE, no goodbye: as SIGKILL */
		}
		if ((int)i == a.stop_at) {
			printf("{\"ev\": \"stop\", \"i\": %u}\n", i);
			fflush(stdout);
			for (;;)
				pause();
		}
		if ((int)i == a.sleep_at) {
			printf("{\"ev\": \"sleep\", \"i\": %u}\n", i);
			fflush(stdout);
		}
		if ((int)i == a.sleep_at)
			usleep((unsigned)a.sleep_ms * 1000u);
		fill(in, cl.dtype, cl.count, a.rank, i);
		if ((int)i == a.mismatch_at) {
			if (!strcmp(a.mismatch, "count"))
				cl.count += 1;
			else if (!strcmp(a.mismatch, "dtype"))
				cl.dtype = cl.dtype == INCA_DTYPE_INT32 ? INCA_DTYPE_FP32 :
									  INCA_DTYPE_INT32;
			else
				cl.op = cl.op == INCA_OP_SUM ? INCA_OP_MAX : INCA_OP_SUM;
			fill(in, cl.dtype, cl.count, a.rank, i);
		}
		t0 = now_ms();
		ret = inca_allreduce(c, in, out, cl.count, cl.dtype, cl.op);
		t1 = now_ms();
		exact = ret == INCA_OK && check(out, &cl, i);
		printf("{\"ev\": \"coll\", \"i\": %u, \"ret\": %d, \"exact\": %d, \"ms\": %.1f, "
		       "\"err\": %d}\n", i, ret, exact, t1 - t0, inca_comm_error(c));
		if (ret < 0)
			break;
	}
	inca_comm_info(c, &info);
	inca_comm_stats(c, &st);
	t0 = now_ms();
	inca_comm_destroy(c);
	t1 = now_ms();
	printf("{\"ev\": \"end\", \"destroy_ms\": %.1f, \"fallback\": %d, \"recoveries\": %llu, "
	       "\"chunks\": %llu, \"fallback_collectives\": %llu, \"mismatch_nacks\": %llu}\n",
	       t1 - t0, info.in_fallback, (unsigned long long)st.recoveries,
	       (unsigned long long)st.chunks, (unsigned long long)st.fallback_collectives,
	       (unsigned long long)st.nack_reasons[INCA_NACK_MISMATCH]);
	if (a.abort_after)
		pthread_join(abort_thr, NULL);
	inca_tcp_group_destroy(g);
	free(in);
	free(out);
	return 0;
}

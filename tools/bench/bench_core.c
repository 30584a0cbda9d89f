/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * bench_core: how many contributions per second one core aggregates.
 *
 * Two measurements per data type, each with the kernels chosen for this
 * CPU and with the portable ones:
 *
 *  - "kernels": the kernel calls a set sees (init for the first
 *    contribution, combine for the others, export once complete), nothing
 *    else;
 *  - "agg": the whole software core: agg_contribute() for every
 *    contribution and agg_result_write() for every completed set, as
 *    incad's lcores call them (minus packet I/O and decoding).
 *
 * Workers are simulated the way libinca maps chunks: chunk k goes to slot
 * k mod pool, shadow set (k / pool) mod 2, seq k; a window of chunks is in
 * flight and every worker contributes to each in turn. Payloads are
 * generated beforehand in several distinct buffers so that they do not all
 * sit in L1. The program prints figures and asserts nothing.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <inca/dtype.h>
#include <inca/wire.h>

#include "agg.h"
#include "kernels.h"

/*
 * A payload behind Ethernet, IPv4, UDP and INCA headers in an mbuf is only
 * 2-byte aligned; the buffers are offset the same way.
 */
#define PAYLOAD_SKEW 2
/* Distinct payload buffers per worker. */
#define NBUF_PER_WORKER 32
/* The design's figure for 256-element int32 and fp32 contributions. */
#define TARGET_MCPS 15.0

struct opts {
	unsigned workers;
	unsigned elems;
	unsigned pool;
	unsigned window;
	unsigned reps;
	unsigned op;
	double seconds;
};

/* Everything one data type's runs use, allocated before timing. */
struct bench {
	const struct opts *o;
	unsigned dtype;
	unsigned nbuf;
	size_t body_len;
	size_t lanes;      /* 32-bit accumulator lanes of one chunk */
	uint8_t **bufs;    /* nbuf payloads in wire format, at PAYLOAD_SKEW */
	uint32_t *accs;    /* window accumulators for the kernel runs */
	uint8_t *result;   /* one RESULT message */
	uint64_t sink;     /* keeps the exported bytes observable */
};

struct run_stats {
	uint64_t contribs;
	uint64_t completes;
	uint64_t other; /* drops and replays: none in a correct run */
	double secs;     /* wall clock */
	double cpu_secs; /* this thread on a CPU */
};

static double
clock_secs(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double
now(void)
{
	return clock_secs(CLOCK_MONOTONIC);
}

/*
 * Rates are per second of this thread's CPU time: on a machine shared with
 * other work, wall-clock time would count the time the thread waited for
 * a core. The share it got is printed alongside.
 */
static double
cpu_now(void)
{
	return clock_secs(CLOCK_THREAD_CPUTIME_ID);
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint32_t
rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)rng;
}

/* A float in [-1, 1): realistic gradients, no overflow in 32-way sums. */
static float
rnd_unit(void)
{
	return (float)(int32_t)rnd() * 0x1p-31f;
}

static void
fill_payload(uint8_t *w, unsigned dtype, unsigned n)
{
	unsigned i;

	for (i = 0; i < n; i++) {
		float f = rnd_unit();
		uint32_t v;

		if (inca_dtype_size(dtype) == 8) {
			/* int64 with room for 32 workers; fp64 the same floats. */
			double d = f;
			uint64_t q = (uint64_t)rnd() << 26 | rnd() >> 6;
			unsigned k;

			if (dtype == INCA_DTYPE_FP64)
				memcpy(&q, &d, 8);
			for (k = 0; k < 8; k++)
				w[8 * i + k] = (uint8_t)(q >> (56 - 8 * k));
			continue;
		}
		switch (dtype) {
		case INCA_DTYPE_INT32:
			v = rnd() >> 6; /* room for 32 workers without wrapping */
			break;
		case INCA_DTYPE_FP32:
			memcpy(&v, &f, sizeof(v));
			break;
		case INCA_DTYPE_FP16:
			v = inca_fp32_to_fp16(f);
			break;
		default:
			v = inca_fp32_to_bf16(f);
			break;
		}
		if (inca_dtype_size(dtype) == 4) {
			w[4 * i] = v >> 24;
			w[4 * i + 1] = v >> 16;
			w[4 * i + 2] = v >> 8;
			w[4 * i + 3] = v;
		} else {
			w[2 * i] = v >> 8;
			w[2 * i + 1] = v;
		}
	}
}

static void
bench_free(struct bench *b)
{
	unsigned i;

	if (b->bufs != NULL)
		for (i = 0; i < b->nbuf; i++)
			free(b->bufs[i]);
	free(b->bufs);
	free(b->accs);
	free(b->result);
}

static int
bench_init(struct bench *b, const struct opts *o, unsigned dtype)
{
	unsigned i;

	memset(b, 0, sizeof(*b));
	b->o = o;
	b->dtype = dtype;
	b->nbuf = o->workers * NBUF_PER_WORKER;
	b->body_len = (size_t)o->elems * inca_dtype_size(dtype);
	b->bufs = calloc(b->nbuf, sizeof(*b->bufs));
	/* A 64-bit element takes two 32-bit lanes of an accumulator. */
	b->lanes = (size_t)o->elems * inca_dtype_lanes(dtype);
	b->accs = calloc((size_t)o->window * b->lanes, sizeof(*b->accs));
	b->result = malloc(INCA_HDR_LEN + b->body_len);
	if (b->bufs == NULL || b->accs == NULL || b->result == NULL)
		goto fail;
	for (i = 0; i < b->nbuf; i++) {
		b->bufs[i] = malloc(b->body_len + PAYLOAD_SKEW);
		if (b->bufs[i] == NULL)
			goto fail;
		fill_payload(b->bufs[i] + PAYLOAD_SKEW, dtype, o->elems);
	}
	return 0;

fail:
	bench_free(b);
	return -ENOMEM;
}

static inline const uint8_t *
payload(const struct bench *b, uint64_t chunk, unsigned rank)
{
	return b->bufs[(chunk * b->o->workers + rank) % b->nbuf] + PAYLOAD_SKEW;
}

/* The kernel calls of window-sized groups of chunks, for o->seconds. */
static void
run_kernels(struct bench *b, struct run_stats *st)
{
	const struct opts *o = b->o;
	agg_init_fn *init = agg_kernel_init(b->dtype);
	agg_combine_fn *combine = agg_kernel_combine(b->dtype, o->op);
	agg_export_fn *export = agg_kernel_export(b->dtype);
	uint8_t *out = b->result + INCA_HDR_LEN;
	uint64_t k0 = 0;
	double t0 = now(), c0 = cpu_now(), t;
	unsigned c, r;

	memset(st, 0, sizeof(*st));
	do {
		for (r = 0; r < o->workers; r++) {
			for (c = 0; c < o->window; c++) {
				uint32_t *acc = b->accs + (size_t)c * b->lanes;

				if (r == 0)
					init(acc, payload(b, k0 + c, r), o->elems);
				else
					combine(acc, payload(b, k0 + c, r), o->elems);
			}
		}
		for (c = 0; c < o->window; c++) {
			export(out, b->accs + (size_t)c * b->lanes, o->elems);
			b->sink += out[0];
		}
		k0 += o->window;
		st->contribs += (uint64_t)o->window * o->workers;
		st->completes += o->window;
		t = now();
	} while (t - t0 < o->seconds);
	st->secs = t - t0;
	st->cpu_secs = cpu_now() - c0;
}

/* agg_contribute() for every contribution, agg_result_write() per result. */
static int
run_agg(struct bench *b, struct run_stats *st)
{
	const struct opts *o = b->o;
	struct agg_job_params p = {
		.job = 1,
		.token = 0x1c0ffee,
		.nworkers = (uint16_t)o->workers,
		.pool_size = (uint16_t)o->pool,
		.max_elems = (uint16_t)b->lanes,
		.dtypes = (uint16_t)(1u << b->dtype),
		.ops = (uint16_t)(1u << o->op),
		.seq_check = true,
	};
	struct inca_msg m = {
		.version = INCA_PROTO_VERSION,
		.type = INCA_MSG_CONTRIB,
		.dtype = (uint8_t)b->dtype,
		.op = (uint8_t)o->op,
		.job = 1,
		.token = 0x1c0ffee,
		.count = (uint16_t)o->elems,
		.body_len = b->body_len,
	};
	struct agg_job *j;
	struct agg_out out;
	uint64_t k0 = 0;
	double t0, c0, t;
	unsigned c, r;

	/* The job takes the kernels in force when it is created. */
	j = agg_job_create(&p);
	if (j == NULL)
		return -errno;
	agg_job_set_members(j, UINT32_MAX);

	memset(st, 0, sizeof(*st));
	t0 = now();
	c0 = cpu_now();
	do {
		for (r = 0; r < o->workers; r++) {
			m.rank = (uint16_t)r;
			for (c = 0; c < o->window; c++) {
				uint64_t k = k0 + c;

				m.slot = (uint16_t)(k % o->pool);
				m.flags = (uint8_t)((k / o->pool) & 1 ? INCA_F_SET : 0);
				m.seq = (uint32_t)k;
				m.offset = (uint32_t)(k * o->elems);
				m.body = payload(b, k, r);
				switch (agg_contribute(j, &m, &out)) {
				case AGG_PENDING:
					break;
				case AGG_COMPLETE:
					agg_result_write(j, out.set, (uint16_t)r, false,
							 b->result);
					b->sink += b->result[INCA_HDR_LEN];
					st->completes++;
					break;
				default:
					st->other++;
					break;
				}
			}
		}
		k0 += o->window;
		st->contribs += (uint64_t)o->window * o->workers;
		t = now();
	} while (t - t0 < o->seconds);
	st->secs = t - t0;
	st->cpu_secs = cpu_now() - c0;
	agg_job_destroy(j);
	return 0;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

struct figure {
	double med, min, max; /* million contributions per CPU second */
	double share;         /* median fraction of wall time on a CPU */
};

static double
median(double *v, unsigned n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void
summarise(double *mcps, double *share, unsigned n, struct figure *f)
{
	f->med = median(mcps, n);
	f->min = mcps[0];
	f->max = mcps[n - 1];
	f->share = median(share, n);
}

static void
print_row(const char *path, unsigned dtype, const char *impl, const struct figure *f,
	  const struct figure *portable)
{
	printf("%-8s %-6s %-9s %8.2f  [%7.2f .. %7.2f]  %8.1f  %4.0f%%", path,
	       inca_dtype_name(dtype), impl, f->med, f->min, f->max, 1e3 / f->med,
	       100 * f->share);
	if (portable != NULL)
		printf("  %6.2fx", f->med / portable->med);
	printf("\n");
}

/* Both paths, both implementations, o->reps times each, interleaved. */
static int
bench_dtype(const struct opts *o, unsigned dtype, const char *best, struct figure res[2][2])
{
	double mcps[2][2][o->reps], share[2][2][o->reps];
	struct run_stats st;
	struct bench b;
	unsigned rep, impl;
	uint64_t other = 0;
	int rc;

	rc = bench_init(&b, o, dtype);
	if (rc < 0)
		return rc;
	for (rep = 0; rep < o->reps; rep++) {
		/* Alternate so that frequency or neighbour load drift hits both. */
		for (impl = 0; impl < 2; impl++) {
			agg_kernels_force_portable(impl == 1);
			run_kernels(&b, &st);
			mcps[0][impl][rep] = st.contribs / st.cpu_secs / 1e6;
			share[0][impl][rep] = st.cpu_secs / st.secs;
			rc = run_agg(&b, &st);
			if (rc < 0)
				goto out;
			mcps[1][impl][rep] = st.contribs / st.cpu_secs / 1e6;
			share[1][impl][rep] = st.cpu_secs / st.secs;
			other += st.other;
			if (st.completes * o->workers != st.contribs)
				other++;
		}
	}
	agg_kernels_force_portable(0);
	for (impl = 0; impl < 2; impl++) {
		summarise(mcps[0][impl], share[0][impl], o->reps, &res[0][impl]);
		summarise(mcps[1][impl], share[1][impl], o->reps, &res[1][impl]);
	}
	print_row("kernels", dtype, best, &res[0][0], &res[0][1]);
	print_row("kernels", dtype, "portable", &res[0][1], NULL);
	print_row("agg", dtype, best, &res[1][0], &res[1][1]);
	print_row("agg", dtype, "portable", &res[1][1], NULL);
	if (other != 0)
		printf("WARNING: %" PRIu64 " contributions were not counted as a correct "
		       "worker's would be; the figures above are not meaningful\n", other);
out:
	agg_kernels_force_portable(0);
	bench_free(&b);
	return rc;
}

static void
usage(const char *prog)
{
	fprintf(stderr,
		"usage: %s [-n workers] [-e elements] [-p pool] [-w window] [-t seconds]\n"
		"          [-r repetitions] [-o sum|min|max]\n"
		"  -n  workers contributing to every chunk (1..%u, default 8)\n"
		"  -e  elements per contribution (default 256)\n"
		"  -p  slots in the job's pool (default 64)\n"
		"  -w  chunks in flight (1..pool, default pool)\n"
		"  -t  seconds per run (default 0.25)\n"
		"  -r  runs per figure; the median is printed with min and max (default 5)\n"
		"  -o  operation (default sum)\n",
		prog, INCA_MAX_WORKERS);
}

static int
parse_uint(const char *s, unsigned lo, unsigned hi, unsigned *v)
{
	char *end;
	unsigned long x;

	errno = 0;
	x = strtoul(s, &end, 0);
	if (errno != 0 || end == s || *end != '\0' || x < lo || x > hi)
		return -EINVAL;
	*v = (unsigned)x;
	return 0;
}

int
main(int argc, char **argv)
{
	struct opts o = {
		.workers = 8, .elems = 256, .pool = 64, .window = 0, .reps = 5,
		.op = INCA_OP_SUM, .seconds = 0.25,
	};
	struct figure res[INCA_DTYPE_COUNT][2][2];
	bool done[INCA_DTYPE_COUNT] = { false };
	const char *best;
	unsigned dtype;
	char *end;
	int c, rc;

	while ((c = getopt(argc, argv, "n:e:p:w:t:r:o:h")) != -1) {
		switch (c) {
		case 'n':
			rc = parse_uint(optarg, 1, INCA_MAX_WORKERS, &o.workers);
			break;
		case 'e':
			rc = parse_uint(optarg, 1, INCA_MAX_ELEMS, &o.elems);
			break;
		case 'p':
			rc = parse_uint(optarg, 1, UINT16_MAX, &o.pool);
			break;
		case 'w':
			rc = parse_uint(optarg, 1, UINT16_MAX, &o.window);
			break;
		case 'r':
			rc = parse_uint(optarg, 1, 1000, &o.reps);
			break;
		case 't':
			o.seconds = strtod(optarg, &end);
			rc = 0;
			if (end == optarg || *end != '\0' || !(o.seconds > 0 && o.seconds <= 600))
				rc = -EINVAL;
			break;
		case 'o':
			rc = 0;
			if (strcmp(optarg, "sum") == 0)
				o.op = INCA_OP_SUM;
			else if (strcmp(optarg, "min") == 0)
				o.op = INCA_OP_MIN;
			else if (strcmp(optarg, "max") == 0)
				o.op = INCA_OP_MAX;
			else
				rc = -EINVAL;
			break;
		case 'h':
			usage(argv[0]);
			return EXIT_SUCCESS;
		default:
			usage(argv[0]);
			return EXIT_FAILURE;
		}
		if (rc < 0) {
			fprintf(stderr, "%s: bad value for -%c: %s\n", argv[0], c, optarg);
			return EXIT_FAILURE;
		}
	}
	if (optind != argc) {
		usage(argv[0]);
		return EXIT_FAILURE;
	}
	if (o.window == 0)
		o.window = o.pool;
	if (o.window > o.pool) {
		/* A worker may not run further ahead than the pool (decisions.md). */
		fprintf(stderr, "%s: window %u exceeds the pool of %u slots\n", argv[0], o.window,
			o.pool);
		return EXIT_FAILURE;
	}

	agg_kernels_init();
	best = agg_kernels_impl();
	printf("bench_core: %u workers, %u elements, op %s, pool %u, window %u, "
	       "%u runs of %.2f s\n",
	       o.workers, o.elems, inca_op_name(o.op), o.pool, o.window, o.reps, o.seconds);
	printf("kernels: %s (chosen for this CPU), portable alongside; one core\n", best);
	printf("kernels = init/combine/export calls only; agg = agg_contribute() per "
	       "contribution + agg_result_write() per result\n");
	printf("rates per second of CPU time of the benchmark thread; on-cpu = its share of "
	       "wall time\n\n");
	printf("%-8s %-6s %-9s %8s  %-20s  %8s  %5s  %7s\n", "path", "dtype", "impl",
	       "Mcontr/s", "[min .. max]", "ns/contr", "on-cpu", "vs port");

	for (dtype = 0; dtype < INCA_DTYPE_COUNT; dtype++) {
		if ((size_t)o.elems * inca_dtype_size(dtype) > INCA_MAX_PAYLOAD_BYTES ||
		    (size_t)o.elems * inca_dtype_lanes(dtype) > INCA_MAX_ELEMS) {
			printf("%-8s %-6s skipped: %u elements exceed %u payload bytes\n", "-",
			       inca_dtype_name(dtype), o.elems, INCA_MAX_PAYLOAD_BYTES);
			continue;
		}
		rc = bench_dtype(&o, dtype, best, res[dtype]);
		if (rc < 0) {
			fprintf(stderr, "%s: %s: %s\n", argv[0], inca_dtype_name(dtype),
				strerror(-rc));
			return EXIT_FAILURE;
		}
		done[dtype] = true;
	}

	printf("\ndesign target: >= %.0f M contributions/s per core, %u-element int32 and fp32 "
	       "(agg path, %s):",
	       TARGET_MCPS, 256u, best);
	if (o.elems != 256 || o.op != INCA_OP_SUM) {
		printf(" not applicable to these options\n");
	} else {
		for (dtype = INCA_DTYPE_INT32; dtype <= INCA_DTYPE_FP32; dtype++)
			if (done[dtype])
				printf(" %s %.1f (%s)", inca_dtype_name(dtype),
				       res[dtype][1][0].med,
				       res[dtype][1][0].med >= TARGET_MCPS ? "met" : "NOT met");
		printf("\n");
	}
	return EXIT_SUCCESS;
}

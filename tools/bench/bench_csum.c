/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * bench_csum: nanoseconds per call of each checksum version that this CPU
 * runs (daemon/csum.c) and of DPDK's rte_raw_cksum(), for the lengths
 * incad sees: a small frame, 256 bytes, 1076 (the checksummed part of a
 * 256-element int32 contribution: pseudo header addresses, UDP and INCA
 * headers, payload), a 1500 and a 9000 MTU. Each figure is the median of
 * 7 runs; the ratio is to the AVX-512 version that the multiply-add ones
 * replaced ("avx512bw-shift"), measured in the same run. Calls are
 * independent, as the checksums of successive packets are, so the figure
 * is throughput, not latency. The buffer starts where incad's checksum
 * does in an mbuf (26 bytes into a cache line) and stays in L1.
 * The program prints figures and asserts only that every version agrees.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "csum.h"

#define RUNS 7
#define SKEW 26
#define MAX_LEN 9000
#define OLD_NAME "avx512bw-shift"
/* Bytes summed per run at the most, so that long lengths stay quick. */
#define RUN_BYTES (2000000ULL * 256)
#define MAX_ITERS 2000000ULL

static const size_t lens[] = { 64, 256, 1076, 1500, 9000 };
#define NLENS (sizeof(lens) / sizeof(lens[0]))

static uint16_t
dpdk_raw_cksum(const void *buf, size_t len)
{
	return rte_raw_cksum(buf, len);
}

/*
 * Per second of this thread's CPU time: on a machine shared with other
 * work, wall-clock time would count the time the thread waited for a core.
 */
static double
cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Nanoseconds per call of @fn over @len bytes at @buf, in one run. */
static double
time_run(incad_csum_fn fn, const uint8_t *buf, size_t len, uint64_t *sink)
{
	/* Through a volatile pointer, so no call is hoisted or merged. */
	incad_csum_fn volatile vfn = fn;
	uint64_t iters = RUN_BYTES / len, i;
	double t;

	if (iters > MAX_ITERS)
		iters = MAX_ITERS;
	t = cpu_now();
	for (i = 0; i < iters; i++)
		*sink += vfn(buf, len);
	return (cpu_now() - t) * 1e9 / (double)iters;
}

int
main(void)
{
	const struct incad_csum_variant *v;
	struct incad_csum_variant all[16];
	double ns[16][NLENS], runs[16][RUNS];
	unsigned int nv, nall = 0, i, k, r, old = ~0u;
	static uint8_t mem[MAX_LEN + 64 + SKEW] __attribute__((aligned(64)));
	uint8_t *buf = mem + SKEW;
	uint64_t sink = 0, x = 0x9e3779b97f4a7c15ULL;

	for (i = 0; i < MAX_LEN; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		buf[i] = (uint8_t)x;
	}
	v = incad_csum_variants(&nv);
	for (i = 0; i < nv && nall < 15; i++) {
		if (!v[i].usable)
			continue;
		if (strcmp(v[i].name, OLD_NAME) == 0)
			old = nall;
		all[nall++] = v[i];
	}
	all[nall++] = (struct incad_csum_variant){ "rte_raw_cksum", dpdk_raw_cksum, true };

	for (k = 0; k < NLENS; k++) {
		for (i = 0; i < nall; i++)
			if (all[i].fn(buf, lens[k]) != rte_raw_cksum(buf, lens[k])) {
				fprintf(stderr, "%s disagrees with rte_raw_cksum at %zu bytes\n",
					all[i].name, lens[k]);
				return EXIT_FAILURE;
			}
		/* Runs of the versions take turns, so that a burst of other
		 * work on the machine does not fall on one version only. */
		for (r = 0; r < RUNS; r++)
			for (i = 0; i < nall; i++)
				runs[i][r] = time_run(all[i].fn, buf, lens[k], &sink);
		for (i = 0; i < nall; i++) {
			qsort(runs[i], RUNS, sizeof(runs[i][0]), cmp_double);
			ns[i][k] = runs[i][RUNS / 2];
		}
	}

	printf("ns per call, median of %d runs (in brackets: ns / ns of %s)\n",
	       RUNS, old != ~0u ? OLD_NAME : "-, not run on this CPU");
	printf("%-16s", "bytes");
	for (k = 0; k < NLENS; k++)
		printf(" %16zu", lens[k]);
	printf("\n");
	for (i = 0; i < nall; i++) {
		printf("%-16s", all[i].name);
		for (k = 0; k < NLENS; k++) {
			if (old != ~0u)
				printf(" %8.2f (%4.2f)", ns[i][k], ns[i][k] / ns[old][k]);
			else
				printf(" %16.2f", ns[i][k]);
		}
		printf("%s\n", all[i].fn == incad_csum_impl ? "  <- picked" : "");
	}
	printf("sink %" PRIx64 "\n", sink);
	return EXIT_SUCCESS;
}

/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * mpi_allreduce_bench: plain MPI_Allreduce timings (or, with -C,
 * MPI_Reduce_scatter_block and MPI_Allgather), the host-side baseline
 * that inca-bench is compared with (tools/bench/bench_allreduce.sh). It
 * knows nothing of INCA: whatever algorithm the MPI library picks (or is
 * told to pick with its own parameters) is what it measures.
 *
 * Both programs time a size the same way, so that their figures can stand
 * in one table: every rank times each iteration; the iteration's time is
 * the largest over the ranks (the collective is done when the last rank
 * has its result); the median, mean and minimum over the iterations are
 * printed. Each rank fills its buffer from its rank number with small
 * integers, so the float sums are exact, and checks the result of every
 * iteration; a wrong element makes the exit status 1.
 */

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <getopt.h>

#include <mpi.h>

#define MAX_SIZES 64

struct opts {
	size_t min_bytes, max_bytes;
	size_t sizes[MAX_SIZES];
	unsigned nsizes;
	unsigned iters, iters_large, warmup;
	double link_mbps;
	int dtype_int; /* int32 instead of fp32 */
	int csv;
	const char *label;
	/* -C, as inca-bench's: a size is the whole tensor (the reduce-scatter's
	 * input, the all-gather's output). */
	int coll; /* 0 allreduce, 1 reduce_scatter, 2 allgather, 3 reduce (to rank 0) */
};

static const char *const coll_names[] = {"allreduce", "reduce_scatter", "allgather", "reduce"};

static void
usage(FILE *f)
{
	fprintf(f,
		"usage: mpirun ... mpi_allreduce_bench [options]\n"
		"  -m, --min-bytes B         smallest message (default 4096)\n"
		"  -M, --max-bytes B         largest message (default 67108864)\n"
		"  -s, --sizes B,B,...       explicit sizes instead of powers of two\n"
		"  -i, --iterations N        timed iterations per size (default 50)\n"
		"  -I, --iterations-large N  for sizes above 1 MiB (default 5)\n"
		"  -x, --warmup N            untimed iterations per size (default 2)\n"
		"  -d, --dtype T             fp32 (default) or int32\n"
		"  -L, --link-rate MBIT      link rate: adds time / (S/B)\n"
		"  -C, --collective C        allreduce, reduce_scatter (MPI_Reduce_scatter_block),\n"
		"                            allgather (MPI_Allgather) or reduce (MPI_Reduce to\n"
		"                            rank 0); a size is the whole tensor\n"
		"      --label NAME          first CSV column (default mpi)\n"
		"      --csv                 CSV instead of a table\n"
		"Every rank checks every result it gets; exit status 1 on a wrong element.\n");
}

static unsigned long long
num(const char *opt, const char *s, unsigned long long max)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno != 0 || *end != '\0' || *s == '-' || v > max) {
		fprintf(stderr, "mpi_allreduce_bench: %s: bad value '%s'\n", opt, s);
		exit(2);
	}
	return v;
}

/* The same element values as inca-bench: small integers, exact sums. */
static int32_t
gen(int rank, size_t i)
{
	return (int32_t)((i * 5 + (size_t)rank * 3) % 17) - 8;
}

static void
fill(void *buf, size_t count, int rank, int dtype_int)
{
	size_t i;

	for (i = 0; i < count; i++) {
		if (dtype_int)
			((int32_t *)buf)[i] = gen(rank, i);
		else
			((float *)buf)[i] = (float)gen(rank, i);
	}
}

static size_t
check(const void *buf, size_t count, int nranks, int dtype_int)
{
	size_t i, bad = 0;
	int r;

	for (i = 0; i < count; i++) {
		int32_t want = 0;

		for (r = 0; r < nranks; r++)
			want += gen(r, i);
		if (dtype_int)
			bad += ((const int32_t *)buf)[i] != want;
		else
			bad += ((const float *)buf)[i] != (float)want;
	}
	return bad;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Time one size; rank 0 prints its row. Returns the wrong elements seen. */
static unsigned long long
run_size(const struct opts *o, void *in, void *out, size_t bytes, int rank, int nranks)
{
	size_t count = bytes / 4 ? bytes / 4 : 1;
	unsigned iters = bytes > (1u << 20) ? o->iters_large : o->iters, k;
	size_t block;
	MPI_Datatype dt = o->dtype_int ? MPI_INT32_T : MPI_FLOAT;
	unsigned long long bad = 0, bad_all = 0;
	double *t, *tmax, med, mean = 0, mn;

	if (iters == 0)
		iters = 1;
	if (o->coll == 1 || o->coll == 2)
		count = (count + nranks - 1) / nranks * nranks;
	block = count / nranks;
	bytes = count * 4;
	t = calloc(iters, sizeof(*t));
	tmax = calloc(iters, sizeof(*tmax));
	if (t == NULL || tmax == NULL) {
		fprintf(stderr, "mpi_allreduce_bench: out of memory\n");
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	fill(in, o->coll == 2 ? block : count, rank, o->dtype_int);
	for (k = 0; k < o->warmup + iters; k++) {
		double t0;

		if (k == o->warmup)
			MPI_Barrier(MPI_COMM_WORLD);
		memset(out, 0xEE, bytes); /* a stale result must not pass */
		/* A reduce does not synchronise: the others may return as soon
		 * as their data is on its way, and back-to-back calls would
		 * time a pipeline, not one reduce. Each starts together (the
		 * barrier untimed), as inca-bench's does. */
		if (o->coll == 3)
			MPI_Barrier(MPI_COMM_WORLD);
		t0 = MPI_Wtime();
		if (o->coll == 1)
			MPI_Reduce_scatter_block(in, out, (int)block, dt, MPI_SUM, MPI_COMM_WORLD);
		else if (o->coll == 2)
			MPI_Allgather(in, (int)block, dt, out, (int)block, dt, MPI_COMM_WORLD);
		else if (o->coll == 3)
			MPI_Reduce(in, out, (int)count, dt, MPI_SUM, 0, MPI_COMM_WORLD);
		else
			MPI_Allreduce(in, out, (int)count, dt, MPI_SUM, MPI_COMM_WORLD);
		if (k >= o->warmup)
			t[k - o->warmup] = MPI_Wtime() - t0;
		if (o->coll == 1) {
			/* Block rank of the sum: elements rank x block on. */
			size_t i;
			int r;

			for (i = 0; i < block; i++) {
				int32_t want = 0;

				for (r = 0; r < nranks; r++)
					want += gen(r, rank * block + i);
				bad += o->dtype_int ? ((int32_t *)out)[i] != want :
						      ((float *)out)[i] != (float)want;
			}
		} else if (o->coll == 2) {
			size_t i;
			int r;

			for (r = 0; r < nranks; r++)
				for (i = 0; i < block; i++)
					bad += o->dtype_int ?
						((int32_t *)out)[r * block + i] != gen(r, i) :
						((float *)out)[r * block + i] != (float)gen(r, i);
		} else if (o->coll != 3 || rank == 0) {
			bad += check(out, count, nranks, o->dtype_int);
		}
	}
	MPI_Reduce(t, tmax, (int)iters, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
	MPI_Reduce(&bad, &bad_all, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
	if (rank == 0) {
		for (k = 0; k < iters; k++)
			mean += tmax[k];
		mean /= iters;
		qsort(tmax, iters, sizeof(*tmax), cmp_double);
		mn = tmax[0];
		med = iters % 2 ? tmax[iters / 2] : (tmax[iters / 2 - 1] + tmax[iters / 2]) / 2;
		/* S/B: the time the link needs for S bytes, the in-network bound;
		 * an all-gather's, (N - 1) S / (N B) (docs/protocol.md,
		 * "Routed chunks"). */
		double lb = o->coll == 2 ? bytes * (nranks - 1.0) / nranks : bytes;
		double sb = o->link_mbps > 0 ? lb * 8.0 / (o->link_mbps * 1e6) : 0;

		if (o->csv)
			printf("%s,%d,%zu,%u,%.1f,%.1f,%.1f,%.4f,%llu\n", o->label, nranks, bytes,
			       iters, med * 1e6, mean * 1e6, mn * 1e6, sb > 0 ? med / sb : 0,
			       bad_all);
		else
			printf("%12zu %6u %12.1f %12.1f %12.1f %8.3f %6s\n", bytes, iters,
			       med * 1e6, mean * 1e6, mn * 1e6, sb > 0 ? med / sb : 0,
			       bad_all ? "FAIL" : "ok");
		fflush(stdout);
	}
	free(t);
	free(tmax);
	return bad;
}

int
main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{"min-bytes", required_argument, NULL, 'm'},
		{"max-bytes", required_argument, NULL, 'M'},
		{"sizes", required_argument, NULL, 's'},
		{"iterations", required_argument, NULL, 'i'},
		{"iterations-large", required_argument, NULL, 'I'},
		{"warmup", required_argument, NULL, 'x'},
		{"dtype", required_argument, NULL, 'd'},
		{"link-rate", required_argument, NULL, 'L'},
		{"collective", required_argument, NULL, 'C'},
		{"label", required_argument, NULL, 1},
		{"csv", no_argument, NULL, 2},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct opts o = {
		.min_bytes = 4096,
		.max_bytes = 64u << 20,
		.iters = 50,
		.iters_large = 5,
		.warmup = 2,
		.label = "mpi",
	};
	unsigned long long bad = 0, bad_all = 0;
	int rank, nranks, opt;
	void *in, *out;
	size_t bytes;
	unsigned k;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	while ((opt = getopt_long(argc, argv, "m:M:s:i:I:x:d:L:C:h", lopts, NULL)) != -1) {
		switch (opt) {
		case 'm': o.min_bytes = num("-m", optarg, 1ull << 31); break;
		case 'M': o.max_bytes = num("-M", optarg, 1ull << 31); break;
		case 's': {
			char *tok, *save;

			for (tok = strtok_r(optarg, ",", &save); tok != NULL;
			     tok = strtok_r(NULL, ",", &save)) {
				if (o.nsizes == MAX_SIZES) {
					fprintf(stderr, "mpi_allreduce_bench: at most %d sizes\n",
						MAX_SIZES);
					MPI_Abort(MPI_COMM_WORLD, 2);
				}
				o.sizes[o.nsizes++] = num("-s", tok, 1ull << 31);
			}
			break;
		}
		case 'i': o.iters = num("-i", optarg, 1000000); break;
		case 'I': o.iters_large = num("-I", optarg, 1000000); break;
		case 'x': o.warmup = num("-x", optarg, 1000000); break;
		case 'd':
			if (strcmp(optarg, "int32") != 0 && strcmp(optarg, "fp32") != 0) {
				fprintf(stderr, "mpi_allreduce_bench: -d: fp32 or int32\n");
				MPI_Abort(MPI_COMM_WORLD, 2);
			}
			o.dtype_int = strcmp(optarg, "int32") == 0;
			break;
		case 'L': o.link_mbps = strtod(optarg, NULL); break;
		case 'C':
			for (o.coll = 0; o.coll < 4 && strcmp(optarg, coll_names[o.coll]); o.coll++)
				;
			if (o.coll == 4) {
				fprintf(stderr, "mpi_allreduce_bench: -C: allreduce, reduce_scatter, "
					"allgather or reduce\n");
				MPI_Abort(MPI_COMM_WORLD, 2);
			}
			break;
		case 1: o.label = optarg; break;
		case 2: o.csv = 1; break;
		case 'h':
			if (rank == 0)
				usage(stdout);
			MPI_Finalize();
			return 0;
		default:
			if (rank == 0)
				usage(stderr);
			MPI_Finalize();
			return 2;
		}
	}
	for (k = 0; k < o.nsizes; k++)
		if (o.sizes[k] > o.max_bytes)
			o.max_bytes = o.sizes[k];
	in = malloc(o.max_bytes + 4);
	out = malloc(o.max_bytes + 4);
	if (in == NULL || out == NULL) {
		fprintf(stderr, "mpi_allreduce_bench: out of memory\n");
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	if (rank == 0) {
		if (o.csv)
			printf("system,nranks,bytes,iters,median_us,mean_us,min_us,ratio_SB,"
			       "errors\n");
		else
			printf("# MPI %s %s sum, %d ranks\n%12s %6s %12s %12s %12s %8s "
			       "%6s\n", coll_names[o.coll], o.dtype_int ? "int32" : "fp32", nranks,
			       "bytes", "iters",
			       "median_us", "mean_us", "min_us", "x S/B", "check");
		fflush(stdout);
	}
	if (o.nsizes > 0) {
		for (k = 0; k < o.nsizes; k++)
			bad += run_size(&o, in, out, o.sizes[k], rank, nranks);
	} else {
		for (bytes = o.min_bytes < 4 ? 4 : o.min_bytes; bytes <= o.max_bytes; bytes *= 2)
			bad += run_size(&o, in, out, bytes, rank, nranks);
	}
	MPI_Allreduce(&bad, &bad_all, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
	if (bad > 0)
		fprintf(stderr, "mpi_allreduce_bench: rank %d: %llu wrong elements\n", rank, bad);
	free(in);
	free(out);
	MPI_Finalize();
	return bad_all ? 1 : 0;
}

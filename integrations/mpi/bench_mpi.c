/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * bench_mpi: what the PMPI interposer costs on top of libinca. Run under
 * mpirun with LD_PRELOAD=libinca-mpi.so and the INCA_* variables of a job
 * J; the program opens a second INCA job (INCA_BENCH_JOB, default J + 1)
 * on the same aggregator. For each message size it makes R runs; a run is
 * a number of pairs of calls, MPI_Allreduce (fp32 sum, through the
 * interposer, job J) and inca_allreduce called directly (job J + 1) on the
 * same buffers, the order alternating from pair to pair, so that the load
 * of a shared machine, which changes over seconds, does not favour one
 * side. It prints the median time per call of each side and the
 * interposer's overhead three ways: the ratio of the medians, the median of
 * the per-run ratios, and the median over every pair of calls of every
 * rank (the most robust to load spikes on a shared machine).
 *
 * With --routes it compares INCA_MPI_ROUTE=auto with both routes measured
 * alone in the same run: a run is a number of triples of calls, in a
 * carry-over balanced order (balanced3), of inca_allreduce (job J + 1: the INCA route), PMPI_Allreduce
 * (the host route) and MPI_Allreduce through the interposer (run it with
 * INCA_MPI_ROUTE=auto). Before timing a size it makes 8 MPI_Allreduce calls,
 * the selector's exploration; its later probes are timed. It prints the
 * median time per call of each and auto / min(inca, host).
 *
 *   bench_mpi [--sizes BYTES,...] [--runs R] [--min-time SEC] [--routes]
 *             [--order rotate|balanced]
 */

#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mpi.h>

#include <inca/inca.h>

static int rank, size;

/* --order rotate: the triples' order of earlier versions, (i + k) mod 3. */
static int order_rotate;

/*
 * The order of the three sides of --routes: a cycle of 18 calls in which
 * each side follows each other side 3 times and never itself. The call
 * after an inca_allreduce inherits the ranks' skew and cold caches that
 * libinca's path leaves behind; with (i + k) mod 3, MPI_Allreduce followed
 * inca_allreduce in 2 of 3 rounds and PMPI_Allreduce in 1, which made
 * MPI_Allreduce pinned to PMPI look 12 % (3 to 24 %) slower than
 * PMPI_Allreduce below 16 KiB; in this order the same runs give 1 %
 * (-12 to +7 %), the interposer's own path costing about 0.1 us a call
 * (docs/benchmarks.md, "The interposer's overhead").
 */
static const int balanced3[18] = { 0, 1, 2, 0, 2, 1, 2, 1, 0, 1, 0, 2, 1, 2, 0, 2, 0, 1 };

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double
median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The sides of a run: libinca called directly, MPI_Allreduce through the
 * interposer, PMPI_Allreduce (MPI without the interposer). */
enum { SIDE_DIRECT, SIDE_MPI, SIDE_PMPI, SIDES };

static void
one_call(struct inca_comm *direct, int side, const float *in, float *out, int count)
{
	static const char *const names[] = { "inca_allreduce", "MPI_Allreduce", "PMPI_Allreduce" };
	int ret;

	if (side == SIDE_DIRECT)
		ret = inca_allreduce(direct, in, out, (size_t)count, INCA_DTYPE_FP32, INCA_OP_SUM);
	else if (side == SIDE_MPI)
		ret = MPI_Allreduce(in, out, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
	else
		ret = PMPI_Allreduce(in, out, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
	if (ret != 0) {
		fprintf(stderr, "bench_mpi: rank %d: %s failed: %d\n", rank, names[side], ret);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
}

/*
 * One run: @iters rounds of one call of each of the first @nsides sides back
 * to back, so that all sides see the same load at the scale of one call: two
 * sides alternate their order, three follow balanced3 (or rotate with
 * --order rotate). t[side] receives the seconds per call of each side,
 * the slowest rank's; @pair (if not NULL) this rank's mpi / direct ratio of
 * each round.
 */
static void
run(struct inca_comm *direct, const float *in, float *out, int count, int iters, int nsides,
    double *t, double *pair)
{
	double t0, one[SIDES];
	int i, k;

	for (k = 0; k < SIDES; k++)
		t[k] = 0;
	PMPI_Barrier(MPI_COMM_WORLD);
	for (i = 0; i < iters; i++) {
		for (k = 0; k < nsides; k++) {
			int side = (i + k) % nsides;

			if (nsides == 3 && !order_rotate)
				side = balanced3[(i % 6) * 3 + k];

			t0 = now_s();
			one_call(direct, side, in, out, count);
			one[side] = now_s() - t0;
			t[side] += one[side];
		}
		if (pair != NULL)
			pair[i] = one[SIDE_MPI] / one[SIDE_DIRECT];
	}
	PMPI_Allreduce(MPI_IN_PLACE, t, SIDES, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
	for (k = 0; k < SIDES; k++)
		t[k] /= iters;
}

/* --routes: one size, @runs runs of triples; prints its line of the table. */
static void
routes(struct inca_comm *direct, const float *in, float *out, int count, int runs,
       double min_time)
{
	double t[SIDES], *ts[SIDES], m[SIDES], best;
	int i, k, iters;

	for (i = 0; i < 8; i++)
		one_call(direct, SIDE_MPI, in, out, count);
	run(direct, in, out, count, 1, SIDES, t, NULL);
	iters = (int)(min_time / (t[0] + t[1] + t[2] > 1e-6 ? t[0] + t[1] + t[2] : 1e-6));
	if (iters < 2)
		iters = 2;
	for (k = 0; k < SIDES; k++)
		ts[k] = calloc((size_t)runs, sizeof(double));
	for (i = 0; i < runs; i++) {
		run(direct, in, out, count, iters, SIDES, t, NULL);
		for (k = 0; k < SIDES; k++)
			ts[k][i] = t[k];
	}
	for (k = 0; k < SIDES; k++) {
		m[k] = median(ts[k], runs);
		free(ts[k]);
	}
	best = m[SIDE_DIRECT] < m[SIDE_PMPI] ? m[SIDE_DIRECT] : m[SIDE_PMPI];
	if (rank == 0)
		printf("  %10ld %6d %10.4f %10.4f %10.4f %8.3f %5s\n", (long)count * 4, iters,
		       m[SIDE_DIRECT] * 1e3, m[SIDE_PMPI] * 1e3, m[SIDE_MPI] * 1e3,
		       m[SIDE_MPI] / best, m[SIDE_DIRECT] < m[SIDE_PMPI] ? "inca" : "host");
}

int
main(int argc, char **argv)
{
	const char *sizes_arg = "1048576,4194304,16777216";
	struct inca_comm *direct = NULL;
	struct inca_comm_opts o;
	struct inca_stats st;
	double min_time = 0.3, *td, *tm, *ratio;
	char *list, *tok, *save;
	const char *s;
	float *in, *out;
	Dl_info dl;
	int runs = 7, i, ret, route_mode = 0;
	double t[SIDES];

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--sizes") == 0 && i + 1 < argc)
			sizes_arg = argv[++i];
		else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc)
			runs = atoi(argv[++i]);
		else if (strcmp(argv[i], "--min-time") == 0 && i + 1 < argc)
			min_time = atof(argv[++i]);
		else if (strcmp(argv[i], "--routes") == 0)
			route_mode = 1;
		else if (strcmp(argv[i], "--order") == 0 && i + 1 < argc &&
			 (strcmp(argv[i + 1], "rotate") == 0 || strcmp(argv[i + 1], "balanced") == 0))
			order_rotate = strcmp(argv[++i], "rotate") == 0;
		else {
			if (rank == 0)
				fprintf(stderr, "usage: bench_mpi [--sizes B,...] [--runs R] "
						"[--min-time SEC] [--routes] [--order rotate|balanced]\n");
			MPI_Finalize();
			return 2;
		}
	}
	if (runs < 1)
		runs = 1;

	/* Without the interposer the comparison would be meaningless. */
	if (dladdr((void *)MPI_Allreduce, &dl) == 0 || dl.dli_fname == NULL ||
	    strstr(dl.dli_fname, "libinca-mpi") == NULL) {
		fprintf(stderr, "bench_mpi: rank %d: MPI_Allreduce is %s's, not libinca-mpi's "
			"(LD_PRELOAD=.../libinca-mpi.so)\n", rank,
			dl.dli_fname ? dl.dli_fname : "?");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}

	inca_comm_opts_init(&o);
	if (inca_comm_opts_from_env(&o) < 0 || o.aggregator == NULL || o.job == 0) {
		fprintf(stderr, "bench_mpi: rank %d: set INCA_AGGREGATOR, INCA_JOB, INCA_TOKEN\n",
			rank);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	o.job = o.job + 1;
	s = getenv("INCA_BENCH_JOB");
	if (s != NULL)
		o.job = (uint16_t)atoi(s);
	o.rank = (uint16_t)rank;
	o.size = (uint16_t)size;
	ret = inca_comm_create(&o, &direct);
	i = ret == INCA_OK;
	PMPI_Allreduce(MPI_IN_PLACE, &i, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
	if (!i) {
		fprintf(stderr, "bench_mpi: rank %d: job %u: %s\n", rank, o.job,
			inca_strerror(ret));
		MPI_Abort(MPI_COMM_WORLD, 1);
	}

	/* As the interposer does for its own communicator. */
	(void)inca_comm_keepalive(direct, 1);

	td = calloc((size_t)runs, sizeof(*td));
	tm = calloc((size_t)runs, sizeof(*tm));
	ratio = calloc((size_t)runs, sizeof(*ratio));
	list = strdup(sizes_arg);
	if (rank == 0 && route_mode)
		printf("# bench_mpi --routes: %d ranks, %d runs of triples of calls, the order "
		       "%s; medians over runs\n# of the slowest rank's time per call; "
		       "auto/best = auto / min(inca, host)\n"
		       "# %10s %6s %10s %10s %10s %8s %5s\n", size, runs,
		       order_rotate ? "rotating" : "carry-over balanced", "bytes", "iters",
		       "inca ms", "host ms", "auto ms", "auto/best", "best");
	else if (rank == 0)
		printf("# bench_mpi: %d ranks, %d runs of pairs of calls (mpi, direct), the "
		       "order alternating\n# overhead = median(mpi) / median(direct) - 1 over "
		       "runs; runs = median of per-run\n# mpi / direct - 1; pairs = median over "
		       "every pair of calls on every rank of mpi / direct - 1\n"
		       "# %10s %6s %10s %10s %9s %9s %9s %10s\n", size, runs, "bytes", "pairs",
		       "direct ms", "mpi ms", "overhead", "runs", "pairs", "Gb/s");
	for (tok = strtok_r(list, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
		long bytes = atol(tok);
		int count = (int)(bytes / 4), iters, npairs;
		double *pairs, *all;
		double md, mm;

		if (count <= 0)
			continue;
		in = malloc((size_t)count * 4);
		out = malloc((size_t)count * 4);
		for (i = 0; i < count; i++)
			in[i] = (float)((i + rank) % 1024) * 0.25f;
		if (route_mode) {
			routes(direct, in, out, count, runs, min_time);
			free(in);
			free(out);
			continue;
		}
		/* Warm up both paths and size the runs to min_time. */
		run(direct, in, out, count, 1, 2, t, NULL);
		iters = (int)(min_time / 2 / (t[0] > 1e-6 ? t[0] : 1e-6));
		if (iters < 2)
			iters = 2;
		npairs = iters * runs;
		pairs = malloc((size_t)npairs * sizeof(*pairs));
		all = rank == 0 ? malloc((size_t)npairs * size * sizeof(*all)) : NULL;
		for (i = 0; i < runs; i++) {
			run(direct, in, out, count, iters, 2, t, pairs + i * iters);
			td[i] = t[SIDE_DIRECT];
			tm[i] = t[SIDE_MPI];
			ratio[i] = tm[i] / td[i];
		}
		PMPI_Gather(pairs, npairs, MPI_DOUBLE, all, npairs, MPI_DOUBLE, 0, MPI_COMM_WORLD);
		md = median(td, runs);
		mm = median(tm, runs);
		if (rank == 0)
			printf("  %10ld %6d %10.3f %10.3f %8.2f%% %8.2f%% %8.2f%% %10.3f\n", bytes,
			       npairs, md * 1e3, mm * 1e3, (mm / md - 1) * 100,
			       (median(ratio, runs) - 1) * 100,
			       (median(all, npairs * size) - 1) * 100, bytes * 8 / md / 1e9);
		free(pairs);
		free(all);
		free(in);
		free(out);
	}
	fflush(stdout);
	inca_comm_stats(direct, &st);
	i = st.fallback_collectives != 0;
	PMPI_Allreduce(MPI_IN_PLACE, &i, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	if (rank == 0 && i)
		printf("# warning: the direct communicator used the fallback: figures are not "
		       "INCA's\n");
	inca_comm_destroy(direct);
	free(list);
	free(td);
	free(tm);
	free(ratio);
	MPI_Finalize();
	return 0;
}

/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * mpi_check: a plain MPI program that checks the collectives libinca-mpi
 * takes over. It knows nothing of INCA: run it with and without
 * LD_PRELOAD=libinca-mpi.so, with and without incad, and it must pass.
 *
 * Every reduction's result (MPI_Allreduce, MPI_Iallreduce, MPI_Reduce,
 * MPI_Reduce_scatter_block) and every MPI_Allgather is compared bit for bit
 * with the PMPI call on the same input (the interposer never sees PMPI
 * calls), on MPI_COMM_WORLD and on communicators made from it: a dup, the
 * halves of a split, and communicators freed and made again in a loop.
 * The inputs make every partial sum exactly representable (integers well
 * inside int32; floats that are multiples of 1/16 below 2^12), so any
 * summation order gives the same bits and a bitwise comparison is fair.
 * Broadcasts are compared with the root's pattern, computed locally.
 *
 * At the end rank 0 prints how many calls were eligible for INCA, and how
 * many communicators should get an INCA job, with the interposer's default
 * limits ("expect ..."), so that a harness can check the interposer's
 * counters against it. Exit status: 0 when every check passed.
 */

#define _GNU_SOURCE
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <mpi.h>

static int rank, size;
static long failures;
static unsigned long n_allreduce, n_iallreduce, n_bcast, n_barrier, n_reduce, n_rsb,
	n_allgather, n_ibcast, n_ibarrier, n_derived, n_comms_inca, n_comms_pmpi;
static unsigned long long n_bytes;

/* The communicator under test, this process's rank in it and its size,
 * and whether the interposer serves it through INCA. */
static MPI_Comm cur;
static const char *cur_name = "world";
static int crank, csize, cur_inca;

#define FAIL(...) \
	do { \
		fprintf(stderr, "mpi_check: rank %d (%s): ", rank, cur_name); \
		fprintf(stderr, __VA_ARGS__); \
		fputc('\n', stderr); \
		failures++; \
	} while (0)

/* A reproducible pseudo-random 32-bit value of (a, b, c). */
static uint32_t
mix(uint32_t a, uint32_t b, uint32_t c)
{
	uint32_t h = a * 0x9E3779B1u ^ (b + 0x7F4A7C15u) * 0x85EBCA77u ^ c * 0xC2B2AE3Du;

	h ^= h >> 15;
	h *= 0x2C1B3C6Du;
	h ^= h >> 12;
	return h;
}

/* Input element i of this rank for test number t. */
static void
fill(void *buf, int count, MPI_Datatype t, MPI_Op op, uint32_t test)
{
	int i;

	for (i = 0; i < count; i++) {
		uint32_t h = mix((uint32_t)rank, (uint32_t)i, test);

		if (t == MPI_INT) {
			/* Sums stay far from overflow; min/max also meet the
			 * extremes of the type. */
			int v = (int)(h % 2000001u) - 1000000;

			if (op != MPI_SUM && h % 97 == 0)
				v = h % 2 ? INT_MAX : INT_MIN;
			((int *)buf)[i] = v;
		} else {
			/* k / 16 with |k| < 2^15: exact sums of up to 2^8
			 * ranks, no negative zero. */
			int k = (int)(h % 65535u) - 32767;

			((float *)buf)[i] = (float)k / 16.0f;
		}
	}
}

static const char *
op_name(MPI_Op op)
{
	return op == MPI_SUM ? "sum" : op == MPI_MIN ? "min" : "max";
}

/* A call the interposer takes (with its default limits) when @cur is on
 * INCA: the harness compares these with the interposer's counters. */
static void
counted(unsigned long *which, unsigned long long bytes)
{
	if (!cur_inca)
		return;
	(*which)++;
	n_bytes += bytes;
	n_derived += cur != MPI_COMM_WORLD;
}

static void
count_call(int count, int nonblocking)
{
	counted(nonblocking ? &n_iallreduce : &n_allreduce, (unsigned long long)count * 4);
}

/* One MPI_Allreduce against the PMPI reference; @in_place alternates. */
static void
check_allreduce(int count, MPI_Datatype t, MPI_Op op, int in_place, uint32_t test)
{
	size_t bytes = (size_t)count * 4;
	void *in = malloc(bytes), *out = malloc(bytes), *ref = malloc(bytes);
	int ret;

	fill(in, count, t, op, test);
	PMPI_Allreduce(in, ref, count, t, op, cur);
	if (in_place) {
		memcpy(out, in, bytes);
		ret = MPI_Allreduce(MPI_IN_PLACE, out, count, t, op, cur);
	} else {
		memset(out, 0xA5, bytes);
		ret = MPI_Allreduce(in, out, count, t, op, cur);
	}
	count_call(count, 0);
	if (ret != MPI_SUCCESS) {
		FAIL("MPI_Allreduce(%d %s %s) returned %d", count, t == MPI_INT ? "int" : "float",
		     op_name(op), ret);
	} else if (memcmp(out, ref, bytes) != 0) {
		int i;

		for (i = 0; i < count; i++)
			if (memcmp((char *)out + 4 * i, (char *)ref + 4 * i, 4) != 0)
				break;
		FAIL("MPI_Allreduce(%d %s %s%s): element %d differs from PMPI (%#x, want %#x)",
		     count, t == MPI_INT ? "int" : "float", op_name(op),
		     in_place ? " in place" : "", i, ((uint32_t *)out)[i], ((uint32_t *)ref)[i]);
	}
	/* The input of an out-of-place call is untouched. */
	if (!in_place) {
		void *again = malloc(bytes);

		fill(again, count, t, op, test);
		if (memcmp(again, in, bytes) != 0)
			FAIL("MPI_Allreduce(%d) modified its send buffer", count);
		free(again);
	}
	free(in);
	free(out);
	free(ref);
}

/* Several MPI_Iallreduce in flight, completed in various ways. */
static void
check_iallreduce(void)
{
	enum { NREQ = 6 };
	static const int counts[NREQ] = {1, 300, 5000, 70000, 257, 1 << 18};
	void *in[NREQ], *out[NREQ], *ref[NREQ];
	MPI_Request req[NREQ];
	MPI_Datatype t;
	MPI_Op op;
	int i, idx, flag, outcount, indices[NREQ], round;

	for (round = 0; round < 4; round++) {
		for (i = 0; i < NREQ; i++) {
			t = (i + round) % 2 ? MPI_FLOAT : MPI_INT;
			op = i % 3 == 0 ? MPI_SUM : i % 3 == 1 ? MPI_MAX : MPI_MIN;
			in[i] = malloc((size_t)counts[i] * 4);
			out[i] = malloc((size_t)counts[i] * 4);
			ref[i] = malloc((size_t)counts[i] * 4);
			fill(in[i], counts[i], t, op, 1000u + (uint32_t)(round * NREQ + i));
			PMPI_Allreduce(in[i], ref[i], counts[i], t, op, cur);
			if (MPI_Iallreduce(in[i], out[i], counts[i], t, op, cur,
					   &req[i]) != MPI_SUCCESS)
				FAIL("MPI_Iallreduce(%d) failed", counts[i]);
			count_call(counts[i], 1);
		}
		switch (round) {
		case 0:
			/* Last first: waiting for it finishes the others. */
			for (i = NREQ - 1; i >= 0; i--)
				MPI_Wait(&req[i], MPI_STATUS_IGNORE);
			break;
		case 1:
			MPI_Waitall(NREQ, req, MPI_STATUSES_IGNORE);
			break;
		case 2:
			for (i = 0; i < NREQ; i++) {
				MPI_Waitany(NREQ, req, &idx, MPI_STATUS_IGNORE);
				if (idx == MPI_UNDEFINED)
					FAIL("MPI_Waitany: nothing left after %d", i);
			}
			break;
		default:
			do {
				MPI_Testsome(NREQ, req, &outcount, indices, MPI_STATUSES_IGNORE);
				MPI_Testall(NREQ, req, &flag, MPI_STATUSES_IGNORE);
			} while (!flag);
			break;
		}
		for (i = 0; i < NREQ; i++) {
			if (req[i] != MPI_REQUEST_NULL)
				FAIL("request %d of round %d not freed", i, round);
			if (memcmp(out[i], ref[i], (size_t)counts[i] * 4) != 0)
				FAIL("MPI_Iallreduce(%d), round %d: result differs from PMPI",
				     counts[i], round);
			free(in[i]);
			free(out[i]);
			free(ref[i]);
		}
	}

	/* MPI_Test until done, with a point-to-point request alongside. */
	{
		int a[1000], r[1000], x[1000], token = crank, got = -1;
		MPI_Request both[2];

		fill(a, 1000, MPI_INT, MPI_SUM, 77);
		PMPI_Allreduce(a, r, 1000, MPI_INT, MPI_SUM, cur);
		MPI_Iallreduce(a, x, 1000, MPI_INT, MPI_SUM, cur, &both[0]);
		count_call(1000, 1);
		MPI_Irecv(&got, 1, MPI_INT, (crank + csize - 1) % csize, 5, cur, &both[1]);
		MPI_Send(&token, 1, MPI_INT, (crank + 1) % csize, 5, cur);
		MPI_Waitall(2, both, MPI_STATUSES_IGNORE);
		if (memcmp(x, r, sizeof(r)) != 0)
			FAIL("MPI_Iallreduce with a receive in the same Waitall: wrong result");
		if (got != (crank + csize - 1) % csize)
			FAIL("MPI_Irecv in the same Waitall got %d", got);

		MPI_Iallreduce(MPI_IN_PLACE, a, 1000, MPI_INT, MPI_SUM, cur, &both[0]);
		count_call(1000, 1);
		do
			MPI_Test(&both[0], &flag, MPI_STATUS_IGNORE);
		while (!flag);
		if (memcmp(a, r, sizeof(r)) != 0)
			FAIL("in-place MPI_Iallreduce completed with MPI_Test: wrong result");
	}

	/* More requests outstanding than libinca holds (1024): the
	 * interposer finishes the oldest it still holds, never spins on one
	 * it already finished but the application has not freed. */
	{
		enum { MANY = 1100 };
		int32_t *v = malloc(MANY * sizeof(*v)), *w = malloc(MANY * sizeof(*w));
		MPI_Request *rq = malloc(MANY * sizeof(*rq));

		for (i = 0; i < MANY; i++) {
			v[i] = crank * 1000 + i;
			if (MPI_Iallreduce(&v[i], &w[i], 1, MPI_INT, MPI_SUM, cur,
					   &rq[i]) != MPI_SUCCESS)
				FAIL("MPI_Iallreduce %d of %d outstanding failed", i, MANY);
			count_call(1, 1);
		}
		MPI_Waitall(MANY, rq, MPI_STATUSES_IGNORE);
		for (i = 0; i < MANY; i++)
			if (w[i] != 1000 * csize * (csize - 1) / 2 + csize * i) {
				FAIL("request %d of %d outstanding: %d", i, MANY, w[i]);
				break;
			}
		free(v);
		free(w);
		free(rq);
	}
}

/* The root's broadcast byte i. */
static unsigned char
bpat(int root, size_t i, uint32_t test)
{
	return (unsigned char)mix((uint32_t)root + 100, (uint32_t)i, test);
}

static void
check_bcast(void)
{
	static const size_t sizes[] = {1, 3, 4, 7, 1000, 4099, 65536, (1 << 20) + 3};
	unsigned i;
	int root;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t n = sizes[i], k;
		unsigned char *b = malloc(n);

		root = (int)(i % (unsigned)csize);
		for (k = 0; k < n; k++)
			b[k] = crank == root ? bpat(root, k, i) : 0x5A;
		if (MPI_Bcast(b, (int)n, MPI_BYTE, root, cur) != MPI_SUCCESS)
			FAIL("MPI_Bcast(%zu bytes) failed", n);
		counted(&n_bcast, n);
		for (k = 0; k < n && b[k] == bpat(root, k, i); k++)
			;
		if (k < n)
			FAIL("MPI_Bcast(%zu bytes, root %d): byte %zu wrong", n, root, k);
		free(b);
	}

	/* A non-contiguous datatype: every other int of 2 x 5000. */
	{
		MPI_Datatype vec;
		int *v = malloc(10000 * sizeof(int));

		MPI_Type_vector(5000, 1, 2, MPI_INT, &vec);
		MPI_Type_commit(&vec);
		root = csize - 1;
		for (int j = 0; j < 10000; j++)
			v[j] = crank == root ? (int)mix(9, (uint32_t)j, 1) : -j;
		MPI_Bcast(v, 1, vec, root, cur);
		counted(&n_bcast, 5000 * 4);
		for (int j = 0; j < 10000; j++) {
			int want = j % 2 == 0 || crank == root ? (int)mix(9, (uint32_t)j, 1) : -j;

			if (v[j] != want) {
				FAIL("MPI_Bcast of a vector type: int %d is %d, want %d", j, v[j],
				     want);
				break;
			}
		}
		MPI_Type_free(&vec);
		free(v);
	}
}

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Nobody leaves a barrier before the last rank entered it (the ranks of
 * this test share one host, hence one clock). */
static void
check_barrier(void)
{
	int i;

	for (i = 0; i < 3; i++) {
		double enter, leave, last;

		usleep((useconds_t)(((crank + i) % csize) * 20000));
		enter = now_s();
		if (MPI_Barrier(cur) != MPI_SUCCESS)
			FAIL("MPI_Barrier failed");
		leave = now_s();
		counted(&n_barrier, 0);
		PMPI_Allreduce(&enter, &last, 1, MPI_DOUBLE, MPI_MAX, cur);
		if (leave < last)
			FAIL("left barrier %d at %.6f before the last rank entered at %.6f", i,
			     leave, last);
	}
}

/*
 * MPI_Reduce to every root against PMPI_Reduce on the same input: each
 * count and root with int and float and each op, in place at the root for
 * every other call. A non-root passes recvbuf NULL (not significant there).
 */
static void
check_reduce(void)
{
	static const int counts[] = {1, 7, 1000, 70000};
	MPI_Datatype t;
	MPI_Op op;
	unsigned c, k;
	uint32_t test = 5000;
	int root;

	for (c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
		for (root = 0; root < csize; root++) {
			for (k = 0; k < 6; k++, test++) {
				int n = counts[c], me = crank == root;
				int in_place = me && (k + (unsigned)root) % 2;
				size_t bytes = (size_t)n * 4;
				void *in = malloc(bytes), *out = malloc(bytes), *ref = malloc(bytes);

				t = k < 3 ? MPI_INT : MPI_FLOAT;
				op = k % 3 == 0 ? MPI_SUM : k % 3 == 1 ? MPI_MIN : MPI_MAX;
				fill(in, n, t, op, test);
				PMPI_Reduce(in, ref, n, t, op, root, cur);
				memset(out, 0xA5, bytes);
				if (in_place)
					memcpy(out, in, bytes);
				if (MPI_Reduce(in_place ? MPI_IN_PLACE : in, me ? out : NULL, n, t,
					       op, root, cur) != MPI_SUCCESS)
					FAIL("MPI_Reduce(%d) failed", n);
				counted(&n_reduce, bytes);
				if (me && memcmp(out, ref, bytes) != 0)
					FAIL("MPI_Reduce(%d %s %s, root %d%s): differs from PMPI",
					     n, t == MPI_INT ? "int" : "float", op_name(op), root,
					     in_place ? ", in place" : "");
				free(in);
				free(out);
				free(ref);
			}
		}
	}
}

/* MPI_Reduce_scatter_block against PMPI, in place and not. */
static void
check_reduce_scatter(void)
{
	static const int counts[] = {1, 100, 1000, 20000};
	unsigned c, k;
	uint32_t test = 6000;

	for (c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
		for (k = 0; k < 4; k++, test++) {
			int n = counts[c], in_place = k % 2;
			MPI_Datatype t = k < 2 ? MPI_INT : MPI_FLOAT;
			MPI_Op op = k == 1 ? MPI_MAX : k == 3 ? MPI_MIN : MPI_SUM;
			size_t all = (size_t)n * (size_t)csize * 4, bytes = (size_t)n * 4;
			char *in = malloc(all), *out = malloc(all), *ref = malloc(bytes);

			fill(in, n * csize, t, op, test);
			PMPI_Reduce_scatter_block(in, ref, n, t, op, cur);
			if (in_place)
				memcpy(out, in, all);
			else
				memset(out, 0xA5, bytes);
			if (MPI_Reduce_scatter_block(in_place ? MPI_IN_PLACE : in, out, n, t, op,
						     cur) != MPI_SUCCESS)
				FAIL("MPI_Reduce_scatter_block(%d) failed", n);
			counted(&n_rsb, all);
			if (memcmp(out, ref, bytes) != 0)
				FAIL("MPI_Reduce_scatter_block(%d %s %s%s): differs from PMPI", n,
				     t == MPI_INT ? "int" : "float", op_name(op),
				     in_place ? ", in place" : "");
			free(in);
			free(out);
			free(ref);
		}
	}
}

/* Floats that an allgather must pass on bit for bit, -0.0 and NaN payloads
 * included (a float sum with zeros would turn -0.0 into +0.0). */
static void
fill_special(float *f, int n)
{
	static const uint32_t bits[] = {0x80000000u, 0x00000000u, 0x7FC00001u, 0xFFA12345u,
					0x7F800000u, 0xFF800000u, 0x00000001u, 0x80000001u};
	int i;

	for (i = 0; i < n; i++) {
		uint32_t v = i % 3 ? mix((uint32_t)rank, (uint32_t)i, 9) :
				     bits[(i / 3 + rank) % 8];

		memcpy(&f[i], &v, 4);
	}
}

static void
check_allgather_one(const char *what, const void *send, int scount, MPI_Datatype stype,
		    int rcount, MPI_Datatype rtype, size_t rbytes, size_t block)
{
	char *out = malloc(rbytes), *ref = malloc(rbytes);

	memset(out, 0xA5, rbytes);
	memset(ref, 0xA5, rbytes);
	PMPI_Allgather(send, scount, stype, ref, rcount, rtype, cur);
	if (MPI_Allgather(send, scount, stype, out, rcount, rtype, cur) != MPI_SUCCESS)
		FAIL("MPI_Allgather(%s) failed", what);
	counted(&n_allgather, block * (size_t)csize);
	if (memcmp(out, ref, rbytes) != 0)
		FAIL("MPI_Allgather(%s): differs from PMPI", what);
	free(out);
	free(ref);
}

/* MPI_Allgather of ints, floats (-0.0, NaN, inf), doubles, odd byte counts,
 * a vector type on either side, in place. */
static void
check_allgather(void)
{
	static const int counts[] = {1, 3, 360, 5000};
	char what[64];
	unsigned c;

	for (c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
		int n = counts[c];
		size_t all = (size_t)n * (size_t)csize;
		int *vi = malloc((size_t)n * 4);
		float *vf = malloc((size_t)n * 4);
		double *vd = malloc((size_t)n * 8);
		char *vb = malloc((size_t)n);

		fill(vi, n, MPI_INT, MPI_MIN, 7000 + c);
		fill_special(vf, n);
		for (int i = 0; i < n; i++) {
			vd[i] = -0.0 + (i % 5 ? (double)mix((uint32_t)rank, (uint32_t)i, 3) / 7.0 :
						 -0.0);
			vb[i] = (char)mix((uint32_t)rank, (uint32_t)i, 4);
		}
		snprintf(what, sizeof(what), "%d int", n);
		check_allgather_one(what, vi, n, MPI_INT, n, MPI_INT, all * 4, (size_t)n * 4);
		snprintf(what, sizeof(what), "%d float, -0 and NaN", n);
		check_allgather_one(what, vf, n, MPI_FLOAT, n, MPI_FLOAT, all * 4, (size_t)n * 4);
		snprintf(what, sizeof(what), "%d double", n);
		check_allgather_one(what, vd, n, MPI_DOUBLE, n, MPI_DOUBLE, all * 8,
				    (size_t)n * 8);
		snprintf(what, sizeof(what), "%d bytes", n);
		check_allgather_one(what, vb, n, MPI_BYTE, n, MPI_BYTE, all, (size_t)n);

		/* In place: this rank's block already in recvbuf. */
		{
			size_t rb = all * 4;
			char *out = malloc(rb), *ref = malloc(rb);

			memset(out, 0xA5, rb);
			memcpy(out + (size_t)crank * (size_t)n * 4, vf, (size_t)n * 4);
			memcpy(ref, out, rb);
			PMPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, ref, n, MPI_FLOAT, cur);
			if (MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, out, n, MPI_FLOAT,
					  cur) != MPI_SUCCESS)
				FAIL("MPI_Allgather(%d float, in place) failed", n);
			counted(&n_allgather, rb);
			if (memcmp(out, ref, rb) != 0)
				FAIL("MPI_Allgather(%d float, in place): differs from PMPI", n);
			free(out);
			free(ref);
		}
		free(vi);
		free(vf);
		free(vd);
		free(vb);
	}

	/* Vector types: every other int sent; received into every other int
	 * (a resized vector, so that the blocks interleave by extent). */
	{
		enum { N = 300 };
		MPI_Datatype vec, rvec;
		int *src = malloc(2 * N * sizeof(int));
		size_t rb = (size_t)csize * 2 * N * sizeof(int);

		MPI_Type_vector(N, 1, 2, MPI_INT, &vec);
		MPI_Type_commit(&vec);
		MPI_Type_create_resized(vec, 0, (MPI_Aint)(2 * N * sizeof(int)), &rvec);
		MPI_Type_commit(&rvec);
		for (int i = 0; i < 2 * N; i++)
			src[i] = (int)mix((uint32_t)rank, (uint32_t)i, 11);
		check_allgather_one("vector to vector", src, 1, vec, 1, rvec, rb, N * 4);
		check_allgather_one("vector to int", src, 1, vec, N, MPI_INT,
				    (size_t)csize * N * 4, N * 4);
		check_allgather_one("int to vector", src, N, MPI_INT, 1, rvec, rb, N * 4);
		MPI_Type_free(&vec);
		MPI_Type_free(&rvec);
		free(src);
	}
}

/* MPI_Ibcast and MPI_Ibarrier in flight together with MPI_Iallreduce. */
static void
check_nonblocking(void)
{
	static const size_t sizes[] = {1, 3, 4, 1000, 65539};
	MPI_Request rq[8];
	unsigned i;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t n = sizes[i], k;
		int root = (int)((i + 1) % (unsigned)csize), a[500], r[500], x[500];
		unsigned char *b = malloc(n);
		double enter, leave, last;

		for (k = 0; k < n; k++)
			b[k] = crank == root ? bpat(root, k, 50 + i) : 0x5A;
		fill(a, 500, MPI_INT, MPI_SUM, 8000 + i);
		PMPI_Allreduce(a, r, 500, MPI_INT, MPI_SUM, cur);
		usleep((useconds_t)(((crank + i) % csize) * 10000));
		enter = now_s();
		if (MPI_Ibarrier(cur, &rq[0]) != MPI_SUCCESS ||
		    MPI_Ibcast(b, (int)n, MPI_BYTE, root, cur, &rq[1]) != MPI_SUCCESS ||
		    MPI_Iallreduce(a, x, 500, MPI_INT, MPI_SUM, cur, &rq[2]) != MPI_SUCCESS)
			FAIL("MPI_Ibarrier / MPI_Ibcast / MPI_Iallreduce failed");
		counted(&n_ibarrier, 0);
		counted(&n_ibcast, n);
		count_call(500, 1);
		if (i % 2) {
			MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
			leave = now_s();
			MPI_Waitall(2, &rq[1], MPI_STATUSES_IGNORE);
		} else {
			MPI_Waitall(3, rq, MPI_STATUSES_IGNORE);
			leave = now_s();
		}
		PMPI_Allreduce(&enter, &last, 1, MPI_DOUBLE, MPI_MAX, cur);
		if (leave < last)
			FAIL("MPI_Ibarrier completed at %.6f before the last rank entered at %.6f",
			     leave, last);
		for (k = 0; k < n && b[k] == bpat(root, k, 50 + i); k++)
			;
		if (k < n)
			FAIL("MPI_Ibcast(%zu bytes, root %d): byte %zu wrong", n, root, k);
		if (memcmp(x, r, sizeof(r)) != 0)
			FAIL("MPI_Iallreduce beside MPI_Ibcast: wrong result");
		free(b);
	}

	/* A vector type through the scratch buffer, completed by MPI_Test. */
	{
		MPI_Datatype vec;
		int *v = malloc(2000 * sizeof(int)), flag = 0, root = 0;

		MPI_Type_vector(1000, 1, 2, MPI_INT, &vec);
		MPI_Type_commit(&vec);
		for (int j = 0; j < 2000; j++)
			v[j] = crank == root ? (int)mix(19, (uint32_t)j, 1) : -j;
		if (MPI_Ibcast(v, 1, vec, root, cur, &rq[0]) != MPI_SUCCESS)
			FAIL("MPI_Ibcast of a vector type failed");
		counted(&n_ibcast, 1000 * 4);
		do
			MPI_Test(&rq[0], &flag, MPI_STATUS_IGNORE);
		while (!flag);
		for (int j = 0; j < 2000; j++) {
			int want = j % 2 == 0 || crank == root ? (int)mix(19, (uint32_t)j, 1) : -j;

			if (v[j] != want) {
				FAIL("MPI_Ibcast of a vector type: int %d is %d, want %d", j, v[j],
				     want);
				break;
			}
		}
		MPI_Type_free(&vec);
		free(v);
	}
}

/*
 * Element i of this rank's 64-bit input for test @test: int64 values up to
 * 2^58 in magnitude (carries across the 32-bit halves; sums of 32 ranks
 * stay inside int64, where PMPI's C addition is defined) with INT64_MIN
 * and INT64_MAX for min/max; doubles k * 2^-4 with |k| < 2^30, so that
 * every partial sum of up to 2^8 ranks is a multiple of 2^-4 below 2^34,
 * exact in binary64: any order of addition gives PMPI's bits. No -0 and no
 * NaN: INCA orders -0 below +0 and makes NaN win (docs/protocol.md), where
 * MPI's MIN/MAX compare with < and > and depend on the order.
 */
static void
fill64(void *buf, int count, MPI_Datatype t, MPI_Op op, uint32_t test)
{
	int i;

	for (i = 0; i < count; i++) {
		uint32_t h = mix((uint32_t)rank, (uint32_t)i, test);
		uint32_t l = mix((uint32_t)rank + 77u, (uint32_t)i, test);

		if (t == MPI_DOUBLE) {
			int64_t k = (int64_t)(h % (1u << 30)) * (h & 1 ? -1 : 1);

			((double *)buf)[i] = (double)(k ? k : 1) / 16.0;
		} else {
			int64_t v = (int64_t)(((uint64_t)h << 32 | l) >> 6) - ((int64_t)1 << 57);

			if (op != MPI_SUM && h % 97 == 0)
				v = h % 2 ? INT64_MAX : INT64_MIN;
			memcpy((char *)buf + 8 * (size_t)i, &v, 8);
		}
	}
}

static const char *
type64_name(MPI_Datatype t)
{
	return t == MPI_DOUBLE ? "double" : t == MPI_LONG ? "long" :
	       t == MPI_LONG_LONG ? "long long" : t == MPI_UINT64_T ? "uint64" : "int64";
}

/*
 * The 64-bit types the interposer hands to INCA (int64, long, long long,
 * uint64 with sum, double) as MPI_Allreduce, MPI_Reduce and
 * MPI_Reduce_scatter_block, bit for bit against PMPI on the same input.
 */
static void
check_wide(void)
{
	static const MPI_Datatype types[] = {MPI_INT64_T, MPI_LONG, MPI_LONG_LONG, MPI_DOUBLE,
					     MPI_UINT64_T};
	static const int counts[] = {1, 511, 512, 513, 5000};
	MPI_Op opv[3] = {MPI_SUM, MPI_MIN, MPI_MAX};
	uint32_t test = 11000;
	unsigned t, o, c;

	for (t = 0; t < sizeof(types) / sizeof(types[0]); t++) {
		for (o = 0; o < 3; o++) {
			if (types[t] == MPI_UINT64_T && opv[o] != MPI_SUM)
				continue;
			for (c = 0; c < sizeof(counts) / sizeof(counts[0]); c++, test++) {
				int n = counts[c], root = (int)(test % (unsigned)csize);
				size_t bytes = (size_t)n * 8, all = bytes * (size_t)csize;
				char *in = malloc(all), *out = malloc(all), *ref = malloc(all);
				const char *what = type64_name(types[t]);

				fill64(in, n * csize, types[t], opv[o], test);
				PMPI_Allreduce(in, ref, n, types[t], opv[o], cur);
				memset(out, 0xA5, bytes);
				if (MPI_Allreduce(in, out, n, types[t], opv[o], cur) != MPI_SUCCESS)
					FAIL("MPI_Allreduce(%d %s) failed", n, what);
				counted(&n_allreduce, bytes);
				if (memcmp(out, ref, bytes) != 0)
					FAIL("MPI_Allreduce(%d %s %s): differs from PMPI", n, what,
					     op_name(opv[o]));

				PMPI_Reduce(in, ref, n, types[t], opv[o], root, cur);
				memset(out, 0xA5, bytes);
				if (MPI_Reduce(in, out, n, types[t], opv[o], root, cur) !=
				    MPI_SUCCESS)
					FAIL("MPI_Reduce(%d %s) failed", n, what);
				counted(&n_reduce, bytes);
				if (crank == root && memcmp(out, ref, bytes) != 0)
					FAIL("MPI_Reduce(%d %s %s, root %d): differs from PMPI", n,
					     what, op_name(opv[o]), root);

				PMPI_Reduce_scatter_block(in, ref, n, types[t], opv[o], cur);
				memset(out, 0xA5, bytes);
				if (MPI_Reduce_scatter_block(in, out, n, types[t], opv[o], cur) !=
				    MPI_SUCCESS)
					FAIL("MPI_Reduce_scatter_block(%d %s) failed", n, what);
				counted(&n_rsb, all);
				if (memcmp(out, ref, bytes) != 0)
					FAIL("MPI_Reduce_scatter_block(%d %s %s): differs from PMPI",
					     n, what, op_name(opv[o]));
				free(in);
				free(out);
				free(ref);
			}
		}
	}
}

/*
 * Calls the interposer must leave to PMPI still give MPI's results: an
 * operation INCA does not have (a product) and a type it does not have
 * (int8: no int8 wire type, docs/protocol.md, "Why there is no int8").
 */
static void
check_passthrough(void)
{
	int8_t b = (int8_t)(crank % 3), bsum;
	int i, want = 0;
	short s[3] = {1, 2, 3}, sref[3];

	MPI_Allreduce(&b, &bsum, 1, MPI_INT8_T, MPI_SUM, cur);
	for (i = 0; i < csize; i++)
		want += i % 3;
	if (bsum != (int8_t)want)
		FAIL("MPI_Allreduce of an int8: %d, want %d", bsum, want);
	MPI_Allreduce(MPI_IN_PLACE, s, 3, MPI_SHORT, MPI_PROD, cur);
	for (i = 0, sref[0] = sref[1] = sref[2] = 1; i < csize; i++) {
		sref[1] *= 2;
		sref[2] *= 3;
	}
	if (memcmp(s, sref, sizeof(s)) != 0)
		FAIL("MPI_Allreduce of shorts with MPI_PROD: %d %d %d", s[0], s[1], s[2]);
}

/* Make @c the communicator under test. */
static void
use(MPI_Comm c, const char *name, int inca)
{
	cur = c;
	cur_name = name;
	cur_inca = inca;
	MPI_Comm_rank(c, &crank);
	MPI_Comm_size(c, &csize);
}

/* The checks on the communicator under test: all of them, or a few. */
static void
suite(int full)
{
	static const int counts[] = {1, 2, 3, 5, 63, 64, 255, 256, 257, 1000, 1023, 1024,
				     1025, 4096, 10007, 65536, 262143, 1 << 20};
	static const int few[] = {1, 257, 10007, 262143};
	MPI_Datatype types[2] = {MPI_INT, MPI_FLOAT};
	MPI_Op opv[3] = {MPI_SUM, MPI_MIN, MPI_MAX};
	unsigned c, t, o, nc = full ? sizeof(counts) / sizeof(counts[0]) : 4;
	uint32_t test = 0;

	for (c = 0; c < nc; c++)
		for (t = 0; t < 2; t++)
			for (o = 0; o < 3; o++, test++)
				check_allreduce(full ? counts[c] : few[c], types[t], opv[o],
						test % 2, test);
	check_iallreduce();
	check_bcast();
	check_barrier();
	check_reduce();
	check_reduce_scatter();
	check_allgather();
	check_nonblocking();
	check_wide();
	check_passthrough();
}

/* A small round on a short-lived communicator. */
static void
quick(MPI_Comm c, const char *name, int inca)
{
	use(c, name, inca);
	check_allreduce(1000, MPI_FLOAT, MPI_SUM, 1, 9000);
	check_allreduce(70000, MPI_INT, MPI_MAX, 0, 9001);
	check_reduce_scatter();
	check_barrier();
}

int
main(int argc, char **argv)
{
	MPI_Comm dup, half, extra[3], c;
	MPI_Group wg;
	MPI_Info info;
	long total;
	int i;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);

	/* WORLD: INCA_JOB. */
	use(MPI_COMM_WORLD, "world", 1);
	suite(1);

	/* A duplicate of WORLD (what PETSc and mpi4py do) and a split into
	 * two halves: each its own INCA job, if the halves have 2 to 32
	 * ranks. The interposer's default limit is 4 derived communicators
	 * per process. */
	MPI_Comm_dup(MPI_COMM_WORLD, &dup);
	n_comms_inca++;
	use(dup, "dup", 1);
	suite(0);
	MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
	i = (size + 1 - rank % 2) / 2 >= 2 && size / 2 >= 2;
	if (i)
		n_comms_inca++;
	else
		n_comms_pmpi++;
	use(half, "half", i);
	suite(0);
	/* Interleaved: the dup and the half have their own streams. */
	quick(dup, "dup again", 1);
	quick(half, "half again", i);

	/* Beyond the limit: the 3rd extra communicator of each process stays
	 * on PMPI (2 + 2 on INCA already) and still computes right. Every
	 * process has dup and half (for sizes of at least 4). */
	for (i = 0; i < 3; i++) {
		MPI_Comm_dup(MPI_COMM_WORLD, &extra[i]);
		if (size >= 4 && i < 2)
			n_comms_inca++;
		else
			n_comms_pmpi++;
		quick(extra[i], i < 2 ? "extra" : "extra beyond the limit", size >= 4 && i < 2);
	}
	for (i = 0; i < 3; i++)
		MPI_Comm_free(&extra[i]);

	/* Free and create again, more times than the limit: a freed
	 * communicator gives its INCA job back (on the aggregator too, which
	 * the harness checks). Every constructor the interposer serves. */
	MPI_Comm_group(MPI_COMM_WORLD, &wg);
	MPI_Info_create(&info);
	for (i = 0; i < 8; i++) {
		switch (i % 4) {
		case 0:
			MPI_Comm_dup(dup, &c);
			break;
		case 1:
			MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &c);
			break;
		case 2:
			MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, info, &c);
			break;
		default:
			MPI_Comm_create(MPI_COMM_WORLD, wg, &c);
			break;
		}
		n_comms_inca++;
		quick(c, "re-created", 1);
		MPI_Comm_free(&c);
	}
	MPI_Info_free(&info);
	MPI_Group_free(&wg);
	MPI_Comm_free(&half);
	/* dup is left to MPI_Finalize. */

	use(MPI_COMM_WORLD, "world", 1);
	/* The harness's own tally, not a call under test (a long goes to INCA). */
	PMPI_Allreduce(&failures, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
	if (rank == 0) {
		printf("expect allreduce %lu iallreduce %lu bcast %lu barrier %lu reduce %lu "
		       "reduce_scatter %lu allgather %lu ibcast %lu ibarrier %lu derived %lu "
		       "comms_inca %lu comms_pmpi %lu bytes %llu\n",
		       n_allreduce, n_iallreduce, n_bcast, n_barrier, n_reduce, n_rsb, n_allgather,
		       n_ibcast, n_ibarrier, n_derived, n_comms_inca, n_comms_pmpi, n_bytes);
		printf("mpi_check: %d ranks: %s (%ld failures)\n", size,
		       total ? "FAIL" : "PASS", total);
		fflush(stdout);
	}
	MPI_Finalize();
	return total != 0;
}

/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * mpi_check: a plain MPI program that checks the collectives libinca-mpi
 * takes over. It knows nothing of INCA: run it with and without
 * LD_PRELOAD=libinca-mpi.so, with and without incad, and it must pass.
 *
 * Every MPI_Allreduce / MPI_Iallreduce result is compared bit for bit with
 * PMPI_Allreduce on the same input (the interposer never sees PMPI calls).
 * The inputs make every partial sum exactly representable (integers well
 * inside int32; floats that are multiples of 1/16 below 2^12), so any
 * summation order gives the same bits and a bitwise comparison is fair.
 * Broadcasts are compared with the root's pattern, computed locally.
 *
 * At the end rank 0 prints how many calls were eligible for INCA
 * ("expect ..."), so that a harness can check the interposer's counters
 * against it. Exit status: 0 when every check passed.
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
static unsigned long n_allreduce, n_iallreduce, n_bcast, n_barrier;
static unsigned long long n_bytes;

#define FAIL(...) \
	do { \
		fprintf(stderr, "mpi_check: rank %d: ", rank); \
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

static void
count_call(int count, int nonblocking)
{
	if (nonblocking)
		n_iallreduce++;
	else
		n_allreduce++;
	n_bytes += (unsigned long long)count * 4;
}

/* One MPI_Allreduce against the PMPI reference; @in_place alternates. */
static void
check_allreduce(int count, MPI_Datatype t, MPI_Op op, int in_place, uint32_t test)
{
	size_t bytes = (size_t)count * 4;
	void *in = malloc(bytes), *out = malloc(bytes), *ref = malloc(bytes);
	int ret;

	fill(in, count, t, op, test);
	PMPI_Allreduce(in, ref, count, t, op, MPI_COMM_WORLD);
	if (in_place) {
		memcpy(out, in, bytes);
		ret = MPI_Allreduce(MPI_IN_PLACE, out, count, t, op, MPI_COMM_WORLD);
	} else {
		memset(out, 0xA5, bytes);
		ret = MPI_Allreduce(in, out, count, t, op, MPI_COMM_WORLD);
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
			PMPI_Allreduce(in[i], ref[i], counts[i], t, op, MPI_COMM_WORLD);
			if (MPI_Iallreduce(in[i], out[i], counts[i], t, op, MPI_COMM_WORLD,
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
		int a[1000], r[1000], x[1000], token = rank, got = -1;
		MPI_Request both[2];

		fill(a, 1000, MPI_INT, MPI_SUM, 77);
		PMPI_Allreduce(a, r, 1000, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
		MPI_Iallreduce(a, x, 1000, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &both[0]);
		count_call(1000, 1);
		MPI_Irecv(&got, 1, MPI_INT, (rank + size - 1) % size, 5, MPI_COMM_WORLD, &both[1]);
		MPI_Send(&token, 1, MPI_INT, (rank + 1) % size, 5, MPI_COMM_WORLD);
		MPI_Waitall(2, both, MPI_STATUSES_IGNORE);
		if (memcmp(x, r, sizeof(r)) != 0)
			FAIL("MPI_Iallreduce with a receive in the same Waitall: wrong result");
		if (got != (rank + size - 1) % size)
			FAIL("MPI_Irecv in the same Waitall got %d", got);

		MPI_Iallreduce(MPI_IN_PLACE, a, 1000, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &both[0]);
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
			v[i] = rank * 1000 + i;
			if (MPI_Iallreduce(&v[i], &w[i], 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD,
					   &rq[i]) != MPI_SUCCESS)
				FAIL("MPI_Iallreduce %d of %d outstanding failed", i, MANY);
			count_call(1, 1);
		}
		MPI_Waitall(MANY, rq, MPI_STATUSES_IGNORE);
		for (i = 0; i < MANY; i++)
			if (w[i] != 1000 * size * (size - 1) / 2 + size * i) {
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

		root = (int)(i % (unsigned)size);
		for (k = 0; k < n; k++)
			b[k] = rank == root ? bpat(root, k, i) : 0x5A;
		if (MPI_Bcast(b, (int)n, MPI_BYTE, root, MPI_COMM_WORLD) != MPI_SUCCESS)
			FAIL("MPI_Bcast(%zu bytes) failed", n);
		n_bcast++;
		n_bytes += n;
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
		root = size - 1;
		for (int j = 0; j < 10000; j++)
			v[j] = rank == root ? (int)mix(9, (uint32_t)j, 1) : -j;
		MPI_Bcast(v, 1, vec, root, MPI_COMM_WORLD);
		n_bcast++;
		n_bytes += 5000 * 4;
		for (int j = 0; j < 10000; j++) {
			int want = j % 2 == 0 || rank == root ? (int)mix(9, (uint32_t)j, 1) : -j;

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

		usleep((useconds_t)(((rank + i) % size) * 20000));
		enter = now_s();
		if (MPI_Barrier(MPI_COMM_WORLD) != MPI_SUCCESS)
			FAIL("MPI_Barrier failed");
		leave = now_s();
		n_barrier++;
		PMPI_Allreduce(&enter, &last, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
		if (leave < last)
			FAIL("left barrier %d at %.6f before the last rank entered at %.6f", i,
			     leave, last);
	}
}

/* Calls the interposer must leave to PMPI still give MPI's results. */
static void
check_passthrough(void)
{
	MPI_Comm half;
	double d = rank + 0.5, dsum;
	int x = rank + 1, hs, want, i;
	short s[3] = {1, 2, 3}, sref[3];

	MPI_Allreduce(&d, &dsum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
	if (dsum != size * (size - 1) / 2.0 + size * 0.5)
		FAIL("MPI_Allreduce of a double: %f", dsum);
	MPI_Allreduce(MPI_IN_PLACE, s, 3, MPI_SHORT, MPI_PROD, MPI_COMM_WORLD);
	for (i = 0, sref[0] = sref[1] = sref[2] = 1; i < size; i++) {
		sref[1] *= 2;
		sref[2] *= 3;
	}
	if (memcmp(s, sref, sizeof(s)) != 0)
		FAIL("MPI_Allreduce of shorts with MPI_PROD: %d %d %d", s[0], s[1], s[2]);

	/* A communicator other than WORLD. */
	MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
	MPI_Comm_size(half, &hs);
	MPI_Allreduce(MPI_IN_PLACE, &x, 1, MPI_INT, MPI_SUM, half);
	for (i = rank % 2, want = 0; i < size; i += 2)
		want += i + 1;
	if (x != want)
		FAIL("MPI_Allreduce on a split communicator: %d, want %d", x, want);
	MPI_Barrier(half);
	MPI_Comm_free(&half);
}

int
main(int argc, char **argv)
{
	static const int counts[] = {1, 2, 3, 5, 63, 64, 255, 256, 257, 1000, 1023, 1024,
				     1025, 4096, 10007, 65536, 262143, 1 << 20};
	MPI_Datatype types[2];
	MPI_Op opv[3];
	unsigned c, t, o;
	uint32_t test = 0;
	long total;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	types[0] = MPI_INT;
	types[1] = MPI_FLOAT;
	opv[0] = MPI_SUM;
	opv[1] = MPI_MIN;
	opv[2] = MPI_MAX;

	for (c = 0; c < sizeof(counts) / sizeof(counts[0]); c++)
		for (t = 0; t < 2; t++)
			for (o = 0; o < 3; o++, test++)
				check_allreduce(counts[c], types[t], opv[o], test % 2, test);
	check_iallreduce();
	check_bcast();
	check_barrier();
	check_passthrough();

	MPI_Allreduce(&failures, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
	if (rank == 0) {
		printf("expect allreduce %lu iallreduce %lu bcast %lu barrier %lu bytes %llu\n",
		       n_allreduce, n_iallreduce, n_bcast, n_barrier, n_bytes);
		printf("mpi_check: %d ranks: %s (%ld failures)\n", size,
		       total ? "FAIL" : "PASS", total);
		fflush(stdout);
	}
	MPI_Finalize();
	return total != 0;
}

/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * route_check: ROUNDS rounds of MPI_Allreduce (int32 sum) of 4 B, 4 KiB
 * and 16 KiB, each result compared bit for bit with PMPI_Allreduce of the
 * same data on a duplicate communicator, whichever route INCA_MPI_ROUTE
 * sent the call. Prints "route_check: N ranks: PASS" on rank 0.
 *
 *   route_check [ROUNDS]
 */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

static const int counts[] = { 1, 1024, 4096 };

int
main(int argc, char **argv)
{
	int rank, size, rounds, bad = 0, allbad = 0;
	int32_t *in, *out, *ref;
	MPI_Comm ref_comm;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	rounds = argc > 1 ? atoi(argv[1]) : 200;
	/* A communicator the interposer only ever sees PMPI on. */
	PMPI_Comm_dup(MPI_COMM_WORLD, &ref_comm);
	in = malloc(4096 * sizeof(*in));
	out = malloc(4096 * sizeof(*out));
	ref = malloc(4096 * sizeof(*ref));
	if (in == NULL || out == NULL || ref == NULL)
		MPI_Abort(MPI_COMM_WORLD, 2);
	for (int r = 0; r < rounds; r++) {
		for (size_t s = 0; s < sizeof(counts) / sizeof(counts[0]); s++) {
			int n = counts[s];

			for (int i = 0; i < n; i++)
				in[i] = (int32_t)((uint32_t)(rank + 1) * 2654435761u ^
						  (uint32_t)(i * 7 + r));
			memset(out, 0xa5, (size_t)n * sizeof(*out));
			MPI_Allreduce(in, out, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
			PMPI_Allreduce(in, ref, n, MPI_INT, MPI_SUM, ref_comm);
			if (memcmp(out, ref, (size_t)n * sizeof(*out)) != 0 && bad++ == 0)
				fprintf(stderr, "route_check: rank %d: round %d, %d elements: "
					"wrong result\n", rank, r, n);
		}
	}
	PMPI_Allreduce(&bad, &allbad, 1, MPI_INT, MPI_SUM, ref_comm);
	if (rank == 0)
		printf("route_check: %d ranks: %s\n", size, allbad == 0 ? "PASS" : "FAIL");
	PMPI_Comm_free(&ref_comm);
	free(in);
	free(out);
	free(ref);
	MPI_Finalize();
	return allbad == 0 ? 0 : 1;
}

/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * Replays fuzz inputs through a harness without libFuzzer: a plain main()
 * that calls LLVMFuzzerTestOneInput() on every file of the directories (or
 * the files) it is given, in name order, so that the runs are the same
 * every time. Meson builds one per harness with the project's compiler;
 * the unit suite runs them over the seed corpus and the regression inputs,
 * and the sanitizer build runs them under ASan and UBSan.
 *
 *     fuzz_replay_<harness> PATH...
 *
 * A missing directory counts as empty (a harness may have no regression
 * input yet), but at least one input must have run. A broken property
 * aborts, which fails the test.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

static int
run_file(const char *path, unsigned *runs)
{
	struct stat st;
	uint8_t *buf;
	size_t n;
	FILE *f;

	f = fopen(path, "rb");
	if (f == NULL || fstat(fileno(f), &st) != 0) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		if (f != NULL)
			fclose(f);
		return -1;
	}
	/* Exactly the input's size, as libFuzzer gives it, so ASan sees overreads. */
	buf = malloc(st.st_size > 0 ? (size_t)st.st_size : 1);
	if (buf == NULL) {
		fclose(f);
		return -1;
	}
	n = fread(buf, 1, (size_t)st.st_size, f);
	fclose(f);
	if (n != (size_t)st.st_size) {
		fprintf(stderr, "replay: %s: short read\n", path);
		free(buf);
		return -1;
	}
	LLVMFuzzerTestOneInput(buf, n);
	free(buf);
	(*runs)++;
	return 0;
}

static int
run_path(const char *path, unsigned *runs)
{
	struct dirent **names;
	char file[4096];
	unsigned before = *runs;
	struct stat st;
	int i, n, ret = 0;

	if (stat(path, &st) != 0) {
		if (errno == ENOENT) {
			printf("replay: %s: absent, no inputs\n", path);
			return 0;
		}
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode))
		return run_file(path, runs);

	n = scandir(path, &names, NULL, alphasort);
	if (n < 0) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		return -1;
	}
	for (i = 0; i < n; i++) {
		if (names[i]->d_name[0] != '.' && ret == 0) {
			snprintf(file, sizeof(file), "%s/%s", path, names[i]->d_name);
			if (stat(file, &st) == 0 && S_ISREG(st.st_mode))
				ret = run_file(file, runs);
		}
		free(names[i]);
	}
	free(names);
	printf("replay: %s: %u inputs\n", path, *runs - before);
	return ret;
}

int
main(int argc, char **argv)
{
	unsigned runs = 0;
	int i;

	if (argc < 2) {
		fprintf(stderr, "usage: %s DIR|FILE...\n", argv[0]);
		return 2;
	}
	LLVMFuzzerInitialize(&argc, &argv);
	for (i = 1; i < argc; i++)
		if (run_path(argv[i], &runs) != 0) {
			printf("replay: %u passed, 1 failed\n", runs);
			return 1;
		}
	if (runs == 0) {
		printf("replay: no input found\nreplay: 0 passed, 1 failed\n");
		return 1;
	}
	printf("replay: %u passed, 0 failed\n", runs);
	return 0;
}

/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * incad's Internet checksum (daemon/csum.c): every version built that this
 * CPU runs must give the bits of a plain scalar sum, for every length up
 * to a few frames at every start within a cache line, on random data and
 * on the all-ones and all-zeros buffers where folding has two candidate
 * results (0xffff and 0); on long buffers that would overflow any 32-bit
 * lane not emptied in time; right against unmapped memory (masked loads
 * must not touch what lies past the end); and the version picked must
 * agree with DPDK's rte_raw_cksum().
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "csum.h"

#define MAX_LEN 2100
#define MAX_ALIGN 64
#define BIG (1u << 20)
/*
 * Check records every passing ck_assert (a write to its log), which would
 * dominate loops over millions of cases: those only report failures.
 */
#define EXPECT(cond, ...) \
	do { \
		if (!(cond)) \
			ck_abort_msg(__VA_ARGS__); \
	} while (0)

enum fill { FILL_RANDOM, FILL_ONES, FILL_ZEROS, NFILLS };
static const char *const fill_names[] = { "random", "0xff", "0x00" };

/* 64 random bits from libc's generator (31 a call), seeded in main(). */
static uint64_t
rnd(void)
{
	return (uint64_t)random() << 62 ^ (uint64_t)random() << 31 ^ (uint64_t)random();
}

static void
fill(uint8_t *p, size_t len, enum fill f)
{
	size_t i;

	if (f != FILL_RANDOM) {
		memset(p, f == FILL_ONES ? 0xff : 0, len);
		return;
	}
	for (i = 0; i < len; i++)
		p[i] = (uint8_t)rnd();
}

/* Fold by the definition: add the carries back until 16 bits remain. */
static uint16_t
ref_fold(uint64_t s)
{
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)s;
}

/* The definition: 16-bit words in memory order, an odd last byte as the
 * first of a word whose second is zero, added in 64 bits and folded. */
static uint16_t
ref_csum(const uint8_t *p, size_t len)
{
	uint64_t s = 0;
	uint16_t w;
	size_t i;

	for (i = 0; i + 1 < len; i += 2) {
		memcpy(&w, p + i, 2);
		s += w;
	}
	if (len & 1) {
		w = 0;
		memcpy(&w, p + len - 1, 1);
		s += w;
	}
	return ref_fold(s);
}

/* Every version on @len bytes at @p must give the reference's @want. */
static void
check_all(const uint8_t *p, size_t len, uint16_t want, const char *what)
{
	const struct incad_csum_variant *v;
	unsigned int n, i;
	uint16_t got;

	v = incad_csum_variants(&n);
	for (i = 0; i < n; i++) {
		if (!v[i].usable)
			continue;
		got = v[i].fn(p, len);
		EXPECT(got == want, "%s: %s, %zu bytes at %p (line offset %u): 0x%04x, want 0x%04x",
		       v[i].name, what, len, (const void *)p,
		       (unsigned int)((uintptr_t)p & 63), got, want);
	}
}

START_TEST(test_picked)
{
	const struct incad_csum_variant *v;
	unsigned int n, i, usable = 0;

	v = incad_csum_variants(&n);
	ck_assert_uint_ge(n, 1);
	for (i = 0; i < n && !v[i].usable; i++)
		;
	ck_assert_uint_lt(i, n);
	/* The constructor picked the first usable one, the preferred. */
	ck_assert_ptr_eq((void *)incad_csum_impl, (void *)v[i].fn);
	for (i = 0; i < n; i++) {
		ck_assert_ptr_nonnull(v[i].name);
		ck_assert_ptr_nonnull((void *)v[i].fn);
		usable += v[i].usable;
		printf("csum variant %-16s %s\n", v[i].name, v[i].usable ? "usable" : "not on this CPU");
	}
	ck_assert_uint_ge(usable, 1);
}
END_TEST

/* Every length 0..MAX_LEN at every start within a cache line. */
START_TEST(test_lengths)
{
	enum fill f = (enum fill)_i;
	static uint8_t mem[MAX_ALIGN + MAX_LEN + 64] __attribute__((aligned(64)));
	size_t align, len;
	uint16_t want;

	fill(mem, sizeof(mem), f);
	for (align = 0; align < MAX_ALIGN; align++)
		for (len = 0; len <= MAX_LEN; len++) {
			want = ref_csum(mem + align, len);
			if (f == FILL_ZEROS || len == 0)
				EXPECT(want == 0, "reference: %zu zero bytes sum to 0x%04x", len, want);
			else if (f == FILL_ONES && len % 2 == 0)
				EXPECT(want == 0xffff, "reference: %zu 0xff bytes sum to 0x%04x", len, want);
			check_all(mem + align, len, want, fill_names[f]);
		}
}
END_TEST

/* Long buffers: 32-bit lanes must be emptied before they overflow. */
START_TEST(test_large)
{
	static const size_t lens[] = { 65535, 65536, 65537, 65536 + 255, BIG - 1, BIG, BIG + 1,
				       3 * BIG + 37, 4 * BIG };
	size_t cap = 4 * BIG + 64, i, off;
	uint8_t *mem = malloc(cap);
	enum fill f;
	uint16_t want;

	ck_assert_ptr_nonnull(mem);
	for (f = 0; f < NFILLS; f++) {
		fill(mem, cap, f);
		for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
			off = (size_t)(rnd() % 64);
			want = ref_csum(mem + off, lens[i]);
			if (f == FILL_ONES)
				EXPECT(want == (lens[i] % 2 ? ref_csum(mem, 1) : 0xffff),
				       "reference: %zu 0xff bytes sum to 0x%04x", lens[i], want);
			check_all(mem + off, lens[i], want, fill_names[f]);
		}
	}
	free(mem);
}
END_TEST

/*
 * Buffers that end where a PROT_NONE page begins, and that start where
 * one ends: a load of a byte outside the buffer faults.
 */
START_TEST(test_page_edges)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t span = (MAX_LEN + page - 1) / page * page;
	size_t len;
	uint8_t *map, *data;
	enum fill f;

	map = mmap(NULL, span + 2 * page, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(map, MAP_FAILED);
	data = map + page;
	ck_assert_int_eq(mprotect(map, page, PROT_NONE), 0);
	ck_assert_int_eq(mprotect(data + span, page, PROT_NONE), 0);
	for (f = 0; f < NFILLS; f++) {
		fill(data, span, f);
		for (len = 0; len <= MAX_LEN; len++) {
			check_all(data + span - len, len, ref_csum(data + span - len, len),
				  "against the end of a mapping");
			check_all(data, len, ref_csum(data, len), "at the start of a mapping");
		}
	}
	munmap(map, span + 2 * page);
}
END_TEST

/*
 * incad_raw_cksum() stands for rte_raw_cksum(). DPDK adds into 32 bits,
 * which a buffer of more than 128 KiB can overflow: only shorter ones.
 */
START_TEST(test_matches_dpdk)
{
	static uint8_t mem[65536 + 64];
	size_t len, off;
	unsigned int i;

	fill(mem, sizeof(mem), FILL_RANDOM);
	for (len = 0; len <= MAX_LEN; len++) {
		off = (size_t)(rnd() % 64);
		EXPECT(incad_raw_cksum(mem + off, len) == rte_raw_cksum(mem + off, len),
		       "%zu bytes at offset %zu: 0x%04x, DPDK 0x%04x", len, off,
		       incad_raw_cksum(mem + off, len), rte_raw_cksum(mem + off, len));
	}
	for (i = 0; i < 200; i++) {
		len = (size_t)(rnd() % 65537);
		off = (size_t)(rnd() % 64);
		fill(mem + off, len, FILL_RANDOM);
		EXPECT(incad_raw_cksum(mem + off, len) == rte_raw_cksum(mem + off, len),
		       "%zu bytes at offset %zu: 0x%04x, DPDK 0x%04x", len, off,
		       incad_raw_cksum(mem + off, len), rte_raw_cksum(mem + off, len));
	}
}
END_TEST

/* incad_csum_fold() against the definition, at the carries' edges. */
START_TEST(test_fold)
{
	static const uint64_t edges[] = {
		0, 1, 0xfffe, 0xffff, 0x10000, 0x1fffe, 0x1ffff, 0xfffeffff, 0xffff0000,
		0xffffffff, 0x100000000ULL, 0x1fffffffeULL, 0xffffffff00000000ULL,
		0xfffffffeffffffffULL, 0xffffffffffff0000ULL, 0xfffffffffffeffffULL,
		0xffffffffffffffffULL, 0x8000000000000000ULL, 0xffff0000ffff0000ULL,
	};
	uint64_t s;
	unsigned int i, k;

	for (i = 0; i < sizeof(edges) / sizeof(edges[0]); i++)
		for (k = 0; k < 3; k++) {
			s = edges[i] + k;
			EXPECT(incad_csum_fold(s) == ref_fold(s), "fold(0x%016llx): 0x%04x, want 0x%04x",
			       (unsigned long long)s, incad_csum_fold(s), ref_fold(s));
		}
	for (i = 0; i < 1000000; i++) {
		s = rnd() >> (rnd() % 64);
		EXPECT(incad_csum_fold(s) == ref_fold(s), "fold(0x%016llx): 0x%04x, want 0x%04x",
		       (unsigned long long)s, incad_csum_fold(s), ref_fold(s));
	}
}
END_TEST

static Suite *
csum_suite(void)
{
	Suite *s = suite_create("csum");
	TCase *tc;

	tc = tcase_create("picked");
	tcase_add_test(tc, test_picked);
	suite_add_tcase(s, tc);

	tc = tcase_create("lengths");
	tcase_set_timeout(tc, 240);
	tcase_add_loop_test(tc, test_lengths, 0, NFILLS);
	suite_add_tcase(s, tc);

	tc = tcase_create("large");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_large);
	suite_add_tcase(s, tc);

	tc = tcase_create("page_edges");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_page_edges);
	suite_add_tcase(s, tc);

	tc = tcase_create("matches_dpdk");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_matches_dpdk);
	suite_add_tcase(s, tc);

	tc = tcase_create("fold");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_fold);
	suite_add_tcase(s, tc);

	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(csum_suite());
	int failed;

	srandom(0x1071); /* RFC 1071 */
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * The hot path's Internet checksum (see csum.h). Every contribution's
 * payload is summed once on the way in, so this loop is a fixed part of
 * incad's cost per packet. On x86-64 a constructor picks, for the CPU:
 *  - an AVX-512BW version: 64-byte loads and a masked load for the
 *    tail (8 ns for a 1 KiB payload here, 13 ns for AVX2 and 33 ns for
 *    the baseline);
 *  - an AVX2 version;
 *  - the portable vector code (SSE2 on x86-64, NEON on Arm, the only
 *    one elsewhere).
 */
#include <string.h>

#include "csum.h"

/* GNU C (GCC, clang) on x86-64: target attributes and CPU detection. */
#if defined(__x86_64__) && defined(__GNUC__)
#define CSUM_X86 1
#include <immintrin.h>
#endif

typedef uint32_t v8u32 __attribute__((vector_size(32)));

/* Fold the 64-bit tail sum @s and add the rest of @p (< 8 bytes). */
static inline uint64_t
csum_tail(const uint8_t *p, size_t len, uint64_t s)
{
	uint64_t x;
	uint32_t w;
	uint16_t h;

	while (len >= 8) {
		memcpy(&x, p, 8);
		s += (x & 0xffffffff) + (x >> 32);
		p += 8;
		len -= 8;
	}
	if (len >= 4) {
		memcpy(&w, p, 4);
		s += w;
		p += 4;
		len -= 4;
	}
	if (len >= 2) {
		memcpy(&h, p, 2);
		s += h;
		p += 2;
		len -= 2;
	}
	if (len != 0) {
		/* The last byte is the first of a word whose second is zero. */
		h = 0;
		memcpy(&h, p, 1);
		s += h;
	}
	return s;
}

/* Built once for the baseline and once for AVX2 (csum_base, csum_avx2). */
static inline __attribute__((always_inline)) uint16_t
csum_vec(const void *buf, size_t len)
{
	const v8u32 lo16 = {0xffff, 0xffff, 0xffff, 0xffff, 0xffff, 0xffff, 0xffff, 0xffff};
	v8u32 a0 = {0}, a1 = {0}, x0, x1;
	const uint8_t *p = buf;
	uint64_t s = 0;
	unsigned int i, n;

	/* 16-bit words added into 32-bit lanes: a lane gains at most
	 * 2 * 0xffff per 64-byte block, so the lanes are emptied into the
	 * 64-bit sum every 8192 blocks (512 KiB), long before they could
	 * overflow. Frames never get there. */
	while (len >= 64) {
		for (n = 0; n < 8192 && len >= 64; n++) {
			memcpy(&x0, p, 32);
			memcpy(&x1, p + 32, 32);
			a0 += (x0 & lo16) + (x0 >> 16);
			a1 += (x1 & lo16) + (x1 >> 16);
			p += 64;
			len -= 64;
		}
		a0 += a1;
		for (i = 0; i < 8; i++)
			s += a0[i];
		a0 = a1 = (v8u32){0};
	}
	return incad_csum_fold(csum_tail(p, len, s));
}

static uint16_t
csum_base(const void *buf, size_t len)
{
	return csum_vec(buf, len);
}

#ifdef CSUM_X86
/*
 * The x86 versions add each vector's 16-bit words into 32-bit lanes as
 * the portable code does ((x & 0xffff) + (x >> 16)), from one load: left
 * to itself, GCC folds the load into both the "and" and the shift and
 * reads the payload twice, which costs a third more on a 1 KiB frame.
 * The empty asm keeps the loaded vector in a register. The AVX2 loads
 * are vlddqu, which GCC does not split in two 16-byte halves as it does
 * unaligned 32-byte loads when tuning for older CPUs (DPDK's pkg-config
 * asks for -march=corei7). Lanes are emptied every 8192 steps, as in
 * csum_vec(). Only integer logic and adds: no instruction that makes a
 * CPU lower its clock for wide vectors.
 */
#define CSUM_STEPS 8192
#define IN_REGISTER(x) __asm__("" : "+v"(x))

static inline __attribute__((target("avx2"))) __m256i
words256(__m256i acc, __m256i x)
{
	IN_REGISTER(x);
	return _mm256_add_epi32(acc, _mm256_add_epi32(
		_mm256_and_si256(x, _mm256_set1_epi32(0xffff)), _mm256_srli_epi32(x, 16)));
}

static __attribute__((target("avx2"))) uint16_t
csum_avx2(const void *buf, size_t len)
{
	const uint8_t *p = buf;
	__m256i a0, a1, q;
	__m128i r;
	uint64_t s = 0;
	unsigned int n;

	while (len >= 64) {
		a0 = a1 = _mm256_setzero_si256();
		for (n = 0; n < CSUM_STEPS && len >= 64; n++) {
			a0 = words256(a0, _mm256_lddqu_si256((const __m256i *)p));
			a1 = words256(a1, _mm256_lddqu_si256((const __m256i *)(p + 32)));
			p += 64;
			len -= 64;
		}
		a0 = _mm256_add_epi32(a0, a1);
		q = _mm256_add_epi64(_mm256_and_si256(a0, _mm256_set1_epi64x(0xffffffff)),
				     _mm256_srli_epi64(a0, 32));
		r = _mm_add_epi64(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
		s += (uint64_t)_mm_cvtsi128_si64(r) + (uint64_t)_mm_extract_epi64(r, 1);
	}
	return incad_csum_fold(csum_tail(p, len, s));
}

static inline __attribute__((target("avx512bw"))) __m512i
words512(__m512i acc, __m512i x)
{
	IN_REGISTER(x);
	return _mm512_add_epi32(acc, _mm512_add_epi32(
		_mm512_and_si512(x, _mm512_set1_epi32(0xffff)), _mm512_srli_epi32(x, 16)));
}

static inline __attribute__((target("avx512bw"))) uint64_t
lanes512(__m512i a)
{
	return (uint64_t)_mm512_reduce_add_epi64(_mm512_add_epi64(
		_mm512_and_si512(a, _mm512_set1_epi64(0xffffffff)), _mm512_srli_epi64(a, 32)));
}

static __attribute__((target("avx512bw"))) uint16_t
csum_avx512(const void *buf, size_t len)
{
	const uint8_t *p = buf;
	__m512i a0, a1;
	uint64_t s = 0;
	unsigned int n;

	while (len >= 128) {
		a0 = a1 = _mm512_setzero_si512();
		for (n = 0; n < CSUM_STEPS && len >= 128; n++) {
			a0 = words512(a0, _mm512_loadu_si512(p));
			a1 = words512(a1, _mm512_loadu_si512(p + 64));
			p += 128;
			len -= 128;
		}
		s += lanes512(_mm512_add_epi32(a0, a1));
	}
	/* The rest, under 128 bytes: a full load and a masked one, whose
	 * bytes past the end read as zeros (a lone last byte is the first of
	 * a word whose second is zero). */
	a0 = a1 = _mm512_setzero_si512();
	if (len >= 64) {
		a0 = words512(a0, _mm512_loadu_si512(p));
		p += 64;
		len -= 64;
	}
	if (len != 0)
		a1 = words512(a1, _mm512_maskz_loadu_epi8((1ULL << len) - 1, p));
	return incad_csum_fold(s + lanes512(_mm512_add_epi32(a0, a1)));
}

/*
 * Picked by a constructor rather than an IFUNC resolver: a resolver runs
 * while the loader relocates incad, before a sanitizer's runtime is up,
 * and an instrumented one crashes there.
 */
incad_csum_fn incad_csum_impl = csum_base;

static void __attribute__((constructor))
csum_pick(void)
{
	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx512bw"))
		incad_csum_impl = csum_avx512;
	else if (__builtin_cpu_supports("avx2"))
		incad_csum_impl = csum_avx2;
}
#else
incad_csum_fn incad_csum_impl = csum_base;
#endif

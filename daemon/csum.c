/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * The hot path's Internet checksum (see csum.h). Every contribution's
 * payload is summed once on the way in, so this loop is a fixed part of
 * incad's cost per packet. On x86-64 a constructor picks, for the CPU:
 *  - an AVX512_VNNI version: 64-byte loads, one vpdpwssd each, and a
 *    masked load for the tail;
 *  - an AVX-512BW version, the same with vpmaddwd and an add;
 *  - an AVX2 version, vpmaddwd on 32-byte loads;
 *  - the portable vector code (SSE2 on x86-64, NEON on Arm, the only
 *    one elsewhere).
 * For the 1076 bytes summed for a 256-element int32 contribution, in L1,
 * on a Zen 5 EPYC shared with other work (tools/bench/bench_csum.c): VNNI
 * 6.8 ns, AVX-512BW 7.3, AVX2 12, baseline 41, DPDK's rte_raw_cksum()
 * 176. The mask-and-shift AVX-512 version that the VNNI one replaced
 * took 9.7 ns (74 against 47 at 9000 bytes); only for 64 bytes or
 * fewer was it faster, by about 0.4 ns.
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

/* The portable version: GNU vectors, SSE2 on x86-64, NEON on Arm. */
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
 * The x86 versions add 16-bit words into 32-bit lanes with a multiply-add
 * against a vector of ones: vpmaddwd (AVX2, AVX-512BW) adds each pair of
 * words into its 32-bit lane, and AVX512_VNNI's vpdpwssd also adds the
 * pair to the accumulator, one instruction for what took four (and,
 * shift, two adds). Both take the words as signed, so each word is
 * biased first: w ^ 0x8000 is the signed w - 0x8000. Every 16-bit word
 * of every vector loaded is biased, the zeros past the end of a masked
 * load too, so the unbiased sum is the signed lane sum plus 0x8000 for
 * each word of each vector loaded: 32 words (a 2^20 correction) per
 * 64-byte vector, 16 (2^19) per 32-byte one. The lanes' sum is extended
 * exactly to 64 bits, so the total, and the folded result with it, is the
 * one the plain sum gives, 0 and 0xffff alike.
 *
 * The AVX-512 versions keep four accumulators, as vpdpwssd's latency is
 * on the accumulator's chain. Lanes are emptied into the 64-bit sum every
 * MADD_BLOCK bytes, added up in 32 bits: a word moves the sum by at most
 * 0x8000 either way, and 64 KiB hold 2^15 words, so the sum of all lanes
 * stays within 2^30 and never overflows.
 */
#define MADD_BLOCK (1 << 16)

/*
 * An empty asm that makes @x a vector register whose value the compiler
 * cannot see through. On an accumulator it stops GCC from adding into a
 * new register and copying that back at every step of the loop.
 */
#define IN_REGISTER(x) __asm__("" : "+v"(x))

/* One multiply-add step: @x's biased word pairs added into @acc's lanes. */
typedef __m512i (*madd512_fn)(__m512i acc, __m512i x);

static inline __attribute__((always_inline, target("avx512bw"))) __m512i
maddwd512(__m512i acc, __m512i x)
{
	IN_REGISTER(acc);
	return _mm512_add_epi32(acc, _mm512_madd_epi16(x, _mm512_set1_epi16(1)));
}

static inline __attribute__((always_inline, target("avx512bw,avx512vnni"))) __m512i
dpwssd512(__m512i acc, __m512i x)
{
	return _mm512_dpwssd_epi32(acc, x, _mm512_set1_epi16(1));
}

/* The 64 bytes at @p, each 16-bit word biased to signed. */
static inline __attribute__((always_inline, target("avx512bw"))) __m512i
load512(const uint8_t *p)
{
	return _mm512_xor_si512(_mm512_loadu_si512(p), _mm512_set1_epi16(-0x8000));
}

/* The sum of the signed 32-bit lanes of @a0 + ... + @a3, one block's. */
static inline __attribute__((always_inline, target("avx512bw"))) int64_t
lanes512_s32(__m512i a0, __m512i a1, __m512i a2, __m512i a3)
{
	__m512i a = _mm512_add_epi32(_mm512_add_epi32(a0, a1), _mm512_add_epi32(a2, a3));

	return _mm512_reduce_add_epi32(a);
}

/*
 * The signed sum of the biased words of @len bytes at @p, at most
 * MADD_BLOCK, built once per multiply-add step. The step is a pointer to
 * an always_inline function rather than a call in the body: the body
 * could not inline a VNNI intrinsic into a function built for AVX-512BW
 * alone, but once the body is inlined into csum_avx512vnni(), the
 * constant pointer becomes a call that inlines there.
 */
static inline __attribute__((always_inline, target("avx512bw"))) int64_t
madd512_block(const uint8_t *p, size_t len, madd512_fn step)
{
	__m512i a0, a1, a2, a3;

	a0 = a1 = a2 = a3 = _mm512_setzero_si512();
	for (; len >= 256; len -= 256, p += 256) {
		a0 = step(a0, load512(p));
		a1 = step(a1, load512(p + 64));
		a2 = step(a2, load512(p + 128));
		a3 = step(a3, load512(p + 192));
	}
	/* The rest, under 256 bytes: full loads, then a masked one whose
	 * bytes past the end read as zeros (a lone last byte is the first of
	 * a word whose second is zero) and are never touched, so a buffer
	 * that ends at the end of a mapping is safe. */
	if (len >= 128) {
		a0 = step(a0, load512(p));
		a1 = step(a1, load512(p + 64));
		p += 128;
		len -= 128;
	}
	if (len >= 64) {
		a2 = step(a2, load512(p));
		p += 64;
		len -= 64;
	}
	if (len != 0)
		a3 = step(a3, _mm512_xor_si512(_mm512_maskz_loadu_epi8((1ULL << len) - 1, p),
					       _mm512_set1_epi16(-0x8000)));
	return lanes512_s32(a0, a1, a2, a3);
}

/* The AVX-512 versions' body: blocks of MADD_BLOCK bytes, then the rest. */
static inline __attribute__((always_inline, target("avx512bw"))) uint16_t
madd512(const void *buf, size_t len, madd512_fn step)
{
	const uint8_t *p = buf;
	/* The bias of every vector loaded, the masked last one included:
	 * blocks are whole vectors. */
	uint64_t s = (uint64_t)((len + 63) / 64) << 20;
	size_t n;

	do {
		n = len < MADD_BLOCK ? len : MADD_BLOCK;
		s += (uint64_t)madd512_block(p, n, step);
		p += n;
		len -= n;
	} while (len != 0);
	return incad_csum_fold(s);
}

static __attribute__((target("avx512bw,avx512vnni"))) uint16_t
csum_avx512vnni(const void *buf, size_t len)
{
	return madd512(buf, len, dpwssd512);
}

static __attribute__((target("avx512bw"))) uint16_t
csum_avx512bw(const void *buf, size_t len)
{
	return madd512(buf, len, maddwd512);
}

/* The sum of the signed 32-bit lanes of @a, one block's. */
static inline __attribute__((always_inline, target("avx2"))) int64_t
lanes256_s32(__m256i a)
{
	__m128i h = _mm_add_epi32(_mm256_castsi256_si128(a), _mm256_extracti128_si256(a, 1));

	h = _mm_add_epi32(h, _mm_shuffle_epi32(h, _MM_SHUFFLE(1, 0, 3, 2)));
	h = _mm_add_epi32(h, _mm_shuffle_epi32(h, _MM_SHUFFLE(2, 3, 0, 1)));
	return _mm_cvtsi128_si32(h);
}

/*
 * The AVX2 version, as the AVX-512 ones with 32-byte vectors. AVX2 has no
 * byte-masked load, so the last 31 bytes or fewer are added by
 * csum_tail(). The loads are vlddqu, which GCC does not split in two
 * 16-byte halves as it does unaligned 32-byte loads when tuning for older
 * CPUs (DPDK's pkg-config asks for -march=corei7).
 */
static inline __attribute__((always_inline, target("avx2"))) __m256i
pairs256(const uint8_t *p)
{
	__m256i x = _mm256_lddqu_si256((const __m256i *)p);

	return _mm256_madd_epi16(_mm256_xor_si256(x, _mm256_set1_epi16(-0x8000)),
				 _mm256_set1_epi16(1));
}

/*
 * As madd512_block(), for the whole 32-byte vectors in @len bytes. The
 * multiply-adds are off the accumulator's chain of one-cycle adds, so one
 * accumulator keeps up.
 */
static inline __attribute__((always_inline, target("avx2"))) int64_t
madd256_block(const uint8_t *p, size_t len)
{
	__m256i a = _mm256_setzero_si256();

	for (; len >= 128; len -= 128, p += 128)
		a = _mm256_add_epi32(a, _mm256_add_epi32(
			_mm256_add_epi32(pairs256(p), pairs256(p + 32)),
			_mm256_add_epi32(pairs256(p + 64), pairs256(p + 96))));
	for (; len >= 32; len -= 32, p += 32)
		a = _mm256_add_epi32(a, pairs256(p));
	return lanes256_s32(a);
}

static __attribute__((target("avx2"))) uint16_t
csum_avx2(const void *buf, size_t len)
{
	const uint8_t *p = buf;
	/* The bias of every vector loaded. */
	uint64_t s = (uint64_t)(len / 32) << 19;
	size_t n;

	while (len >= 32) {
		n = len < MADD_BLOCK ? len & ~(size_t)31 : MADD_BLOCK;
		s += (uint64_t)madd256_block(p, n);
		p += n;
		len -= n;
	}
	return incad_csum_fold(csum_tail(p, len, s));
}

/*
 * The versions before the multiply-add ones, kept to be measured against
 * (tools/bench/bench_csum.c) and tested; never picked, as a CPU that runs
 * them runs the multiply-add ones too. They add each vector's 16-bit
 * words into 32-bit lanes as the portable code does
 * ((x & 0xffff) + (x >> 16)), from one load: left to itself, GCC folds
 * the load into both the "and" and the shift and reads the payload twice.
 * The empty asm keeps the loaded vector in a register. Lanes are emptied
 * every 8192 steps, as in csum_vec().
 */
#define SHIFT_STEPS 8192

static inline __attribute__((target("avx2"))) __m256i
words256(__m256i acc, __m256i x)
{
	IN_REGISTER(x);
	return _mm256_add_epi32(acc, _mm256_add_epi32(
		_mm256_and_si256(x, _mm256_set1_epi32(0xffff)), _mm256_srli_epi32(x, 16)));
}

static __attribute__((target("avx2"))) uint16_t
csum_avx2_shift(const void *buf, size_t len)
{
	const uint8_t *p = buf;
	__m256i a0, a1, q;
	__m128i r;
	uint64_t s = 0;
	unsigned int n;

	while (len >= 64) {
		a0 = a1 = _mm256_setzero_si256();
		for (n = 0; n < SHIFT_STEPS && len >= 64; n++) {
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
csum_avx512bw_shift(const void *buf, size_t len)
{
	const uint8_t *p = buf;
	__m512i a0, a1;
	uint64_t s = 0;
	unsigned int n;

	while (len >= 128) {
		a0 = a1 = _mm512_setzero_si512();
		for (n = 0; n < SHIFT_STEPS && len >= 128; n++) {
			a0 = words512(a0, _mm512_loadu_si512(p));
			a1 = words512(a1, _mm512_loadu_si512(p + 64));
			p += 128;
			len -= 128;
		}
		s += lanes512(_mm512_add_epi32(a0, a1));
	}
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
#endif /* CSUM_X86 */

/* The variants, in order of preference: the constructor picks the first usable. */
enum {
#ifdef CSUM_X86
	CSUM_AVX512VNNI,
	CSUM_AVX512BW,
	CSUM_AVX2,
	CSUM_AVX512BW_SHIFT,
	CSUM_AVX2_SHIFT,
#endif
	CSUM_BASE,
	CSUM_NVARIANTS
};

static struct incad_csum_variant csum_variants[CSUM_NVARIANTS] = {
#ifdef CSUM_X86
	[CSUM_AVX512VNNI] = { "avx512vnni", csum_avx512vnni, false },
	[CSUM_AVX512BW] = { "avx512bw", csum_avx512bw, false },
	[CSUM_AVX2] = { "avx2", csum_avx2, false },
	[CSUM_AVX512BW_SHIFT] = { "avx512bw-shift", csum_avx512bw_shift, false },
	[CSUM_AVX2_SHIFT] = { "avx2-shift", csum_avx2_shift, false },
#endif
	[CSUM_BASE] = { "base", csum_base, true },
};

incad_csum_fn incad_csum_impl = csum_base;

/*
 * Picked by a constructor rather than an IFUNC resolver: a resolver runs
 * while the loader relocates incad, before a sanitizer's runtime is up,
 * and an instrumented one crashes there.
 */
static void __attribute__((constructor))
csum_pick(void)
{
	unsigned int i;

#ifdef CSUM_X86
	bool bw, avx2;

	__builtin_cpu_init();
	bw = __builtin_cpu_supports("avx512bw");
	avx2 = __builtin_cpu_supports("avx2");
	csum_variants[CSUM_AVX512VNNI].usable = bw && __builtin_cpu_supports("avx512vnni");
	csum_variants[CSUM_AVX512BW].usable = bw;
	csum_variants[CSUM_AVX2].usable = avx2;
	csum_variants[CSUM_AVX512BW_SHIFT].usable = bw;
	csum_variants[CSUM_AVX2_SHIFT].usable = avx2;
#endif
	for (i = 0; !csum_variants[i].usable; i++)
		;
	incad_csum_impl = csum_variants[i].fn;
}

const struct incad_csum_variant *
incad_csum_variants(unsigned int *n)
{
	*n = CSUM_NVARIANTS;
	return csum_variants;
}

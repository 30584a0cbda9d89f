/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * Unit tests of the 16-bit float conversions (lib/dtype.c) against an
 * independent reference written here with double arithmetic (ldexp, frexp,
 * nearbyint in the default round-to-nearest-even mode): every fp16 and bf16
 * value, the exact ties between neighbours, overflow, subnormals and NaN.
 */

#include <check.h>
#include <fenv.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <inca/dtype.h>

/*
 * Check's ck_assert reports progress to the parent process on every call
 * (a write per assertion); the loops below make millions of checks, so they
 * use this one, which only calls into Check on failure.
 */
#define EXPECT(cond, ...) do { \
	if (!(cond)) \
		ck_abort_msg(__VA_ARGS__); \
} while (0)

static uint32_t
bits(float f)
{
	uint32_t u;

	memcpy(&u, &f, sizeof(u));
	return u;
}

static float
from_bits(uint32_t u)
{
	float f;

	memcpy(&f, &u, sizeof(f));
	return f;
}

static int
fp16_is_nan(uint16_t h)
{
	return (h & 0x7c00) == 0x7c00 && (h & 0x03ff) != 0;
}

static int
bf16_is_nan(uint16_t b)
{
	return (b & 0x7f80) == 0x7f80 && (b & 0x007f) != 0;
}

/* Reference: the value of a non-NaN fp16 from its definition. */
static double
ref_fp16_value(uint16_t h)
{
	int e = (h >> 10) & 0x1f;
	int m = h & 0x3ff;
	double v;

	if (e == 0x1f)
		v = INFINITY;
	else if (e == 0)
		v = ldexp(m, -24);
	else
		v = ldexp(1024 + m, e - 25);
	return (h & 0x8000) ? -v : v;
}

/* Reference: the value of a non-NaN bf16 from its definition. */
static double
ref_bf16_value(uint16_t b)
{
	int e = (b >> 7) & 0xff;
	int m = b & 0x7f;
	double v;

	if (e == 0xff)
		v = INFINITY;
	else if (e == 0)
		v = ldexp(m, -133);
	else
		v = ldexp(128 + m, e - 134);
	return (b & 0x8000) ? -v : v;
}

/*
 * Reference rounding of a finite or infinite non-NaN double to a binary
 * format with @p mbits mantissa bits, minimum normal exponent @p emin and
 * @p emax_biased the all-ones exponent: round to nearest, ties to even,
 * overflow to infinity. Returns the bit pattern.
 */
static uint16_t
ref_round(double x, int mbits, int emin, int ebits)
{
	uint16_t sign = signbit(x) ? 0x8000 : 0;
	int bias = (1 << (ebits - 1)) - 1;
	int inf_e = (1 << ebits) - 1;
	double a = fabs(x), q, r;
	int e;

	if (isinf(a))
		return sign | (uint16_t)(inf_e << mbits);
	if (a < ldexp(1, emin)) {
		/* Subnormal range: a multiple of 2^(emin - mbits). */
		r = nearbyint(a / ldexp(1, emin - mbits));
		return sign | (uint16_t)r;
	}
	frexp(a, &e);
	e -= 1; /* a = 1.f * 2^e */
	q = a / ldexp(1, e - mbits);
	r = nearbyint(q);
	if (r == ldexp(1, mbits + 1)) {
		r /= 2;
		e++;
	}
	if (e + bias >= inf_e)
		return sign | (uint16_t)(inf_e << mbits);
	return sign | (uint16_t)(((e + bias) << mbits) | ((int)r - (1 << mbits)));
}

static uint16_t
ref_to_fp16(float f)
{
	return ref_round(f, 10, -14, 5);
}

static uint16_t
ref_to_bf16(float f)
{
	return ref_round(f, 7, -126, 8);
}

/* The fp32 NaN rule: NaN, quiet, same sign. */
static void
check_quiet_nan32(float f, int sign, unsigned int what)
{
	EXPECT(isnan(f), "%04x: not NaN", what);
	EXPECT(bits(f) & 0x00400000, "%04x: not quiet", what);
	EXPECT(!!signbit(f) == sign, "%04x: sign lost", what);
}

/* Every fp16 value converts exactly to fp32 and back unchanged. */
START_TEST(test_fp16_exhaustive)
{
	uint32_t i;
	uint16_t h, back;
	float f;

	for (i = 0; i < 0x10000; i++) {
		h = (uint16_t)i;
		f = inca_fp16_to_fp32(h);
		back = inca_fp32_to_fp16(f);
		if (fp16_is_nan(h)) {
			check_quiet_nan32(f, !!(h & 0x8000), h);
			/* Payload kept, quiet bit set. */
			EXPECT(back == (h | 0x0200), "%04x -> %04x", h, back);
			continue;
		}
		EXPECT((double)f == ref_fp16_value(h), "%04x: %a", h, (double)f);
		EXPECT(!!signbit(f) == !!(h & 0x8000), "%04x: sign", h);
		EXPECT(back == h, "%04x -> %a -> %04x", h, (double)f, back);
	}
}
END_TEST

START_TEST(test_bf16_exhaustive)
{
	uint32_t i;
	uint16_t b, back;
	float f;

	for (i = 0; i < 0x10000; i++) {
		b = (uint16_t)i;
		f = inca_bf16_to_fp32(b);
		back = inca_fp32_to_bf16(f);
		if (bf16_is_nan(b)) {
			check_quiet_nan32(f, !!(b & 0x8000), b);
			EXPECT(back == (b | 0x0040), "%04x -> %04x", b, back);
			continue;
		}
		EXPECT((double)f == ref_bf16_value(b), "%04x: %a", b, (double)f);
		EXPECT(!!signbit(f) == !!(b & 0x8000), "%04x: sign", b);
		EXPECT(back == b, "%04x -> %a -> %04x", b, (double)f, back);
	}
}
END_TEST

/*
 * Between every pair of neighbouring finite 16-bit values: the exact
 * midpoint (a tie, goes to the even one), and the fp32 values one ulp on
 * either side of it. For fp16 every midpoint is an fp32 value; for bf16 too.
 */
static void
check_midpoints(double (*value)(uint16_t), uint16_t (*conv)(float),
		uint16_t (*ref)(float), uint16_t top)
{
	uint16_t h, want;
	double lo, hi, mid;
	float m, below, above;
	int neg;

	for (neg = 0; neg < 2; neg++) {
		for (h = 0; h < top; h++) {
			lo = value(h);
			hi = value(h + 1);
			mid = (lo + hi) / 2;
			m = (float)mid;
			EXPECT((double)m == mid, "midpoint of %04x not exact", h);
			if (neg)
				m = -m;
			below = nextafterf(m, 0);
			above = nextafterf(m, neg ? -INFINITY : INFINITY);
			/* Ties to even: the even mantissa of the two. */
			want = (uint16_t)(((h & 1) ? h + 1 : h) | (neg ? 0x8000 : 0));
			EXPECT(conv(m) == want, "tie %a -> %04x, want %04x", (double)m,
				      conv(m), want);
			EXPECT(ref(m) == want, "reference disagrees at %a", (double)m);
			EXPECT(conv(below) == (uint16_t)(h | (neg ? 0x8000 : 0)),
			       "below tie %a", (double)m);
			EXPECT(conv(above) == (uint16_t)((h + 1) | (neg ? 0x8000 : 0)),
			       "above tie %a", (double)m);
		}
	}
}

START_TEST(test_fp16_ties)
{
	/* Up to the largest finite value 0x7bff, whose upper neighbour is
	 * infinity (value 2^16 at the boundary, handled by overflow). */
	check_midpoints(ref_fp16_value, inca_fp32_to_fp16, ref_to_fp16, 0x7bff);
	/* Named cases: 1 + 2^-11 is half way between 1 and 1 + 2^-10. */
	ck_assert_uint_eq(inca_fp32_to_fp16(1.0f + 0x1p-11f), 0x3c00);
	ck_assert_uint_eq(inca_fp32_to_fp16(1.0f + 3 * 0x1p-11f), 0x3c02);
	ck_assert_uint_eq(inca_fp32_to_fp16(2049.0f), 0x6800); /* 2048 */
	ck_assert_uint_eq(inca_fp32_to_fp16(2051.0f), 0x6802); /* 2052 */
}
END_TEST

START_TEST(test_bf16_ties)
{
	check_midpoints(ref_bf16_value, inca_fp32_to_bf16, ref_to_bf16, 0x7f7f);
	ck_assert_uint_eq(inca_fp32_to_bf16(1.0f + 0x1p-8f), 0x3f80);
	ck_assert_uint_eq(inca_fp32_to_bf16(1.0f + 3 * 0x1p-8f), 0x3f82);
	ck_assert_uint_eq(inca_fp32_to_bf16(from_bits(0x3f808000)), 0x3f80);
	ck_assert_uint_eq(inca_fp32_to_bf16(from_bits(0x3f818000)), 0x3f82);
	ck_assert_uint_eq(inca_fp32_to_bf16(from_bits(0x3f808001)), 0x3f81);
}
END_TEST

START_TEST(test_overflow)
{
	/* fp16: 65504 is the largest; 65520 is the tie with 2^16 and goes to
	 * infinity (65504's mantissa is odd). */
	ck_assert_uint_eq(inca_fp32_to_fp16(65504.0f), 0x7bff);
	ck_assert_uint_eq(inca_fp32_to_fp16(nextafterf(65520.0f, 0)), 0x7bff);
	ck_assert_uint_eq(inca_fp32_to_fp16(65520.0f), 0x7c00);
	ck_assert_uint_eq(inca_fp32_to_fp16(-65520.0f), 0xfc00);
	ck_assert_uint_eq(inca_fp32_to_fp16(1e10f), 0x7c00);
	ck_assert_uint_eq(inca_fp32_to_fp16(FLT_MAX), 0x7c00);
	ck_assert_uint_eq(inca_fp32_to_fp16(-FLT_MAX), 0xfc00);
	ck_assert_uint_eq(inca_fp32_to_fp16(INFINITY), 0x7c00);
	ck_assert_uint_eq(inca_fp32_to_fp16(-INFINITY), 0xfc00);
	/* bf16: everything above the tie below 2^128 goes to infinity. */
	ck_assert_uint_eq(inca_fp32_to_bf16(FLT_MAX), 0x7f80);
	ck_assert_uint_eq(inca_fp32_to_bf16(-FLT_MAX), 0xff80);
	ck_assert_uint_eq(inca_fp32_to_bf16(from_bits(0x7f7f7fff)), 0x7f7f);
	ck_assert_uint_eq(inca_fp32_to_bf16(from_bits(0x7f7f8000)), 0x7f80);
	ck_assert_uint_eq(inca_fp32_to_bf16(INFINITY), 0x7f80);
	ck_assert_uint_eq(inca_fp32_to_bf16(-INFINITY), 0xff80);
}
END_TEST

START_TEST(test_subnormals)
{
	/* fp16 subnormals: multiples of 2^-24, kept, not flushed. */
	ck_assert_uint_eq(inca_fp32_to_fp16(0x1p-24f), 0x0001);
	ck_assert_uint_eq(inca_fp32_to_fp16(-0x1p-24f), 0x8001);
	ck_assert_uint_eq(inca_fp32_to_fp16(0x3ffp-24f), 0x03ff);
	ck_assert_uint_eq(inca_fp32_to_fp16(0x1p-14f), 0x0400);
	/* 2^-25 ties with zero: even is zero, sign kept. */
	ck_assert_uint_eq(inca_fp32_to_fp16(0x1p-25f), 0x0000);
	ck_assert_uint_eq(inca_fp32_to_fp16(-0x1p-25f), 0x8000);
	ck_assert_uint_eq(inca_fp32_to_fp16(nextafterf(0x1p-25f, 1)), 0x0001);
	ck_assert_uint_eq(inca_fp32_to_fp16(3 * 0x1p-25f), 0x0002);
	ck_assert_uint_eq(inca_fp32_to_fp16(5 * 0x1p-25f), 0x0002);
	/* Rounding up out of the subnormal range gives the smallest normal. */
	ck_assert_uint_eq(inca_fp32_to_fp16(0x7ffp-25f), 0x0400);
	/* fp32 subnormals are far below fp16's range: signed zero. */
	ck_assert_uint_eq(inca_fp32_to_fp16(from_bits(0x00000001)), 0x0000);
	ck_assert_uint_eq(inca_fp32_to_fp16(from_bits(0x807fffff)), 0x8000);
	ck_assert_uint_eq(inca_fp32_to_fp16(-0.0f), 0x8000);
	ck_assert_uint_eq(inca_fp32_to_fp16(0.0f), 0x0000);
	/* bf16 has fp32's exponent range: fp32 subnormals round to bf16
	 * subnormals (multiples of 2^-133). */
	ck_assert_uint_eq(inca_fp32_to_bf16(from_bits(0x00010000)), 0x0001);
	ck_assert_uint_eq(inca_fp32_to_bf16(from_bits(0x00008000)), 0x0000);
	ck_assert_uint_eq(inca_fp32_to_bf16(from_bits(0x00018000)), 0x0002);
	ck_assert_uint_eq(inca_fp32_to_bf16(from_bits(0x00008001)), 0x0001);
	ck_assert_uint_eq(inca_fp32_to_bf16(from_bits(0x807fffff)), 0x8080);
	ck_assert_uint_eq(inca_fp32_to_bf16(-0.0f), 0x8000);
	ck_assert(inca_bf16_to_fp32(0x0001) == 0x1p-133f);
	ck_assert(inca_fp16_to_fp32(0x0001) == 0x1p-24f);
	ck_assert(inca_fp16_to_fp32(0x8200) == -0x1p-15f);
}
END_TEST

START_TEST(test_nan)
{
	/* Signalling and quiet NaNs of both signs stay NaN, become quiet and
	 * keep their sign. */
	static const uint32_t nans[] = {
		0x7f800001, 0x7fc00000, 0x7fffffff, 0x7fa00000, 0x7f802000,
		0xff800001, 0xffc00000, 0xffffffff,
	};
	unsigned int i;
	uint16_t h, b;

	for (i = 0; i < sizeof(nans) / sizeof(nans[0]); i++) {
		h = inca_fp32_to_fp16(from_bits(nans[i]));
		b = inca_fp32_to_bf16(from_bits(nans[i]));
		ck_assert_msg(fp16_is_nan(h) && (h & 0x0200), "%08x -> fp16 %04x", nans[i], h);
		ck_assert_msg(bf16_is_nan(b) && (b & 0x0040), "%08x -> bf16 %04x", nans[i], b);
		ck_assert_uint_eq(h & 0x8000, (nans[i] >> 16) & 0x8000);
		ck_assert_uint_eq(b & 0x8000, (nans[i] >> 16) & 0x8000);
	}
	/* The canonical quiet NaNs map onto each other. */
	ck_assert_uint_eq(inca_fp32_to_fp16(from_bits(0x7fc00000)), 0x7e00);
	ck_assert_uint_eq(inca_fp32_to_bf16(from_bits(0x7fc00000)), 0x7fc0);
	ck_assert_uint_eq(bits(inca_fp16_to_fp32(0x7e00)), 0x7fc00000);
	ck_assert_uint_eq(bits(inca_bf16_to_fp32(0x7fc0)), 0x7fc00000);
	/* A signalling NaN whose payload is only in the low bits still
	 * stays NaN (never becomes infinity). */
	ck_assert(fp16_is_nan(inca_fp32_to_fp16(from_bits(0x7f800001))));
	ck_assert(bf16_is_nan(inca_fp32_to_bf16(from_bits(0x7f800001))));
	/* fp16 signalling NaN to fp32: quiet. */
	check_quiet_nan32(inca_fp16_to_fp32(0x7c01), 0, 0x7c01);
	check_quiet_nan32(inca_bf16_to_fp32(0xff81), 1, 0xff81);
}
END_TEST

/*
 * fp32 -> fp16/bf16 against the reference over a sweep of fp32 bit patterns
 * (every sign, exponent and many mantissas) and pseudo-random patterns.
 */
START_TEST(test_sweep)
{
	uint64_t u;
	uint32_t x = 0x2545f491, p;
	unsigned int i;
	float f;

	for (u = 0; u <= 0xffffffffull; u += 1021) {
		f = from_bits((uint32_t)u);
		if (isnan(f))
			continue;
		EXPECT(inca_fp32_to_fp16(f) == ref_to_fp16(f), "%08x: fp16 %04x want %04x",
			      (uint32_t)u, inca_fp32_to_fp16(f), ref_to_fp16(f));
		EXPECT(inca_fp32_to_bf16(f) == ref_to_bf16(f), "%08x: bf16 %04x want %04x",
			      (uint32_t)u, inca_fp32_to_bf16(f), ref_to_bf16(f));
	}
	for (i = 0; i < 1000000; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		/* Concentrate on fp16's exponent range half of the time. */
		p = (i & 1) ? x : ((x & 0x80000000) | (0x33000000 + x % 0x14800000));
		f = from_bits(p);
		if (isnan(f))
			continue;
		EXPECT(inca_fp32_to_fp16(f) == ref_to_fp16(f), "%08x: fp16", p);
		EXPECT(inca_fp32_to_bf16(f) == ref_to_bf16(f), "%08x: bf16", p);
	}
}
END_TEST

static Suite *
dtype_suite(void)
{
	Suite *s = suite_create("dtype");
	TCase *tc;

	tc = tcase_create("fp16_exhaustive");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_fp16_exhaustive);
	suite_add_tcase(s, tc);
	tc = tcase_create("bf16_exhaustive");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_bf16_exhaustive);
	suite_add_tcase(s, tc);
	tc = tcase_create("fp16_ties");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_fp16_ties);
	suite_add_tcase(s, tc);
	tc = tcase_create("bf16_ties");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_bf16_ties);
	suite_add_tcase(s, tc);
	tc = tcase_create("overflow");
	tcase_add_test(tc, test_overflow);
	suite_add_tcase(s, tc);
	tc = tcase_create("subnormals");
	tcase_add_test(tc, test_subnormals);
	suite_add_tcase(s, tc);
	tc = tcase_create("nan");
	tcase_add_test(tc, test_nan);
	suite_add_tcase(s, tc);
	tc = tcase_create("sweep");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_sweep);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(dtype_suite());
	int failed;

	/* The reference rounds with nearbyint in this mode. */
	fesetround(FE_TONEAREST);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

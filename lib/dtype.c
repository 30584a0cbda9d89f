/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * Conversions between fp32 and the two 16-bit float formats, done on the
 * bit patterns so that the result does not depend on the compiler, the FPU
 * rounding mode or the presence of F16C: the wire format fixes the result
 * bit for bit (docs/protocol.md, "Data types and operations").
 */

#include <string.h>

#include <inca/dtype.h>

static inline uint32_t
f2u(float f)
{
	uint32_t u;

	memcpy(&u, &f, sizeof(u));
	return u;
}

static inline float
u2f(uint32_t u)
{
	float f;

	memcpy(&f, &u, sizeof(f));
	return f;
}

float
inca_fp16_to_fp32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000) << 16;
	uint32_t exp = (h >> 10) & 0x1f;
	uint32_t mant = h & 0x3ff;
	int e;

	if (exp == 0x1f) {
		/* Infinity, or NaN made quiet with its payload kept. */
		if (mant == 0)
			return u2f(sign | 0x7f800000);
		return u2f(sign | 0x7fc00000 | (mant << 13));
	}
	if (exp != 0)
		return u2f(sign | ((exp - 15 + 127) << 23) | (mant << 13));
	if (mant == 0)
		return u2f(sign);
	/* Subnormal: mant * 2^-24; every one is a normal fp32. */
	e = -14;
	while (!(mant & 0x400)) {
		mant <<= 1;
		e--;
	}
	return u2f(sign | ((uint32_t)(e + 127) << 23) | ((mant & 0x3ff) << 13));
}

/* Shift @p m right by @p shift (1..31), rounding to nearest, ties to even. */
static inline uint32_t
shift_rne(uint32_t m, unsigned int shift)
{
	uint32_t half = 1u << (shift - 1);
	uint32_t rem = m & ((1u << shift) - 1);
	uint32_t r = m >> shift;

	if (rem > half || (rem == half && (r & 1)))
		r++;
	return r;
}

uint16_t
inca_fp32_to_fp16(float f)
{
	uint32_t x = f2u(f);
	uint16_t sign = (x >> 16) & 0x8000;
	uint32_t a = x & 0x7fffffff;
	uint32_t e = a >> 23;
	uint32_t mant;

	if (a > 0x7f800000)
		return sign | 0x7e00 | ((a >> 13) & 0x3ff);
	/* 65520 lies half way between 65504 (odd mantissa) and 2^16: it and
	 * everything above round to infinity. */
	if (a >= 0x477ff000)
		return sign | 0x7c00;
	if (a >= 0x38800000) {
		/* Normal half. A carry out of the mantissa correctly bumps
		 * the exponent; it cannot reach infinity (excluded above). */
		return sign | (uint16_t)shift_rne(a - 0x38000000, 13);
	}
	/* Half subnormal or zero: the result is round(|f| / 2^-24). At or
	 * below 2^-25 (a tie with zero, whose mantissa is even) it is 0. */
	if (a <= 0x33000000)
		return sign;
	mant = (a & 0x7fffff) | 0x800000;
	/* |f| = mant * 2^(e - 150) = mant * 2^(e - 126) units of 2^-24. */
	return sign | (uint16_t)shift_rne(mant, 126 - e);
}

float
inca_bf16_to_fp32(uint16_t b)
{
	uint32_t x = (uint32_t)b << 16;

	/* Quiet a signalling NaN, as every other conversion does. */
	if ((x & 0x7fffffff) > 0x7f800000)
		x |= 0x00400000;
	return u2f(x);
}

uint16_t
inca_fp32_to_bf16(float f)
{
	uint32_t x = f2u(f);

	if ((x & 0x7fffffff) > 0x7f800000)
		return (uint16_t)((x >> 16) | 0x0040);
	/* Rounding carries into the exponent; at the top it gives infinity,
	 * which is the specified overflow result. */
	return (uint16_t)(shift_rne(x, 16));
}

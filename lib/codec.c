/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * Payload codec: user elements to wire elements and back. Every wire
 * element is big-endian. Besides the native encoding, three integer ones
 * let an int32-only aggregator (a Tofino) serve float data and raw bytes:
 *
 * - BFP: a float sum as block fixed point. All workers quantise one chunk
 *   with the same exponent E, agreed through the aggregator's max of the
 *   exponents workers announce (|x| < 2^E for every input of the chunk),
 *   q = round(x * 2^s), s = 30 - ceil(log2 N) - E, so that the sum of N
 *   quantised values stays within int32. Two exponent values are markers:
 *   LI_EXP_ZERO (every input zero) and LI_EXP_SPECIAL (some input is inf or
 *   NaN: the chunk then carries class counts instead of values, see below).
 * - ORDERED: a float min/max as the int32 whose order matches the float's
 *   (-0 below +0): exact, because min and max pick one of the inputs.
 * - RAW: bytes as int32 lanes (broadcast: one rank sends data, the others
 *   zeros, the sum is the data bit for bit).
 *
 * User buffers carry no alignment promise beyond the element's, so loads
 * and stores go through memcpy, which compilers turn into plain moves.
 */

#include <math.h>
#include <string.h>

#include "li_state.h"

/* In a special BFP chunk each element adds one of these class codes;
 * with at most 32 workers the counts never carry into the next field. */
#define SPECIAL_NAN (1u << 20)
#define SPECIAL_PINF (1u << 10)
#define SPECIAL_NINF 1u
#define SPECIAL_FIELD 0x3ffu

#define QNAN32 0x7fc00000u
#define QNAN16 0x7e00u
#define QNANBF 0x7fc0u

static inline uint32_t
ld32(const void *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

static inline uint16_t
ld16(const void *p)
{
	uint16_t v;

	memcpy(&v, p, 2);
	return v;
}

static inline void
st32(void *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

static inline void
st16(void *p, uint16_t v)
{
	memcpy(p, &v, 2);
}

/* Host to network order of a 64-bit element, and back (the same swap). */
static inline uint64_t
swap64(const void *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	v = __builtin_bswap64(v);
#endif
	return v;
}

static inline uint32_t
f2u(float f)
{
	uint32_t u;

	memcpy(&u, &f, 4);
	return u;
}

static inline float
u2f(uint32_t u)
{
	float f;

	memcpy(&f, &u, 4);
	return f;
}

/* Element @i of float user data (fp32, fp16, bf16) as fp32 bits. */
static inline uint32_t
load_float_bits(const void *src, unsigned dtype, size_t i)
{
	const uint8_t *p = src;

	switch (dtype) {
	case INCA_DTYPE_FP16:
		return f2u(inca_fp16_to_fp32(ld16(p + 2 * i)));
	case INCA_DTYPE_BF16:
		return (uint32_t)ld16(p + 2 * i) << 16;
	default:
		return ld32(p + 4 * i);
	}
}

/* Store fp32 bits @u as element @i of user data of float @dtype. */
static inline void
store_float_bits(void *dst, unsigned dtype, size_t i, uint32_t u)
{
	uint8_t *p = dst;
	bool nan = (u & 0x7fffffffu) > 0x7f800000u;

	switch (dtype) {
	case INCA_DTYPE_FP16:
		st16(p + 2 * i, nan ? QNAN16 : inca_fp32_to_fp16(u2f(u)));
		break;
	case INCA_DTYPE_BF16:
		st16(p + 2 * i, nan ? QNANBF : inca_fp32_to_bf16(u2f(u)));
		break;
	default:
		st32(p + 4 * i, nan ? QNAN32 : u);
		break;
	}
}

unsigned
li_ceil_log2(unsigned n)
{
	unsigned c = 0;

	while ((1u << c) < n)
		c++;
	return c;
}

int8_t
li_bfp_local_exp(const void *src, unsigned dtype, size_t count)
{
	uint32_t maxb = 0, any = 0;
	size_t i;

	/* The biased exponent field bounds the magnitude: a normal number
	 * with field b lies in [2^(b-127), 2^(b-126)), so E = b - 126. */
	for (i = 0; i < count; i++) {
		uint32_t u = load_float_bits(src, dtype, i) & 0x7fffffffu;
		uint32_t b = u >> 23;

		any |= u;
		if (b > maxb)
			maxb = b;
	}
	if (maxb == 0xff)
		return LI_EXP_SPECIAL;
	if (any == 0)
		return LI_EXP_ZERO;
	if (maxb == 0) /* only subnormals: all below 2^-126 */
		return -126;
	if ((int)maxb - 126 > LI_EXP_MAX_FINITE)
		return LI_EXP_MAX_FINITE; /* |x| >= 2^126 saturates; documented */
	return (int8_t)((int)maxb - 126);
}

static void
encode_bfp(uint8_t *dst, const void *src, size_t count, unsigned dtype, int8_t exp,
	   unsigned nworkers)
{
	size_t i;

	if (src == NULL || exp == LI_EXP_ZERO) {
		memset(dst, 0, count * 4);
		return;
	}
	if (exp == LI_EXP_SPECIAL) {
		for (i = 0; i < count; i++) {
			uint32_t u = load_float_bits(src, dtype, i);
			uint32_t code = 0;

			if ((u & 0x7fffffffu) > 0x7f800000u)
				code = SPECIAL_NAN;
			else if (u == 0x7f800000u)
				code = SPECIAL_PINF;
			else if (u == 0xff800000u)
				code = SPECIAL_NINF;
			st32(dst + 4 * i, htonl(code));
		}
		return;
	}

	int c = (int)li_ceil_log2(nworkers);
	int s = 30 - c - exp;
	double lim = ldexp(1.0, 30 - c);

	for (i = 0; i < count; i++) {
		float x = u2f(load_float_bits(src, dtype, i));
		double q = nearbyint(ldexp((double)x, s));

		/* Only inputs beyond the agreed exponent (a saturated |x| >=
		 * 2^126) or a NaN slipping past the markers get here. */
		if (!(q <= lim))
			q = isnan(q) ? 0.0 : lim;
		else if (q < -lim)
			q = -lim;
		st32(dst + 4 * i, htonl((uint32_t)(int32_t)q));
	}
}

static void
decode_bfp(void *dst, const uint8_t *wire, size_t count, unsigned dtype, int8_t exp,
	   unsigned nworkers)
{
	size_t i;

	if (exp == LI_EXP_SPECIAL) {
		for (i = 0; i < count; i++) {
			uint32_t code = ntohl(ld32(wire + 4 * i));
			uint32_t nan = code >> 20;
			uint32_t pinf = (code >> 10) & SPECIAL_FIELD;
			uint32_t ninf = code & SPECIAL_FIELD;
			uint32_t u = QNAN32;

			/* A finite element of a special chunk has lost its value:
			 * it comes back as NaN rather than as a wrong number. */
			if (!nan && pinf && !ninf)
				u = 0x7f800000u;
			else if (!nan && ninf && !pinf)
				u = 0xff800000u;
			store_float_bits(dst, dtype, i, u);
		}
		return;
	}

	int c = (int)li_ceil_log2(nworkers);
	int s = exp == LI_EXP_ZERO ? 0 : 30 - c - exp;

	for (i = 0; i < count; i++) {
		int32_t q = (int32_t)ntohl(ld32(wire + 4 * i));
		/* q * 2^-s is exact in double; the cast to float rounds once. */
		float y = (float)ldexp((double)q, -s);

		store_float_bits(dst, dtype, i, f2u(y));
	}
}

/* Order-preserving map of fp32 bits to int32; NaN goes to the end that
 * the operation always picks, so any NaN input gives a NaN result. */
static inline int32_t
ordered_from_float(uint32_t u, unsigned op)
{
	if ((u & 0x7fffffffu) > 0x7f800000u)
		return op == INCA_OP_MIN ? INT32_MIN : INT32_MAX;
	if (u & 0x80000000u)
		u ^= 0x7fffffffu;
	return (int32_t)u;
}

static inline uint32_t
ordered_to_float(int32_t i)
{
	uint32_t u = (uint32_t)i;

	if (i < 0)
		u ^= 0x7fffffffu;
	return u;
}

size_t
li_encode(void *dst, const void *src, size_t count, unsigned dtype, unsigned op,
	  enum li_mode mode, int8_t exp, unsigned nworkers, size_t avail)
{
	uint8_t *d = dst;
	const uint8_t *s = src;
	size_t i;

	switch (mode) {
	case LI_MODE_BFP:
		encode_bfp(d, src, count, dtype, exp, nworkers);
		return count * 4;
	case LI_MODE_ORDERED:
		for (i = 0; i < count; i++) {
			uint32_t u = src ? load_float_bits(src, dtype, i) : 0;

			st32(d + 4 * i, htonl((uint32_t)ordered_from_float(u, op)));
		}
		return count * 4;
	case LI_MODE_RAW:
		for (i = 0; i < count; i++) {
			uint32_t v = 0;

			if (src != NULL && 4 * i < avail)
				memcpy(&v, s + 4 * i, avail - 4 * i >= 4 ? 4 : avail - 4 * i);
			st32(d + 4 * i, htonl(v));
		}
		return count * 4;
	case LI_MODE_NATIVE:
	default:
		break;
	}
	if (inca_dtype_size(dtype) == 2) {
		for (i = 0; i < count; i++)
			st16(d + 2 * i, src ? htons(ld16(s + 2 * i)) : 0);
		return count * 2;
	}
	if (inca_dtype_size(dtype) == 8) {
		/* INT64 and FP64 travel only natively: bits unchanged. */
		for (i = 0; i < count; i++) {
			uint64_t v = src ? swap64(s + 8 * i) : 0;

			memcpy(d + 8 * i, &v, 8);
		}
		return count * 8;
	}
	for (i = 0; i < count; i++)
		st32(d + 4 * i, src ? htonl(ld32(s + 4 * i)) : 0);
	return count * 4;
}

void
li_decode(void *dst, const void *wire, size_t count, unsigned dtype, unsigned op,
	  enum li_mode mode, int8_t exp, unsigned nworkers, size_t avail)
{
	const uint8_t *w = wire;
	uint8_t *d = dst;
	size_t i;

	(void)op;
	switch (mode) {
	case LI_MODE_BFP:
		decode_bfp(dst, w, count, dtype, exp, nworkers);
		return;
	case LI_MODE_ORDERED:
		for (i = 0; i < count; i++) {
			int32_t v = (int32_t)ntohl(ld32(w + 4 * i));

			store_float_bits(dst, dtype, i, ordered_to_float(v));
		}
		return;
	case LI_MODE_RAW:
		for (i = 0; i < count && 4 * i < avail; i++) {
			uint32_t v = ntohl(ld32(w + 4 * i));

			memcpy(d + 4 * i, &v, avail - 4 * i >= 4 ? 4 : avail - 4 * i);
		}
		return;
	case LI_MODE_NATIVE:
	default:
		break;
	}
	if (inca_dtype_size(dtype) == 2) {
		for (i = 0; i < count; i++)
			st16(d + 2 * i, ntohs(ld16(w + 2 * i)));
		return;
	}
	if (inca_dtype_size(dtype) == 8) {
		for (i = 0; i < count; i++) {
			uint64_t v = swap64(w + 8 * i);

			memcpy(d + 8 * i, &v, 8);
		}
		return;
	}
	for (i = 0; i < count; i++)
		st32(d + 4 * i, ntohl(ld32(w + 4 * i)));
}

double
inca_bfp_error_bound(unsigned nworkers, int exp, double result)
{
	int c, s;

	if (nworkers == 0)
		nworkers = 1;
	c = (int)li_ceil_log2(nworkers);
	s = 30 - c - exp;
	/* Each of the N inputs is rounded to a multiple of 2^-s: at most half
	 * a step off; the int32 sum is exact; the conversion to fp32 rounds
	 * once. */
	return nworkers * ldexp(1.0, -s - 1) + ldexp(fabs(result), -24);
}

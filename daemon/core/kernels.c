/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * Aggregation kernels. Three families live here:
 *
 *  - agg_ref_*: one element at a time, written from the specification with
 *    libm (ldexpf, rintf) rather than bit tricks, so that tests have
 *    something independent of the fast code to compare against;
 *  - the portable kernels: branch-free per-element helpers in loops a
 *    compiler can vectorise for whatever target it builds for;
 *  - the vectorised kernels (AVX2 + F16C on x86-64, NEON on aarch64).
 *
 * Every family gives the same exported bits. The accumulator's lanes are
 * the same too, except for NaN lanes, whose payload is left to the
 * hardware: the NaN is made canonical only on export, which is the only
 * place the protocol can see it.
 *
 * Nothing here touches the floating-point environment: the kernels rely on
 * round to nearest even and on subnormals being kept, which is the
 * default on every supported target (the daemon must not be built with
 * -ffast-math, which would set FTZ/DAZ).
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include <inca/wire.h>

#include "kernels.h"

#define CANON_NAN32 0x7fc00000u
#define CANON_NAN16 0x7e00u
#define CANON_NANBF 0x7fc0u

/* ---- byte order and bit casts ---------------------------------------- */

static inline uint32_t
be32_load(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	v = __builtin_bswap32(v);
#endif
	return v;
}

static inline uint32_t
be16_load(const uint8_t *p)
{
	uint16_t v;

	memcpy(&v, p, sizeof(v));
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	v = __builtin_bswap16(v);
#endif
	return v;
}

static inline void
be32_store(uint8_t *p, uint32_t v)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	v = __builtin_bswap32(v);
#endif
	memcpy(p, &v, sizeof(v));
}

static inline void
be16_store(uint8_t *p, uint32_t v32)
{
	uint16_t v = (uint16_t)v32;

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	v = __builtin_bswap16(v);
#endif
	memcpy(p, &v, sizeof(v));
}

static inline float
as_f(uint32_t u)
{
	float f;

	memcpy(&f, &u, sizeof(f));
	return f;
}

static inline uint32_t
as_u(float f)
{
	uint32_t u;

	memcpy(&u, &f, sizeof(u));
	return u;
}

/* ---- per-element helpers of the fast kernels (branch-free) ------------ */

/* fp16 bits to fp32 bits, exact. */
static inline uint32_t
f16_to_f32_bits(uint32_t h)
{
	uint32_t sign = (h & 0x8000u) << 16;
	uint32_t em = h & 0x7fffu;
	/* Normal numbers: move the fields into place and rebias (15 -> 127). */
	uint32_t norm = (em << 13) + ((127u - 15u) << 23);
	/* Infinity and NaN keep their mantissa under an all-ones exponent. */
	uint32_t special = (em << 13) | 0x7f800000u;
	/* Subnormals are mant * 2^-24: an exact int conversion and scaling. */
	uint32_t sub = as_u((float)(int32_t)em * 0x1p-24f);
	uint32_t r = em >= 0x7c00u ? special : em >= 0x0400u ? norm : sub;

	return sign | r;
}

/* fp32 bits to fp16 bits, round to nearest even, overflow to infinity. */
static inline uint32_t
f32_to_f16_bits(uint32_t x)
{
	uint32_t sign = (x >> 16) & 0x8000u;
	uint32_t a = x & 0x7fffffffu;
	/* Normal results: round the 13 dropped bits to nearest even, rebias. */
	uint32_t norm = (a + 0xfffu + ((a >> 13) & 1u) - ((127u - 15u) << 23)) >> 13;
	/*
	 * Below 2^-14 the result is a multiple of 2^-24: adding 0.5 (whose ulp
	 * is 2^-24) lets the FPU do the round to nearest even for us.
	 */
	uint32_t sub = as_u(as_f(a) + 0.5f) - 0x3f000000u;
	uint32_t r;

	/* 65520 is the midpoint between 65504 and 2^16: ties to "even" inf. */
	r = a >= 0x477ff000u ? 0x7c00u : a >= 0x38800000u ? norm : sub;
	return a > 0x7f800000u ? CANON_NAN16 : (sign | r);
}

/* fp32 bits to bf16 bits, round to nearest even (overflow rounds to inf). */
static inline uint32_t
f32_to_bf16_bits(uint32_t x)
{
	uint32_t r = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;

	return (x & 0x7fffffffu) > 0x7f800000u ? CANON_NANBF : r;
}

static inline uint32_t
f32_canon(uint32_t x)
{
	return (x & 0x7fffffffu) > 0x7f800000u ? CANON_NAN32 : x;
}

/*
 * Map float bits to an int32 whose signed order is the float total order
 * (-inf < ... < -0 < +0 < ... < +inf): negative floats have their magnitude
 * bits flipped. The map is its own inverse. NaN is forced to the end that
 * makes it win: INT32_MIN for min, INT32_MAX for max, whose inverses are
 * NaNs again.
 */
static inline int32_t
f_key(uint32_t x)
{
	int32_t s = (int32_t)x;

	return s ^ (int32_t)((uint32_t)(s >> 31) & 0x7fffffffu);
}

static inline uint32_t
f_min_bits(uint32_t a, uint32_t b)
{
	int32_t ka = (a & 0x7fffffffu) > 0x7f800000u ? INT32_MIN : f_key(a);
	int32_t kb = (b & 0x7fffffffu) > 0x7f800000u ? INT32_MIN : f_key(b);

	return (uint32_t)f_key((uint32_t)(ka < kb ? ka : kb));
}

static inline uint32_t
f_max_bits(uint32_t a, uint32_t b)
{
	int32_t ka = (a & 0x7fffffffu) > 0x7f800000u ? INT32_MAX : f_key(a);
	int32_t kb = (b & 0x7fffffffu) > 0x7f800000u ? INT32_MAX : f_key(b);

	return (uint32_t)f_key((uint32_t)(ka > kb ? ka : kb));
}

/* ---- element decoders and combiners shared by the fast kernels -------- */

/* Wire element i to accumulator lane bits. */
static inline uint32_t
dec_w32(const uint8_t *w, unsigned i)
{
	return be32_load(w + 4 * i);
}

static inline uint32_t
dec_fp16(const uint8_t *w, unsigned i)
{
	return f16_to_f32_bits(be16_load(w + 2 * i));
}

static inline uint32_t
dec_bf16(const uint8_t *w, unsigned i)
{
	return be16_load(w + 2 * i) << 16;
}

static inline uint32_t
op_isum(uint32_t a, uint32_t b)
{
	return a + b; /* wraps modulo 2^32, as the protocol says */
}

static inline uint32_t
op_imin(uint32_t a, uint32_t b)
{
	return (int32_t)a < (int32_t)b ? a : b;
}

static inline uint32_t
op_imax(uint32_t a, uint32_t b)
{
	return (int32_t)a > (int32_t)b ? a : b;
}

static inline uint32_t
op_fsum(uint32_t a, uint32_t b)
{
	return as_u(as_f(a) + as_f(b));
}

/* ---- the portable kernels -------------------------------------------- */

/*
 * Blocks of a fixed 8 lanes with a scalar tail: a fixed trip count is what
 * the cheapest vectoriser cost models (GCC's at -O2) accept.
 */
#define PORT_BLOCK 8

#define PORT_INIT(name, dec) \
static void \
name(void *acc_, const void *wire_, unsigned count) \
{ \
	uint32_t *acc = acc_; \
	const uint8_t *w = wire_; \
	unsigned i = 0, j; \
 \
	for (; i + PORT_BLOCK <= count; i += PORT_BLOCK) \
		for (j = 0; j < PORT_BLOCK; j++) \
			acc[i + j] = dec(w, i + j); \
	for (; i < count; i++) \
		acc[i] = dec(w, i); \
}

#define PORT_COMBINE(name, dec, op) \
static void \
name(void *acc_, const void *wire_, unsigned count) \
{ \
	uint32_t *acc = acc_; \
	const uint8_t *w = wire_; \
	unsigned i = 0, j; \
 \
	for (; i + PORT_BLOCK <= count; i += PORT_BLOCK) \
		for (j = 0; j < PORT_BLOCK; j++) \
			acc[i + j] = op(acc[i + j], dec(w, i + j)); \
	for (; i < count; i++) \
		acc[i] = op(acc[i], dec(w, i)); \
}

#define PORT_EXPORT(name, enc, store, size) \
static void \
name(void *wire_, const void *acc_, unsigned count) \
{ \
	const uint32_t *acc = acc_; \
	uint8_t *w = wire_; \
	unsigned i = 0, j; \
 \
	for (; i + PORT_BLOCK <= count; i += PORT_BLOCK) \
		for (j = 0; j < PORT_BLOCK; j++) \
			store(w + (size) * (i + j), enc(acc[i + j])); \
	for (; i < count; i++) \
		store(w + (size) * i, enc(acc[i])); \
}

static inline uint32_t
enc_same(uint32_t x)
{
	return x;
}

PORT_INIT(port_init_w32, dec_w32)
PORT_INIT(port_init_fp16, dec_fp16)
PORT_INIT(port_init_bf16, dec_bf16)

PORT_COMBINE(port_i32_sum, dec_w32, op_isum)
PORT_COMBINE(port_i32_min, dec_w32, op_imin)
PORT_COMBINE(port_i32_max, dec_w32, op_imax)
PORT_COMBINE(port_f32_sum, dec_w32, op_fsum)
PORT_COMBINE(port_f32_min, dec_w32, f_min_bits)
PORT_COMBINE(port_f32_max, dec_w32, f_max_bits)
PORT_COMBINE(port_f16_sum, dec_fp16, op_fsum)
PORT_COMBINE(port_f16_min, dec_fp16, f_min_bits)
PORT_COMBINE(port_f16_max, dec_fp16, f_max_bits)
PORT_COMBINE(port_b16_sum, dec_bf16, op_fsum)
PORT_COMBINE(port_b16_min, dec_bf16, f_min_bits)
PORT_COMBINE(port_b16_max, dec_bf16, f_max_bits)

PORT_EXPORT(port_export_i32, enc_same, be32_store, 4)
PORT_EXPORT(port_export_f32, f32_canon, be32_store, 4)
PORT_EXPORT(port_export_fp16, f32_to_f16_bits, be16_store, 2)
PORT_EXPORT(port_export_bf16, f32_to_bf16_bits, be16_store, 2)

/* ---- implementation tables and selection ----------------------------- */

struct kernel_set {
	const char *name;
	agg_init_fn *init[INCA_DTYPE_COUNT];
	agg_combine_fn *combine[INCA_DTYPE_COUNT][INCA_OP_COUNT];
	agg_export_fn *export[INCA_DTYPE_COUNT];
};

static const struct kernel_set portable_set = {
	.name = "portable",
	.init = {
		[INCA_DTYPE_INT32] = port_init_w32,
		[INCA_DTYPE_FP32] = port_init_w32,
		[INCA_DTYPE_FP16] = port_init_fp16,
		[INCA_DTYPE_BF16] = port_init_bf16,
	},
	.combine = {
		[INCA_DTYPE_INT32] = { port_i32_sum, port_i32_min, port_i32_max },
		[INCA_DTYPE_FP32] = { port_f32_sum, port_f32_min, port_f32_max },
		[INCA_DTYPE_FP16] = { port_f16_sum, port_f16_min, port_f16_max },
		[INCA_DTYPE_BF16] = { port_b16_sum, port_b16_min, port_b16_max },
	},
	.export = {
		[INCA_DTYPE_INT32] = port_export_i32,
		[INCA_DTYPE_FP32] = port_export_f32,
		[INCA_DTYPE_FP16] = port_export_fp16,
		[INCA_DTYPE_BF16] = port_export_bf16,
	},
};

/* The best set this CPU runs; NULL until the first agg_kernels_init(). */
static const struct kernel_set *best_set;
static int force_portable;

static const struct kernel_set *
pick_best(void)
{
	return &portable_set;
}

void
agg_kernels_init(void)
{
	/*
	 * Racing callers compute the same answer, so a plain atomic store is
	 * enough to make this idempotent and thread-safe.
	 */
	if (__atomic_load_n(&best_set, __ATOMIC_ACQUIRE) == NULL)
		__atomic_store_n(&best_set, pick_best(), __ATOMIC_RELEASE);
}

static const struct kernel_set *
cur_set(void)
{
	const struct kernel_set *s;

	if (__atomic_load_n(&force_portable, __ATOMIC_RELAXED))
		return &portable_set;
	s = __atomic_load_n(&best_set, __ATOMIC_ACQUIRE);
	if (s == NULL) {
		agg_kernels_init();
		s = __atomic_load_n(&best_set, __ATOMIC_ACQUIRE);
	}
	return s;
}

const char *
agg_kernels_impl(void)
{
	return cur_set()->name;
}

void
agg_kernels_force_portable(int on)
{
	__atomic_store_n(&force_portable, on != 0, __ATOMIC_RELAXED);
}

agg_init_fn *
agg_kernel_init(unsigned dtype)
{
	if (dtype >= INCA_DTYPE_COUNT)
		return NULL;
	return cur_set()->init[dtype];
}

agg_combine_fn *
agg_kernel_combine(unsigned dtype, unsigned op)
{
	if (dtype >= INCA_DTYPE_COUNT || op >= INCA_OP_COUNT)
		return NULL;
	return cur_set()->combine[dtype][op];
}

agg_export_fn *
agg_kernel_export(unsigned dtype)
{
	if (dtype >= INCA_DTYPE_COUNT)
		return NULL;
	return cur_set()->export[dtype];
}

/* ---- scalar reference ------------------------------------------------ */

/*
 * Written from the definitions of the formats, with libm doing the
 * arithmetic, on purpose unlike the bit tricks above.
 */

static float
ref_fp16_to_fp32(uint16_t h)
{
	int exp = (h >> 10) & 0x1f;
	int mant = h & 0x3ff;
	float mag;

	if (exp == 0x1f)
		mag = mant ? NAN : INFINITY;
	else if (exp == 0)
		mag = ldexpf((float)mant, -24);
	else
		mag = ldexpf((float)(mant | 0x400), exp - 25);
	return (h & 0x8000) ? -mag : mag;
}

/*
 * Round a finite non-negative float to a binary format with @mbits stored
 * mantissa bits and exponents emin..emax (bias @bias); returns its bits
 * without the sign, infinity (@inf) on overflow.
 */
static uint32_t
ref_round(float a, int mbits, int emin, int emax, int bias, uint32_t inf)
{
	float one = ldexpf(1.0f, mbits);
	float sig;
	int e;

	if (a == 0.0f)
		return 0;
	frexpf(a, &e);
	e -= 1; /* a is in [2^e, 2^(e+1)) */
	if (e < emin)
		e = emin; /* subnormal: a multiple of 2^(emin - mbits) */
	sig = rintf(ldexpf(a, mbits - e)); /* round to nearest even */
	if (sig >= 2.0f * one) {
		sig /= 2.0f;
		e++;
	}
	if (e > emax)
		return inf;
	if (sig < one)
		return (uint32_t)sig; /* subnormal, exponent field 0 */
	return ((uint32_t)(e + bias) << mbits) | ((uint32_t)sig - (uint32_t)one);
}

static uint16_t
ref_fp32_to_fp16(float f)
{
	if (isnan(f))
		return CANON_NAN16;
	if (isinf(f))
		return signbit(f) ? 0xfc00 : 0x7c00;
	return (uint16_t)((signbit(f) ? 0x8000 : 0) |
			  ref_round(fabsf(f), 10, -14, 15, 15, 0x7c00));
}

static uint16_t
ref_fp32_to_bf16(float f)
{
	if (isnan(f))
		return CANON_NANBF;
	if (isinf(f))
		return signbit(f) ? 0xff80 : 0x7f80;
	return (uint16_t)((signbit(f) ? 0x8000 : 0) |
			  ref_round(fabsf(f), 7, -126, 127, 127, 0x7f80));
}

static float
ref_fmin(float a, float b)
{
	if (isnan(a) || isnan(b))
		return NAN;
	if (a < b)
		return a;
	if (b < a)
		return b;
	return signbit(a) ? a : b; /* equal: only -0 and +0 can differ */
}

static float
ref_fmax(float a, float b)
{
	if (isnan(a) || isnan(b))
		return NAN;
	if (a > b)
		return a;
	if (b > a)
		return b;
	return signbit(a) ? b : a;
}

static float
ref_decode_float(unsigned dtype, const uint8_t *w, unsigned i)
{
	switch (dtype) {
	case INCA_DTYPE_FP32:
		return as_f(be32_load(w + 4 * i));
	case INCA_DTYPE_FP16:
		return ref_fp16_to_fp32((uint16_t)be16_load(w + 2 * i));
	default: /* BF16: the upper half of an fp32 */
		return as_f(be16_load(w + 2 * i) << 16);
	}
}

void
agg_ref_init(unsigned dtype, void *acc, const void *wire, unsigned count)
{
	const uint8_t *w = wire;
	unsigned i;

	if (dtype >= INCA_DTYPE_COUNT)
		return;
	for (i = 0; i < count; i++) {
		if (dtype == INCA_DTYPE_INT32)
			((int32_t *)acc)[i] = (int32_t)be32_load(w + 4 * i);
		else
			((float *)acc)[i] = ref_decode_float(dtype, w, i);
	}
}

void
agg_ref_combine(unsigned dtype, unsigned op, void *acc, const void *wire, unsigned count)
{
	const uint8_t *w = wire;
	unsigned i;

	if (dtype >= INCA_DTYPE_COUNT || op >= INCA_OP_COUNT)
		return;
	for (i = 0; i < count; i++) {
		if (dtype == INCA_DTYPE_INT32) {
			int32_t *a = &((int32_t *)acc)[i];
			int32_t x = (int32_t)be32_load(w + 4 * i);

			if (op == INCA_OP_SUM)
				*a = (int32_t)((uint32_t)*a + (uint32_t)x);
			else if (op == INCA_OP_MIN)
				*a = x < *a ? x : *a;
			else
				*a = x > *a ? x : *a;
		} else {
			float *a = &((float *)acc)[i];
			float x = ref_decode_float(dtype, w, i);

			if (op == INCA_OP_SUM)
				*a = *a + x;
			else if (op == INCA_OP_MIN)
				*a = ref_fmin(*a, x);
			else
				*a = ref_fmax(*a, x);
		}
	}
}

void
agg_ref_export(unsigned dtype, void *wire, const void *acc, unsigned count)
{
	uint8_t *w = wire;
	unsigned i;

	if (dtype >= INCA_DTYPE_COUNT)
		return;
	for (i = 0; i < count; i++) {
		if (dtype == INCA_DTYPE_INT32) {
			be32_store(w + 4 * i, (uint32_t)((const int32_t *)acc)[i]);
			continue;
		}
		const float f = ((const float *)acc)[i];

		if (dtype == INCA_DTYPE_FP32)
			be32_store(w + 4 * i, isnan(f) ? CANON_NAN32 : as_u(f));
		else if (dtype == INCA_DTYPE_FP16)
			be16_store(w + 2 * i, ref_fp32_to_fp16(f));
		else
			be16_store(w + 2 * i, ref_fp32_to_bf16(f));
	}
}

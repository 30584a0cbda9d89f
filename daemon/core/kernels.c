/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * Aggregation kernels. Three families live here (and one set of plain
 * loops for the 64-bit dtypes, which every family shares):
 *
 *  - agg_ref_*: one element at a time, written from the specification with
 *    libm (ldexpf, rintf) rather than bit tricks, so that tests have
 *    something independent of the fast code to compare against;
 *  - the portable kernels: generic GNU C vectors of the same branch-free
 *    formulas, which the compiler maps onto the target's SIMD, if any;
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

#if defined(__x86_64__) && !defined(INCA_NO_SIMD)
#include <cpuid.h>
#include <immintrin.h>
#elif defined(__aarch64__) && !defined(INCA_NO_SIMD)
#include <arm_neon.h>
#endif

/* Sums must round to fp32 after every addition, never to a wider format. */
#if !defined(__FLT_EVAL_METHOD__) || __FLT_EVAL_METHOD__ != 0
#error "the kernels need float arithmetic evaluated in float (FLT_EVAL_METHOD 0)"
#endif
/*
 * -ffast-math would fold the NaN tests away and link start-up code that
 * flushes subnormals to zero in every thread: both change results.
 */
#ifdef __FAST_MATH__
#error "the kernels must not be built with -ffast-math"
#endif

#define CANON_NAN32 0x7fc00000u
#define CANON_NAN16 0x7e00u
#define CANON_NANBF 0x7fc0u
#define CANON_NAN64 UINT64_C(0x7ff8000000000000)

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

static inline uint64_t
be64_load(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	v = __builtin_bswap64(v);
#endif
	return v;
}

static inline void
be64_store(uint8_t *p, uint64_t v)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	v = __builtin_bswap64(v);
#endif
	memcpy(p, &v, sizeof(v));
}

static inline double
as_d(uint64_t u)
{
	double d;

	memcpy(&d, &u, sizeof(d));
	return d;
}

static inline uint64_t
as_u64(double d)
{
	uint64_t u;

	memcpy(&u, &d, sizeof(u));
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
 * GNU C vector extensions (GCC and clang): four 32-bit lanes of generic
 * vector code, which the compiler maps onto whatever SIMD the target has
 * (SSE2 on every x86-64, NEON, ...) or onto scalar code. Compares are
 * signed where the values allow it: SSE2 has no unsigned ones. Plain loops over
 * the scalar helpers were not vectorised at -O2: byte swaps and float/int
 * selects defeat the cheap cost model. The same formulas as the scalar
 * helpers, lane by lane; the scalar helpers do the tails.
 */
typedef uint32_t pv_u32 __attribute__((vector_size(16)));
typedef int32_t pv_i32 __attribute__((vector_size(16)));
typedef float pv_f32 __attribute__((vector_size(16)));
typedef uint16_t pv_u16 __attribute__((vector_size(8)));

#define PV_LANES 4

static inline pv_u32
pv_splat(uint32_t x)
{
	return (pv_u32){ x, x, x, x };
}

/* Lanes of @a where @m is all ones, of @b where it is zero. */
static inline pv_u32
pv_sel(pv_i32 m, pv_u32 a, pv_u32 b)
{
	return ((pv_u32)m & a) | (~(pv_u32)m & b);
}

static inline pv_u32
pv_load_be32(const uint8_t *p)
{
	pv_u32 v;

	memcpy(&v, p, sizeof(v));
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	v = (v >> 24) | ((v >> 8) & 0xff00u) | ((v << 8) & 0xff0000u) | (v << 24);
#endif
	return v;
}

static inline pv_u32
pv_load_be16(const uint8_t *p)
{
	pv_u16 v;

	memcpy(&v, p, sizeof(v));
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	v = (pv_u16)((v >> 8) | (v << 8));
#endif
	return __builtin_convertvector(v, pv_u32);
}

static inline void
pv_store_be32(uint8_t *p, pv_u32 v)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	v = (v >> 24) | ((v >> 8) & 0xff00u) | ((v << 8) & 0xff0000u) | (v << 24);
#endif
	memcpy(p, &v, sizeof(v));
}

static inline void
pv_store_be16(uint8_t *p, pv_u32 v32)
{
	pv_u16 v = __builtin_convertvector(v32, pv_u16);

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	v = (pv_u16)((v >> 8) | (v << 8));
#endif
	memcpy(p, &v, sizeof(v));
}

static inline pv_i32
pv_isnan(pv_u32 x)
{
	return (pv_i32)(x & 0x7fffffffu) > 0x7f800000;
}

/* f16_to_f32_bits(), lane by lane. */
static inline pv_u32
pv_dec_fp16(const uint8_t *w)
{
	pv_u32 h = pv_load_be16(w);
	pv_u32 sign = (h & 0x8000u) << 16;
	pv_i32 em = (pv_i32)(h & 0x7fffu);
	pv_u32 norm = ((pv_u32)em << 13) + ((127u - 15u) << 23);
	pv_u32 special = ((pv_u32)em << 13) | 0x7f800000u;
	pv_u32 sub = (pv_u32)(__builtin_convertvector(em, pv_f32) * 0x1p-24f);

	return sign | pv_sel(em >= 0x7c00, special, pv_sel(em >= 0x0400, norm, sub));
}

static inline pv_u32
pv_dec_bf16(const uint8_t *w)
{
	return pv_load_be16(w) << 16;
}

static inline pv_u32
pv_isum(pv_u32 a, pv_u32 b)
{
	return a + b;
}

static inline pv_u32
pv_imin(pv_u32 a, pv_u32 b)
{
	return pv_sel((pv_i32)a < (pv_i32)b, a, b);
}

static inline pv_u32
pv_imax(pv_u32 a, pv_u32 b)
{
	return pv_sel((pv_i32)a > (pv_i32)b, a, b);
}

static inline pv_u32
pv_fsum(pv_u32 a, pv_u32 b)
{
	return (pv_u32)((pv_f32)a + (pv_f32)b);
}

/* f_key(), lane by lane: its own inverse. */
static inline pv_u32
pv_key(pv_u32 x)
{
	return x ^ ((pv_u32)((pv_i32)x >> 31) >> 1);
}

static inline pv_u32
pv_fmin(pv_u32 a, pv_u32 b)
{
	pv_i32 ka = (pv_i32)pv_sel(pv_isnan(a), pv_splat(0x80000000u), pv_key(a));
	pv_i32 kb = (pv_i32)pv_sel(pv_isnan(b), pv_splat(0x80000000u), pv_key(b));

	return pv_key(pv_sel(ka < kb, (pv_u32)ka, (pv_u32)kb));
}

static inline pv_u32
pv_fmax(pv_u32 a, pv_u32 b)
{
	pv_i32 ka = (pv_i32)pv_sel(pv_isnan(a), pv_splat(0x7fffffffu), pv_key(a));
	pv_i32 kb = (pv_i32)pv_sel(pv_isnan(b), pv_splat(0x7fffffffu), pv_key(b));

	return pv_key(pv_sel(ka > kb, (pv_u32)ka, (pv_u32)kb));
}

static inline void
pv_enc_i32(uint8_t *w, pv_u32 a)
{
	pv_store_be32(w, a);
}

static inline void
pv_enc_f32(uint8_t *w, pv_u32 a)
{
	pv_store_be32(w, pv_sel(pv_isnan(a), pv_splat(CANON_NAN32), a));
}

/* f32_to_f16_bits(), lane by lane. */
static inline void
pv_enc_fp16(uint8_t *w, pv_u32 x)
{
	pv_u32 sign = (x >> 16) & 0x8000u;
	pv_u32 a = x & 0x7fffffffu;
	pv_i32 sa = (pv_i32)a;
	pv_u32 norm = (a + 0xfffu + ((a >> 13) & 1u) - ((127u - 15u) << 23)) >> 13;
	pv_u32 sub = (pv_u32)((pv_f32)a + 0.5f) - 0x3f000000u;
	pv_u32 r;

	r = pv_sel(sa >= 0x477ff000, pv_splat(0x7c00u), pv_sel(sa >= 0x38800000, norm, sub));
	pv_store_be16(w, pv_sel(sa > 0x7f800000, pv_splat(CANON_NAN16), sign | r));
}

static inline void
pv_enc_bf16(uint8_t *w, pv_u32 x)
{
	pv_u32 r = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;

	pv_store_be16(w, pv_sel(pv_isnan(x), pv_splat(CANON_NANBF), r));
}

#define PORT_INIT(name, vdec, dec, size) \
static void \
name(void *acc_, const void *wire_, unsigned count) \
{ \
	uint32_t *acc = acc_; \
	const uint8_t *w = wire_; \
	size_t i = 0; \
 \
	for (; i + PV_LANES <= count; i += PV_LANES) { \
		pv_u32 v = vdec(w + (size) * i); \
 \
		memcpy(acc + i, &v, sizeof(v)); \
	} \
	for (; i < count; i++) \
		acc[i] = dec(w, i); \
}

#define PORT_COMBINE(name, vdec, vop, dec, op, size) \
static void \
name(void *acc_, const void *wire_, unsigned count) \
{ \
	uint32_t *acc = acc_; \
	const uint8_t *w = wire_; \
	size_t i = 0; \
 \
	for (; i + PV_LANES <= count; i += PV_LANES) { \
		pv_u32 a; \
 \
		memcpy(&a, acc + i, sizeof(a)); \
		a = vop(a, vdec(w + (size) * i)); \
		memcpy(acc + i, &a, sizeof(a)); \
	} \
	for (; i < count; i++) \
		acc[i] = op(acc[i], dec(w, i)); \
}

#define PORT_EXPORT(name, venc, enc, store, size) \
static void \
name(void *wire_, const void *acc_, unsigned count) \
{ \
	const uint32_t *acc = acc_; \
	uint8_t *w = wire_; \
	size_t i = 0; \
 \
	for (; i + PV_LANES <= count; i += PV_LANES) { \
		pv_u32 a; \
 \
		memcpy(&a, acc + i, sizeof(a)); \
		venc(w + (size) * i, a); \
	} \
	for (; i < count; i++) \
		store(w + (size) * i, enc(acc[i])); \
}

static inline uint32_t
enc_same(uint32_t x)
{
	return x;
}

PORT_INIT(port_init_w32, pv_load_be32, dec_w32, 4)
PORT_INIT(port_init_fp16, pv_dec_fp16, dec_fp16, 2)
PORT_INIT(port_init_bf16, pv_dec_bf16, dec_bf16, 2)

PORT_COMBINE(port_i32_sum, pv_load_be32, pv_isum, dec_w32, op_isum, 4)
PORT_COMBINE(port_i32_min, pv_load_be32, pv_imin, dec_w32, op_imin, 4)
PORT_COMBINE(port_i32_max, pv_load_be32, pv_imax, dec_w32, op_imax, 4)
PORT_COMBINE(port_f32_sum, pv_load_be32, pv_fsum, dec_w32, op_fsum, 4)
PORT_COMBINE(port_f32_min, pv_load_be32, pv_fmin, dec_w32, f_min_bits, 4)
PORT_COMBINE(port_f32_max, pv_load_be32, pv_fmax, dec_w32, f_max_bits, 4)
PORT_COMBINE(port_f16_sum, pv_dec_fp16, pv_fsum, dec_fp16, op_fsum, 2)
PORT_COMBINE(port_f16_min, pv_dec_fp16, pv_fmin, dec_fp16, f_min_bits, 2)
PORT_COMBINE(port_f16_max, pv_dec_fp16, pv_fmax, dec_fp16, f_max_bits, 2)
PORT_COMBINE(port_b16_sum, pv_dec_bf16, pv_fsum, dec_bf16, op_fsum, 2)
PORT_COMBINE(port_b16_min, pv_dec_bf16, pv_fmin, dec_bf16, f_min_bits, 2)
PORT_COMBINE(port_b16_max, pv_dec_bf16, pv_fmax, dec_bf16, f_max_bits, 2)

PORT_EXPORT(port_export_i32, pv_enc_i32, enc_same, be32_store, 4)
PORT_EXPORT(port_export_f32, pv_enc_f32, f32_canon, be32_store, 4)
PORT_EXPORT(port_export_fp16, pv_enc_fp16, f32_to_f16_bits, be16_store, 2)
PORT_EXPORT(port_export_bf16, pv_enc_bf16, f32_to_bf16_bits, be16_store, 2)

/* ---- 64-bit kernels (INT64, FP64), shared by every implementation ---- */

/*
 * An element of a 64-bit dtype takes two 32-bit lanes of the accumulator,
 * which holds it as one int64_t or double in host order (the accumulator
 * is 64-byte aligned, so the pair is naturally aligned). These are plain
 * loops of the same branch-free formulas as the 32-bit kernels, written
 * once: the messages carry at most 1024 such elements, the compiler
 * vectorises what it can, and one version cannot disagree with another.
 */
static inline uint64_t
acc64_load(const void *acc, unsigned i)
{
	uint64_t v;

	memcpy(&v, (const uint8_t *)acc + 8 * (size_t)i, sizeof(v));
	return v;
}

static inline void
acc64_store(void *acc, unsigned i, uint64_t v)
{
	memcpy((uint8_t *)acc + 8 * (size_t)i, &v, sizeof(v));
}

static inline int
d_isnan(uint64_t x)
{
	return (x & INT64_MAX) > UINT64_C(0x7ff0000000000000);
}

/* f_key() on binary64: signed order is the total order, -0 below +0. */
static inline int64_t
d_key(uint64_t x)
{
	int64_t s = (int64_t)x;

	return s ^ (int64_t)((uint64_t)(s >> 63) >> 1);
}

static inline uint64_t
op_lsum(uint64_t a, uint64_t b)
{
	return a + b; /* wraps modulo 2^64, as the protocol says */
}

static inline uint64_t
op_lmin(uint64_t a, uint64_t b)
{
	return (int64_t)a < (int64_t)b ? a : b;
}

static inline uint64_t
op_lmax(uint64_t a, uint64_t b)
{
	return (int64_t)a > (int64_t)b ? a : b;
}

static inline uint64_t
op_dsum(uint64_t a, uint64_t b)
{
	return as_u64(as_d(a) + as_d(b));
}

static inline uint64_t
op_dmin(uint64_t a, uint64_t b)
{
	int64_t ka = d_isnan(a) ? INT64_MIN : d_key(a);
	int64_t kb = d_isnan(b) ? INT64_MIN : d_key(b);

	return (uint64_t)d_key((uint64_t)(ka < kb ? ka : kb));
}

static inline uint64_t
op_dmax(uint64_t a, uint64_t b)
{
	int64_t ka = d_isnan(a) ? INT64_MAX : d_key(a);
	int64_t kb = d_isnan(b) ? INT64_MAX : d_key(b);

	return (uint64_t)d_key((uint64_t)(ka > kb ? ka : kb));
}

static void
w64_init(void *acc, const void *wire, unsigned count)
{
	unsigned i;

	for (i = 0; i < count; i++)
		acc64_store(acc, i, be64_load((const uint8_t *)wire + 8 * (size_t)i));
}

#define W64_COMBINE(name, op) \
static void \
name(void *acc, const void *wire, unsigned count) \
{ \
	unsigned i; \
 \
	for (i = 0; i < count; i++) \
		acc64_store(acc, i, op(acc64_load(acc, i), \
				       be64_load((const uint8_t *)wire + 8 * (size_t)i))); \
}

W64_COMBINE(w64_i64_sum, op_lsum)
W64_COMBINE(w64_i64_min, op_lmin)
W64_COMBINE(w64_i64_max, op_lmax)
W64_COMBINE(w64_f64_sum, op_dsum)
W64_COMBINE(w64_f64_min, op_dmin)
W64_COMBINE(w64_f64_max, op_dmax)

static void
w64_export_i64(void *wire, const void *acc, unsigned count)
{
	unsigned i;

	for (i = 0; i < count; i++)
		be64_store((uint8_t *)wire + 8 * (size_t)i, acc64_load(acc, i));
}

static void
w64_export_f64(void *wire, const void *acc, unsigned count)
{
	unsigned i;

	for (i = 0; i < count; i++) {
		uint64_t v = acc64_load(acc, i);

		be64_store((uint8_t *)wire + 8 * (size_t)i, d_isnan(v) ? CANON_NAN64 : v);
	}
}

/* The 64-bit entries of every implementation table. */
#define W64_INIT_ENTRIES \
	[INCA_DTYPE_INT64] = w64_init, \
	[INCA_DTYPE_FP64] = w64_init,
#define W64_COMBINE_ENTRIES \
	[INCA_DTYPE_INT64] = { w64_i64_sum, w64_i64_min, w64_i64_max }, \
	[INCA_DTYPE_FP64] = { w64_f64_sum, w64_f64_min, w64_f64_max },
#define W64_EXPORT_ENTRIES \
	[INCA_DTYPE_INT64] = w64_export_i64, \
	[INCA_DTYPE_FP64] = w64_export_f64,

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
		W64_INIT_ENTRIES
	},
	.combine = {
		[INCA_DTYPE_INT32] = { port_i32_sum, port_i32_min, port_i32_max },
		[INCA_DTYPE_FP32] = { port_f32_sum, port_f32_min, port_f32_max },
		[INCA_DTYPE_FP16] = { port_f16_sum, port_f16_min, port_f16_max },
		[INCA_DTYPE_BF16] = { port_b16_sum, port_b16_min, port_b16_max },
		W64_COMBINE_ENTRIES
	},
	.export = {
		[INCA_DTYPE_INT32] = port_export_i32,
		[INCA_DTYPE_FP32] = port_export_f32,
		[INCA_DTYPE_FP16] = port_export_fp16,
		[INCA_DTYPE_BF16] = port_export_bf16,
		W64_EXPORT_ENTRIES
	},
};

/* ---- x86-64: AVX2 + F16C --------------------------------------------- */

#if defined(__x86_64__) && !defined(INCA_NO_SIMD)
#define HAVE_AVX2_KERNELS 1

/*
 * Compiled for AVX2 whatever the build's -march, and only called after
 * the CPU said it has AVX2 and F16C, so one binary serves every x86-64.
 */
#define AVX2_FN __attribute__((target("avx2,f16c")))
#define AVX2_INLINE static inline __attribute__((target("avx2,f16c"), always_inline))

AVX2_INLINE __m256i
avx2_bswap32(__m256i v)
{
	const __m256i m = _mm256_setr_epi8(3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8, 15, 14, 13, 12,
					   3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8, 15, 14, 13, 12);

	return _mm256_shuffle_epi8(v, m);
}

AVX2_INLINE __m128i
avx2_bswap16(__m128i v)
{
	const __m128i m = _mm_setr_epi8(1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14);

	return _mm_shuffle_epi8(v, m);
}

/* Eight wire elements (32 or 16 bytes) to eight accumulator lanes. */
AVX2_INLINE __m256i
avx2_dec_w32(const uint8_t *w)
{
	return avx2_bswap32(_mm256_loadu_si256((const __m256i *)w));
}

AVX2_INLINE __m256i
avx2_dec_fp16(const uint8_t *w)
{
	__m128i h = avx2_bswap16(_mm_loadu_si128((const __m128i *)w));

	return _mm256_castps_si256(_mm256_cvtph_ps(h)); /* exact, subnormals too */
}

AVX2_INLINE __m256i
avx2_dec_bf16(const uint8_t *w)
{
	/* Zero-extend, then one shuffle swaps the bytes into the upper half. */
	const __m256i m = _mm256_setr_epi8(-1, -1, 1, 0, -1, -1, 5, 4,
					   -1, -1, 9, 8, -1, -1, 13, 12,
					   -1, -1, 1, 0, -1, -1, 5, 4,
					   -1, -1, 9, 8, -1, -1, 13, 12);
	__m256i z = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)w));

	return _mm256_shuffle_epi8(z, m);
}

AVX2_INLINE __m256i
avx2_isum(__m256i a, __m256i b)
{
	return _mm256_add_epi32(a, b);
}

AVX2_INLINE __m256i
avx2_imin(__m256i a, __m256i b)
{
	return _mm256_min_epi32(a, b);
}

AVX2_INLINE __m256i
avx2_imax(__m256i a, __m256i b)
{
	return _mm256_max_epi32(a, b);
}

AVX2_INLINE __m256i
avx2_fsum(__m256i a, __m256i b)
{
	return _mm256_castps_si256(_mm256_add_ps(_mm256_castsi256_ps(a), _mm256_castsi256_ps(b)));
}

AVX2_INLINE __m256i
avx2_isnan(__m256i x)
{
	__m256i mag = _mm256_and_si256(x, _mm256_set1_epi32(0x7fffffff));

	return _mm256_cmpgt_epi32(mag, _mm256_set1_epi32(0x7f800000));
}

/* The signed-order key of f_key(); its own inverse. */
AVX2_INLINE __m256i
avx2_key(__m256i x)
{
	return _mm256_xor_si256(x, _mm256_srli_epi32(_mm256_srai_epi32(x, 31), 1));
}

AVX2_INLINE __m256i
avx2_fmin(__m256i a, __m256i b)
{
	const __m256i lo = _mm256_set1_epi32(INT32_MIN);
	__m256i ka = _mm256_blendv_epi8(avx2_key(a), lo, avx2_isnan(a));
	__m256i kb = _mm256_blendv_epi8(avx2_key(b), lo, avx2_isnan(b));

	return avx2_key(_mm256_min_epi32(ka, kb));
}

AVX2_INLINE __m256i
avx2_fmax(__m256i a, __m256i b)
{
	const __m256i hi = _mm256_set1_epi32(INT32_MAX);
	__m256i ka = _mm256_blendv_epi8(avx2_key(a), hi, avx2_isnan(a));
	__m256i kb = _mm256_blendv_epi8(avx2_key(b), hi, avx2_isnan(b));

	return avx2_key(_mm256_max_epi32(ka, kb));
}

/* Eight accumulator lanes to eight wire elements. */
AVX2_INLINE void
avx2_enc_i32(uint8_t *w, __m256i a)
{
	_mm256_storeu_si256((__m256i *)w, avx2_bswap32(a));
}

AVX2_INLINE void
avx2_enc_f32(uint8_t *w, __m256i a)
{
	a = _mm256_blendv_epi8(a, _mm256_set1_epi32(CANON_NAN32), avx2_isnan(a));
	_mm256_storeu_si256((__m256i *)w, avx2_bswap32(a));
}

AVX2_INLINE void
avx2_enc_fp16(uint8_t *w, __m256i a)
{
	/* The immediate rounding mode, not MXCSR's: nearest even, inf on overflow. */
	__m128i h = _mm256_cvtps_ph(_mm256_castsi256_ps(a), _MM_FROUND_TO_NEAREST_INT);
	__m128i mag = _mm_and_si128(h, _mm_set1_epi16(0x7fff));
	__m128i nan = _mm_cmpgt_epi16(mag, _mm_set1_epi16(0x7c00));

	h = _mm_blendv_epi8(h, _mm_set1_epi16(CANON_NAN16), nan);
	_mm_storeu_si128((__m128i *)w, avx2_bswap16(h));
}

AVX2_INLINE void
avx2_enc_bf16(uint8_t *w, __m256i a)
{
	__m256i odd = _mm256_and_si256(_mm256_srli_epi32(a, 16), _mm256_set1_epi32(1));
	__m256i r = _mm256_add_epi32(a, _mm256_add_epi32(odd, _mm256_set1_epi32(0x7fff)));
	__m128i h;

	r = _mm256_srli_epi32(r, 16);
	r = _mm256_blendv_epi8(r, _mm256_set1_epi32(CANON_NANBF), avx2_isnan(a));
	/* Lanes hold 0..0xffff, so the unsigned saturating pack is exact. */
	h = _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
	_mm_storeu_si128((__m128i *)w, avx2_bswap16(h));
}

/*
 * The tails (count % 8) use the portable element helpers: same bits. The
 * vector loops are unrolled four times: a step is four or five
 * instructions, and the loop's own three were nearly half of them
 * (callgrind, docs/incad.md "Frame path").
 */
#define AVX2_INIT(name, vdec, dec, size) \
static AVX2_FN void \
name(void *acc_, const void *wire_, unsigned count) \
{ \
	uint32_t *acc = acc_; \
	const uint8_t *w = wire_; \
	size_t i = 0; \
 \
	_Pragma("GCC unroll 4") \
	for (; i + 8 <= count; i += 8) \
		_mm256_storeu_si256((__m256i *)(acc + i), vdec(w + (size) * i)); \
	for (; i < count; i++) \
		acc[i] = dec(w, i); \
}

#define AVX2_COMBINE(name, vdec, vop, dec, op, size) \
static AVX2_FN void \
name(void *acc_, const void *wire_, unsigned count) \
{ \
	uint32_t *acc = acc_; \
	const uint8_t *w = wire_; \
	size_t i = 0; \
 \
	_Pragma("GCC unroll 4") \
	for (; i + 8 <= count; i += 8) { \
		__m256i a = _mm256_loadu_si256((const __m256i *)(acc + i)); \
 \
		a = vop(a, vdec(w + (size) * i)); \
		_mm256_storeu_si256((__m256i *)(acc + i), a); \
	} \
	for (; i < count; i++) \
		acc[i] = op(acc[i], dec(w, i)); \
}

#define AVX2_EXPORT(name, venc, enc, store, size) \
static AVX2_FN void \
name(void *wire_, const void *acc_, unsigned count) \
{ \
	const uint32_t *acc = acc_; \
	uint8_t *w = wire_; \
	size_t i = 0; \
 \
	_Pragma("GCC unroll 4") \
	for (; i + 8 <= count; i += 8) \
		venc(w + (size) * i, _mm256_loadu_si256((const __m256i *)(acc + i))); \
	for (; i < count; i++) \
		store(w + (size) * i, enc(acc[i])); \
}

AVX2_INIT(avx2_init_w32, avx2_dec_w32, dec_w32, 4)
AVX2_INIT(avx2_init_fp16, avx2_dec_fp16, dec_fp16, 2)
AVX2_INIT(avx2_init_bf16, avx2_dec_bf16, dec_bf16, 2)

AVX2_COMBINE(avx2_i32_sum, avx2_dec_w32, avx2_isum, dec_w32, op_isum, 4)
AVX2_COMBINE(avx2_i32_min, avx2_dec_w32, avx2_imin, dec_w32, op_imin, 4)
AVX2_COMBINE(avx2_i32_max, avx2_dec_w32, avx2_imax, dec_w32, op_imax, 4)
AVX2_COMBINE(avx2_f32_sum, avx2_dec_w32, avx2_fsum, dec_w32, op_fsum, 4)
AVX2_COMBINE(avx2_f32_min, avx2_dec_w32, avx2_fmin, dec_w32, f_min_bits, 4)
AVX2_COMBINE(avx2_f32_max, avx2_dec_w32, avx2_fmax, dec_w32, f_max_bits, 4)
AVX2_COMBINE(avx2_f16_sum, avx2_dec_fp16, avx2_fsum, dec_fp16, op_fsum, 2)
AVX2_COMBINE(avx2_f16_min, avx2_dec_fp16, avx2_fmin, dec_fp16, f_min_bits, 2)
AVX2_COMBINE(avx2_f16_max, avx2_dec_fp16, avx2_fmax, dec_fp16, f_max_bits, 2)
AVX2_COMBINE(avx2_b16_sum, avx2_dec_bf16, avx2_fsum, dec_bf16, op_fsum, 2)
AVX2_COMBINE(avx2_b16_min, avx2_dec_bf16, avx2_fmin, dec_bf16, f_min_bits, 2)
AVX2_COMBINE(avx2_b16_max, avx2_dec_bf16, avx2_fmax, dec_bf16, f_max_bits, 2)

AVX2_EXPORT(avx2_export_i32, avx2_enc_i32, enc_same, be32_store, 4)
AVX2_EXPORT(avx2_export_f32, avx2_enc_f32, f32_canon, be32_store, 4)
AVX2_EXPORT(avx2_export_fp16, avx2_enc_fp16, f32_to_f16_bits, be16_store, 2)
AVX2_EXPORT(avx2_export_bf16, avx2_enc_bf16, f32_to_bf16_bits, be16_store, 2)

static const struct kernel_set avx2_set = {
	.name = "avx2",
	.init = {
		[INCA_DTYPE_INT32] = avx2_init_w32,
		[INCA_DTYPE_FP32] = avx2_init_w32,
		[INCA_DTYPE_FP16] = avx2_init_fp16,
		[INCA_DTYPE_BF16] = avx2_init_bf16,
		W64_INIT_ENTRIES
	},
	.combine = {
		[INCA_DTYPE_INT32] = { avx2_i32_sum, avx2_i32_min, avx2_i32_max },
		[INCA_DTYPE_FP32] = { avx2_f32_sum, avx2_f32_min, avx2_f32_max },
		[INCA_DTYPE_FP16] = { avx2_f16_sum, avx2_f16_min, avx2_f16_max },
		[INCA_DTYPE_BF16] = { avx2_b16_sum, avx2_b16_min, avx2_b16_max },
		W64_COMBINE_ENTRIES
	},
	.export = {
		[INCA_DTYPE_INT32] = avx2_export_i32,
		[INCA_DTYPE_FP32] = avx2_export_f32,
		[INCA_DTYPE_FP16] = avx2_export_fp16,
		[INCA_DTYPE_BF16] = avx2_export_bf16,
		W64_EXPORT_ENTRIES
	},
};

static int
cpu_has_avx2(void)
{
	unsigned a, b, c, d;

	/* libgcc's check covers the OS saving the YMM registers too. */
	__builtin_cpu_init();
	if (!__builtin_cpu_supports("avx2"))
		return 0;
	/* Not every compiler knows "f16c" as a feature name: ask CPUID. */
	if (!__get_cpuid(1, &a, &b, &c, &d))
		return 0;
	return (c & bit_F16C) != 0;
}
#endif /* x86-64 */

/* ---- aarch64: NEON --------------------------------------------------- */

#if defined(__aarch64__) && !defined(INCA_NO_SIMD)
/* Advanced SIMD and its fp16 conversions are part of the aarch64 baseline. */
#define HAVE_NEON_KERNELS 1

/* Four wire elements (16 or 8 bytes) to four accumulator lanes. */
static inline uint32x4_t
neon_dec_w32(const uint8_t *w)
{
	return vreinterpretq_u32_u8(vrev32q_u8(vld1q_u8(w)));
}

static inline uint32x4_t
neon_dec_fp16(const uint8_t *w)
{
	uint8x8_t h = vrev16_u8(vld1_u8(w));

	return vreinterpretq_u32_f32(vcvt_f32_f16(vreinterpret_f16_u8(h)));
}

static inline uint32x4_t
neon_dec_bf16(const uint8_t *w)
{
	uint16x4_t h = vreinterpret_u16_u8(vrev16_u8(vld1_u8(w)));

	return vshlq_n_u32(vmovl_u16(h), 16);
}

static inline uint32x4_t
neon_isum(uint32x4_t a, uint32x4_t b)
{
	return vaddq_u32(a, b);
}

static inline uint32x4_t
neon_imin(uint32x4_t a, uint32x4_t b)
{
	int32x4_t r = vminq_s32(vreinterpretq_s32_u32(a), vreinterpretq_s32_u32(b));

	return vreinterpretq_u32_s32(r);
}

static inline uint32x4_t
neon_imax(uint32x4_t a, uint32x4_t b)
{
	int32x4_t r = vmaxq_s32(vreinterpretq_s32_u32(a), vreinterpretq_s32_u32(b));

	return vreinterpretq_u32_s32(r);
}

static inline uint32x4_t
neon_fsum(uint32x4_t a, uint32x4_t b)
{
	return vreinterpretq_u32_f32(vaddq_f32(vreinterpretq_f32_u32(a),
					       vreinterpretq_f32_u32(b)));
}

static inline uint32x4_t
neon_isnan(uint32x4_t x)
{
	return vcgtq_u32(vandq_u32(x, vdupq_n_u32(0x7fffffffu)), vdupq_n_u32(0x7f800000u));
}

/* The signed-order key of f_key(); its own inverse. */
static inline uint32x4_t
neon_key(uint32x4_t x)
{
	uint32x4_t sign = vreinterpretq_u32_s32(vshrq_n_s32(vreinterpretq_s32_u32(x), 31));

	return veorq_u32(x, vshrq_n_u32(sign, 1));
}

static inline uint32x4_t
neon_fmin(uint32x4_t a, uint32x4_t b)
{
	const uint32x4_t lo = vdupq_n_u32(0x80000000u);
	int32x4_t ka = vreinterpretq_s32_u32(vbslq_u32(neon_isnan(a), lo, neon_key(a)));
	int32x4_t kb = vreinterpretq_s32_u32(vbslq_u32(neon_isnan(b), lo, neon_key(b)));

	return neon_key(vreinterpretq_u32_s32(vminq_s32(ka, kb)));
}

static inline uint32x4_t
neon_fmax(uint32x4_t a, uint32x4_t b)
{
	const uint32x4_t hi = vdupq_n_u32(0x7fffffffu);
	int32x4_t ka = vreinterpretq_s32_u32(vbslq_u32(neon_isnan(a), hi, neon_key(a)));
	int32x4_t kb = vreinterpretq_s32_u32(vbslq_u32(neon_isnan(b), hi, neon_key(b)));

	return neon_key(vreinterpretq_u32_s32(vmaxq_s32(ka, kb)));
}

/* Four accumulator lanes to four wire elements. */
static inline void
neon_enc_i32(uint8_t *w, uint32x4_t a)
{
	vst1q_u8(w, vrev32q_u8(vreinterpretq_u8_u32(a)));
}

static inline void
neon_enc_f32(uint8_t *w, uint32x4_t a)
{
	a = vbslq_u32(neon_isnan(a), vdupq_n_u32(CANON_NAN32), a);
	vst1q_u8(w, vrev32q_u8(vreinterpretq_u8_u32(a)));
}

static inline void
neon_enc_fp16(uint8_t *w, uint32x4_t a)
{
	/* FPCR's rounding mode, round to nearest even unless someone changed it. */
	uint16x4_t h = vreinterpret_u16_f16(vcvt_f16_f32(vreinterpretq_f32_u32(a)));
	uint16x4_t nan = vcgt_u16(vand_u16(h, vdup_n_u16(0x7fff)), vdup_n_u16(0x7c00));

	h = vbsl_u16(nan, vdup_n_u16(CANON_NAN16), h);
	vst1_u8(w, vrev16_u8(vreinterpret_u8_u16(h)));
}

static inline void
neon_enc_bf16(uint8_t *w, uint32x4_t a)
{
	uint32x4_t odd = vandq_u32(vshrq_n_u32(a, 16), vdupq_n_u32(1));
	uint32x4_t r = vaddq_u32(a, vaddq_u32(odd, vdupq_n_u32(0x7fff)));
	uint16x4_t h;

	r = vbslq_u32(neon_isnan(a), vdupq_n_u32(CANON_NANBF << 16), r);
	h = vshrn_n_u32(r, 16);
	vst1_u8(w, vrev16_u8(vreinterpret_u8_u16(h)));
}

#define NEON_INIT(name, vdec, dec, size) \
static void \
name(void *acc_, const void *wire_, unsigned count) \
{ \
	uint32_t *acc = acc_; \
	const uint8_t *w = wire_; \
	size_t i = 0; \
 \
	for (; i + 4 <= count; i += 4) \
		vst1q_u32(acc + i, vdec(w + (size) * i)); \
	for (; i < count; i++) \
		acc[i] = dec(w, i); \
}

#define NEON_COMBINE(name, vdec, vop, dec, op, size) \
static void \
name(void *acc_, const void *wire_, unsigned count) \
{ \
	uint32_t *acc = acc_; \
	const uint8_t *w = wire_; \
	size_t i = 0; \
 \
	for (; i + 4 <= count; i += 4) \
		vst1q_u32(acc + i, vop(vld1q_u32(acc + i), vdec(w + (size) * i))); \
	for (; i < count; i++) \
		acc[i] = op(acc[i], dec(w, i)); \
}

#define NEON_EXPORT(name, venc, enc, store, size) \
static void \
name(void *wire_, const void *acc_, unsigned count) \
{ \
	const uint32_t *acc = acc_; \
	uint8_t *w = wire_; \
	size_t i = 0; \
 \
	for (; i + 4 <= count; i += 4) \
		venc(w + (size) * i, vld1q_u32(acc + i)); \
	for (; i < count; i++) \
		store(w + (size) * i, enc(acc[i])); \
}

NEON_INIT(neon_init_w32, neon_dec_w32, dec_w32, 4)
NEON_INIT(neon_init_fp16, neon_dec_fp16, dec_fp16, 2)
NEON_INIT(neon_init_bf16, neon_dec_bf16, dec_bf16, 2)

NEON_COMBINE(neon_i32_sum, neon_dec_w32, neon_isum, dec_w32, op_isum, 4)
NEON_COMBINE(neon_i32_min, neon_dec_w32, neon_imin, dec_w32, op_imin, 4)
NEON_COMBINE(neon_i32_max, neon_dec_w32, neon_imax, dec_w32, op_imax, 4)
NEON_COMBINE(neon_f32_sum, neon_dec_w32, neon_fsum, dec_w32, op_fsum, 4)
NEON_COMBINE(neon_f32_min, neon_dec_w32, neon_fmin, dec_w32, f_min_bits, 4)
NEON_COMBINE(neon_f32_max, neon_dec_w32, neon_fmax, dec_w32, f_max_bits, 4)
NEON_COMBINE(neon_f16_sum, neon_dec_fp16, neon_fsum, dec_fp16, op_fsum, 2)
NEON_COMBINE(neon_f16_min, neon_dec_fp16, neon_fmin, dec_fp16, f_min_bits, 2)
NEON_COMBINE(neon_f16_max, neon_dec_fp16, neon_fmax, dec_fp16, f_max_bits, 2)
NEON_COMBINE(neon_b16_sum, neon_dec_bf16, neon_fsum, dec_bf16, op_fsum, 2)
NEON_COMBINE(neon_b16_min, neon_dec_bf16, neon_fmin, dec_bf16, f_min_bits, 2)
NEON_COMBINE(neon_b16_max, neon_dec_bf16, neon_fmax, dec_bf16, f_max_bits, 2)

NEON_EXPORT(neon_export_i32, neon_enc_i32, enc_same, be32_store, 4)
NEON_EXPORT(neon_export_f32, neon_enc_f32, f32_canon, be32_store, 4)
NEON_EXPORT(neon_export_fp16, neon_enc_fp16, f32_to_f16_bits, be16_store, 2)
NEON_EXPORT(neon_export_bf16, neon_enc_bf16, f32_to_bf16_bits, be16_store, 2)

static const struct kernel_set neon_set = {
	.name = "neon",
	.init = {
		[INCA_DTYPE_INT32] = neon_init_w32,
		[INCA_DTYPE_FP32] = neon_init_w32,
		[INCA_DTYPE_FP16] = neon_init_fp16,
		[INCA_DTYPE_BF16] = neon_init_bf16,
		W64_INIT_ENTRIES
	},
	.combine = {
		[INCA_DTYPE_INT32] = { neon_i32_sum, neon_i32_min, neon_i32_max },
		[INCA_DTYPE_FP32] = { neon_f32_sum, neon_f32_min, neon_f32_max },
		[INCA_DTYPE_FP16] = { neon_f16_sum, neon_f16_min, neon_f16_max },
		[INCA_DTYPE_BF16] = { neon_b16_sum, neon_b16_min, neon_b16_max },
		W64_COMBINE_ENTRIES
	},
	.export = {
		[INCA_DTYPE_INT32] = neon_export_i32,
		[INCA_DTYPE_FP32] = neon_export_f32,
		[INCA_DTYPE_FP16] = neon_export_fp16,
		[INCA_DTYPE_BF16] = neon_export_bf16,
		W64_EXPORT_ENTRIES
	},
};
#endif /* aarch64 */

/* The best set this CPU runs; NULL until the first agg_kernels_init(). */
static const struct kernel_set *best_set;
static int force_portable;

static const struct kernel_set *
pick_best(void)
{
#ifdef HAVE_AVX2_KERNELS
	if (cpu_has_avx2())
		return &avx2_set;
#endif
#ifdef HAVE_NEON_KERNELS
	return &neon_set;
#else
	return &portable_set;
#endif
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

static double
ref_dmin(double a, double b)
{
	if (isnan(a) || isnan(b))
		return NAN;
	if (a < b)
		return a;
	if (b < a)
		return b;
	return signbit(a) ? a : b;
}

static double
ref_dmax(double a, double b)
{
	if (isnan(a) || isnan(b))
		return NAN;
	if (a > b)
		return a;
	if (b > a)
		return b;
	return signbit(a) ? b : a;
}

/* The 64-bit dtypes, as one int64_t or double per element of @acc. */
static void
ref_combine64(unsigned dtype, unsigned op, void *acc, const uint8_t *w, unsigned count)
{
	unsigned i;

	for (i = 0; i < count; i++) {
		uint64_t bits = be64_load(w + 8 * (size_t)i);

		if (dtype == INCA_DTYPE_INT64) {
			int64_t *a = &((int64_t *)acc)[i];
			int64_t x = (int64_t)bits;

			if (op == INCA_OP_SUM)
				*a = (int64_t)((uint64_t)*a + (uint64_t)x);
			else if (op == INCA_OP_MIN)
				*a = x < *a ? x : *a;
			else
				*a = x > *a ? x : *a;
		} else {
			double *a = &((double *)acc)[i];
			double x = as_d(bits);

			if (op == INCA_OP_SUM)
				*a = *a + x;
			else if (op == INCA_OP_MIN)
				*a = ref_dmin(*a, x);
			else
				*a = ref_dmax(*a, x);
		}
	}
}

void
agg_ref_init(unsigned dtype, void *acc, const void *wire, unsigned count)
{
	const uint8_t *w = wire;
	unsigned i;

	if (dtype >= INCA_DTYPE_COUNT)
		return;
	if (dtype == INCA_DTYPE_INT64 || dtype == INCA_DTYPE_FP64) {
		for (i = 0; i < count; i++)
			((uint64_t *)acc)[i] = be64_load(w + 8 * (size_t)i);
		return;
	}
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
	if (dtype == INCA_DTYPE_INT64 || dtype == INCA_DTYPE_FP64) {
		ref_combine64(dtype, op, acc, w, count);
		return;
	}
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
	for (i = 0; i < count && dtype == INCA_DTYPE_INT64; i++)
		be64_store(w + 8 * (size_t)i, ((const uint64_t *)acc)[i]);
	for (i = 0; i < count && dtype == INCA_DTYPE_FP64; i++) {
		double d = ((const double *)acc)[i];

		be64_store(w + 8 * (size_t)i, isnan(d) ? CANON_NAN64 : as_u64(d));
	}
	if (dtype == INCA_DTYPE_INT64 || dtype == INCA_DTYPE_FP64)
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

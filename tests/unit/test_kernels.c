/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * Aggregation kernels: the implementation chosen for this CPU and the
 * portable one must give the reference's bits for every dtype and op, any
 * count, any alignment of the payload; the reference itself must agree
 * with a computation written here from the protocol's rules, using the
 * library's dtype conversions (a separate implementation).
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <inca/dtype.h>
#include <inca/wire.h>

#include "kernels.h"

#define MAX_CONTRIB 32
#define CANARY 0xa5
/*
 * Check records every passing ck_assert (a write to its log), which would
 * dominate loops over thousands of elements: those only report failures.
 */
#define EXPECT(cond, ...) \
	do { \
		if (!(cond)) \
			ck_abort_msg(__VA_ARGS__); \
	} while (0)

/* Room in front of buffers to misalign payloads, and behind for canaries. */
#define PAD 64

static const unsigned counts[] = { 1, 3, 7, 8, 9, 15, 16, 17, 63, 64, 255, 256, 1000, 4096 };
static const unsigned ncontribs[] = { 1, 2, 3, 5, 8, 17, 32 };

/* ---- deterministic random numbers ------------------------------------ */

static uint64_t rng_state;

static uint32_t
rnd(void)
{
	/* xorshift64*: reproducible across runs and platforms. */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return (uint32_t)((rng_state * 0x2545f4914f6cdd1dull) >> 32);
}

static uint64_t
rnd64(void)
{
	return (uint64_t)rnd() << 32 | rnd();
}

static unsigned
rnd_below(unsigned n)
{
	return rnd() % n;
}

/* ---- element generation ---------------------------------------------- */

static uint32_t
gen_int32(void)
{
	static const uint32_t special[] = { 0x7fffffff, 0x80000000, 0, 0xffffffff, 1,
					    0x7ffffffe, 0x80000001 };
	unsigned r = rnd_below(100);

	if (r < 15)
		return special[rnd_below(sizeof(special) / sizeof(special[0]))];
	if (r < 50)
		return rnd() % 2001 - 1000;
	return rnd();
}

/*
 * A float format's bits, @ebits exponent bits and @mbits mantissa bits:
 * mostly moderate values whose sums round, then the special cases.
 */
static uint64_t
gen_float_bits(unsigned ebits, unsigned mbits)
{
	uint64_t bias = (UINT64_C(1) << (ebits - 1)) - 1;
	uint64_t emax = (UINT64_C(1) << ebits) - 1; /* all ones: inf and NaN */
	uint64_t sign = (uint64_t)(rnd() & 1) << (ebits + mbits);
	uint64_t mmask = (UINT64_C(1) << mbits) - 1;
	uint64_t mant = rnd64() & mmask;
	unsigned r = rnd_below(1000);
	uint64_t e;

	if (r < 5) /* NaN, any payload, quiet or signalling */
		return sign | (emax << mbits) | (mant ? mant : 1);
	if (r < 25) /* infinity */
		return sign | (emax << mbits);
	if (r < 75) /* zero of either sign */
		return sign;
	if (r < 150) /* subnormal */
		return sign | (mant ? mant : 1);
	if (r < 175) /* the largest finite */
		return sign | ((emax - 1) << mbits) | mmask;
	if (r < 250) /* the smallest normals: sums cross into subnormals */
		return sign | (UINT64_C(1) << mbits) | mant;
	if (r < 350) /* anything finite */
		return sign | ((rnd_below((unsigned)emax - 1) + UINT64_C(1)) << mbits) | mant;
	/* moderate: exponents around 1, so that sums carry and round */
	e = bias - 6 + rnd_below(12);
	return sign | (e << mbits) | mant;
}

/* int64: the wrap-around corners, small values, and anything. */
static uint64_t
gen_int64(void)
{
	static const uint64_t special[] = { INT64_MAX, UINT64_C(1) << 63, 0, UINT64_MAX, 1,
					    INT64_MAX - 1, (UINT64_C(1) << 63) + 1,
					    UINT64_C(0xffffffff), UINT64_C(0x100000000) };
	unsigned r = rnd_below(100);

	if (r < 15)
		return special[rnd_below(sizeof(special) / sizeof(special[0]))];
	if (r < 50)
		return (uint64_t)((int64_t)(rnd() % 2001) - 1000);
	return rnd64();
}

static uint64_t
gen_elem(unsigned dtype)
{
	switch (dtype) {
	case INCA_DTYPE_INT32:
		return gen_int32();
	case INCA_DTYPE_INT64:
		return gen_int64();
	case INCA_DTYPE_FP64:
		return gen_float_bits(11, 52);
	case INCA_DTYPE_FP32:
		return gen_float_bits(8, 23);
	case INCA_DTYPE_FP16:
		return gen_float_bits(5, 10);
	default:
		return gen_float_bits(8, 7);
	}
}

static unsigned
dsize(unsigned dtype)
{
	return inca_dtype_size(dtype);
}

/* 32-bit accumulator lanes of one element. */
static unsigned
dlanes(unsigned dtype)
{
	return inca_dtype_lanes(dtype);
}

static void
put_elem(uint8_t *w, unsigned dtype, unsigned i, uint64_t v)
{
	unsigned b;

	if (dsize(dtype) == 8) {
		for (b = 0; b < 8; b++)
			w[8 * i + b] = (uint8_t)(v >> (56 - 8 * b));
	} else if (dsize(dtype) == 4) {
		w[4 * i] = v >> 24;
		w[4 * i + 1] = v >> 16;
		w[4 * i + 2] = v >> 8;
		w[4 * i + 3] = v;
	} else {
		w[2 * i] = v >> 8;
		w[2 * i + 1] = v;
	}
}

static uint64_t
get_elem(const uint8_t *w, unsigned dtype, unsigned i)
{
	uint64_t v = 0;
	unsigned b;

	if (dsize(dtype) == 8) {
		for (b = 0; b < 8; b++)
			v = v << 8 | w[8 * i + b];
		return v;
	}
	if (dsize(dtype) == 4)
		return (uint32_t)w[4 * i] << 24 | (uint32_t)w[4 * i + 1] << 16 |
		       (uint32_t)w[4 * i + 2] << 8 | w[4 * i + 3];
	return (uint32_t)w[2 * i] << 8 | w[2 * i + 1];
}

/* ---- running an implementation --------------------------------------- */

/* Contributions in wire format, each at its own (mis)alignment. */
struct contribs {
	unsigned dtype, op, count, n;
	uint8_t *buf[MAX_CONTRIB]; /* allocation */
	uint8_t *wire[MAX_CONTRIB]; /* payload inside it */
};

static void
contribs_make(struct contribs *c, unsigned dtype, unsigned op, unsigned count, unsigned n)
{
	unsigned k, i;

	c->dtype = dtype;
	c->op = op;
	c->count = count;
	c->n = n;
	for (k = 0; k < n; k++) {
		c->buf[k] = malloc(PAD + INCA_MAX_PAYLOAD_BYTES * 2);
		ck_assert_ptr_nonnull(c->buf[k]);
		/* Payloads behind an Ethernet/IP/UDP/INCA header are only 2-byte
		 * aligned; try odd offsets too. */
		c->wire[k] = c->buf[k] + PAD / 2 + k % 4;
		for (i = 0; i < count; i++)
			put_elem(c->wire[k], dtype, i, gen_elem(dtype));
	}
}

static void
contribs_free(struct contribs *c)
{
	unsigned k;

	for (k = 0; k < c->n; k++)
		free(c->buf[k]);
}

/* Bytes of accumulator and of wire output, each followed by a canary zone. */
struct result {
	uint32_t acc[INCA_MAX_ELEMS + PAD];
	uint8_t out[INCA_MAX_PAYLOAD_BYTES * 2 + 4 * PAD];
};

enum impl { IMPL_BEST, IMPL_PORTABLE, IMPL_REF };

static void
run(enum impl impl, const struct contribs *c, const unsigned *order, struct result *r)
{
	unsigned sz = dsize(c->dtype);
	unsigned k, i;

	memset(r->acc, CANARY, sizeof(r->acc));
	memset(r->out, CANARY, sizeof(r->out));
	if (impl == IMPL_REF) {
		agg_ref_init(c->dtype, r->acc, c->wire[order[0]], c->count);
		for (k = 1; k < c->n; k++)
			agg_ref_combine(c->dtype, c->op, r->acc, c->wire[order[k]], c->count);
		agg_ref_export(c->dtype, r->out, r->acc, c->count);
	} else {
		agg_kernels_force_portable(impl == IMPL_PORTABLE);
		agg_kernel_init(c->dtype)(r->acc, c->wire[order[0]], c->count);
		for (k = 1; k < c->n; k++)
			agg_kernel_combine(c->dtype, c->op)(r->acc, c->wire[order[k]], c->count);
		agg_kernel_export(c->dtype)(r->out, r->acc, c->count);
		agg_kernels_force_portable(0);
	}
	/* Nothing written beyond count elements. */
	for (i = 0; i < 4 * PAD; i++) {
		EXPECT(((uint8_t *)r->acc)[c->count * dlanes(c->dtype) * 4 + i] == CANARY,
		       "accumulator written beyond %u lanes", c->count);
		EXPECT(r->out[c->count * sz + i] == CANARY, "output written beyond %u elements",
		       c->count);
	}
}

static int
is_nan32(uint32_t x)
{
	return (x & 0x7fffffff) > 0x7f800000;
}

static int
is_nan64(uint64_t x)
{
	return (x & INT64_MAX) > UINT64_C(0x7ff0000000000000);
}

static void
identity_order(unsigned *order, unsigned n)
{
	unsigned k;

	for (k = 0; k < n; k++)
		order[k] = k;
}

static void
shuffle_order(unsigned *order, unsigned n)
{
	unsigned k, j, t;

	for (k = n - 1; k > 0; k--) {
		j = rnd_below(k + 1);
		t = order[k];
		order[k] = order[j];
		order[j] = t;
	}
}

static void
assert_same_output(const struct contribs *c, const struct result *a, const struct result *b,
		   const char *what)
{
	unsigned i;

	for (i = 0; i < c->count; i++) {
		uint64_t x = get_elem(a->out, c->dtype, i);
		uint64_t y = get_elem(b->out, c->dtype, i);

		EXPECT(x == y,
			      "%s: %s %s count %u n %u elem %u: %#llx != %#llx", what,
			      inca_dtype_name(c->dtype), inca_op_name(c->op), c->count, c->n,
			      i, (unsigned long long)x, (unsigned long long)y);
	}
}

/* Accumulators agree too, except that a NaN lane may be any NaN. */
static void
assert_same_acc(const struct contribs *c, const struct result *a, const struct result *b,
		const char *what)
{
	unsigned i;

	if (dlanes(c->dtype) == 2) {
		for (i = 0; i < c->count; i++) {
			uint64_t x, y;

			memcpy(&x, &a->acc[2 * i], 8);
			memcpy(&y, &b->acc[2 * i], 8);
			if (c->dtype == INCA_DTYPE_FP64 && is_nan64(x) && is_nan64(y))
				continue;
			EXPECT(x == y, "%s: acc %s %s count %u n %u elem %u: %#llx != %#llx",
			       what, inca_dtype_name(c->dtype), inca_op_name(c->op), c->count,
			       c->n, i, (unsigned long long)x, (unsigned long long)y);
		}
		return;
	}
	for (i = 0; i < c->count; i++) {
		uint32_t x = a->acc[i], y = b->acc[i];

		if (c->dtype != INCA_DTYPE_INT32 && is_nan32(x) && is_nan32(y))
			continue;
		EXPECT(x == y, "%s: acc %s %s count %u n %u lane %u: %#x != %#x", what,
			      inca_dtype_name(c->dtype), inca_op_name(c->op), c->count, c->n,
			      i, x, y);
	}
}

/* ---- the independent computation ------------------------------------- */

static float
bits_to_float(uint32_t u)
{
	float f;

	memcpy(&f, &u, sizeof(f));
	return f;
}

static uint32_t
float_to_bits(float f)
{
	uint32_t u;

	memcpy(&u, &f, sizeof(u));
	return u;
}

static float
decode_float(unsigned dtype, uint32_t v)
{
	if (dtype == INCA_DTYPE_FP32)
		return bits_to_float(v);
	if (dtype == INCA_DTYPE_FP16)
		return inca_fp16_to_fp32((uint16_t)v);
	return inca_bf16_to_fp32((uint16_t)v);
}

static uint32_t
encode_float(unsigned dtype, float f)
{
	/* The protocol's one NaN per format. */
	if (isnan(f))
		return dtype == INCA_DTYPE_FP32 ? 0x7fc00000 :
		       dtype == INCA_DTYPE_FP16 ? 0x7e00 : 0x7fc0;
	if (dtype == INCA_DTYPE_FP32)
		return float_to_bits(f);
	if (dtype == INCA_DTYPE_FP16)
		return inca_fp32_to_fp16(f);
	return inca_fp32_to_bf16(f);
}

/* -0 below +0, otherwise the usual order; NaN never reaches here. */
static int
total_less(float a, float b)
{
	return a < b || (a == b && signbit(a) && !signbit(b));
}

/* -0 below +0 for binary64 too. */
static int
total_less64(double a, double b)
{
	return a < b || (a == b && signbit(a) && !signbit(b));
}

/* INT64 and FP64 from the rules: wrap mod 2^64, sums in order, NaN wins. */
static uint64_t
expected_elem64(const struct contribs *c, const unsigned *order, unsigned i)
{
	unsigned k;

	if (c->dtype == INCA_DTYPE_INT64) {
		unsigned __int128 sum = 0;
		int64_t best = (int64_t)get_elem(c->wire[order[0]], c->dtype, i);

		for (k = 0; k < c->n; k++) {
			int64_t x = (int64_t)get_elem(c->wire[order[k]], c->dtype, i);

			sum += (unsigned __int128)(__int128)x;
			if (c->op == INCA_OP_MIN && x < best)
				best = x;
			if (c->op == INCA_OP_MAX && x > best)
				best = x;
		}
		/* The low 64 bits of the exact sum: two's complement wrap. */
		return c->op == INCA_OP_SUM ? (uint64_t)sum : (uint64_t)best;
	}

	uint64_t bits = get_elem(c->wire[order[0]], c->dtype, i);
	volatile double acc;
	int nan;

	memcpy((void *)&acc, &bits, 8);
	nan = isnan(acc);
	for (k = 1; k < c->n; k++) {
		double x;

		bits = get_elem(c->wire[order[k]], c->dtype, i);
		memcpy(&x, &bits, 8);
		nan |= isnan(x);
		if (c->op == INCA_OP_SUM)
			acc = acc + x;
		else if (!nan && (c->op == INCA_OP_MIN ? total_less64(x, acc) :
				  total_less64(acc, x)))
			acc = x;
	}
	/* The protocol's one NaN, also for inf + -inf. */
	if (nan || isnan(acc))
		return UINT64_C(0x7ff8000000000000);
	memcpy(&bits, (const void *)&acc, 8);
	return bits;
}

static uint64_t
expected_elem(const struct contribs *c, const unsigned *order, unsigned i)
{
	unsigned k;

	if (dlanes(c->dtype) == 2)
		return expected_elem64(c, order, i);

	if (c->dtype == INCA_DTYPE_INT32) {
		int64_t sum = 0;
		int32_t best = (int32_t)get_elem(c->wire[order[0]], c->dtype, i);

		for (k = 0; k < c->n; k++) {
			int32_t x = (int32_t)get_elem(c->wire[order[k]], c->dtype, i);

			sum += x;
			if (c->op == INCA_OP_MIN && x < best)
				best = x;
			if (c->op == INCA_OP_MAX && x > best)
				best = x;
		}
		/* Two's complement wrap: keep the low 32 bits of the exact sum. */
		return c->op == INCA_OP_SUM ? (uint32_t)(uint64_t)sum : (uint32_t)best;
	}

	volatile float acc = decode_float(c->dtype, get_elem(c->wire[order[0]], c->dtype, i));
	int nan = isnan(acc);

	for (k = 1; k < c->n; k++) {
		float x = decode_float(c->dtype, get_elem(c->wire[order[k]], c->dtype, i));

		nan |= isnan(x);
		if (c->op == INCA_OP_SUM)
			acc = acc + x;
		else if (!nan && (c->op == INCA_OP_MIN ? total_less(x, acc) : total_less(acc, x)))
			acc = x;
	}
	return encode_float(c->dtype, nan ? NAN : acc);
}

/* A message of @count elements of @dtype fits a set and the payload limit. */
static int
count_fits(unsigned dtype, unsigned count)
{
	return count * dlanes(dtype) <= INCA_MAX_ELEMS &&
	       count * dsize(dtype) <= INCA_MAX_PAYLOAD_BYTES;
}

/* ---- test cases ------------------------------------------------------ */

static struct result res_a, res_b, res_c;

/* Chosen and portable kernels equal the reference, bit for bit. */
START_TEST(test_fast_equals_ref)
{
	unsigned dtype = (unsigned)_i / INCA_OP_COUNT, op = (unsigned)_i % INCA_OP_COUNT;
	unsigned order[MAX_CONTRIB];
	unsigned ci, ni;

	rng_state = 0x1234567 + (uint64_t)_i;
	for (ci = 0; ci < sizeof(counts) / sizeof(counts[0]); ci++) {
		for (ni = 0; ni < sizeof(ncontribs) / sizeof(ncontribs[0]); ni++) {
			struct contribs c;

			if (!count_fits(dtype, counts[ci]))
				continue;
			contribs_make(&c, dtype, op, counts[ci], ncontribs[ni]);
			identity_order(order, c.n);
			run(IMPL_REF, &c, order, &res_a);
			run(IMPL_BEST, &c, order, &res_b);
			run(IMPL_PORTABLE, &c, order, &res_c);
			assert_same_output(&c, &res_a, &res_b, agg_kernels_impl());
			assert_same_output(&c, &res_a, &res_c, "portable");
			assert_same_acc(&c, &res_a, &res_b, agg_kernels_impl());
			assert_same_acc(&c, &res_a, &res_c, "portable");
			contribs_free(&c);
		}
	}
}
END_TEST

/* The reference follows the protocol's rules, computed independently. */
START_TEST(test_ref_follows_spec)
{
	unsigned dtype = (unsigned)_i / INCA_OP_COUNT, op = (unsigned)_i % INCA_OP_COUNT;
	unsigned order[MAX_CONTRIB];
	unsigned ci, ni, i;

	rng_state = 0x89abcdef + (uint64_t)_i;
	for (ci = 0; ci < sizeof(counts) / sizeof(counts[0]); ci++) {
		for (ni = 0; ni < sizeof(ncontribs) / sizeof(ncontribs[0]); ni++) {
			struct contribs c;

			if (!count_fits(dtype, counts[ci]))
				continue;
			contribs_make(&c, dtype, op, counts[ci], ncontribs[ni]);
			identity_order(order, c.n);
			run(IMPL_REF, &c, order, &res_a);
			for (i = 0; i < c.count; i++) {
				uint64_t want = expected_elem(&c, order, i);
				uint64_t got = get_elem(res_a.out, dtype, i);

				EXPECT(got == want,
					      "%s %s count %u n %u elem %u: got %#llx want %#llx",
					      inca_dtype_name(dtype), inca_op_name(op), c.count,
					      c.n, i, (unsigned long long)got,
					      (unsigned long long)want);
			}
			contribs_free(&c);
		}
	}
}
END_TEST

/*
 * MIN, MAX and INT32 / INT64 SUM do not depend on arrival order (a worker's packet
 * can come first or last): shuffled orders give the same bits.
 */
START_TEST(test_order_independent)
{
	static const unsigned ops[][2] = {
		{ INCA_DTYPE_INT32, INCA_OP_SUM }, { INCA_DTYPE_INT32, INCA_OP_MIN },
		{ INCA_DTYPE_INT32, INCA_OP_MAX }, { INCA_DTYPE_FP32, INCA_OP_MIN },
		{ INCA_DTYPE_FP32, INCA_OP_MAX }, { INCA_DTYPE_FP16, INCA_OP_MIN },
		{ INCA_DTYPE_FP16, INCA_OP_MAX }, { INCA_DTYPE_BF16, INCA_OP_MIN },
		{ INCA_DTYPE_BF16, INCA_OP_MAX }, { INCA_DTYPE_INT64, INCA_OP_SUM },
		{ INCA_DTYPE_INT64, INCA_OP_MIN }, { INCA_DTYPE_INT64, INCA_OP_MAX },
		{ INCA_DTYPE_FP64, INCA_OP_MIN }, { INCA_DTYPE_FP64, INCA_OP_MAX },
	};
	unsigned order[MAX_CONTRIB];
	unsigned t, rep;

	rng_state = 0x5eed;
	for (t = 0; t < sizeof(ops) / sizeof(ops[0]); t++) {
		struct contribs c;

		contribs_make(&c, ops[t][0], ops[t][1], 1000, 32);
		identity_order(order, c.n);
		run(IMPL_BEST, &c, order, &res_a);
		for (rep = 0; rep < 8; rep++) {
			shuffle_order(order, c.n);
			run(IMPL_BEST, &c, order, &res_b);
			assert_same_output(&c, &res_a, &res_b, "shuffled");
			run(IMPL_PORTABLE, &c, order, &res_b);
			assert_same_output(&c, &res_a, &res_b, "shuffled portable");
			run(IMPL_REF, &c, order, &res_b);
			assert_same_output(&c, &res_a, &res_b, "shuffled ref");
		}
		contribs_free(&c);
	}
}
END_TEST

/*
 * Hand-picked cases with known answers: each row combines two elements
 * a and b (wire bits) and expects the exported bits, through the chosen,
 * portable and reference implementations, at a lane inside a vector and in
 * the scalar tail.
 */
struct known {
	unsigned dtype, op;
	uint64_t a, b, want;
};

static const struct known known_cases[] = {
	/* int32 sum wraps; min/max are signed */
	{ INCA_DTYPE_INT32, INCA_OP_SUM, 0x7fffffff, 1, 0x80000000 },
	{ INCA_DTYPE_INT32, INCA_OP_SUM, 0x80000000, 0xffffffff, 0x7fffffff },
	{ INCA_DTYPE_INT32, INCA_OP_MIN, 0x80000000, 0x7fffffff, 0x80000000 },
	{ INCA_DTYPE_INT32, INCA_OP_MAX, 0xffffffff, 0, 0 },
	/* fp32: signed zeros, NaN, inf - inf, subnormals kept, overflow */
	{ INCA_DTYPE_FP32, INCA_OP_MIN, 0x00000000, 0x80000000, 0x80000000 },
	{ INCA_DTYPE_FP32, INCA_OP_MIN, 0x80000000, 0x00000000, 0x80000000 },
	{ INCA_DTYPE_FP32, INCA_OP_MAX, 0x80000000, 0x00000000, 0x00000000 },
	{ INCA_DTYPE_FP32, INCA_OP_MAX, 0x00000000, 0x80000000, 0x00000000 },
	{ INCA_DTYPE_FP32, INCA_OP_SUM, 0x80000000, 0x80000000, 0x80000000 },
	{ INCA_DTYPE_FP32, INCA_OP_SUM, 0x00000000, 0x80000000, 0x00000000 },
	{ INCA_DTYPE_FP32, INCA_OP_SUM, 0x7f800000, 0xff800000, 0x7fc00000 },
	{ INCA_DTYPE_FP32, INCA_OP_SUM, 0xffc00001, 0x3f800000, 0x7fc00000 },
	{ INCA_DTYPE_FP32, INCA_OP_SUM, 0x7f800001, 0x3f800000, 0x7fc00000 },
	{ INCA_DTYPE_FP32, INCA_OP_MIN, 0xff800000, 0x7fa00000, 0x7fc00000 },
	{ INCA_DTYPE_FP32, INCA_OP_MAX, 0xffc00000, 0x7f800000, 0x7fc00000 },
	{ INCA_DTYPE_FP32, INCA_OP_MIN, 0x3f800000, 0xffffffff, 0x7fc00000 },
	{ INCA_DTYPE_FP32, INCA_OP_SUM, 0x00000001, 0x00000001, 0x00000002 },
	{ INCA_DTYPE_FP32, INCA_OP_SUM, 0x80800000, 0x00800001, 0x00000001 },
	{ INCA_DTYPE_FP32, INCA_OP_MIN, 0x00000001, 0x80000000, 0x80000000 },
	{ INCA_DTYPE_FP32, INCA_OP_SUM, 0x7f7fffff, 0x7f7fffff, 0x7f800000 },
	/* 1 + 2^-24 rounds to even (1); 1 + 3 * 2^-24 rounds up */
	{ INCA_DTYPE_FP32, INCA_OP_SUM, 0x3f800000, 0x33800000, 0x3f800000 },
	{ INCA_DTYPE_FP32, INCA_OP_SUM, 0x3f800000, 0x34400000, 0x3f800002 },
	/* fp16: accumulate in fp32, round once on export */
	{ INCA_DTYPE_FP16, INCA_OP_SUM, 0x3c00, 0x3c00, 0x4000 },
	{ INCA_DTYPE_FP16, INCA_OP_SUM, 0x0001, 0x0001, 0x0002 },
	{ INCA_DTYPE_FP16, INCA_OP_SUM, 0x8001, 0x0400, 0x03ff },
	{ INCA_DTYPE_FP16, INCA_OP_SUM, 0x7bff, 0x7bff, 0x7c00 },
	{ INCA_DTYPE_FP16, INCA_OP_SUM, 0x7bff, 0x5000, 0x7c00 },
	{ INCA_DTYPE_FP16, INCA_OP_SUM, 0x7bff, 0x4c00, 0x7c00 },
	{ INCA_DTYPE_FP16, INCA_OP_SUM, 0x7bff, 0x4bff, 0x7bff },
	{ INCA_DTYPE_FP16, INCA_OP_SUM, 0x3c00, 0x1000, 0x3c00 },
	{ INCA_DTYPE_FP16, INCA_OP_SUM, 0x3c01, 0x1000, 0x3c02 },
	{ INCA_DTYPE_FP16, INCA_OP_SUM, 0x7c00, 0xfc00, 0x7e00 },
	{ INCA_DTYPE_FP16, INCA_OP_SUM, 0xfc01, 0x3c00, 0x7e00 },
	{ INCA_DTYPE_FP16, INCA_OP_MIN, 0x0000, 0x8000, 0x8000 },
	{ INCA_DTYPE_FP16, INCA_OP_MAX, 0x8000, 0x0000, 0x0000 },
	{ INCA_DTYPE_FP16, INCA_OP_MAX, 0x7c00, 0xfe00, 0x7e00 },
	{ INCA_DTYPE_FP16, INCA_OP_MIN, 0x8001, 0x0001, 0x8001 },
	/* bf16 */
	{ INCA_DTYPE_BF16, INCA_OP_SUM, 0x3f80, 0x3f80, 0x4000 },
	{ INCA_DTYPE_BF16, INCA_OP_SUM, 0x3f80, 0x3b80, 0x3f80 },
	{ INCA_DTYPE_BF16, INCA_OP_SUM, 0x3f81, 0x3b80, 0x3f82 },
	{ INCA_DTYPE_BF16, INCA_OP_SUM, 0x7f7f, 0x7f7f, 0x7f80 },
	{ INCA_DTYPE_BF16, INCA_OP_SUM, 0x0001, 0x0001, 0x0002 },
	{ INCA_DTYPE_BF16, INCA_OP_SUM, 0xff80, 0x7f80, 0x7fc0 },
	{ INCA_DTYPE_BF16, INCA_OP_MIN, 0xffc1, 0x0000, 0x7fc0 },
	{ INCA_DTYPE_BF16, INCA_OP_MIN, 0x0000, 0x8000, 0x8000 },
	{ INCA_DTYPE_BF16, INCA_OP_MAX, 0x8000, 0x0000, 0x0000 },
	/* int64 sum wraps modulo 2^64, carries across the 32-bit halves;
	 * min/max are signed */
	{ INCA_DTYPE_INT64, INCA_OP_SUM, 0x7fffffffffffffff, 1, 0x8000000000000000 },
	{ INCA_DTYPE_INT64, INCA_OP_SUM, 0x8000000000000000, 0xffffffffffffffff,
	  0x7fffffffffffffff },
	{ INCA_DTYPE_INT64, INCA_OP_SUM, 0x00000000ffffffff, 1, 0x0000000100000000 },
	{ INCA_DTYPE_INT64, INCA_OP_SUM, 0xffffffffffffffff, 0xffffffffffffffff,
	  0xfffffffffffffffe },
	{ INCA_DTYPE_INT64, INCA_OP_MIN, 0x8000000000000000, 0x7fffffffffffffff,
	  0x8000000000000000 },
	{ INCA_DTYPE_INT64, INCA_OP_MIN, 0x0000000100000000, 0x00000000ffffffff,
	  0x00000000ffffffff },
	{ INCA_DTYPE_INT64, INCA_OP_MAX, 0xffffffffffffffff, 0, 0 },
	{ INCA_DTYPE_INT64, INCA_OP_MAX, 0xffffffff00000000, 0x00000000ffffffff,
	  0x00000000ffffffff },
	/* fp64: signed zeros, NaN made canonical, inf - inf, subnormals
	 * kept, overflow, round to nearest even */
	{ INCA_DTYPE_FP64, INCA_OP_MIN, 0, 0x8000000000000000, 0x8000000000000000 },
	{ INCA_DTYPE_FP64, INCA_OP_MIN, 0x8000000000000000, 0, 0x8000000000000000 },
	{ INCA_DTYPE_FP64, INCA_OP_MAX, 0x8000000000000000, 0, 0 },
	{ INCA_DTYPE_FP64, INCA_OP_MAX, 0, 0x8000000000000000, 0 },
	{ INCA_DTYPE_FP64, INCA_OP_SUM, 0x8000000000000000, 0x8000000000000000,
	  0x8000000000000000 },
	{ INCA_DTYPE_FP64, INCA_OP_SUM, 0, 0x8000000000000000, 0 },
	{ INCA_DTYPE_FP64, INCA_OP_SUM, 0x7ff0000000000000, 0xfff0000000000000,
	  0x7ff8000000000000 },
	{ INCA_DTYPE_FP64, INCA_OP_SUM, 0xfff8000000000001, 0x3ff0000000000000,
	  0x7ff8000000000000 },
	{ INCA_DTYPE_FP64, INCA_OP_SUM, 0x7ff0000000000001, 0x3ff0000000000000,
	  0x7ff8000000000000 },
	{ INCA_DTYPE_FP64, INCA_OP_MIN, 0xfff0000000000000, 0x7ff4000000000000,
	  0x7ff8000000000000 },
	{ INCA_DTYPE_FP64, INCA_OP_MAX, 0xfff8000000000000, 0x7ff0000000000000,
	  0x7ff8000000000000 },
	{ INCA_DTYPE_FP64, INCA_OP_SUM, 1, 1, 2 },
	{ INCA_DTYPE_FP64, INCA_OP_SUM, 0x8010000000000000, 0x0010000000000001, 1 },
	{ INCA_DTYPE_FP64, INCA_OP_MIN, 1, 0x8000000000000000, 0x8000000000000000 },
	{ INCA_DTYPE_FP64, INCA_OP_SUM, 0x7fefffffffffffff, 0x7fefffffffffffff,
	  0x7ff0000000000000 },
	/* 1 + 2^-53 rounds to even (1); 1 + 3 * 2^-53 rounds up */
	{ INCA_DTYPE_FP64, INCA_OP_SUM, 0x3ff0000000000000, 0x3ca0000000000000,
	  0x3ff0000000000000 },
	{ INCA_DTYPE_FP64, INCA_OP_SUM, 0x3ff0000000000000, 0x3cb8000000000000,
	  0x3ff0000000000002 },
};

START_TEST(test_known_values)
{
	const struct known *kc = &known_cases[_i];
	/* 19 lanes: two full vectors of eight and a tail of three. */
	unsigned count = 19, i;
	uint8_t a[19 * 8], b[19 * 8];
	enum impl impl;

	for (i = 0; i < count; i++) {
		/* Vary the other lanes so that lane mix-ups show. */
		put_elem(a, kc->dtype, i, i == 5 || i == 17 ? kc->a : i);
		put_elem(b, kc->dtype, i, i == 5 || i == 17 ? kc->b : 0);
	}
	for (impl = IMPL_BEST; impl <= IMPL_REF; impl++) {
		struct contribs c = { .dtype = kc->dtype, .op = kc->op, .count = count, .n = 2 };
		unsigned order[2] = { 0, 1 };

		c.wire[0] = a;
		c.wire[1] = b;
		run(impl, &c, order, &res_a);
		for (i = 5; i < count; i += 12) {
			uint64_t got = get_elem(res_a.out, kc->dtype, i);

			EXPECT(got == kc->want,
				      "impl %d %s %s %#llx, %#llx lane %u: got %#llx want %#llx",
				      impl, inca_dtype_name(kc->dtype), inca_op_name(kc->op),
				      (unsigned long long)kc->a, (unsigned long long)kc->b, i,
				      (unsigned long long)got, (unsigned long long)kc->want);
		}
	}
}
END_TEST

/*
 * A single contribution goes through init and export unchanged, for every
 * fp16 and bf16 value (NaNs become the canonical NaN), with every
 * implementation.
 */
START_TEST(test_roundtrip_16bit)
{
	static uint8_t wire[INCA_MAX_PAYLOAD_BYTES];
	unsigned dtype = _i ? INCA_DTYPE_BF16 : INCA_DTYPE_FP16;
	uint32_t canon = _i ? 0x7fc0 : 0x7e00;
	uint32_t expmask = _i ? 0x7f80 : 0x7c00;
	unsigned base, i;
	enum impl impl;

	for (base = 0; base < 65536; base += INCA_MAX_ELEMS) {
		for (i = 0; i < INCA_MAX_ELEMS; i++)
			put_elem(wire, dtype, i, base + i);
		for (impl = IMPL_BEST; impl <= IMPL_REF; impl++) {
			struct contribs c = { .dtype = dtype, .op = INCA_OP_SUM,
					      .count = INCA_MAX_ELEMS, .n = 1 };
			unsigned order[1] = { 0 };

			c.wire[0] = wire;
			run(impl, &c, order, &res_a);
			for (i = 0; i < INCA_MAX_ELEMS; i++) {
				uint32_t v = base + i;
				int nan = (v & 0x7fff) > expmask;
				uint32_t got = (uint32_t)get_elem(res_a.out, dtype, i);

				EXPECT(got == (nan ? canon : v), "impl %d %#x -> %#x", impl,
					      v, got);
				/* The accumulator holds the exact value. */
				if (nan)
					continue;
				EXPECT(res_a.acc[i] == float_to_bits(decode_float(dtype, v)),
				       "impl %d %#x: acc %#x", impl, v, res_a.acc[i]);
			}
		}
	}
}
END_TEST

/*
 * Export of fp32 accumulators to fp16 and bf16 rounds to nearest even: a
 * sweep of fp32 bit patterns, and every midpoint between neighbouring
 * fp16 values and its neighbours, against the library's conversions.
 */
START_TEST(test_export_rounding)
{
	static uint32_t acc[INCA_MAX_ELEMS];
	static uint8_t out[3][INCA_MAX_PAYLOAD_BYTES];
	unsigned dtype = _i ? INCA_DTYPE_BF16 : INCA_DTYPE_FP16;
	uint64_t x = 0;
	unsigned n, i;

	for (;;) {
		/* Fill a batch: midpoints first, then a strided sweep. */
		for (n = 0; n < INCA_MAX_ELEMS && x < 0x100000000ull; n++) {
			if (x < 3 * 65536) {
				/* Midpoint of fp16 values h and h + 1, and one ulp either side. */
				uint32_t h = (uint32_t)(x / 3) & 0x7bff;
				float lo = inca_fp16_to_fp32((uint16_t)h);
				float hi = inca_fp16_to_fp32((uint16_t)(h + 1));
				uint32_t mid = float_to_bits(lo + (hi - lo) / 2);

				acc[n] = mid + (uint32_t)(x % 3) - 1;
				if ((x / 3) & 0x8000)
					acc[n] |= 0x80000000u;
				x++;
			} else {
				acc[n] = (uint32_t)x;
				x += 4093;
			}
		}
		if (n == 0)
			break;
		agg_kernel_export(dtype)(out[0], acc, n);
		agg_kernels_force_portable(1);
		agg_kernel_export(dtype)(out[1], acc, n);
		agg_kernels_force_portable(0);
		agg_ref_export(dtype, out[2], acc, n);
		for (i = 0; i < n; i++) {
			uint32_t want = encode_float(dtype, bits_to_float(acc[i]));

			EXPECT(get_elem(out[0], dtype, i) == want,
				      "best %#x: %#x want %#x", acc[i], (uint32_t)get_elem(out[0], dtype, i),
				      want);
			EXPECT(get_elem(out[1], dtype, i) == want,
				      "portable %#x: %#x want %#x", acc[i],
				      (uint32_t)get_elem(out[1], dtype, i), want);
			EXPECT(get_elem(out[2], dtype, i) == want,
				      "ref %#x: %#x want %#x", acc[i], (uint32_t)get_elem(out[2], dtype, i),
				      want);
		}
	}
}
END_TEST

START_TEST(test_unknown_is_null)
{
	ck_assert_ptr_null(agg_kernel_init(INCA_DTYPE_COUNT));
	ck_assert_ptr_null(agg_kernel_export(INCA_DTYPE_COUNT));
	ck_assert_ptr_null(agg_kernel_combine(INCA_DTYPE_COUNT, INCA_OP_SUM));
	ck_assert_ptr_null(agg_kernel_combine(INCA_DTYPE_INT32, INCA_OP_COUNT));
	ck_assert_ptr_null(agg_kernel_combine(0xff, 0xff));
	ck_assert_ptr_nonnull(agg_kernel_init(INCA_DTYPE_BF16));
	ck_assert_ptr_nonnull(agg_kernel_combine(INCA_DTYPE_BF16, INCA_OP_MAX));
	ck_assert_ptr_nonnull(agg_kernel_export(INCA_DTYPE_BF16));
}
END_TEST

/* Forcing the portable kernels switches every table, and back. */
START_TEST(test_force_portable)
{
	const char *best;
	agg_combine_fn *f_best, *f_port;

	agg_kernels_init();
	agg_kernels_init(); /* idempotent */
	best = agg_kernels_impl();
#if defined(__x86_64__)
	ck_assert(strcmp(best, "avx2") == 0 || strcmp(best, "portable") == 0);
#elif defined(__aarch64__)
	ck_assert(strcmp(best, "neon") == 0 || strcmp(best, "portable") == 0);
#else
	ck_assert_str_eq(best, "portable");
#endif
	f_best = agg_kernel_combine(INCA_DTYPE_FP32, INCA_OP_SUM);

	agg_kernels_force_portable(1);
	ck_assert_str_eq(agg_kernels_impl(), "portable");
	f_port = agg_kernel_combine(INCA_DTYPE_FP32, INCA_OP_SUM);
	agg_kernels_init(); /* does not undo the forcing */
	ck_assert_str_eq(agg_kernels_impl(), "portable");
	ck_assert_ptr_eq(agg_kernel_combine(INCA_DTYPE_FP32, INCA_OP_SUM), f_port);

	agg_kernels_force_portable(0);
	ck_assert_str_eq(agg_kernels_impl(), best);
	ck_assert_ptr_eq(agg_kernel_combine(INCA_DTYPE_FP32, INCA_OP_SUM), f_best);
	if (strcmp(best, "portable") != 0) {
		ck_assert_ptr_ne(f_best, f_port);
		ck_assert_ptr_ne(agg_kernel_init(INCA_DTYPE_FP16), NULL);
	} else {
		ck_assert_ptr_eq(f_best, f_port);
	}
}
END_TEST

static Suite *
kernels_suite(void)
{
	Suite *s = suite_create("kernels");
	TCase *tc;
	int ncases = INCA_DTYPE_COUNT * INCA_OP_COUNT;

	tc = tcase_create("fast_equals_ref");
	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, test_fast_equals_ref, 0, ncases);
	suite_add_tcase(s, tc);

	tc = tcase_create("ref_follows_spec");
	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, test_ref_follows_spec, 0, ncases);
	suite_add_tcase(s, tc);

	tc = tcase_create("order_independent");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_order_independent);
	suite_add_tcase(s, tc);

	tc = tcase_create("known_values");
	tcase_set_timeout(tc, 30);
	tcase_add_loop_test(tc, test_known_values, 0,
			    sizeof(known_cases) / sizeof(known_cases[0]));
	suite_add_tcase(s, tc);

	tc = tcase_create("roundtrip_16bit");
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, test_roundtrip_16bit, 0, 2);
	suite_add_tcase(s, tc);

	tc = tcase_create("export_rounding");
	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, test_export_rounding, 0, 2);
	suite_add_tcase(s, tc);

	tc = tcase_create("unknown_is_null");
	tcase_set_timeout(tc, 10);
	tcase_add_test(tc, test_unknown_is_null);
	suite_add_tcase(s, tc);

	tc = tcase_create("force_portable");
	tcase_set_timeout(tc, 10);
	tcase_add_test(tc, test_force_portable);
	suite_add_tcase(s, tc);

	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(kernels_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

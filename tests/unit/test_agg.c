/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * Unit tests of the aggregation core (daemon/core/agg.c): job parameters,
 * results of every dtype and op against a reference computed here, and
 * every rule of the slot / shadow-set state machine, with and without the
 * seq comparisons.
 */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <inca/dtype.h>
#include <inca/wire.h>

#include "agg.h"

/*
 * For checks made thousands of times: Check's own assertions record their
 * location through a syscall each time they pass.
 */
#define REQ_MSG(cond, ...) \
	do { \
		if (!(cond)) \
			ck_abort_msg(__VA_ARGS__); \
	} while (0)
#define REQ_EQ(a, b) \
	do { \
		long long a_ = (long long)(a), b_ = (long long)(b); \
		REQ_MSG(a_ == b_, "%s:%d: %s == %s: %lld != %lld", __FILE__, __LINE__, #a, #b, \
			a_, b_); \
	} while (0)

#define JOB 7
#define TOKEN 0xc0ffee11u
#define NLANES 4 /* elements of the small int32 contributions */

/* ---- helpers ------------------------------------------------------------ */

static uint64_t rng_state;

static uint64_t
rng(void)
{
	/* splitmix64: deterministic, so every failure reproduces. */
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static int32_t
rng_range(int32_t lo, int32_t hi)
{
	return lo + (int32_t)(rng() % (uint64_t)((int64_t)hi - lo + 1));
}

static void
put32(uint8_t *b, unsigned i, uint32_t v)
{
	b[4 * i] = v >> 24;
	b[4 * i + 1] = v >> 16;
	b[4 * i + 2] = v >> 8;
	b[4 * i + 3] = v;
}

static uint32_t
get32(const uint8_t *b, unsigned i)
{
	return (uint32_t)b[4 * i] << 24 | (uint32_t)b[4 * i + 1] << 16 |
	       (uint32_t)b[4 * i + 2] << 8 | b[4 * i + 3];
}

static void
put16(uint8_t *b, unsigned i, uint16_t v)
{
	b[2 * i] = v >> 8;
	b[2 * i + 1] = v;
}

static uint16_t
get16(const uint8_t *b, unsigned i)
{
	return (uint16_t)(b[2 * i] << 8 | b[2 * i + 1]);
}

static uint32_t
f2u(float f)
{
	uint32_t u;

	memcpy(&u, &f, 4);
	return u;
}

static float
u2f(uint32_t u)
{
	float f;

	memcpy(&f, &u, 4);
	return f;
}

static uint32_t
mask_of(unsigned n)
{
	return n == 32 ? UINT32_MAX : (UINT32_C(1) << n) - 1;
}

static struct agg_job_params
params(unsigned nworkers, unsigned pool, unsigned max_elems, bool seq_check)
{
	struct agg_job_params p = {
		.job = JOB,
		.token = TOKEN,
		.nworkers = nworkers,
		.pool_size = pool,
		.max_elems = max_elems,
		.dtypes = (1u << INCA_DTYPE_COUNT) - 1,
		.ops = (1u << INCA_OP_COUNT) - 1,
		.seq_check = seq_check,
	};

	return p;
}

/* A job with every rank admitted. */
static struct agg_job *
job_new(unsigned nworkers, unsigned pool, unsigned max_elems, bool seq_check)
{
	struct agg_job_params p = params(nworkers, pool, max_elems, seq_check);
	struct agg_job *j = agg_job_create(&p);

	ck_assert_ptr_nonnull(j);
	agg_job_set_members(j, UINT32_MAX);
	return j;
}

static struct inca_msg
cmsg(unsigned rank, unsigned slot, unsigned set, uint32_t seq, unsigned dtype, unsigned op,
     unsigned count, const void *body)
{
	struct inca_msg m = {
		.version = INCA_PROTO_VERSION,
		.type = INCA_MSG_CONTRIB,
		.dtype = dtype,
		.op = op,
		.job = JOB,
		.rank = rank,
		.token = TOKEN,
		.slot = slot,
		.flags = set,
		.seq = seq,
		.count = count,
		.body = body,
		.body_len = (size_t)count * inca_dtype_size(dtype),
	};

	return m;
}

static struct agg_out last_out;

/*
 * An int32 sum contribution of NLANES elements: lane i holds v + i, so
 * the sum over a set of ranks identifies exactly who was counted.
 */
static enum agg_verdict
c32(struct agg_job *j, unsigned rank, unsigned slot, unsigned set, uint32_t seq, int32_t v)
{
	uint8_t body[4 * NLANES];
	struct inca_msg m;
	unsigned i;

	for (i = 0; i < NLANES; i++)
		put32(body, i, (uint32_t)(v + (int32_t)i));
	m = cmsg(rank, slot, set, seq, INCA_DTYPE_INT32, INCA_OP_SUM, NLANES, body);
	memset(&last_out, 0xa5, sizeof(last_out));
	return agg_contribute(j, &m, &last_out);
}

static enum agg_verdict
give(struct agg_job *j, const struct inca_msg *m)
{
	memset(&last_out, 0xa5, sizeof(last_out));
	return agg_contribute(j, m, &last_out);
}

static struct agg_set *
set_of(struct agg_job *j, unsigned slot, unsigned set)
{
	return &j->sets[2 * slot + set];
}

/* One byte more than the largest RESULT, to see that nothing is written past it. */
static uint8_t result_buf[INCA_HDR_LEN + INCA_MAX_PAYLOAD_BYTES + 1];

/* Write and decode the RESULT of @s for @rank; checks what every RESULT must hold. */
static struct inca_msg
result_of(struct agg_job *j, const struct agg_set *s, unsigned rank, bool replay)
{
	struct inca_msg r;
	size_t len;

	memset(result_buf, 0xee, sizeof(result_buf));
	len = agg_result_write(j, s, rank, replay, result_buf);
	REQ_EQ(len, agg_result_len(s));
	REQ_EQ(len, INCA_HDR_LEN + (size_t)s->count * inca_dtype_size(s->dtype));
	REQ_EQ(inca_msg_decode(result_buf, len, 0, &r), INCA_WIRE_OK);
	REQ_EQ(r.type, INCA_MSG_RESULT);
	REQ_EQ(r.job, JOB);
	REQ_EQ(r.token, TOKEN);
	REQ_EQ(r.rank, rank);
	REQ_EQ(r.slot, s->slot);
	REQ_EQ(r.seq, s->seq);
	REQ_EQ(r.count, s->count);
	REQ_EQ(r.dtype, s->dtype);
	REQ_EQ(r.op, s->op);
	REQ_EQ(r.reason, 0);
	/* A complete set's result names every rank, whatever rule 6 cleared since. */
	REQ_EQ(r.bitmap, s->state == AGG_SET_COMPLETE ? j->full_mask : s->bitmap);
	REQ_EQ(r.flags & INCA_F_SET, s->set);
	REQ_EQ(!!(r.flags & INCA_F_RETX), replay);
	/* Nothing written past the message. */
	REQ_EQ(result_buf[len], 0xee);
	return r;
}

/* Check that the int32 sum result of @s is sum(v) + i * n in lane i. */
static void
check_c32_sum(struct agg_job *j, const struct agg_set *s, int32_t sum, unsigned n)
{
	struct inca_msg r = result_of(j, s, 1 % j->p.nworkers, false);
	unsigned i;

	ck_assert_uint_eq(r.count, NLANES);
	for (i = 0; i < NLANES; i++)
		ck_assert_int_eq((int32_t)get32(r.body, i), sum + (int32_t)(i * n));
}

/* ---- parameters --------------------------------------------------------- */

START_TEST(test_params)
{
	struct agg_job_params good = params(4, 8, 64, true), p;
	struct agg_job *j;
	unsigned i;

	/*
	 * Every field out of range on its own: nothing may be allocated, and
	 * the footprint of what cannot be created is 0.
	 */
	struct agg_job_params cases[] = {
		good, good, good, good, good, good, good, good, good, good, good,
	};
	cases[0].job = 0;
	cases[1].nworkers = 0;
	cases[2].nworkers = INCA_MAX_WORKERS + 1;
	cases[3].pool_size = 0;
	cases[4].max_elems = 0;
	cases[5].max_elems = INCA_MAX_ELEMS + 1;
	cases[6].dtypes = 0;
	cases[7].dtypes = 1u << INCA_DTYPE_COUNT;
	cases[8].ops = 0;
	cases[9].ops = 1u << INCA_OP_COUNT;
	cases[10].dtypes = 0xffff;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		errno = 0;
		ck_assert_msg(agg_job_create(&cases[i]) == NULL, "case %u accepted", i);
		ck_assert_int_eq(errno, EINVAL);
		ck_assert_uint_eq(agg_job_footprint(&cases[i]), 0);
	}
	errno = 0;
	ck_assert_ptr_null(agg_job_create(NULL));
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_uint_eq(agg_job_footprint(NULL), 0);

	/* The limits themselves are fine. */
	p = good;
	p.nworkers = INCA_MAX_WORKERS;
	p.max_elems = INCA_MAX_ELEMS;
	p.pool_size = 1;
	p.job = 65535;
	j = agg_job_create(&p);
	ck_assert_ptr_nonnull(j);
	ck_assert_uint_eq(j->full_mask, UINT32_MAX);
	ck_assert_uint_eq(j->members, 0);
	agg_job_destroy(j);
	p.nworkers = 1;
	j = agg_job_create(&p);
	ck_assert_ptr_nonnull(j);
	ck_assert_uint_eq(j->full_mask, 1);
	agg_job_destroy(j);
	agg_job_destroy(NULL);
}
END_TEST

START_TEST(test_layout)
{
	struct agg_job_params p = params(3, 5, 100, true);
	struct agg_job *j = agg_job_create(&p);
	size_t fp = agg_job_footprint(&p), acc = 100 * 4, i;
	uintptr_t prev = 0;

	ck_assert_ptr_nonnull(j);
	/* The job, 10 sets and 10 accumulators of at least max_elems lanes. */
	ck_assert_uint_ge(fp, sizeof(*j) + 10 * sizeof(struct agg_set) + 10 * acc);
	ck_assert_uint_le(fp, sizeof(*j) + 10 * sizeof(struct agg_set) + 10 * (acc + 63));
	/* Grows by exactly two sets and two accumulators per slot. */
	p.pool_size = 6;
	ck_assert_uint_eq(agg_job_footprint(&p) - fp, (fp - sizeof(*j)) / 5);
	ck_assert_uint_eq(sizeof(struct agg_set) % 64, 0);
	ck_assert_uint_eq((uintptr_t)j->sets % 64, 0);
	for (i = 0; i < 10; i++) {
		struct agg_set *s = &j->sets[i];
		uintptr_t a = (uintptr_t)s->acc;

		ck_assert_uint_eq(a % 64, 0);
		ck_assert_uint_eq(s->slot, i / 2);
		ck_assert_uint_eq(s->set, i % 2);
		ck_assert_uint_eq(s->state, AGG_SET_IDLE);
		/* Accumulators do not overlap. */
		if (i > 0)
			ck_assert_uint_ge(a - prev, acc);
		prev = a;
	}
	agg_job_destroy(j);
}
END_TEST

START_TEST(test_drop_names)
{
	unsigned i, k;

	for (i = 0; i < AGG_DROP_COUNT; i++) {
		ck_assert_str_ne(agg_drop_name(i), "?");
		ck_assert_uint_gt(strlen(agg_drop_str(i)), 0);
		for (k = 0; k < i; k++)
			ck_assert_str_ne(agg_drop_name(i), agg_drop_name(k));
	}
	ck_assert_str_eq(agg_drop_name(AGG_DROP_STALE), "STALE");
	ck_assert_str_eq(agg_drop_name(AGG_DROP_COUNT), "?");
}
END_TEST

/* ---- results against a reference --------------------------------------- */

/* IEEE 754-2019 minimum/maximum order on non-NaN values: -0 < +0. */
static bool
f_less(float a, float b)
{
	if (a == 0 && b == 0)
		return signbit(a) && !signbit(b);
	return a < b;
}

static float
dec_float(unsigned dtype, const uint8_t *w, unsigned i)
{
	switch (dtype) {
	case INCA_DTYPE_FP32:
		return u2f(get32(w, i));
	case INCA_DTYPE_FP16:
		return inca_fp16_to_fp32(get16(w, i));
	default:
		return inca_bf16_to_fp32(get16(w, i));
	}
}

static void
enc_float(unsigned dtype, uint8_t *w, unsigned i, float f)
{
	switch (dtype) {
	case INCA_DTYPE_FP32:
		put32(w, i, isnan(f) ? 0x7fc00000u : f2u(f));
		break;
	case INCA_DTYPE_FP16:
		put16(w, i, isnan(f) ? 0x7e00 : inca_fp32_to_fp16(f));
		break;
	default:
		put16(w, i, isnan(f) ? 0x7fc0 : inca_fp32_to_bf16(f));
		break;
	}
}

enum gen_kind {
	GEN_EXACT,     /* sums exact in fp32 whatever the order */
	GEN_ARBITRARY, /* any finite value; NaN, inf and zeros of both signs */
};

/* A value of @dtype in wire format at lane @i. */
static void
gen_value(unsigned dtype, enum gen_kind kind, uint8_t *w, unsigned i)
{
	uint32_t u;

	if (dtype == INCA_DTYPE_INT32) {
		/* Full range, so the sums wrap. */
		put32(w, i, (uint32_t)rng());
		return;
	}
	if (kind == GEN_EXACT) {
		/*
		 * Multiples of a power of two small enough that 32 of them add
		 * up exactly in fp32, and each exact in its own format.
		 */
		switch (dtype) {
		case INCA_DTYPE_FP32:
			enc_float(dtype, w, i, ldexpf((float)rng_range(-(1 << 18), 1 << 18), -8));
			break;
		case INCA_DTYPE_FP16:
			enc_float(dtype, w, i, ldexpf((float)rng_range(-1024, 1024), -4));
			break;
		default:
			enc_float(dtype, w, i, ldexpf((float)rng_range(-255, 255), -3));
			break;
		}
		/* Zeros of both signs, for min and max. */
		if (rng() % 8 == 0)
			enc_float(dtype, w, i, rng() & 1 ? -0.0f : 0.0f);
		return;
	}
	/* Random bits, with the specials now and then. */
	for (;;) {
		u = (uint32_t)rng();
		switch (rng() % 16) {
		case 0:
			u = rng() & 1 ? 0x80000000u : 0;
			break;
		case 1:
			u = rng() & 1 ? 0xff800000u : 0x7f800000u;
			break;
		case 2:
			u &= 0x807fffffu; /* fp32 subnormal */
			break;
		default:
			break;
		}
		if (dtype == INCA_DTYPE_FP32) {
			if (isnan(u2f(u)))
				continue;
			put32(w, i, u);
		} else {
			/* 16-bit patterns directly: their own subnormals and specials. */
			uint16_t h = (uint16_t)(u >> 16);

			if (dtype == INCA_DTYPE_FP16 ? isnan(inca_fp16_to_fp32(h)) :
						       isnan(inca_bf16_to_fp32(h)))
				continue;
			if (rng() % 16 == 0)
				h &= dtype == INCA_DTYPE_FP16 ? 0x83ff : 0x807f;
			put16(w, i, h);
		}
		return;
	}
}

static uint8_t in_wire[INCA_MAX_WORKERS][INCA_MAX_PAYLOAD_BYTES];
static uint8_t ref_wire[INCA_MAX_PAYLOAD_BYTES];

/*
 * The reference: plain code, one element at a time, ranks combined in the
 * order @order gives (the order they are fed to the core).
 */
static void
reference(unsigned dtype, unsigned op, unsigned n, const unsigned *order, unsigned count)
{
	unsigned i, r;

	for (i = 0; i < count; i++) {
		if (dtype == INCA_DTYPE_INT32) {
			uint32_t acc = get32(in_wire[order[0]], i);

			for (r = 1; r < n; r++) {
				uint32_t v = get32(in_wire[order[r]], i);

				if (op == INCA_OP_SUM)
					acc += v;
				else if (op == INCA_OP_MIN)
					acc = (int32_t)v < (int32_t)acc ? v : acc;
				else
					acc = (int32_t)v > (int32_t)acc ? v : acc;
			}
			put32(ref_wire, i, acc);
		} else {
			volatile float acc = dec_float(dtype, in_wire[order[0]], i);
			bool nan = isnan(acc);

			for (r = 1; r < n; r++) {
				float v = dec_float(dtype, in_wire[order[r]], i);

				nan |= isnan(v);
				if (op == INCA_OP_SUM)
					acc = acc + v;
				else if (op == INCA_OP_MIN)
					acc = f_less(v, acc) ? v : acc;
				else
					acc = f_less(acc, v) ? v : acc;
			}
			enc_float(dtype, ref_wire, i, nan ? NAN : acc);
		}
	}
}

static void
shuffle(unsigned *order, unsigned n)
{
	unsigned i, k, t;

	for (i = 0; i < n; i++)
		order[i] = i;
	for (i = n - 1; i > 0; i--) {
		k = rng() % (i + 1);
		t = order[i];
		order[i] = order[k];
		order[k] = t;
	}
}

/*
 * Feed @n ranks' contributions of @count elements into a fresh job in a
 * random order and compare the result, for every rank, with the reference.
 */
static void
reduce_and_check(unsigned n, unsigned dtype, unsigned op, unsigned count, enum gen_kind kind)
{
	struct agg_job *j = job_new(n, 3, count, true);
	unsigned order[INCA_MAX_WORKERS], r, i;
	unsigned slot = n % 3, set = n & 1;
	uint32_t seq = (uint32_t)rng();
	struct inca_msg m, res;

	shuffle(order, n);
	for (r = 0; r < n; r++)
		for (i = 0; i < count; i++)
			gen_value(dtype, kind, in_wire[r], i);
	for (r = 0; r < n; r++) {
		m = cmsg(order[r], slot, set, seq, dtype, op, count, in_wire[order[r]]);
		m.offset = 1000 * n;
		m.flags |= r == 0 ? INCA_F_LAST : 0;
		ck_assert_int_eq(give(j, &m), r + 1 < n ? AGG_PENDING : AGG_COMPLETE);
		ck_assert_ptr_eq(last_out.set, set_of(j, slot, set));
	}
	reference(dtype, op, n, order, count);
	for (r = 0; r < n; r++) {
		res = result_of(j, last_out.set, r, false);
		ck_assert_uint_eq(res.bitmap, mask_of(n));
		ck_assert_uint_eq(res.offset, 1000 * n);
		ck_assert_uint_eq(res.flags, set | INCA_F_LAST);
		ck_assert_uint_eq(res.body_len, count * inca_dtype_size(dtype));
		for (i = 0; i < count; i++) {
			if (inca_dtype_size(dtype) == 4)
				REQ_MSG(get32(res.body, i) == get32(ref_wire, i),
					"n %u dtype %u op %u lane %u: %08x != %08x", n, dtype, op,
					i, get32(res.body, i), get32(ref_wire, i));
			else
				REQ_MSG(get16(res.body, i) == get16(ref_wire, i),
					"n %u dtype %u op %u lane %u: %04x != %04x", n, dtype, op,
					i, get16(res.body, i), get16(ref_wire, i));
		}
	}
	agg_job_destroy(j);
}

START_TEST(test_int32_every_op)
{
	unsigned n, op;

	rng_state = 1;
	for (n = 2; n <= INCA_MAX_WORKERS; n++)
		for (op = 0; op < INCA_OP_COUNT; op++)
			reduce_and_check(n, INCA_DTYPE_INT32, op, n % 2 ? 64 : 256, GEN_EXACT);
	/* The largest payload too. */
	reduce_and_check(32, INCA_DTYPE_INT32, INCA_OP_SUM, 2048, GEN_EXACT);
}
END_TEST

START_TEST(test_int32_wraps)
{
	struct agg_job *j = job_new(3, 1, NLANES, true);

	/* INT32_MAX - 3 + 2 * (INT32_MAX - 3) + ... wraps like a switch ALU. */
	c32(j, 0, 0, 0, 1, INT32_MAX - 3);
	c32(j, 1, 0, 0, 1, INT32_MAX - 3);
	ck_assert_int_eq(c32(j, 2, 0, 0, 1, INT32_MAX - 3), AGG_COMPLETE);
	check_c32_sum(j, last_out.set, (int32_t)(3u * (uint32_t)(INT32_MAX - 3)), 3);
	agg_job_destroy(j);
}
END_TEST

START_TEST(test_float_exact)
{
	unsigned n, op, dtype;

	rng_state = 2;
	for (dtype = INCA_DTYPE_FP32; dtype <= INCA_DTYPE_BF16; dtype++)
		for (n = 2; n <= INCA_MAX_WORKERS; n++)
			for (op = 0; op < INCA_OP_COUNT; op++)
				reduce_and_check(n, dtype, op, n % 2 ? 64 : 256, GEN_EXACT);
	/* fp16/bf16 at the byte limit: 4096 elements. */
	reduce_and_check(8, INCA_DTYPE_FP16, INCA_OP_SUM, INCA_MAX_ELEMS, GEN_EXACT);
	reduce_and_check(8, INCA_DTYPE_BF16, INCA_OP_MAX, INCA_MAX_ELEMS, GEN_EXACT);
}
END_TEST

START_TEST(test_float_arbitrary)
{
	unsigned n, op, dtype;

	/* The reference sums in the same order as the core was fed. */
	rng_state = 3;
	for (dtype = INCA_DTYPE_FP32; dtype <= INCA_DTYPE_BF16; dtype++)
		for (n = 2; n <= INCA_MAX_WORKERS; n += 3)
			for (op = 0; op < INCA_OP_COUNT; op++)
				reduce_and_check(n, dtype, op, 256, GEN_ARBITRARY);
}
END_TEST

START_TEST(test_float_nan)
{
	unsigned dtype, op, r;

	/* A NaN from one rank makes the element the canonical NaN, whatever the op. */
	rng_state = 4;
	for (dtype = INCA_DTYPE_FP32; dtype <= INCA_DTYPE_BF16; dtype++) {
		for (op = 0; op < INCA_OP_COUNT; op++) {
			struct agg_job *j = job_new(3, 1, 2, true);
			struct inca_msg m, res;

			for (r = 0; r < 3; r++) {
				gen_value(dtype, GEN_EXACT, in_wire[r], 0);
				gen_value(dtype, GEN_EXACT, in_wire[r], 1);
			}
			/* A signalling NaN with a payload, not the canonical one. */
			if (dtype == INCA_DTYPE_FP32)
				put32(in_wire[1], 0, 0xff800123u);
			else if (dtype == INCA_DTYPE_FP16)
				put16(in_wire[1], 0, 0xfc21);
			else
				put16(in_wire[1], 0, 0xff81);
			for (r = 0; r < 3; r++) {
				m = cmsg(r, 0, 0, 9, dtype, op, 2, in_wire[r]);
				give(j, &m);
			}
			ck_assert_int_eq(last_out.verdict, AGG_COMPLETE);
			res = result_of(j, last_out.set, 0, false);
			if (dtype == INCA_DTYPE_FP32)
				ck_assert_uint_eq(get32(res.body, 0), 0x7fc00000u);
			else
				ck_assert_uint_eq(get16(res.body, 0),
						  dtype == INCA_DTYPE_FP16 ? 0x7e00 : 0x7fc0);
			ck_assert(!isnan(dec_float(dtype, res.body, 1)));
			agg_job_destroy(j);
		}
	}
}
END_TEST

START_TEST(test_bfp)
{
	/* Without the sequence check (a switch's rules), so that a mismatch
	 * only drops the contribution and the set goes on. */
	struct agg_job *j = job_new(3, 2, 8, false);
	uint8_t body[32];
	struct inca_msg m, res;
	unsigned i;

	for (i = 0; i < 8; i++)
		put32(body, i, 1000 + i);
	m = cmsg(0, 1, 0, 5, INCA_DTYPE_INT32, INCA_OP_SUM, 8, body);
	m.flags |= INCA_F_BFP;
	m.exp = -3;
	ck_assert_int_eq(give(j, &m), AGG_PENDING);
	/* A non-BFP contribution cannot join a BFP use, nor the reverse
	 * (this job has no sequence check: a counted drop, the set goes on). */
	m.rank = 1;
	m.flags &= ~INCA_F_BFP;
	ck_assert_int_eq(give(j, &m), AGG_DROP);
	ck_assert_int_eq(last_out.reason, AGG_DROP_MISMATCH);
	m.flags |= INCA_F_BFP;
	m.exp = 7;
	ck_assert_int_eq(give(j, &m), AGG_PENDING);
	m.rank = 2;
	m.exp = -100;
	ck_assert_int_eq(give(j, &m), AGG_COMPLETE);
	res = result_of(j, last_out.set, 2, false);
	/* exp is the max of the contributions' exponents, BFP is echoed. */
	ck_assert_int_eq(res.exp, 7);
	ck_assert_uint_eq(res.flags, INCA_F_BFP);
	for (i = 0; i < 8; i++)
		ck_assert_uint_eq(get32(res.body, i), 3 * (1000 + i));

	/* BFP on a float message is refused. */
	m = cmsg(0, 0, 0, 6, INCA_DTYPE_FP32, INCA_OP_SUM, 8, body);
	m.flags |= INCA_F_BFP;
	ck_assert_int_eq(give(j, &m), AGG_DROP);
	ck_assert_int_eq(last_out.reason, AGG_DROP_DTYPE);
	ck_assert_uint_eq(set_of(j, 0, 0)->state, AGG_SET_IDLE);
	agg_job_destroy(j);
}
END_TEST

START_TEST(test_result_header)
{
	struct agg_job *j = job_new(2, 4, NLANES, true);
	struct inca_msg res;
	struct agg_set *s;

	c32(j, 1, 3, 1, 0xdeadbeef, 10);
	ck_assert_int_eq(c32(j, 0, 3, 1, 0xdeadbeef, 20), AGG_COMPLETE);
	s = last_out.set;
	ck_assert_ptr_eq(s, set_of(j, 3, 1));
	res = result_of(j, s, 1, false);
	ck_assert_uint_eq(res.flags, INCA_F_SET);
	ck_assert_uint_eq(res.slot, 3);
	ck_assert_uint_eq(res.seq, 0xdeadbeef);
	ck_assert_uint_eq(res.bitmap, 3);
	ck_assert_int_eq(res.exp, 0);
	res = result_of(j, s, 0, true);
	ck_assert_uint_eq(res.flags, INCA_F_SET | INCA_F_RETX);
	/* The rank can be rewritten in place for each member's copy. */
	agg_result_set_rank(result_buf, 31);
	ck_assert_int_eq(inca_msg_decode(result_buf, agg_result_len(s), 0, &res), INCA_WIRE_OK);
	ck_assert_uint_eq(res.rank, 31);
	ck_assert_uint_eq(res.seq, 0xdeadbeef);
	ck_assert_int_eq((int32_t)get32(res.body, 0), 30);
	agg_job_destroy(j);
}
END_TEST

/* ---- the state machine -------------------------------------------------- */

START_TEST(test_duplicate)
{
	struct agg_job *j = job_new(3, 2, NLANES, true);

	ck_assert_int_eq(c32(j, 0, 1, 0, 4, 100), AGG_PENDING);
	ck_assert_int_eq(last_out.reason, 0);
	ck_assert_ptr_eq(last_out.set, set_of(j, 1, 0));
	/* Rule 2: a second copy while filling is not counted. */
	ck_assert_int_eq(c32(j, 0, 1, 0, 4, 100), AGG_DROP);
	ck_assert_int_eq(last_out.reason, AGG_DROP_DUPLICATE);
	ck_assert_ptr_null(last_out.set);
	ck_assert_int_eq(c32(j, 1, 1, 0, 4, 10), AGG_PENDING);
	ck_assert_int_eq(c32(j, 1, 1, 0, 4, 10), AGG_DROP);
	ck_assert_int_eq(last_out.reason, AGG_DROP_DUPLICATE);
	ck_assert_uint_eq(set_of(j, 1, 0)->remaining, 1);
	ck_assert_int_eq(c32(j, 2, 1, 0, 4, 1), AGG_COMPLETE);
	check_c32_sum(j, last_out.set, 111, 3);
	agg_job_destroy(j);
}
END_TEST

START_TEST(test_replay)
{
	struct agg_job *j = job_new(2, 1, NLANES, true);

	c32(j, 0, 0, 0, 0, 5);
	ck_assert_int_eq(c32(j, 1, 0, 0, 0, 6), AGG_COMPLETE);
	/* Rule 4: a retransmission into the complete set gets the result again. */
	ck_assert_int_eq(c32(j, 1, 0, 0, 0, 6), AGG_REPLAY);
	ck_assert_ptr_eq(last_out.set, set_of(j, 0, 0));
	ck_assert_int_eq(c32(j, 0, 0, 0, 0, 5), AGG_REPLAY);
	check_c32_sum(j, last_out.set, 11, 2);
	/*
	 * Rank 0 moves on to the other set (rule 6 clears its bit in set 0):
	 * a copy of its old contribution is now stale, while rank 1, which
	 * still waits for set 0's result, keeps getting replays.
	 */
	ck_assert_int_eq(c32(j, 0, 0, 1, 1, 50), AGG_PENDING);
	ck_assert_int_eq(c32(j, 0, 0, 0, 0, 5), AGG_DROP);
	ck_assert_int_eq(last_out.reason, AGG_DROP_STALE);
	ck_assert_int_eq(c32(j, 1, 0, 0, 0, 6), AGG_REPLAY);
	ck_assert_uint_eq(last_out.set->bitmap, 2);
	check_c32_sum(j, last_out.set, 11, 2);
	ck_assert_uint_eq(result_of(j, last_out.set, 1, true).bitmap, 3);
	agg_job_destroy(j);
}
END_TEST

START_TEST(test_stale_filling)
{
	struct agg_job *j = job_new(2, 1, NLANES, true);

	/* Set 0 at seq 2 (its second use) is filling. */
	c32(j, 0, 0, 0, 0, 1);
	c32(j, 1, 0, 0, 0, 1);
	c32(j, 0, 0, 1, 1, 1);
	c32(j, 1, 0, 1, 1, 1);
	ck_assert_int_eq(c32(j, 0, 0, 0, 2, 7), AGG_PENDING);
	/* Rule 3: rank 1's copy of seq 0 arrives very late. */
	ck_assert_int_eq(c32(j, 1, 0, 0, 0, 1000), AGG_DROP);
	ck_assert_int_eq(last_out.reason, AGG_DROP_STALE);
	ck_assert_int_eq(c32(j, 1, 0, 0, 2, 8), AGG_COMPLETE);
	check_c32_sum(j, last_out.set, 15, 2);
	agg_job_destroy(j);
}
END_TEST

START_TEST(test_stale_complete)
{
	struct agg_job *j = job_new(2, 1, NLANES, true);

	c32(j, 0, 0, 0, 0, 1);
	c32(j, 1, 0, 0, 0, 1);
	c32(j, 0, 0, 1, 1, 1);
	c32(j, 1, 0, 1, 1, 1);
	c32(j, 0, 0, 0, 2, 3);
	ck_assert_int_eq(c32(j, 1, 0, 0, 2, 4), AGG_COMPLETE);
	/* Rule 5: older seq into a complete set, with the bit set or not. */
	ck_assert_int_eq(c32(j, 1, 0, 0, 0, 1000), AGG_DROP);
	ck_assert_int_eq(last_out.reason, AGG_DROP_STALE);
	ck_assert_int_eq(c32(j, 0, 0, 0, 0, 1000), AGG_DROP);
	ck_assert_int_eq(last_out.reason, AGG_DROP_STALE);
	/* Rule 4: same seq, bit cleared by the other set: stale, not a replay. */
	ck_assert_int_eq(c32(j, 0, 0, 1, 3, 9), AGG_PENDING);
	ck_assert_int_eq(c32(j, 0, 0, 0, 2, 3), AGG_DROP);
	ck_assert_int_eq(last_out.reason, AGG_DROP_STALE);
	check_c32_sum(j, set_of(j, 0, 0), 7, 2);
	agg_job_destroy(j);
}
END_TEST

START_TEST(test_conflict)
{
	struct agg_job *j = job_new(3, 2, NLANES, true);

	ck_assert_int_eq(c32(j, 0, 1, 1, 3, 1), AGG_PENDING);
	/* Rule 3: a newer use while filling is refused, the use goes on. */
	ck_assert_int_eq(c32(j, 1, 1, 1, 7, 1000), AGG_DROP);
	ck_assert_int_eq(last_out.reason, AGG_DROP_CONFLICT);
	ck_assert_int_eq(c32(j, 0, 1, 1, 7, 1000), AGG_DROP);
	ck_assert_int_eq(last_out.reason, AGG_DROP_CONFLICT);
	ck_assert_uint_eq(set_of(j, 1, 1)->seq, 3);
	ck_assert_uint_eq(set_of(j, 1, 1)->bitmap, 1);
	c32(j, 1, 1, 1, 3, 2);
	ck_assert_int_eq(c32(j, 2, 1, 1, 3, 3), AGG_COMPLETE);
	check_c32_sum(j, last_out.set, 6, 3);
	agg_job_destroy(j);
}
END_TEST

START_TEST(test_new_use)
{
	struct agg_job *j = job_new(2, 1, NLANES, true);
	struct agg_set *s = set_of(j, 0, 0);

	c32(j, 0, 0, 0, 10, 1);
	c32(j, 1, 0, 0, 10, 2);
	ck_assert_uint_eq(s->state, AGG_SET_COMPLETE);
	/* Rule 5: a newer seq starts a new use of the complete set. */
	ck_assert_int_eq(c32(j, 1, 0, 0, 12, 40), AGG_PENDING);
	ck_assert_uint_eq(s->state, AGG_SET_FILLING);
	ck_assert_uint_eq(s->seq, 12);
	ck_assert_uint_eq(s->bitmap, 2);
	ck_assert_uint_eq(s->remaining, 1);
	ck_assert_int_eq(c32(j, 0, 0, 0, 12, 30), AGG_COMPLETE);
	check_c32_sum(j, s, 70, 2);
	/* The new use may change dtype, op, count and offset. */
	{
		uint8_t body[8];
		struct inca_msg m;

		put16(body, 0, 0x3c00); /* 1.0 */
		put16(body, 1, 0xc000); /* -2.0 */
		m = cmsg(0, 0, 0, 14, INCA_DTYPE_FP16, INCA_OP_MAX, 2, body);
		m.offset = 77;
		ck_assert_int_eq(give(j, &m), AGG_PENDING);
		put16(body, 0, 0x4000); /* 2.0 */
		put16(body, 1, 0xc200); /* -3.0 */
		m.rank = 1;
		ck_assert_int_eq(give(j, &m), AGG_COMPLETE);
		m = result_of(j, s, 0, false);
		ck_assert_uint_eq(m.offset, 77);
		ck_assert_uint_eq(get16(m.body, 0), 0x4000);
		ck_assert_uint_eq(get16(m.body, 1), 0xc000);
	}
	agg_job_destroy(j);
}
END_TEST

START_TEST(test_other_set_cleared)
{
	struct agg_job *j = job_new(3, 1, NLANES, true);
	struct agg_set *s0 = set_of(j, 0, 0), *s1 = set_of(j, 0, 1);

	c32(j, 0, 0, 0, 0, 1);
	c32(j, 1, 0, 0, 0, 1);
	c32(j, 2, 0, 0, 0, 1);
	ck_assert_uint_eq(s0->bitmap, 7);
	/* Rule 1 and 6: starting set 1 clears the starter's bit in set 0... */
	c32(j, 2, 0, 1, 1, 1);
	ck_assert_uint_eq(s0->bitmap, 3);
	ck_assert_uint_eq(s0->state, AGG_SET_COMPLETE);
	/* ... and so does every further contribution counted in set 1. */
	c32(j, 0, 0, 1, 1, 1);
	ck_assert_uint_eq(s0->bitmap, 2);
	/* A dropped one does not. */
	c32(j, 0, 0, 1, 1, 1);
	ck_assert_int_eq(last_out.reason, AGG_DROP_DUPLICATE);
	c32(j, 1, 0, 1, 5, 1);
	ck_assert_int_eq(last_out.reason, AGG_DROP_CONFLICT);
	ck_assert_uint_eq(s0->bitmap, 2);
	c32(j, 1, 0, 1, 1, 1);
	ck_assert_uint_eq(s0->bitmap, 0);
	ck_assert_uint_eq(s1->bitmap, 7);
	/* The other way round: set 0's next use clears set 1. */
	c32(j, 1, 0, 0, 2, 1);
	ck_assert_uint_eq(s1->bitmap, 5);
	ck_assert_uint_eq(s0->bitmap, 2);
	agg_job_destroy(j);
}
END_TEST

START_TEST(test_other_set_filling)
{
	struct agg_job *j = job_new(2, 1, NLANES, true);

	/*
	 * A worker that breaks the window rule has both sets of slot 0 in
	 * flight. Its first contribution must still be counted only once.
	 */
	ck_assert_int_eq(c32(j, 0, 0, 0, 0, 100), AGG_PENDING);
	ck_assert_int_eq(c32(j, 0, 0, 1, 1, 5), AGG_PENDING);
	ck_assert_int_eq(c32(j, 0, 0, 0, 0, 100), AGG_DROP);
	ck_assert_int_eq(last_out.reason, AGG_DROP_DUPLICATE);
	ck_assert_int_eq(c32(j, 1, 0, 0, 0, 1), AGG_COMPLETE);
	check_c32_sum(j, last_out.set, 101, 2);
	agg_job_destroy(j);
}
END_TEST

START_TEST(test_mismatch)
{
	struct agg_job *j = job_new(3, 1, 8, true);
	struct agg_set *s = set_of(j, 0, 0);
	uint8_t body[32] = {0};
	struct inca_msg m, bad;
	unsigned i;

	for (i = 0; i < 8; i++)
		put32(body, i, 1);
	m = cmsg(0, 0, 0, 1, INCA_DTYPE_INT32, INCA_OP_SUM, 4, body);
	m.offset = 64;
	ck_assert_int_eq(give(j, &m), AGG_PENDING);
	/* Rule 2: rank 1 disagrees with the first contribution in one field at a
	 * time; each case on a job of its own, since a mismatch fails the set. */
	for (i = 0; i < 5; i++) {
		struct agg_job *jf = job_new(3, 1, 8, true);
		struct agg_set *sf = set_of(jf, 0, 0);
		struct inca_msg late;

		ck_assert_int_eq(give(jf, &m), AGG_PENDING);
		bad = m;
		bad.rank = 1;
		switch (i) {
		case 0:
			bad.count = 8;
			bad.body_len = 32;
			break;
		case 1:
			bad.dtype = INCA_DTYPE_FP32;
			break;
		case 2:
			bad.op = INCA_OP_MAX;
			break;
		case 3:
			bad.offset = 68;
			break;
		case 4:
			bad.flags |= INCA_F_BFP;
			break;
		}
		ck_assert_msg(give(jf, &bad) == AGG_MISMATCH, "field %u: verdict %d", i,
			      last_out.verdict);
		ck_assert(last_out.first);
		ck_assert_ptr_eq(last_out.set, sf);
		ck_assert_int_eq(sf->state, AGG_SET_FAILED);
		/* Rule 7: whoever sends this chunk again, or next, learns of
		 * it; nothing more is combined into the failed set. */
		late = m;
		late.rank = 2;
		ck_assert_int_eq(give(jf, &late), AGG_MISMATCH);
		ck_assert(!last_out.first);
		late.rank = 0;
		late.flags |= INCA_F_RETX;
		ck_assert_int_eq(give(jf, &late), AGG_MISMATCH);
		ck_assert_int_eq(give(jf, &bad), AGG_MISMATCH);
		ck_assert_uint_eq(sf->bitmap, 1);
		/* An older seq is stale; the next use of the set starts afresh. */
		late = m;
		late.seq = m.seq - 2;
		ck_assert_int_eq(give(jf, &late), AGG_DROP);
		ck_assert_int_eq(last_out.reason, AGG_DROP_STALE);
		late.seq = m.seq + 2;
		ck_assert_int_eq(give(jf, &late), AGG_PENDING);
		ck_assert_int_eq(sf->state, AGG_SET_FILLING);
		ck_assert_uint_eq(sf->bitmap, 1);
		agg_job_destroy(jf);
	}
	/* The original job never saw the disagreeing contributions. */
	ck_assert_uint_eq(s->bitmap, 1);
	ck_assert_uint_eq(s->remaining, 2);
	/* LAST, RETX and exp are not part of what must agree. */
	bad = m;
	bad.rank = 1;
	bad.flags |= INCA_F_LAST | INCA_F_RETX;
	ck_assert_int_eq(give(j, &bad), AGG_PENDING);
	bad.rank = 2;
	ck_assert_int_eq(give(j, &bad), AGG_COMPLETE);
	m = result_of(j, s, 0, false);
	ck_assert_uint_eq(m.flags, 0);
	for (i = 0; i < 4; i++)
		ck_assert_uint_eq(get32(m.body, i), 3);
	agg_job_destroy(j);
}
END_TEST

START_TEST(test_bad_token)
{
	struct agg_job *j = job_new(2, 1, NLANES, true);
	uint8_t body[4 * NLANES] = {0};
	struct inca_msg m = cmsg(0, 0, 0, 0, INCA_DTYPE_INT32, INCA_OP_SUM, NLANES, body);

	m.token = TOKEN ^ 1;
	ck_assert_int_eq(give(j, &m), AGG_DROP);
	ck_assert_int_eq(last_out.reason, AGG_DROP_BAD_TOKEN);
	ck_assert_uint_eq(set_of(j, 0, 0)->state, AGG_SET_IDLE);
	m.token = 0;
	ck_assert_int_eq(give(j, &m), AGG_DROP);
	ck_assert_int_eq(last_out.reason, AGG_DROP_BAD_TOKEN);
	m.token = TOKEN;
	ck_assert_int_eq(give(j, &m), AGG_PENDING);
	/* A new incarnation (incad: a new session token after a reset): the
	 * old stream's copies can start nothing in the new one. */
	agg_job_reset(j);
	agg_job_set_token(j, TOKEN + 7);
	ck_assert_int_eq(give(j, &m), AGG_DROP);
	ck_assert_int_eq(last_out.reason, AGG_DROP_BAD_TOKEN);
	ck_assert_uint_eq(set_of(j, 0, 0)->state, AGG_SET_IDLE);
	m.token = TOKEN + 7;
	ck_assert_int_eq(give(j, &m), AGG_PENDING);
	agg_job_destroy(j);
}
END_TEST

START_TEST(test_not_member)
{
	struct agg_job *j = job_new(3, 1, NLANES, true);

	/* Ranks beyond nworkers, though valid on the wire. */
	ck_assert_int_eq(c32(j, 3, 0, 0, 0, 1), AGG_DROP);
	ck_assert_int_eq(last_out.reason, AGG_DROP_NOT_MEMBER);
	ck_assert_int_eq(c32(j, 31, 0, 0, 0, 1), AGG_DROP);
	ck_assert_int_eq(last_out.reason, AGG_DROP_NOT_MEMBER);
	/* Out of the wire's range too: still only a drop. */
	ck_assert_int_eq(c32(j, 40, 0, 0, 0, 1), AGG_DROP);
	ck_assert_int_eq(last_out.reason, AGG_DROP_NOT_MEMBER);
	ck_assert_uint_eq(set_of(j, 0, 0)->state, AGG_SET_IDLE);
	agg_job_destroy(j);
}
END_TEST

START_TEST(test_members)
{
	struct agg_job_params p = params(3, 1, NLANES, true);
	struct agg_job *j = agg_job_create(&p);

	ck_assert_ptr_nonnull(j);
	/* A new job admits nobody. */
	ck_assert_int_eq(c32(j, 0, 0, 0, 0, 1), AGG_DROP);
	ck_assert_int_eq(last_out.reason, AGG_DROP_NOT_MEMBER);
	/* Bits beyond nworkers are ignored. */
	agg_job_set_members(j, 0xfffffff5u);
	ck_assert_uint_eq(j->members, 5);
	ck_assert_int_eq(c32(j, 0, 0, 0, 0, 1), AGG_PENDING);
	ck_assert_int_eq(c32(j, 1, 0, 0, 0, 10), AGG_DROP);
	ck_assert_int_eq(last_out.reason, AGG_DROP_NOT_MEMBER);
	ck_assert_int_eq(c32(j, 2, 0, 0, 0, 100), AGG_PENDING);
	/* The job still needs all nworkers: rank 1 completes it once admitted. */
	agg_job_set_members(j, 7);
	ck_assert_int_eq(c32(j, 1, 0, 0, 0, 10), AGG_COMPLETE);
	check_c32_sum(j, last_out.set, 111, 3);
	/* Removing a member stops its contributions at once. */
	agg_job_set_members(j, 3);
	ck_assert_int_eq(c32(j, 2, 0, 0, 0, 100), AGG_DROP);
	ck_assert_int_eq(last_out.reason, AGG_DROP_NOT_MEMBER);
	agg_job_destroy(j);
}
END_TEST

START_TEST(test_bad_slot)
{
	struct agg_job *j = job_new(2, 5, NLANES, true);

	ck_assert_int_eq(c32(j, 0, 5, 0, 0, 1), AGG_DROP);
	ck_assert_int_eq(last_out.reason, AGG_DROP_BAD_SLOT);
	ck_assert_int_eq(c32(j, 0, 65535, 1, 0, 1), AGG_DROP);
	ck_assert_int_eq(last_out.reason, AGG_DROP_BAD_SLOT);
	ck_assert_int_eq(c32(j, 0, 4, 1, 0, 1), AGG_PENDING);
	ck_assert_uint_eq(agg_job_busy_slots(j), 1);
	agg_job_destroy(j);
}
END_TEST

START_TEST(test_too_large)
{
	struct agg_job *j = job_new(2, 1, 16, true);
	static uint8_t body[INCA_MAX_PAYLOAD_BYTES];
	struct inca_msg m = cmsg(0, 0, 0, 0, INCA_DTYPE_FP16, INCA_OP_SUM, 17, body);

	ck_assert_int_eq(give(j, &m), AGG_DROP);
	ck_assert_int_eq(last_out.reason, AGG_DROP_TOO_LARGE);
	m = cmsg(0, 0, 0, 0, INCA_DTYPE_INT32, INCA_OP_SUM, 2048, body);
	ck_assert_int_eq(give(j, &m), AGG_DROP);
	ck_assert_int_eq(last_out.reason, AGG_DROP_TOO_LARGE);
	m = cmsg(0, 0, 0, 0, INCA_DTYPE_FP16, INCA_OP_SUM, 16, body);
	ck_assert_int_eq(give(j, &m), AGG_PENDING);
	agg_job_destroy(j);
}
END_TEST

/* 64-bit elements: big-endian wire bits. */
static void
put64(uint8_t *b, unsigned i, uint64_t v)
{
	put32(b, 2 * i, (uint32_t)(v >> 32));
	put32(b, 2 * i + 1, (uint32_t)v);
}

static uint64_t
get64(const void *b, unsigned i)
{
	return (uint64_t)get32(b, 2 * i) << 32 | get32(b, 2 * i + 1);
}

/*
 * INT64 and FP64 through the core, every op, 2..32 ranks in a random
 * order, up to the largest count a set of max_elems lanes holds
 * (max_elems / 2), against sums computed here: int64 wraps modulo 2^64,
 * fp64 elements are integers below 2^40, so every order gives the exact
 * sum, and -0 orders below +0.
 */
START_TEST(test_wide_every_op)
{
	static const unsigned dts[] = { INCA_DTYPE_INT64, INCA_DTYPE_FP64 };
	unsigned order[INCA_MAX_WORKERS], n, op, d, r, i;

	rng_state = 5;
	for (d = 0; d < 2; d++) {
		for (n = 2; n <= INCA_MAX_WORKERS; n += 5) {
			for (op = 0; op < INCA_OP_COUNT; op++) {
				unsigned dt = dts[d], count = n % 2 ? 1024 : 33;
				struct agg_job *j = job_new(n, 1, 2 * count, true);
				struct inca_msg m, res;

				shuffle(order, n);
				for (r = 0; r < n; r++) {
					for (i = 0; i < count; i++) {
						uint64_t v = (uint64_t)rng() << 32 | rng();
						double f = (double)(int64_t)(v >> 24);

						if (i == 0)
							v = r % 2 ? (uint64_t)INT64_MAX : 1;
						if (dt == INCA_DTYPE_FP64)
							memcpy(&v, &f, 8);
						if (dt == INCA_DTYPE_FP64 && i == 1)
							v = r == 0 ? UINT64_C(1) << 63 : 0;
						put64(in_wire[r], i, v);
					}
				}
				for (r = 0; r < n; r++) {
					m = cmsg(order[r], 0, 0, 7, dt, op, count, in_wire[order[r]]);
					ck_assert_int_eq(give(j, &m),
							 r + 1 < n ? AGG_PENDING : AGG_COMPLETE);
				}
				res = result_of(j, last_out.set, 0, false);
				ck_assert_uint_eq(res.body_len, 8 * count);
				for (i = 0; i < count; i++) {
					uint64_t want = get64(in_wire[0], i), got;
					double dw, dx;

					for (r = 1; r < n; r++) {
						uint64_t x = get64(in_wire[r], i);

						if (dt == INCA_DTYPE_INT64) {
							if (op == INCA_OP_SUM)
								want += x;
							else if ((op == INCA_OP_MIN) ==
								 ((int64_t)x < (int64_t)want))
								want = x;
							continue;
						}
						memcpy(&dw, &want, 8);
						memcpy(&dx, &x, 8);
						if (op == INCA_OP_SUM)
							dw += dx;
						else if (op == INCA_OP_MIN ? dx < dw ||
							 (dx == dw && signbit(dx)) :
							 dx > dw || (dx == dw && !signbit(dx)))
							dw = dx;
						memcpy(&want, &dw, 8);
					}
					got = get64(res.body, i);
					REQ_MSG(got == want, "%s %s n %u elem %u: %016llx != %016llx",
						inca_dtype_name(dt), inca_op_name(op), n, i,
						(unsigned long long)got, (unsigned long long)want);
				}
				agg_job_destroy(j);
			}
		}
	}
}
END_TEST

/* A NaN from one rank makes an FP64 element the canonical NaN, whatever the op. */
START_TEST(test_wide_nan)
{
	unsigned op, r;

	for (op = 0; op < INCA_OP_COUNT; op++) {
		struct agg_job *j = job_new(3, 1, 4, true);
		struct inca_msg m, res;
		double one = 1.0;
		uint64_t b1;

		memcpy(&b1, &one, 8);
		for (r = 0; r < 3; r++) {
			put64(in_wire[r], 0, r == 1 ? UINT64_C(0xfff0000000000123) : b1);
			put64(in_wire[r], 1, b1);
		}
		for (r = 0; r < 3; r++) {
			m = cmsg(r, 0, 0, 9, INCA_DTYPE_FP64, op, 2, in_wire[r]);
			give(j, &m);
		}
		ck_assert_int_eq(last_out.verdict, AGG_COMPLETE);
		res = result_of(j, last_out.set, 0, false);
		ck_assert_uint_eq(get64(res.body, 0), UINT64_C(0x7ff8000000000000));
		ck_assert_uint_eq(get64(res.body, 1), op == INCA_OP_SUM ? 0x4008000000000000 : b1);
		agg_job_destroy(j);
	}
}
END_TEST

/*
 * A set holds max_elems 32-bit lanes: a 64-bit element takes two, so a
 * job of max_elems 9 takes 4 of them and refuses 5 (TOO_LARGE), while it
 * takes 9 int32 elements.
 */
START_TEST(test_wide_count_limit)
{
	static const unsigned dts[] = { INCA_DTYPE_INT64, INCA_DTYPE_FP64 };
	static uint8_t body[INCA_MAX_PAYLOAD_BYTES];
	unsigned d;

	for (d = 0; d < 2; d++) {
		struct agg_job *j = job_new(2, 2, 9, true);
		struct inca_msg m = cmsg(0, 0, 0, 0, dts[d], INCA_OP_SUM, 5, body);

		ck_assert_int_eq(give(j, &m), AGG_DROP);
		ck_assert_int_eq(last_out.reason, AGG_DROP_TOO_LARGE);
		m = cmsg(0, 0, 0, 0, dts[d], INCA_OP_SUM, 4, body);
		ck_assert_int_eq(give(j, &m), AGG_PENDING);
		m = cmsg(0, 1, 0, 0, INCA_DTYPE_INT32, INCA_OP_SUM, 9, body);
		ck_assert_int_eq(give(j, &m), AGG_PENDING);
		agg_job_destroy(j);
	}
	/* The largest: 1024 elements (8192 bytes) in a set of 2048 lanes. */
	{
		struct agg_job *j = job_new(1, 1, 2048, true);
		struct inca_msg m = cmsg(0, 0, 0, 0, INCA_DTYPE_INT64, INCA_OP_SUM, 1024, body);

		ck_assert_int_eq(give(j, &m), AGG_COMPLETE);
		agg_job_destroy(j);
	}
}
END_TEST

/*
 * One use of a set has one dtype: an INT64 contribution to a set that an
 * INT32 one of the same count started (or FP64 after INT64) fails it
 * (MISMATCH) instead of reading its lanes as the wrong type; BFP on a
 * 64-bit dtype is refused (DTYPE).
 */
START_TEST(test_wide_mixed)
{
	static uint8_t body[INCA_MAX_PAYLOAD_BYTES];
	struct agg_job *j = job_new(2, 2, 64, true);
	struct inca_msg m;

	m = cmsg(0, 0, 0, 3, INCA_DTYPE_INT32, INCA_OP_SUM, 8, body);
	ck_assert_int_eq(give(j, &m), AGG_PENDING);
	m = cmsg(1, 0, 0, 3, INCA_DTYPE_INT64, INCA_OP_SUM, 8, body);
	ck_assert_int_eq(give(j, &m), AGG_MISMATCH);
	ck_assert(last_out.first);
	m = cmsg(0, 1, 0, 3, INCA_DTYPE_INT64, INCA_OP_MAX, 8, body);
	ck_assert_int_eq(give(j, &m), AGG_PENDING);
	m = cmsg(1, 1, 0, 3, INCA_DTYPE_FP64, INCA_OP_MAX, 8, body);
	ck_assert_int_eq(give(j, &m), AGG_MISMATCH);
	m = cmsg(0, 0, 1, 4, INCA_DTYPE_INT64, INCA_OP_SUM, 8, body);
	m.flags |= INCA_F_BFP;
	ck_assert_int_eq(give(j, &m), AGG_DROP);
	ck_assert_int_eq(last_out.reason, AGG_DROP_DTYPE);
	agg_job_destroy(j);
}
END_TEST

START_TEST(test_malformed)
{
	struct agg_job *j = job_new(2, 1, 16, true);
	uint8_t body[64] = {0};
	struct inca_msg m = cmsg(0, 0, 0, 0, INCA_DTYPE_INT32, INCA_OP_SUM, 16, body);

	/* What decode never lets through still cannot make the core over-read. */
	m.body_len = 63;
	ck_assert_int_eq(give(j, &m), AGG_DROP);
	ck_assert_int_eq(last_out.reason, AGG_DROP_MALFORMED);
	m.body_len = 64;
	m.body = NULL;
	ck_assert_int_eq(give(j, &m), AGG_DROP);
	ck_assert_int_eq(last_out.reason, AGG_DROP_MALFORMED);
	m.body = body;
	m.count = 0;
	ck_assert_int_eq(give(j, &m), AGG_DROP);
	ck_assert_int_eq(last_out.reason, AGG_DROP_MALFORMED);
	ck_assert_uint_eq(set_of(j, 0, 0)->state, AGG_SET_IDLE);
	agg_job_destroy(j);
}
END_TEST

START_TEST(test_dtype_op_allowed)
{
	struct agg_job_params p = params(2, 1, 8, true);
	struct agg_job *j;
	uint8_t body[32] = {0};
	struct inca_msg m;

	p.dtypes = 1u << INCA_DTYPE_BF16 | 1u << INCA_DTYPE_INT32;
	p.ops = 1u << INCA_OP_MAX;
	j = agg_job_create(&p);
	ck_assert_ptr_nonnull(j);
	agg_job_set_members(j, 3);
	m = cmsg(0, 0, 0, 0, INCA_DTYPE_FP16, INCA_OP_MAX, 8, body);
	ck_assert_int_eq(give(j, &m), AGG_DROP);
	ck_assert_int_eq(last_out.reason, AGG_DROP_DTYPE);
	m = cmsg(0, 0, 0, 0, INCA_DTYPE_BF16, INCA_OP_SUM, 8, body);
	ck_assert_int_eq(give(j, &m), AGG_DROP);
	ck_assert_int_eq(last_out.reason, AGG_DROP_OP);
	/* Unknown values are refused the same way. */
	m = cmsg(0, 0, 0, 0, INCA_DTYPE_BF16, 9, 8, body);
	ck_assert_int_eq(give(j, &m), AGG_DROP);
	ck_assert_int_eq(last_out.reason, AGG_DROP_OP);
	m = cmsg(0, 0, 0, 0, INCA_DTYPE_INT32, INCA_OP_MAX, 8, body);
	m.dtype = 200;
	ck_assert_int_eq(give(j, &m), AGG_DROP);
	ck_assert_int_eq(last_out.reason, AGG_DROP_DTYPE);
	m = cmsg(0, 0, 0, 0, INCA_DTYPE_BF16, INCA_OP_MAX, 8, body);
	ck_assert_int_eq(give(j, &m), AGG_PENDING);
	agg_job_destroy(j);
}
END_TEST

START_TEST(test_not_contrib)
{
	struct agg_job *j = job_new(2, 1, NLANES, true);
	uint8_t body[4 * NLANES] = {0};
	struct inca_msg m = cmsg(0, 0, 0, 0, INCA_DTYPE_INT32, INCA_OP_SUM, NLANES, body);

	m.type = INCA_MSG_RESULT;
	ck_assert_int_eq(give(j, &m), AGG_DROP);
	ck_assert_int_eq(last_out.reason, AGG_DROP_NOT_CONTRIB);
	m.type = INCA_MSG_JOIN;
	ck_assert_int_eq(give(j, &m), AGG_DROP);
	ck_assert_int_eq(last_out.reason, AGG_DROP_NOT_CONTRIB);
	agg_job_destroy(j);
}
END_TEST

START_TEST(test_check_order)
{
	struct agg_job_params p = params(2, 1, 4, true);
	struct agg_job *j;
	static uint8_t body[INCA_MAX_PAYLOAD_BYTES];
	struct inca_msg m;

	p.dtypes = 1u << INCA_DTYPE_INT32;
	p.ops = 1u << INCA_OP_SUM;
	j = agg_job_create(&p);
	ck_assert_ptr_nonnull(j);
	agg_job_set_members(j, 1);
	/* Wrong in every respect; each fix uncovers the next check. */
	m = cmsg(1, 9, 0, 0, INCA_DTYPE_FP32, INCA_OP_MIN, 100, body);
	m.type = INCA_MSG_RESULT;
	m.token = 0;
	m.body_len = 0;
	m.flags |= INCA_F_BFP;
	ck_assert_int_eq(give(j, &m), AGG_DROP);
	ck_assert_int_eq(last_out.reason, AGG_DROP_NOT_CONTRIB);
	m.type = INCA_MSG_CONTRIB;
	give(j, &m);
	ck_assert_int_eq(last_out.reason, AGG_DROP_BAD_TOKEN);
	m.token = TOKEN;
	give(j, &m);
	ck_assert_int_eq(last_out.reason, AGG_DROP_NOT_MEMBER);
	m.rank = 0;
	give(j, &m);
	ck_assert_int_eq(last_out.reason, AGG_DROP_BAD_SLOT);
	m.slot = 0;
	give(j, &m);
	ck_assert_int_eq(last_out.reason, AGG_DROP_DTYPE);
	m.dtype = INCA_DTYPE_INT32;
	give(j, &m);
	ck_assert_int_eq(last_out.reason, AGG_DROP_OP);
	m.op = INCA_OP_SUM;
	give(j, &m);
	ck_assert_int_eq(last_out.reason, AGG_DROP_TOO_LARGE);
	m.count = 4;
	give(j, &m);
	ck_assert_int_eq(last_out.reason, AGG_DROP_MALFORMED);
	m.body_len = 16;
	/* BFP is fine on int32. */
	ck_assert_int_eq(give(j, &m), AGG_PENDING);
	agg_job_destroy(j);
}
END_TEST

START_TEST(test_one_worker)
{
	struct agg_job *j = job_new(1, 2, NLANES, true);

	/* Every contribution completes its set at once. */
	ck_assert_int_eq(c32(j, 0, 0, 0, 0, 42), AGG_COMPLETE);
	check_c32_sum(j, last_out.set, 42, 1);
	ck_assert_uint_eq(last_out.set->bitmap, 1);
	ck_assert_int_eq(c32(j, 0, 0, 0, 0, 42), AGG_REPLAY);
	ck_assert_int_eq(c32(j, 0, 1, 0, 1, 43), AGG_COMPLETE);
	ck_assert_int_eq(c32(j, 0, 0, 1, 2, 44), AGG_COMPLETE);
	ck_assert_int_eq(c32(j, 0, 0, 0, 0, 42), AGG_DROP);
	ck_assert_int_eq(last_out.reason, AGG_DROP_STALE);
	ck_assert_int_eq(c32(j, 0, 0, 0, 4, 45), AGG_COMPLETE);
	check_c32_sum(j, last_out.set, 45, 1);
	ck_assert_uint_eq(agg_job_busy_slots(j), 0);
	agg_job_destroy(j);
}
END_TEST

START_TEST(test_seq_wrap)
{
	struct agg_job *j = job_new(2, 1, NLANES, true);

	/* Set 0 used at 2^32 - 2, set 1 at 2^32 - 1, set 0 again at 0. */
	c32(j, 0, 0, 0, 0xfffffffeu, 1);
	c32(j, 1, 0, 0, 0xfffffffeu, 1);
	c32(j, 0, 0, 1, 0xffffffffu, 2);
	c32(j, 1, 0, 1, 0xffffffffu, 2);
	/* 0 is after 0xfffffffe: a new use, not a stale one. */
	ck_assert_int_eq(c32(j, 0, 0, 0, 0, 3), AGG_PENDING);
	ck_assert_uint_eq(set_of(j, 0, 0)->seq, 0);
	/* 0xfffffffe is now before the set's seq: stale while filling. */
	ck_assert_int_eq(c32(j, 1, 0, 0, 0xfffffffeu, 1), AGG_DROP);
	ck_assert_int_eq(last_out.reason, AGG_DROP_STALE);
	ck_assert_int_eq(c32(j, 1, 0, 0, 0, 4), AGG_COMPLETE);
	check_c32_sum(j, last_out.set, 7, 2);
	/* 1 is after 0xffffffff for set 1 too, and stale after it is reused. */
	ck_assert_int_eq(c32(j, 1, 0, 1, 1, 5), AGG_PENDING);
	ck_assert_int_eq(c32(j, 0, 0, 1, 0xffffffffu, 2), AGG_DROP);
	ck_assert_int_eq(last_out.reason, AGG_DROP_STALE);
	/* A seq 2^31 ahead would be a conflict, 2^31 - 1 behind is stale. */
	ck_assert_int_eq(c32(j, 0, 0, 1, 0x80000000u, 5), AGG_DROP);
	ck_assert_int_eq(last_out.reason, AGG_DROP_CONFLICT);
	ck_assert_int_eq(c32(j, 0, 0, 1, 0x80000002u, 5), AGG_DROP);
	ck_assert_int_eq(last_out.reason, AGG_DROP_STALE);
	agg_job_destroy(j);
}
END_TEST

START_TEST(test_reset)
{
	struct agg_job *j = job_new(3, 4, NLANES, true);
	unsigned i;

	c32(j, 0, 0, 0, 0, 1);
	c32(j, 0, 1, 0, 1, 1);
	c32(j, 0, 2, 0, 2, 1);
	c32(j, 1, 2, 0, 2, 1);
	c32(j, 2, 2, 0, 2, 1);
	ck_assert_uint_eq(agg_job_busy_slots(j), 2);
	agg_job_reset(j);
	ck_assert_uint_eq(agg_job_busy_slots(j), 0);
	for (i = 0; i < 8; i++) {
		ck_assert_uint_eq(j->sets[i].state, AGG_SET_IDLE);
		ck_assert_uint_eq(j->sets[i].bitmap, 0);
	}
	/* Members survive a reset. */
	ck_assert_uint_eq(j->members, 7);
	/* The job restarts from scratch: even seq 0 again, even a "duplicate". */
	ck_assert_int_eq(c32(j, 0, 0, 0, 0, 10), AGG_PENDING);
	ck_assert_uint_eq(set_of(j, 0, 0)->bitmap, 1);
	/* A replay of complete slot 2 is gone: the rank starts a new use. */
	ck_assert_int_eq(c32(j, 1, 2, 0, 2, 1), AGG_PENDING);
	c32(j, 1, 0, 0, 0, 20);
	ck_assert_int_eq(c32(j, 2, 0, 0, 0, 30), AGG_COMPLETE);
	check_c32_sum(j, last_out.set, 60, 3);
	agg_job_destroy(j);
}
END_TEST

START_TEST(test_busy_slots)
{
	struct agg_job *j = job_new(2, 6, NLANES, true);

	ck_assert_uint_eq(agg_job_busy_slots(j), 0);
	c32(j, 0, 0, 0, 0, 1);
	c32(j, 0, 1, 0, 1, 1);
	ck_assert_uint_eq(agg_job_busy_slots(j), 2);
	/* Both sets of one slot filling count as one slot. */
	c32(j, 0, 1, 1, 7, 1);
	ck_assert_uint_eq(agg_job_busy_slots(j), 2);
	c32(j, 1, 0, 0, 0, 1);
	ck_assert_uint_eq(agg_job_busy_slots(j), 1);
	c32(j, 1, 1, 0, 1, 1);
	ck_assert_uint_eq(agg_job_busy_slots(j), 1);
	c32(j, 1, 1, 1, 7, 1);
	ck_assert_uint_eq(agg_job_busy_slots(j), 0);
	agg_job_destroy(j);
}
END_TEST

START_TEST(test_tofino_mode)
{
	struct agg_job *j = job_new(2, 1, NLANES, false);
	struct agg_set *s0 = set_of(j, 0, 0);

	/* FILLING: no seq comparison, a clear bit is counted, a set one is a duplicate. */
	ck_assert_int_eq(c32(j, 0, 0, 0, 100, 1), AGG_PENDING);
	ck_assert_int_eq(c32(j, 0, 0, 0, 5000, 1), AGG_DROP);
	ck_assert_int_eq(last_out.reason, AGG_DROP_DUPLICATE);
	ck_assert_int_eq(c32(j, 1, 0, 0, 7, 2), AGG_COMPLETE);
	/* The result carries the first contribution's seq. */
	ck_assert_uint_eq(s0->seq, 100);
	check_c32_sum(j, s0, 3, 2);
	/* COMPLETE and bit set: replay, whatever the seq. */
	ck_assert_int_eq(c32(j, 1, 0, 0, 0, 9), AGG_REPLAY);
	ck_assert_int_eq(c32(j, 0, 0, 0, 100, 9), AGG_REPLAY);
	/* Moving on to set 1 clears the bit; the next set 0 copy is a new use. */
	ck_assert_int_eq(c32(j, 0, 0, 1, 101, 1), AGG_PENDING);
	ck_assert_int_eq(c32(j, 1, 0, 1, 101, 1), AGG_COMPLETE);
	ck_assert_uint_eq(s0->bitmap, 0);
	ck_assert_int_eq(c32(j, 1, 0, 0, 102, 30), AGG_PENDING);
	ck_assert_int_eq(c32(j, 0, 0, 0, 102, 40), AGG_COMPLETE);
	check_c32_sum(j, s0, 70, 2);
	/*
	 * What the seq check is for: a copy of seq 102 delayed past the next
	 * use of set 1 and rank 0's own move on to it is taken, without seq
	 * comparisons, as the start of a new use. (With seq_check it would
	 * be STALE; see test_stale_complete.)
	 */
	ck_assert_int_eq(c32(j, 0, 0, 1, 103, 1), AGG_PENDING);
	ck_assert_int_eq(c32(j, 0, 0, 0, 102, 40), AGG_PENDING);
	ck_assert_uint_eq(s0->state, AGG_SET_FILLING);
	ck_assert_uint_eq(s0->seq, 102);
	/* MISMATCH is still checked. */
	{
		uint8_t body[16] = {0};
		struct inca_msg m = cmsg(1, 0, 0, 104, INCA_DTYPE_FP32, INCA_OP_SUM, 4, body);

		ck_assert_int_eq(give(j, &m), AGG_DROP);
		ck_assert_int_eq(last_out.reason, AGG_DROP_MISMATCH);
	}
	agg_job_destroy(j);
}
END_TEST

/* ---- tree leaves --------------------------------------------------------- */

static struct agg_job *
leaf_new(unsigned nworkers, unsigned pool)
{
	struct agg_job_params p = params(nworkers, pool, NLANES, true);
	struct agg_job *j;

	p.tree = true;
	j = agg_job_create(&p);
	ck_assert_ptr_nonnull(j);
	agg_job_set_members(j, UINT32_MAX);
	return j;
}

/* The parent's RESULT for the chunk (slot 0, @set, @seq): lane i = v + i. */
static enum agg_verdict
parent_result(struct agg_job *j, unsigned set, uint32_t seq, int32_t v, int8_t exp,
	      unsigned count)
{
	static uint8_t body[4 * NLANES];
	struct inca_msg m;
	unsigned i;

	for (i = 0; i < NLANES; i++)
		put32(body, i, (uint32_t)(v + (int32_t)i));
	m = cmsg(3, 0, set, seq, INCA_DTYPE_INT32, INCA_OP_SUM, count, body);
	m.type = INCA_MSG_RESULT;
	m.token = 0x77777777; /* the parent's session: the caller's to check */
	m.exp = exp;
	memset(&last_out, 0xa5, sizeof(last_out));
	return agg_parent_result(j, &m, &last_out);
}

START_TEST(test_tree_params)
{
	struct agg_job_params p = params(2, 4, NLANES, false);

	/* A leaf needs sequence numbers: the parent's result names its chunk. */
	p.tree = true;
	errno = 0;
	ck_assert_ptr_null(agg_job_create(&p));
	ck_assert_int_eq(errno, EINVAL);
}
END_TEST

START_TEST(test_tree_partial)
{
	struct agg_job *j = leaf_new(2, 1);
	struct agg_set *s;
	struct inca_msg up;
	size_t len;

	ck_assert_int_eq(c32(j, 0, 0, 0, 7, 5), AGG_PENDING);
	/* The last member completes the partial, not the result. */
	ck_assert_int_eq(c32(j, 1, 0, 0, 7, 6), AGG_PARTIAL);
	s = last_out.set;
	ck_assert_int_eq(s->state, AGG_SET_PARTIAL);
	ck_assert_uint_eq(agg_job_busy_slots(j), 1);
	/* Written as this leaf's CONTRIB to the parent's job. */
	len = agg_partial_write(j, s, 900, 4, 0x77777777, false, result_buf);
	ck_assert_int_eq(inca_msg_decode(result_buf, len, 0, &up), INCA_WIRE_OK);
	ck_assert_int_eq(up.type, INCA_MSG_CONTRIB);
	ck_assert_uint_eq(up.job, 900);
	ck_assert_uint_eq(up.rank, 4);
	ck_assert_uint_eq(up.token, 0x77777777);
	ck_assert_uint_eq(up.seq, 7);
	ck_assert_uint_eq(up.bitmap, 0);
	ck_assert_uint_eq(up.flags & INCA_F_RETX, 0);
	ck_assert_int_eq((int32_t)get32(up.body, 0), 11);
	ck_assert_int_eq((int32_t)get32(up.body, 1), 13);
	len = agg_partial_write(j, s, 900, 4, 0x77777777, true, result_buf);
	ck_assert_int_eq(inca_msg_decode(result_buf, len, 0, &up), INCA_WIRE_OK);
	ck_assert_uint_eq(up.flags & INCA_F_RETX, INCA_F_RETX);
	/* A member's retransmission sends the partial again; nothing counts twice. */
	ck_assert_int_eq(c32(j, 0, 0, 0, 7, 5), AGG_RESEND_UP);
	ck_assert_ptr_eq(last_out.set, s);
	/* A newer chunk cannot come from a correct member before the result. */
	ck_assert_int_eq(c32(j, 0, 0, 0, 9, 5), AGG_DROP);
	ck_assert_int_eq(last_out.reason, AGG_DROP_CONFLICT);
	ck_assert_int_eq(c32(j, 0, 0, 0, 5, 5), AGG_DROP);
	ck_assert_int_eq(last_out.reason, AGG_DROP_STALE);
	/* Rule 6 leaves a waiting set alone: its bits drive the resends. */
	ck_assert_int_eq(c32(j, 1, 0, 1, 8, 6), AGG_PENDING);
	ck_assert_uint_eq(s->bitmap, 3);

	/* The parent's result for another chunk, or of another geometry, is refused. */
	ck_assert_int_eq(parent_result(j, 0, 6, 100, 0, NLANES), AGG_DROP);
	ck_assert_int_eq(last_out.reason, AGG_DROP_STALE);
	ck_assert_int_eq(parent_result(j, 0, 7, 100, 0, NLANES - 1), AGG_DROP);
	ck_assert_int_eq(last_out.reason, AGG_DROP_MISMATCH);
	/* The right one replaces the partial: the members get the tree's sum. */
	ck_assert_int_eq(parent_result(j, 0, 7, 100, 3, NLANES), AGG_COMPLETE);
	ck_assert_ptr_eq(last_out.set, s);
	ck_assert_int_eq(s->state, AGG_SET_COMPLETE);
	ck_assert_int_eq(s->exp, 3);
	check_c32_sum(j, s, 100, 1);
	/* A second copy of it finds nothing waiting; retransmissions now replay. */
	ck_assert_int_eq(parent_result(j, 0, 7, 100, 3, NLANES), AGG_DROP);
	ck_assert_int_eq(last_out.reason, AGG_DROP_STALE);
	ck_assert_int_eq(c32(j, 0, 0, 0, 7, 5), AGG_REPLAY);
	agg_job_destroy(j);
}
END_TEST

START_TEST(test_tree_parent_fail)
{
	struct agg_job *j = leaf_new(1, 2);
	struct inca_msg m;

	/* One member: its contribution is the partial at once. */
	ck_assert_int_eq(c32(j, 0, 1, 0, 1, 5), AGG_PARTIAL);
	m = cmsg(0, 1, 0, 2, INCA_DTYPE_INT32, INCA_OP_SUM, 0, NULL);
	m.type = INCA_MSG_NACK;
	ck_assert_int_eq(agg_parent_fail(j, &m, &last_out), AGG_DROP);
	m.seq = 1;
	ck_assert_int_eq(agg_parent_fail(j, &m, &last_out), AGG_MISMATCH);
	ck_assert(last_out.first);
	ck_assert_int_eq(set_of(j, 1, 0)->state, AGG_SET_FAILED);
	/* The members learn it from their retransmissions too (rule 7). */
	ck_assert_int_eq(c32(j, 0, 1, 0, 1, 5), AGG_MISMATCH);
	/* Not a leaf: a parent's result is no contribution. */
	agg_job_destroy(j);
	j = job_new(1, 1, NLANES, true);
	ck_assert_int_eq(parent_result(j, 0, 0, 1, 0, NLANES), AGG_DROP);
	ck_assert_int_eq(last_out.reason, AGG_DROP_NOT_CONTRIB);
	agg_job_destroy(j);
}
END_TEST

/* ---- routed chunks (docs/protocol.md, "Routed chunks") -------------------- */

/*
 * A routed contribution of rank @rank to slot 0 set 0, seq @seq, root @root:
 * NLANES int32 elements v, v + 1, ... , or BRIEF (no body) when @v is
 * BRIEF_V. @gather adds GATHER.
 */
#define BRIEF_V INT32_MIN
#define ROOT_ANON 99u
static uint8_t routed_body[4 * NLANES];

static enum agg_verdict
routed(struct agg_job *j, unsigned rank, uint32_t seq, unsigned root, bool gather, int32_t v)
{
	struct inca_msg m;
	unsigned i;

	for (i = 0; i < NLANES; i++)
		put32(routed_body, i, (uint32_t)(v + (int32_t)i));
	m = cmsg(rank, 0, 0, seq, INCA_DTYPE_INT32, INCA_OP_SUM, NLANES, routed_body);
	m.flags |= INCA_F_ROUTED | (gather ? INCA_F_GATHER : 0);
	/* ROOT_ANON: the anonymous root of a tree (bitmap 0). */
	m.bitmap = root == ROOT_ANON ? 0 : UINT32_C(1) << root;
	if (v == BRIEF_V) {
		m.flags |= INCA_F_BRIEF;
		m.body = NULL;
		m.body_len = 0;
	}
	return give(j, &m);
}

/*
 * The RESULT of @s to @rank: decoded, checked against what every RESULT
 * holds; with elements (@full) or BRIEF.
 */
static struct inca_msg
routed_result(struct agg_job *j, const struct agg_set *s, unsigned rank, bool replay,
	      bool full)
{
	struct inca_msg r;
	size_t len;

	memset(result_buf, 0xee, sizeof(result_buf));
	len = agg_result_write(j, s, rank, replay, result_buf);
	REQ_EQ(len, agg_result_len_to(j, s, rank));
	REQ_EQ(len, full ? agg_result_len(s) : INCA_HDR_LEN);
	/* Nothing written past the message. */
	REQ_EQ(result_buf[len], 0xee);
	REQ_EQ(inca_msg_decode(result_buf, len, 0, &r), INCA_WIRE_OK);
	REQ_EQ(r.type, INCA_MSG_RESULT);
	REQ_EQ(r.rank, rank);
	REQ_EQ(r.count, s->count);
	REQ_EQ(r.seq, s->seq);
	REQ_EQ(r.bitmap, j->full_mask);
	REQ_EQ(r.flags & (INCA_F_ROUTED | INCA_F_GATHER), s->flags & (INCA_F_ROUTED | INCA_F_GATHER));
	REQ_EQ(!!(r.flags & INCA_F_ROUTED), 1);
	REQ_EQ(!!(r.flags & INCA_F_BRIEF), !full);
	REQ_EQ(!!(r.flags & INCA_F_RETX), replay);
	return r;
}

/* ReduceScatter / Reduce: every rank contributes, only the root gets the sum. */
START_TEST(test_routed_reduce)
{
	struct agg_job *j = job_new(3, 2, NLANES, true);
	struct agg_set *s = set_of(j, 0, 0);
	struct inca_msg r;
	unsigned i;

	ck_assert_int_eq(routed(j, 0, 5, 1, false, 10), AGG_PENDING);
	ck_assert_int_eq(routed(j, 0, 5, 1, false, 10), AGG_DROP);
	ck_assert_int_eq(last_out.reason, AGG_DROP_DUPLICATE);
	ck_assert_int_eq(routed(j, 2, 5, 1, false, -3), AGG_PENDING);
	ck_assert_int_eq(routed(j, 1, 5, 1, false, 100), AGG_COMPLETE);
	ck_assert_ptr_eq(last_out.set, s);
	ck_assert_uint_eq(agg_result_dests(j, s), 1u << 1);
	r = routed_result(j, s, 1, false, true);
	for (i = 0; i < NLANES; i++)
		ck_assert_int_eq((int32_t)get32(r.body, i), 107 + 3 * (int32_t)i);
	(void)routed_result(j, s, 0, false, false);
	(void)routed_result(j, s, 2, false, false);
	/* A retransmission gets the form its sender receives, as a replay. */
	ck_assert_int_eq(routed(j, 2, 5, 1, false, -3), AGG_REPLAY);
	(void)routed_result(j, s, 2, true, false);
	ck_assert_int_eq(routed(j, 1, 5, 1, false, 100), AGG_REPLAY);
	r = routed_result(j, s, 1, true, true);
	ck_assert_int_eq((int32_t)get32(r.body, 0), 107);
	/* Not a routed set: everybody receives the elements. */
	ck_assert_int_eq(c32(j, 0, 1, 0, 6, 1), AGG_PENDING);
	ck_assert_uint_eq(agg_result_dests(j, set_of(j, 1, 0)), 0x7);
	agg_job_destroy(j);
}
END_TEST

/*
 * AllGather: the root's elements, unchanged, to every other rank, whatever
 * the order in which the BRIEF contributions come; the root gets a BRIEF.
 */
START_TEST(test_routed_gather)
{
	static const int32_t first[] = { INT32_MIN + 1, -1, 0x7fc00001, 0 };
	unsigned order, i, k;

	for (order = 0; order < 3; order++) {
		struct agg_job *j = job_new(3, 2, NLANES, true);
		struct agg_set *s = set_of(j, 0, 0);
		enum agg_verdict v = AGG_DROP;
		struct inca_msg r;

		/* The root (rank 2) first, second or last. */
		for (k = 0; k < 3; k++) {
			unsigned rank = (k + order) % 3;

			v = routed(j, rank, 9, 2, true, rank == 2 ? first[0] : BRIEF_V);
			ck_assert_int_eq(v, k < 2 ? AGG_PENDING : AGG_COMPLETE);
			if (k == 0) {
				/* A copy is a duplicate, never counted twice. */
				ck_assert_int_eq(routed(j, rank, 9, 2, true,
							rank == 2 ? first[0] : BRIEF_V), AGG_DROP);
				ck_assert_int_eq(last_out.reason, AGG_DROP_DUPLICATE);
			}
		}
		ck_assert_uint_eq(agg_result_dests(j, s), 0x3);
		for (i = 0; i < 2; i++) {
			r = routed_result(j, s, i, false, true);
			for (k = 0; k < NLANES; k++)
				ck_assert_int_eq((int32_t)get32(r.body, k), first[0] + (int32_t)k);
		}
		(void)routed_result(j, s, 2, false, false);
		ck_assert_int_eq(routed(j, 0, 9, 2, true, BRIEF_V), AGG_REPLAY);
		(void)routed_result(j, s, 0, true, true);
		agg_job_destroy(j);
	}
	/* Every bit pattern goes through an int32 gather. */
	{
		struct agg_job *j = job_new(2, 1, NLANES, true);
		struct inca_msg m, r;
		uint8_t body[4 * NLANES];

		for (k = 0; k < NLANES; k++)
			put32(body, k, (uint32_t)first[k]);
		m = cmsg(0, 0, 0, 1, INCA_DTYPE_INT32, INCA_OP_SUM, NLANES, body);
		m.flags |= INCA_F_ROUTED | INCA_F_GATHER;
		m.bitmap = 1;
		ck_assert_int_eq(give(j, &m), AGG_PENDING);
		ck_assert_int_eq(routed(j, 1, 1, 0, true, BRIEF_V), AGG_COMPLETE);
		r = routed_result(j, last_out.set, 1, false, true);
		for (k = 0; k < NLANES; k++)
			ck_assert_uint_eq(get32(r.body, k), (uint32_t)first[k]);
		agg_job_destroy(j);
	}
}
END_TEST

/* Ranks that disagree on the route fail the chunk like any mismatch. */
START_TEST(test_routed_mismatch)
{
	struct agg_job *j = job_new(2, 2, NLANES, true);

	/* Another root. */
	ck_assert_int_eq(routed(j, 0, 1, 0, false, 1), AGG_PENDING);
	ck_assert_int_eq(routed(j, 1, 1, 1, false, 1), AGG_MISMATCH);
	ck_assert(last_out.first);
	/* Routed against not routed. */
	ck_assert_int_eq(routed(j, 0, 2 * 2, 0, false, 1), AGG_PENDING);
	ck_assert_int_eq(c32(j, 1, 0, 0, 4, 1), AGG_MISMATCH);
	/* A gather against a reduce. */
	ck_assert_int_eq(routed(j, 0, 3 * 2, 0, false, 1), AGG_PENDING);
	ck_assert_int_eq(routed(j, 1, 6, 0, true, BRIEF_V), AGG_MISMATCH);
	agg_job_destroy(j);
}
END_TEST

/* What a routed chunk cannot be: counted drops, never a crash or a count. */
START_TEST(test_routed_drops)
{
	struct agg_job *j = job_new(2, 2, NLANES, true);
	struct inca_msg m;

	/* A root beyond the job: nobody could receive the result. */
	ck_assert_int_eq(routed(j, 0, 1, 2, false, 1), AGG_DROP);
	ck_assert_int_eq(last_out.reason, AGG_DROP_ROUTE);
	/* BRIEF where elements are needed (decode refuses it too). */
	ck_assert_int_eq(routed(j, 0, 1, 0, true, BRIEF_V), AGG_DROP);
	ck_assert_int_eq(last_out.reason, AGG_DROP_MALFORMED);
	ck_assert_int_eq(routed(j, 1, 1, 0, false, BRIEF_V), AGG_DROP);
	ck_assert_int_eq(last_out.reason, AGG_DROP_MALFORMED);
	/* BRIEF or GATHER without ROUTED, and ROUTED without a root. */
	m = cmsg(0, 0, 0, 1, INCA_DTYPE_INT32, INCA_OP_SUM, NLANES, NULL);
	m.flags = INCA_F_GATHER | INCA_F_BRIEF;
	m.body_len = 0;
	ck_assert_int_eq(give(j, &m), AGG_DROP);
	ck_assert_int_eq(last_out.reason, AGG_DROP_MALFORMED);
	m.flags = INCA_F_ROUTED | INCA_F_GATHER | INCA_F_BRIEF;
	m.bitmap = 0x3;
	ck_assert_int_eq(give(j, &m), AGG_DROP);
	ck_assert_int_eq(last_out.reason, AGG_DROP_MALFORMED);
	ck_assert_int_eq(set_of(j, 0, 0)->state, AGG_SET_IDLE);
	agg_job_destroy(j);
}
END_TEST

/* ---- routed chunks in a tree (docs/protocol.md, "Routed chunks in a tree") */

#define TREE_LEAVES 2
#define TREE_PER_LEAF 2

/* Decode @len bytes of result_buf, which must be valid. */
static struct inca_msg
decoded(size_t len)
{
	struct inca_msg m;

	REQ_EQ(inca_msg_decode(result_buf, len, 0, &m), INCA_WIRE_OK);
	return m;
}

/*
 * One chunk (seq @seq) through two leaves of two workers and a spine, every
 * message written, decoded and read as the next level would: global rank
 * g = 2 * leaf + member, the chunk's root @root (global), a gather or a
 * reduce. The ranks' contributions: reduce, 10 g + 1 + i in lane i;
 * gather, the root's 1000 + root + i. Checks each level's forms and each
 * worker's result, and returns the bytes of the messages on the uplinks
 * (@up: partials, @down: the spine's RESULTs).
 */
static void
tree_chunk(uint32_t seq, unsigned root, bool gather, size_t *up, size_t *down)
{
	struct agg_job *leaf[TREE_LEAVES], *spine = job_new(TREE_LEAVES, 2, NLANES, true);
	struct agg_set *ls[TREE_LEAVES], *ss = NULL;
	unsigned l, w, i;
	int32_t sum = 0;

	*up = *down = 0;
	for (l = 0; l < TREE_LEAVES; l++) {
		leaf[l] = leaf_new(TREE_PER_LEAF, 2);
		for (w = 0; w < TREE_PER_LEAF; w++) {
			unsigned g = l * TREE_PER_LEAF + w;
			/* Workers name the root in their leaf's ranks, or nobody. */
			unsigned named = root / TREE_PER_LEAF == l ? root % TREE_PER_LEAF : ROOT_ANON;
			int32_t v = gather ? (g == root ? (int32_t)(1000 + root) : BRIEF_V) :
					     (int32_t)(10 * g + 1);

			if (!gather)
				sum += v;
			ck_assert_int_eq(routed(leaf[l], w, seq, named, gather, v),
					 w + 1 < TREE_PER_LEAF ? AGG_PENDING : AGG_PARTIAL);
		}
		ls[l] = last_out.set;
	}
	for (l = 0; l < TREE_LEAVES; l++) {
		bool holds = root / TREE_PER_LEAF == l;
		size_t len = agg_partial_write(leaf[l], ls[l], JOB, l, TOKEN, false, result_buf);
		struct inca_msg m = decoded(len);

		/* The root's leaf names itself; a gathered chunk's other
		 * leaves send a BRIEF partial. */
		ck_assert_uint_eq(len, agg_partial_len(ls[l]));
		ck_assert_uint_eq(m.bitmap, holds ? 1u << l : 0);
		ck_assert_uint_eq(!!(m.flags & INCA_F_BRIEF), gather && !holds);
		ck_assert_uint_eq(m.flags & (INCA_F_ROUTED | INCA_F_GATHER),
				  INCA_F_ROUTED | (gather ? INCA_F_GATHER : 0));
		ck_assert_uint_eq(m.count, NLANES);
		*up += len;
		ck_assert_int_eq(give(spine, &m), l + 1 < TREE_LEAVES ? AGG_PENDING : AGG_COMPLETE);
		ss = last_out.set;
	}
	ck_assert_uint_eq(ss->root, root / TREE_PER_LEAF);
	for (l = 0; l < TREE_LEAVES; l++) {
		bool holds = root / TREE_PER_LEAF == l;
		size_t len = agg_result_write(spine, ss, l, false, result_buf);
		struct inca_msg m = decoded(len);

		/* The sum down the root's leaf's link only; gathered elements
		 * down every other. */
		ck_assert_uint_eq(!!(m.flags & INCA_F_BRIEF), gather ? holds : !holds);
		*down += len;
		memset(&last_out, 0xa5, sizeof(last_out));
		ck_assert_int_eq(agg_parent_result(leaf[l], &m, &last_out), AGG_COMPLETE);
		ck_assert_ptr_eq(last_out.set, ls[l]);
		for (w = 0; w < TREE_PER_LEAF; w++) {
			unsigned g = l * TREE_PER_LEAF + w;
			bool elems = gather ? g != root : g == root;
			struct inca_msg r = routed_result(leaf[l], ls[l], w, false, elems);

			for (i = 0; elems && i < NLANES; i++)
				ck_assert_int_eq((int32_t)get32(r.body, i),
						 gather ? (int32_t)(1000 + root + i) :
							  sum + (int32_t)(i * TREE_LEAVES * TREE_PER_LEAF));
		}
		/* A worker's retransmission now gets the replay of its form. */
		ck_assert_int_eq(routed(leaf[l], 0, seq,
					holds ? root % TREE_PER_LEAF : ROOT_ANON, gather,
					gather ? (l * TREE_PER_LEAF == root ? (int32_t)(1000 + root) :
									  BRIEF_V) : (int32_t)(10 * l * TREE_PER_LEAF + 1)),
				 AGG_REPLAY);
		agg_job_destroy(leaf[l]);
	}
	agg_job_destroy(spine);
}

/* ReduceScatter, Reduce and AllGather through a tree, every root. */
START_TEST(test_tree_routed)
{
	size_t up, down, up_r, down_r;
	unsigned root;

	for (root = 0; root < TREE_LEAVES * TREE_PER_LEAF; root++) {
		tree_chunk(3, root, false, &up_r, &down_r);
		/* Reduced: both partials carry elements, one RESULT does. */
		ck_assert_uint_eq(up_r, 2 * (INCA_HDR_LEN + 4 * NLANES));
		ck_assert_uint_eq(down_r, 2 * INCA_HDR_LEN + 4 * NLANES);
		tree_chunk(5, root, true, &up, &down);
		/* Gathered: one partial carries elements, one RESULT does. */
		ck_assert_uint_eq(up, 2 * INCA_HDR_LEN + 4 * NLANES);
		ck_assert_uint_eq(down, 2 * INCA_HDR_LEN + 4 * NLANES);
	}
}
END_TEST

/*
 * Levels or ranks that disagree on the root: failed chunks (NACK
 * MISMATCH), never a result.
 */
START_TEST(test_tree_routed_mismatch)
{
	struct agg_job *j = job_new(2, 2, NLANES, true), *l;
	struct inca_msg m;
	size_t len;

	/* At a parent: two members name themselves. */
	ck_assert_int_eq(routed(j, 0, 1, 0, false, 1), AGG_PENDING);
	ck_assert_int_eq(routed(j, 1, 1, 1, false, 1), AGG_MISMATCH);
	ck_assert(last_out.first);
	/* An anonymous member meets one that names another rank. */
	ck_assert_int_eq(routed(j, 0, 2, ROOT_ANON, false, 1), AGG_PENDING);
	ck_assert_int_eq(routed(j, 1, 2, 0, false, 1), AGG_MISMATCH);
	ck_assert_int_eq(routed(j, 1, 4, 0, false, 1), AGG_PENDING);
	ck_assert_int_eq(routed(j, 0, 4, ROOT_ANON, false, 1), AGG_MISMATCH);
	/* One names itself, the other is anonymous: the parent's normal case. */
	ck_assert_int_eq(routed(j, 1, 6, 1, true, 1), AGG_PENDING);
	ck_assert_int_eq(routed(j, 0, 6, ROOT_ANON, true, BRIEF_V), AGG_COMPLETE);
	ck_assert_uint_eq(agg_result_dests(j, last_out.set), 1u << 0);
	/* At the top nobody named the root: nobody could receive it. */
	ck_assert_int_eq(routed(j, 0, 8, ROOT_ANON, false, 1), AGG_PENDING);
	ck_assert_int_eq(routed(j, 1, 8, ROOT_ANON, false, 1), AGG_MISMATCH);
	ck_assert(last_out.first);
	ck_assert_int_eq(set_of(j, 0, 0)->state, AGG_SET_FAILED);
	agg_job_destroy(j);

	l = leaf_new(2, 2);
	/* A leaf's members disagree: one names a member, one nobody. */
	ck_assert_int_eq(routed(l, 0, 1, 1, false, 1), AGG_PENDING);
	ck_assert_int_eq(routed(l, 1, 1, ROOT_ANON, false, 1), AGG_MISMATCH);
	/* The parent answers in the other form than the leaf needs: the
	 * sum of a reduce whose root is not here, or BRIEF to the root's leaf. */
	ck_assert_int_eq(routed(l, 0, 2, ROOT_ANON, false, 1), AGG_PENDING);
	ck_assert_int_eq(routed(l, 1, 2, ROOT_ANON, false, 2), AGG_PARTIAL);
	len = agg_partial_write(l, last_out.set, JOB, 0, TOKEN, false, result_buf);
	m = decoded(len);
	ck_assert_uint_eq(m.bitmap, 0);
	m.type = INCA_MSG_RESULT;
	m.bitmap = 0x3;
	memset(&last_out, 0xa5, sizeof(last_out));
	ck_assert_int_eq(agg_parent_result(l, &m, &last_out), AGG_MISMATCH);
	ck_assert(last_out.first);
	ck_assert_int_eq(set_of(l, 0, 0)->state, AGG_SET_FAILED);
	ck_assert_int_eq(routed(l, 0, 4, 1, false, 1), AGG_PENDING);
	ck_assert_int_eq(routed(l, 1, 4, 1, false, 2), AGG_PARTIAL);
	m.seq = 4;
	m.flags |= INCA_F_BRIEF;
	m.body = NULL;
	m.body_len = 0;
	ck_assert_int_eq(agg_parent_result(l, &m, &last_out), AGG_MISMATCH);
	/* A routed chunk against the unrouted set of the same seq: refused. */
	ck_assert_int_eq(c32(l, 0, 0, 0, 6, 1), AGG_PENDING);
	ck_assert_int_eq(c32(l, 1, 0, 0, 6, 1), AGG_PARTIAL);
	m.seq = 6;
	ck_assert_int_eq(agg_parent_result(l, &m, &last_out), AGG_DROP);
	ck_assert_int_eq(last_out.reason, AGG_DROP_MISMATCH);
	ck_assert_int_eq(set_of(l, 0, 0)->state, AGG_SET_PARTIAL);
	agg_job_destroy(l);
}
END_TEST

static Suite *
agg_suite(void)
{
	Suite *s = suite_create("agg");
	const struct {
		const char *name;
		const TTest *fn;
	} cases[] = {
		{ "params", test_params },
		{ "layout", test_layout },
		{ "drop_names", test_drop_names },
		{ "int32_every_op", test_int32_every_op },
		{ "int32_wraps", test_int32_wraps },
		{ "float_exact", test_float_exact },
		{ "float_arbitrary", test_float_arbitrary },
		{ "float_nan", test_float_nan },
		{ "bfp", test_bfp },
		{ "result_header", test_result_header },
		{ "duplicate", test_duplicate },
		{ "replay", test_replay },
		{ "stale_filling", test_stale_filling },
		{ "stale_complete", test_stale_complete },
		{ "conflict", test_conflict },
		{ "new_use", test_new_use },
		{ "other_set_cleared", test_other_set_cleared },
		{ "other_set_filling", test_other_set_filling },
		{ "mismatch", test_mismatch },
		{ "bad_token", test_bad_token },
		{ "not_member", test_not_member },
		{ "members", test_members },
		{ "bad_slot", test_bad_slot },
		{ "too_large", test_too_large },
		{ "wide_every_op", test_wide_every_op },
		{ "wide_nan", test_wide_nan },
		{ "wide_count_limit", test_wide_count_limit },
		{ "wide_mixed", test_wide_mixed },
		{ "malformed", test_malformed },
		{ "dtype_op_allowed", test_dtype_op_allowed },
		{ "not_contrib", test_not_contrib },
		{ "check_order", test_check_order },
		{ "one_worker", test_one_worker },
		{ "seq_wrap", test_seq_wrap },
		{ "reset", test_reset },
		{ "busy_slots", test_busy_slots },
		{ "tofino_mode", test_tofino_mode },
		{ "tree_params", test_tree_params },
		{ "tree_partial", test_tree_partial },
		{ "tree_parent_fail", test_tree_parent_fail },
		{ "routed_reduce", test_routed_reduce },
		{ "routed_gather", test_routed_gather },
		{ "routed_mismatch", test_routed_mismatch },
		{ "routed_drops", test_routed_drops },
		{ "tree_routed", test_tree_routed },
		{ "tree_routed_mismatch", test_tree_routed_mismatch },
	};
	unsigned i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		TCase *tc = tcase_create(cases[i].name);

		tcase_set_timeout(tc, 60);
		tcase_add_test(tc, cases[i].fn);
		suite_add_tcase(s, tc);
	}
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(agg_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

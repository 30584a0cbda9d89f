/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * Fuzz target: Ethernet frames as incad's dataplane receives them, through
 * the whole DPDK-free receive path: inca_frame_parse(), inca_msg_decode(),
 * inca_ctrl_decode() and, for the messages of a job, agg_contribute() and
 * agg_result_write() on real jobs.
 *
 * Input: a sequence of records, each
 *
 *     ctrl (1 byte) | length (2 bytes, big-endian) | frame (length bytes)
 *
 * (the last frame is cut to what is left of the input). The ctrl bits pick
 * what a real daemon varies between packets:
 *   0-1  max_elems given to the decoder: 0 (absolute), 16, 256, 1024
 *   2    a membership event first: the message's rank leaves (or rejoins)
 *        its job, whose sets are reset, as on LEAVE or eviction
 *   3    the aggregator listens on ALT_PORT instead of INCA_UDP_PORT
 *   4    write the RESULT copy of every member, not only the sender's
 *   5    reset every job first
 *   6    the UDP payload is a RoCEv2 packet: BTH and DETH checked by
 *        inca_roce_parse() against the spec, the message inside decoded
 *
 * Jobs persist across inputs, so that the fuzzer can walk the slot state
 * machine over many calls; they are reset every RESET_EVERY inputs (the
 * environment variable INCA_FUZZ_FRAME_RESET overrides it; 1 makes every
 * input start from fresh jobs, which is how to reproduce a crash alone).
 *
 * Properties held besides memory safety and defined behaviour:
 *  - frame and message verdicts are docs/protocol.md's tables' (spec.c);
 *  - a parsed frame rebuilt by inca_frame_build() parses to the same
 *    message, and a frame for one port is WRONG_PORT for another;
 *  - every job exists twice, on the best kernels of this CPU and on the
 *    portable ones, next to a model of "Slots and shadow sets" written
 *    here from the rules with the scalar reference kernels: the three
 *    agree on every verdict, drop reason and set state, and the results
 *    are byte-identical (including their headers);
 *  - no rank is ever counted twice in one use of a set, and a set
 *    completes with every rank counted exactly once;
 *  - every RESULT written decodes as a valid message.
 */
#include <stdbool.h>
#include <string.h>

#include <inca/wire.h>

#include "agg.h"
#include "fuzz.h"
#include "kernels.h"

#define ALT_PORT 4791
#define RESET_EVERY 256
#define MAX_RECORDS 64

#define CTRL_LIMIT 0x03
#define CTRL_MEMBER 0x04
#define CTRL_ALT_PORT 0x08
#define CTRL_ALL_COPIES 0x10
#define CTRL_RESET 0x20
#define CTRL_ROCE 0x40

static const unsigned decode_limits[4] = {0, 16, 256, 1024};

/* One shadow set of the model: the fields the rules speak of. */
struct model_set {
	uint8_t state;
	uint32_t bitmap;
	uint16_t remaining;
	uint8_t dtype, op, flags;
	int8_t exp;
	uint16_t count;
	uint32_t seq, offset;
	uint8_t root;        /* a routed chunk's root ("Routed chunks"), 0xff: none named */
	uint32_t namers;     /* ranks whose contribution named a root */
	bool anon;           /* an anonymous contribution (bitmap 0) was counted */
	uint32_t counted;    /* ranks counted in this use; rule 6 never clears it */
	unsigned ncounted;
	uint32_t *acc;       /* max_elems lanes, through agg_ref_* */
};

struct fuzz_job {
	struct agg_job_params p;
	uint32_t members0;       /* members after a reset */
	uint32_t members;
	uint32_t full_mask;
	struct agg_job *best;    /* kernels agg_kernels_init() picks */
	struct agg_job *port;    /* portable kernels */
	struct model_set *sets;  /* pool_size * 2, as the core lays them out */
};

/*
 * Jobs that differ in everything the core branches on: size (1, 2, 3 and
 * 32 ranks), pool, max_elems, allowed dtypes and ops, seq_check, and one
 * with a rank not admitted.
 */
static struct fuzz_job jobs[] = {
	{.p = {.job = 1, .token = 0x1234, .nworkers = 3, .pool_size = 4, .max_elems = 64,
	       .dtypes = 0xf, .ops = 0x7, .seq_check = true}, .members0 = 0x7},
	{.p = {.job = 2, .token = 0xdeadbeef, .nworkers = 2, .pool_size = 2, .max_elems = 256,
	       .dtypes = 0x3, .ops = 0x1, .seq_check = false}, .members0 = 0x3},
	{.p = {.job = 7, .token = 0, .nworkers = 1, .pool_size = 1, .max_elems = 4096,
	       .dtypes = 0xe, .ops = 0x7, .seq_check = true}, .members0 = 0x1},
	{.p = {.job = 300, .token = 0x494e4341, .nworkers = 32, .pool_size = 3,
	       .max_elems = 8, .dtypes = 0xf, .ops = 0x6, .seq_check = false},
	 .members0 = 0xffffffff},
	{.p = {.job = 9, .token = 9, .nworkers = 4, .pool_size = 2, .max_elems = 32,
	       .dtypes = 0x9, .ops = 0x7, .seq_check = true}, .members0 = 0xb},
};

#define NJOBS (sizeof(jobs) / sizeof(jobs[0]))

static unsigned long inputs;
static unsigned long reset_every = RESET_EVERY;

static void
model_set_clear(struct model_set *s, size_t max_elems)
{
	uint32_t *acc = s->acc;

	memset(s, 0, sizeof(*s));
	s->acc = acc;
	memset(acc, 0, max_elems * sizeof(uint32_t));
}

static void
job_reset(struct fuzz_job *fj)
{
	size_t i;

	agg_job_reset(fj->best);
	agg_job_reset(fj->port);
	for (i = 0; i < (size_t)fj->p.pool_size * 2; i++)
		model_set_clear(&fj->sets[i], fj->p.max_elems);
}

static void
job_set_members(struct fuzz_job *fj, uint32_t members)
{
	fj->members = members & fj->full_mask;
	agg_job_set_members(fj->best, members);
	agg_job_set_members(fj->port, members);
	FUZZ_CHECK(fj->best->members == fj->members && fj->port->members == fj->members,
		   "members 0x%x admitted as 0x%x", members, fj->best->members);
}

static void
reset_all(void)
{
	size_t i;

	for (i = 0; i < NJOBS; i++) {
		job_reset(&jobs[i]);
		job_set_members(&jobs[i], jobs[i].members0);
	}
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *env = getenv("INCA_FUZZ_FRAME_RESET");
	size_t i, k;

	(void)argc;
	(void)argv;
	if (env != NULL && strtoul(env, NULL, 0) > 0)
		reset_every = strtoul(env, NULL, 0);
	agg_kernels_init();
	for (i = 0; i < NJOBS; i++) {
		struct fuzz_job *fj = &jobs[i];

		agg_kernels_force_portable(0);
		fj->best = agg_job_create(&fj->p);
		agg_kernels_force_portable(1);
		fj->port = agg_job_create(&fj->p);
		agg_kernels_force_portable(0);
		fj->sets = calloc((size_t)fj->p.pool_size * 2, sizeof(*fj->sets));
		if (fj->best == NULL || fj->port == NULL || fj->sets == NULL)
			abort();
		for (k = 0; k < (size_t)fj->p.pool_size * 2; k++) {
			fj->sets[k].acc = calloc(fj->p.max_elems, sizeof(uint32_t));
			if (fj->sets[k].acc == NULL)
				abort();
		}
		fj->full_mask = fj->p.nworkers == 32 ? UINT32_MAX :
			(UINT32_C(1) << fj->p.nworkers) - 1;
		FUZZ_CHECK(fj->best->full_mask == fj->full_mask, "full mask of job %u",
			   fj->p.job);
	}
	reset_all();
	return 0;
}

/* ---- the model: docs/protocol.md, "Slots and shadow sets" ------------- */

static bool
older(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) < 0;
}

/* Rule 6: counting @bit in one set clears it in the other, unless FILLING. */
static void
model_clear_other(struct model_set *o, uint32_t bit)
{
	if (o->state != AGG_SET_FILLING)
		o->bitmap &= ~bit;
}

/* "Routed chunks": the root a CONTRIB names by its one bitmap bit, or 0xff. */
static uint8_t
model_root(const struct inca_msg *m)
{
	uint8_t r = 0;

	if (!(m->flags & INCA_F_ROUTED))
		return 0;
	if (m->bitmap == 0)
		return 0xff;
	while (!(m->bitmap & (UINT32_C(1) << r)))
		r++;
	return r;
}

/*
 * "Routed chunks in a tree": the roots of one use agree when every
 * contribution names the same one, or when only the root itself names it
 * and the others are anonymous. Said as sets: the ranks that named a root
 * are {root} alone whenever an anonymous contribution is counted.
 */
static bool
model_route_fits(const struct model_set *s, const struct inca_msg *m)
{
	uint8_t r = model_root(m), root = r != 0xff ? r : s->root;
	uint32_t namers = s->namers | (r != 0xff ? UINT32_C(1) << m->rank : 0);
	bool anon = s->anon || r == 0xff;

	if (!(m->flags & INCA_F_ROUTED))
		return true;
	if (r != 0xff && s->root != 0xff && r != s->root)
		return false;
	return !anon || namers == 0 || (root < 32 && namers == UINT32_C(1) << root);
}

static void
model_route_note(struct model_set *s, const struct inca_msg *m)
{
	uint8_t r = model_root(m);

	if (!(m->flags & INCA_F_ROUTED))
		return;
	if (r == 0xff) {
		s->anon = true;
		return;
	}
	s->namers |= UINT32_C(1) << m->rank;
	s->root = r;
}

/* Only the root's elements are a gathered chunk's; everybody's are reduced. */
static bool
model_has_elems(const struct inca_msg *m)
{
	return !(m->flags & INCA_F_GATHER) || m->rank == model_root(m);
}

/* A completed routed use whose root nobody named fails (not on a leaf). */
static bool
p_unrouted(const struct fuzz_job *fj, const struct model_set *s)
{
	return !fj->p.tree && fj->p.seq_check && (s->flags & INCA_F_ROUTED) && s->root == 0xff;
}

static enum agg_verdict
model_start(const struct fuzz_job *fj, struct model_set *s, struct model_set *o,
	    const struct inca_msg *m, uint32_t bit)
{
	if (model_has_elems(m))
		agg_ref_init(m->dtype, s->acc, m->body, m->count);
	s->root = model_root(m);
	s->namers = 0;
	s->anon = false;
	model_route_note(s, m);
	s->bitmap = bit;
	s->counted = bit;
	s->ncounted = 1;
	s->seq = m->seq;
	s->dtype = m->dtype;
	s->op = m->op;
	s->count = m->count;
	s->offset = m->offset;
	s->flags = m->flags & (INCA_F_BFP | INCA_F_LAST | INCA_F_ROUTED | INCA_F_GATHER);
	s->exp = m->exp;
	s->remaining = fj->p.nworkers - 1;
	model_clear_other(o, bit);
	if (s->remaining == 0 && p_unrouted(fj, s)) {
		s->state = AGG_SET_FAILED;
		return AGG_MISMATCH;
	}
	s->state = s->remaining == 0 ? AGG_SET_COMPLETE : AGG_SET_FILLING;
	return s->remaining == 0 ? AGG_COMPLETE : AGG_PENDING;
}

static enum agg_verdict
model_contribute(struct fuzz_job *fj, const struct inca_msg *m, enum agg_drop *reason,
		 size_t *setidx)
{
	const struct agg_job_params *p = &fj->p;
	struct model_set *s, *o;
	uint32_t bit;

	*reason = 0;
#define DROP(r) \
	do { \
		*reason = AGG_DROP_##r; \
		return AGG_DROP; \
	} while (0)
	if (m->type != INCA_MSG_CONTRIB)
		DROP(NOT_CONTRIB);
	if (m->token != p->token)
		DROP(BAD_TOKEN);
	if (m->rank >= p->nworkers || !(fj->members & (UINT32_C(1) << m->rank)))
		DROP(NOT_MEMBER);
	if (m->slot >= p->pool_size)
		DROP(BAD_SLOT);
	if (!(p->dtypes & (1u << m->dtype)))
		DROP(DTYPE);
	if (!(p->ops & (1u << m->op)))
		DROP(OP);
	if (m->count > p->max_elems)
		DROP(TOO_LARGE);
	if (m->count == 0 || (!(m->flags & INCA_F_BRIEF) &&
			      m->body_len < (size_t)m->count * inca_dtype_size(m->dtype)))
		DROP(MALFORMED);
	if ((m->flags & INCA_F_BFP) && m->dtype != INCA_DTYPE_INT32)
		DROP(DTYPE);
	if (m->flags & (INCA_F_ROUTED | INCA_F_GATHER | INCA_F_BRIEF)) {
		if (!(m->flags & INCA_F_ROUTED) || (m->bitmap & (m->bitmap - 1)) != 0 ||
		    ((m->flags & INCA_F_BRIEF) && model_has_elems(m)))
			DROP(MALFORMED);
		if (model_root(m) != 0xff && model_root(m) >= p->nworkers)
			DROP(ROUTE);
	}

	bit = UINT32_C(1) << m->rank;
	*setidx = 2 * (size_t)m->slot + (m->flags & INCA_F_SET);
	s = &fj->sets[*setidx];
	o = &fj->sets[*setidx ^ 1];
	switch (s->state) {
	case AGG_SET_IDLE:
		return model_start(fj, s, o, m, bit);
	case AGG_SET_FILLING:
		if (p->seq_check && m->seq != s->seq) {
			if (older(m->seq, s->seq))
				DROP(STALE);
			DROP(CONFLICT);
		}
		if (m->dtype != s->dtype || m->op != s->op || m->count != s->count ||
		    m->offset != s->offset || !model_route_fits(s, m) ||
		    (m->flags & (INCA_F_BFP | INCA_F_ROUTED | INCA_F_GATHER)) !=
			    (s->flags & (INCA_F_BFP | INCA_F_ROUTED | INCA_F_GATHER))) {
			/* Rule 2: with sequence numbers the chunk fails. */
			if (!p->seq_check)
				DROP(MISMATCH);
			s->state = AGG_SET_FAILED;
			return AGG_MISMATCH;
		}
		if (s->bitmap & bit)
			DROP(DUPLICATE);
		/* Exactly once: the rules never let a rank be counted twice. */
		FUZZ_CHECK(!(s->counted & bit), "rank %u counted twice in slot %u set %u",
			   m->rank, m->slot, m->flags & INCA_F_SET);
		if (!(s->flags & INCA_F_GATHER))
			agg_ref_combine(s->dtype, s->op, s->acc, m->body, s->count);
		else if (model_has_elems(m))
			agg_ref_init(s->dtype, s->acc, m->body, s->count);
		s->bitmap |= bit;
		s->counted |= bit;
		s->ncounted++;
		model_route_note(s, m);
		if (m->exp > s->exp)
			s->exp = m->exp;
		model_clear_other(o, bit);
		if (--s->remaining > 0)
			return AGG_PENDING;
		if (p_unrouted(fj, s)) {
			s->state = AGG_SET_FAILED;
			return AGG_MISMATCH;
		}
		s->state = AGG_SET_COMPLETE;
		FUZZ_CHECK(s->counted == fj->full_mask && s->ncounted == p->nworkers,
			   "set completed with ranks 0x%x counted %u times", s->counted,
			   s->ncounted);
		return AGG_COMPLETE;
	case AGG_SET_FAILED:
		/* Rule 7 (only with sequence numbers). */
		if (m->seq == s->seq)
			return AGG_MISMATCH;
		if (older(m->seq, s->seq))
			DROP(STALE);
		return model_start(fj, s, o, m, bit);
	default:
		if (p->seq_check && m->seq != s->seq) {
			if (older(m->seq, s->seq))
				DROP(STALE);
			return model_start(fj, s, o, m, bit);
		}
		if (s->bitmap & bit)
			return AGG_REPLAY;
		if (p->seq_check)
			DROP(STALE);
		return model_start(fj, s, o, m, bit);
	}
#undef DROP
}

/* ---- comparing the core with the model -------------------------------- */

static void
check_set(const struct fuzz_job *fj, const struct agg_job *j, size_t idx)
{
	const struct model_set *w = &fj->sets[idx];
	const struct agg_set *s = &j->sets[idx];

	FUZZ_CHECK(s->slot == idx / 2 && s->set == (idx & 1), "set %zu moved", idx);
	FUZZ_CHECK(s->state == w->state && s->bitmap == w->bitmap,
		   "job %u set %zu: state %u bitmap 0x%x, the rules say %u 0x%x", fj->p.job,
		   idx, s->state, s->bitmap, w->state, w->bitmap);
	if (s->state == AGG_SET_IDLE)
		return;
	FUZZ_CHECK(s->seq == w->seq && s->dtype == w->dtype && s->op == w->op &&
		   s->count == w->count && s->offset == w->offset && s->flags == w->flags &&
		   s->exp == w->exp, "job %u set %zu: fields of the use differ", fj->p.job, idx);
	if (s->state == AGG_SET_FILLING)
		FUZZ_CHECK(s->remaining == w->remaining, "job %u set %zu: remaining %u, want %u",
			   fj->p.job, idx, s->remaining, w->remaining);
}

static unsigned
model_busy_slots(const struct fuzz_job *fj)
{
	unsigned slot, n = 0;

	for (slot = 0; slot < fj->p.pool_size; slot++)
		if (fj->sets[2 * slot].state == AGG_SET_FILLING ||
		    fj->sets[2 * slot + 1].state == AGG_SET_FILLING)
			n++;
	return n;
}

/* Does @rank receive the elements of @w's result, or a BRIEF one? */
static bool
model_gets_elems(const struct model_set *w, uint16_t rank)
{
	if (!(w->flags & INCA_F_ROUTED))
		return true;
	return (w->flags & INCA_F_GATHER) ? rank != w->root : rank == w->root;
}

/* Length of the RESULT of model set @w to @rank. */
static size_t
model_result_len(const struct model_set *w, uint16_t rank)
{
	return INCA_HDR_LEN +
	       (model_gets_elems(w, rank) ? (size_t)w->count * inca_dtype_size(w->dtype) : 0);
}

/* What the RESULT of model set @w must be, byte for byte. */
static void
model_result(const struct fuzz_job *fj, const struct model_set *w, size_t idx,
	     uint16_t rank, bool replay, uint8_t *buf)
{
	bool brief = !model_gets_elems(w, rank);

	struct inca_msg m = {
		.version = INCA_PROTO_VERSION,
		.type = INCA_MSG_RESULT,
		.dtype = w->dtype,
		.op = w->op,
		.job = fj->p.job,
		.rank = rank,
		.token = fj->p.token,
		.slot = (uint16_t)(idx / 2),
		.flags = (uint8_t)((idx & 1) | w->flags | (replay ? INCA_F_RETX : 0) |
				   (brief ? INCA_F_BRIEF : 0)),
		.exp = w->exp,
		.seq = w->seq,
		.offset = w->offset,
		.count = w->count,
		.bitmap = fj->full_mask,
	};

	inca_hdr_encode(&m, buf);
	if (!brief)
		agg_ref_export(w->dtype, buf + INCA_HDR_LEN, w->acc, w->count);
}

static void
check_result(const struct fuzz_job *fj, const struct agg_out *ob, const struct agg_out *op,
	     size_t idx, const struct inca_msg *m, bool replay, bool all_copies)
{
	const struct model_set *w = &fj->sets[idx];
	size_t len = agg_result_len_to(fj->best, ob->set, m->rank), n;
	uint8_t *rb, *rp, *want;
	struct inca_msg r;
	unsigned rank;

	FUZZ_CHECK(len == model_result_len(w, m->rank) &&
		   agg_result_len_to(fj->port, op->set, m->rank) == len, "result length %zu", len);
	/* Exactly the advertised size, so that ASan sees any write beyond it. */
	rb = malloc(len);
	rp = malloc(len);
	want = malloc(len);
	if (rb == NULL || rp == NULL || want == NULL)
		abort();
	FUZZ_CHECK(agg_result_write(fj->best, ob->set, m->rank, replay, rb) == len,
		   "agg_result_write length");
	FUZZ_CHECK(agg_result_write(fj->port, op->set, m->rank, replay, rp) == len,
		   "agg_result_write length");
	model_result(fj, w, idx, m->rank, replay, want);
	FUZZ_CHECK(memcmp(rb, rp, len) == 0, "job %u set %zu: %s and portable kernels differ",
		   fj->p.job, idx, agg_kernels_impl());
	FUZZ_CHECK(memcmp(rb, want, len) == 0,
		   "job %u set %zu: result differs from the reference (dtype %s op %s count %u)",
		   fj->p.job, idx, inca_dtype_name(w->dtype), inca_op_name(w->op), w->count);
	FUZZ_CHECK(inca_msg_decode(rb, len, 0, &r) == INCA_WIRE_OK && r.type == INCA_MSG_RESULT,
		   "the aggregator's RESULT is not a valid message: %s",
		   inca_wire_err_name(inca_msg_decode(rb, len, 0, &r)));

	if (!all_copies)
		goto out;
	/* Each member's copy, in a buffer of exactly its size: the sender's
	 * with the rank rewritten when it is of the same form (incad's
	 * template), else written for it. */
	for (rank = 0; rank < fj->p.nworkers; rank++) {
		uint8_t *cb, *cw;

		if (!(fj->members & (UINT32_C(1) << rank)))
			continue;
		n = model_result_len(w, (uint16_t)rank);
		FUZZ_CHECK(agg_result_len_to(fj->best, ob->set, (uint16_t)rank) == n,
			   "length of the copy for rank %u", rank);
		cb = malloc(n);
		cw = malloc(n);
		if (cb == NULL || cw == NULL)
			abort();
		if (model_gets_elems(w, (uint16_t)rank) == model_gets_elems(w, m->rank)) {
			memcpy(cb, rb, n);
			agg_result_set_rank(cb, (uint16_t)rank);
		} else {
			FUZZ_CHECK(agg_result_write(fj->best, ob->set, (uint16_t)rank, replay,
						    cb) == n, "copy length for rank %u", rank);
		}
		model_result(fj, w, idx, (uint16_t)rank, replay, cw);
		FUZZ_CHECK(memcmp(cb, cw, n) == 0, "copy for rank %u", rank);
		free(cw);
		free(cb);
	}
out:
	free(want);
	free(rp);
	free(rb);
}

static void
contribute(struct fuzz_job *fj, const struct inca_msg *m, uint8_t ctrl)
{
	struct agg_out ob, op;
	enum agg_verdict vb, vp, vm;
	enum agg_drop reason;
	size_t idx = SIZE_MAX;

	if (ctrl & CTRL_MEMBER) {
		/* A LEAVE, an eviction or a rejoin: the job's sets restart. */
		job_set_members(fj, fj->members ^ (UINT32_C(1) << (m->rank % 32)));
		job_reset(fj);
	}

	vb = agg_contribute(fj->best, m, &ob);
	vp = agg_contribute(fj->port, m, &op);
	vm = model_contribute(fj, m, &reason, &idx);

	FUZZ_CHECK(vb == ob.verdict && vp == op.verdict, "verdict returned and stored differ");
	FUZZ_CHECK(vb == vp, "verdicts differ between kernel sets: %d %d", vb, vp);
	FUZZ_CHECK(vb == vm, "job %u: verdict %d (%s), the rules say %d (%s)", fj->p.job, vb,
		   vb == AGG_DROP ? agg_drop_name(ob.reason) : "-", vm,
		   vm == AGG_DROP ? agg_drop_name(reason) : "-");
	if (vb == AGG_DROP) {
		FUZZ_CHECK(ob.reason == reason && op.reason == reason,
			   "job %u: drop %s, the rules say %s", fj->p.job,
			   agg_drop_name(ob.reason), agg_drop_name(reason));
		FUZZ_CHECK(ob.set == NULL && op.set == NULL, "a drop names a set");
		FUZZ_CHECK(strcmp(agg_drop_name(ob.reason), "?") != 0 &&
			   strcmp(agg_drop_str(ob.reason), "unknown reason") != 0,
			   "drop reason %u has no name", ob.reason);
	} else {
		FUZZ_CHECK(ob.set == &fj->best->sets[idx] && op.set == &fj->port->sets[idx],
			   "verdict for the wrong set");
	}

	if (idx != SIZE_MAX) {
		check_set(fj, fj->best, idx);
		check_set(fj, fj->best, idx ^ 1);
		check_set(fj, fj->port, idx);
		check_set(fj, fj->port, idx ^ 1);
	}
	FUZZ_CHECK(agg_job_busy_slots(fj->best) == model_busy_slots(fj), "busy slots");

	if (vb == AGG_COMPLETE || vb == AGG_REPLAY)
		check_result(fj, &ob, &op, idx, m, vb == AGG_REPLAY,
			     (ctrl & CTRL_ALL_COPIES) != 0);
}

/* ---- frames and messages ---------------------------------------------- */

static void
check_ctrl_body(const struct inca_msg *m)
{
	uint8_t out[INCA_CTRL_LEN], want[INCA_CTRL_LEN];
	struct inca_ctrl_info c;

	inca_ctrl_decode(m->body, &c);
	inca_ctrl_encode(&c, out);
	memcpy(want, m->body, INCA_CTRL_LEN);
	FUZZ_CHECK(memcmp(out, want, INCA_CTRL_LEN) == 0, "control body round trip");
}

/* A frame that parsed must parse again, the same, once rebuilt. */
static void
check_rebuild(const uint8_t *frame, const struct inca_frame *f, uint16_t port)
{
	size_t len = INCA_ENCAP_LEN + f->msg_len;
	struct inca_frame g;
	uint8_t *b = malloc(len);

	if (b == NULL)
		abort();
	memcpy(b + INCA_ENCAP_LEN, f->msg, f->msg_len);
	FUZZ_CHECK(inca_frame_build(b, frame, frame + 6, f->src_ip, f->dst_ip, f->src_port,
				    f->dst_port, f->msg_len) == len, "inca_frame_build length");
	FUZZ_CHECK(inca_frame_parse(b, len, port, &g) == INCA_WIRE_OK,
		   "a frame inca_frame_build made does not parse: %s",
		   inca_wire_err_name(inca_frame_parse(b, len, port, &g)));
	FUZZ_CHECK(g.src_ip == f->src_ip && g.dst_ip == f->dst_ip &&
		   g.src_port == f->src_port && g.dst_port == f->dst_port &&
		   g.msg == b + INCA_ENCAP_LEN && g.msg_len == f->msg_len &&
		   memcmp(b, frame, 12) == 0, "rebuilt frame parses differently");
	free(b);
}

static void
one_frame(const uint8_t *frame, size_t len, uint8_t ctrl)
{
	uint16_t port = (ctrl & CTRL_ALT_PORT) ? ALT_PORT : INCA_UDP_PORT;
	uint16_t other = (ctrl & CTRL_ALT_PORT) ? INCA_UDP_PORT : ALT_PORT;
	unsigned limit = decode_limits[ctrl & CTRL_LIMIT];
	enum inca_wire_err err, want;
	struct spec_frame sf;
	struct inca_frame f;
	struct inca_msg m;
	size_t i;

	err = inca_frame_parse(frame, len, port, &f);
	want = spec_frame_check(frame, len, port, &sf);
	FUZZ_CHECK(err == want, "frame: parse says %s, the spec %s", inca_wire_err_name(err),
		   inca_wire_err_name(want));
	if (err != INCA_WIRE_OK)
		return;
	FUZZ_CHECK(f.eth == frame && f.msg == frame + sf.msg_off && f.msg_len == sf.msg_len &&
		   f.src_ip == sf.src_ip && f.dst_ip == sf.dst_ip && f.src_port == sf.src_port &&
		   f.dst_port == sf.dst_port, "frame fields differ from the spec's");
	FUZZ_CHECK(inca_frame_parse(frame, len, other, &f) == INCA_WIRE_WRONG_PORT,
		   "a frame for port %u is not WRONG_PORT for %u", port, other);
	inca_frame_parse(frame, len, port, &f);
	check_rebuild(frame, &f, port);

	if (ctrl & CTRL_ROCE) {
		struct inca_roce_info ri;
		const uint8_t *rm;
		size_t rl, off, ol;

		err = inca_roce_parse(f.msg, f.msg_len, &ri, &rm, &rl);
		want = spec_roce_check(f.msg, f.msg_len, &off, &ol);
		FUZZ_CHECK(err == want, "RoCE: parse says %s, the spec %s",
			   inca_wire_err_name(err), inca_wire_err_name(want));
		if (err != INCA_WIRE_OK)
			return;
		FUZZ_CHECK(rm == f.msg + off && rl == ol, "RoCE message differs from the spec's");
		f.msg = rm;
		f.msg_len = rl;
	}
	err = inca_msg_decode(f.msg, f.msg_len, limit, &m);
	want = spec_msg_check(f.msg, f.msg_len, limit);
	FUZZ_CHECK(err == want, "message: decode says %s, the spec %s",
		   inca_wire_err_name(err), inca_wire_err_name(want));
	if (err != INCA_WIRE_OK)
		return;
	if (m.type != INCA_MSG_CONTRIB && m.type != INCA_MSG_RESULT &&
	    m.body_len >= INCA_CTRL_LEN)
		check_ctrl_body(&m);
	for (i = 0; i < NJOBS; i++)
		if (jobs[i].p.job == m.job)
			contribute(&jobs[i], &m, ctrl);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned records = 0;

	if (++inputs % reset_every == 0)
		reset_all();
	while (size >= 3 && records++ < MAX_RECORDS) {
		uint8_t ctrl = data[0];
		size_t len = (size_t)data[1] << 8 | data[2];
		uint8_t *frame;

		data += 3;
		size -= 3;
		if (len > size)
			len = size;
		if (ctrl & CTRL_RESET)
			reset_all();
		/* A copy of exactly the frame: a read beyond it is an ASan report. */
		frame = malloc(len ? len : 1);
		if (frame == NULL)
			abort();
		memcpy(frame, data, len);
		one_frame(frame, len, ctrl);
		free(frame);
		data += len;
		size -= len;
	}
	return 0;
}

/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * The aggregation core: the exactly-once state machine of
 * docs/protocol.md's "Slots and shadow sets" on top of the kernels.
 *
 * Memory: a job is three allocations made once at creation, the job itself,
 * the sets (64-byte aligned, two per slot) and the accumulators (64-byte
 * aligned, one stride per set). Nothing is allocated afterwards, so
 * agg_contribute() costs a few compares, one kernel call and no syscalls.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <inca/wire.h>

#include "agg.h"
#include "kernels.h"

#define AGG_ALIGN 64

#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

/* Flags of the first contribution that a use of a set keeps. */
#define AGG_KEPT_FLAGS (INCA_F_BFP | INCA_F_LAST | INCA_F_ROUTED | INCA_F_GATHER)
/* Flags every contribution of one use must agree on (rule 2). */
#define AGG_SAME_FLAGS (INCA_F_BFP | INCA_F_ROUTED | INCA_F_GATHER)

static const char *const drop_names[] = {
#define AGG_X_(n, d) #n,
	AGG_DROP_REASONS(AGG_X_)
#undef AGG_X_
};

static const char *const drop_strs[] = {
#define AGG_X_(n, d) d,
	AGG_DROP_REASONS(AGG_X_)
#undef AGG_X_
};

const char *
agg_drop_name(unsigned reason)
{
	return reason < AGG_DROP_COUNT ? drop_names[reason] : "?";
}

const char *
agg_drop_str(unsigned reason)
{
	return reason < AGG_DROP_COUNT ? drop_strs[reason] : "unknown reason";
}

/*
 * Bytes between two sets' accumulators: rounded up to a cache line so that
 * slots owned by different lcores never share one.
 */
static size_t
acc_stride(const struct agg_job_params *p)
{
	size_t b = (size_t)p->max_elems * sizeof(uint32_t);

	return (b + AGG_ALIGN - 1) & ~(size_t)(AGG_ALIGN - 1);
}

static bool
params_valid(const struct agg_job_params *p)
{
	const uint16_t all_dtypes = (1u << INCA_DTYPE_COUNT) - 1;
	const uint16_t all_ops = (1u << INCA_OP_COUNT) - 1;

	if (p == NULL)
		return false;
	if (p->job == 0)
		return false;
	if (p->nworkers == 0 || p->nworkers > INCA_MAX_WORKERS)
		return false;
	if (p->pool_size == 0)
		return false;
	if (p->tree && !p->seq_check)
		return false;
	if (p->max_elems == 0 || p->max_elems > INCA_MAX_ELEMS)
		return false;
	if (p->dtypes == 0 || (p->dtypes & ~all_dtypes) != 0)
		return false;
	if (p->ops == 0 || (p->ops & ~all_ops) != 0)
		return false;
	return true;
}

size_t
agg_job_footprint(const struct agg_job_params *p)
{
	size_t nsets;

	if (!params_valid(p))
		return 0;
	nsets = (size_t)p->pool_size * 2;
	return sizeof(struct agg_job) + nsets * sizeof(struct agg_set) +
	       nsets * acc_stride(p);
}

static void
set_clear(struct agg_set *s)
{
	s->bitmap = 0;
	s->remaining = 0;
	s->dtype = 0;
	s->op = 0;
	s->flags = 0;
	s->exp = 0;
	s->count = 0;
	s->seq = 0;
	s->offset = 0;
	s->root = 0;
	s->route = 0;
	/* Readers of the state may be on other threads (busy_slots). */
	__atomic_store_n(&s->state, AGG_SET_IDLE, __ATOMIC_RELAXED);
}

struct agg_job *
agg_job_create(const struct agg_job_params *p)
{
	struct agg_job *j;
	size_t nsets, stride, i;
	void *mem;
	int rc;

	if (!params_valid(p)) {
		errno = EINVAL;
		return NULL;
	}
	agg_kernels_init();

	j = calloc(1, sizeof(*j));
	if (j == NULL)
		goto fail;
	j->p = *p;
	j->members = 0;
	j->full_mask = p->nworkers == 32 ? UINT32_MAX : (UINT32_C(1) << p->nworkers) - 1;

	nsets = (size_t)p->pool_size * 2;
	stride = acc_stride(p);
	rc = posix_memalign(&mem, AGG_ALIGN, nsets * sizeof(struct agg_set));
	if (rc != 0)
		goto fail_job;
	j->sets = mem;
	rc = posix_memalign(&mem, AGG_ALIGN, nsets * stride);
	if (rc != 0)
		goto fail_sets;
	j->acc_mem = mem;
	/*
	 * Not cleared: a set's first contribution writes its accumulator
	 * (rule 1) and only a complete set's count lanes are read back, so
	 * clearing would only fault the pages in, on the control path at every
	 * JOIN that creates a job (12 us for a 64 x 360 pool, milliseconds for
	 * 256 x 4096: the remaining cost of a JOIN/LEAVE storm,
	 * docs/benchmarks.md). Untouched pages now fault in at the job's first
	 * contributions, paid by the job that uses them.
	 */

	for (i = 0; i < nsets; i++) {
		struct agg_set *s = &j->sets[i];

		memset(s, 0, sizeof(*s));
		set_clear(s);
		s->slot = (uint16_t)(i / 2);
		s->set = (uint8_t)(i & 1);
		s->acc = (uint8_t *)j->acc_mem + i * stride;
	}

	for (i = 0; i < INCA_DTYPE_COUNT; i++) {
		unsigned op;

		j->init[i] = agg_kernel_init(i);
		j->export[i] = agg_kernel_export(i);
		if (j->init[i] == NULL || j->export[i] == NULL)
			goto fail_kernels;
		for (op = 0; op < INCA_OP_COUNT; op++) {
			j->combine[i][op] = agg_kernel_combine(i, op);
			if (j->combine[i][op] == NULL)
				goto fail_kernels;
		}
	}
	return j;

fail_kernels:
	/* The kernels library lacks a dtype/op the wire format defines. */
	free(j->acc_mem);
	free(j->sets);
	free(j);
	errno = ENOSYS;
	return NULL;
fail_sets:
	free(j->sets);
fail_job:
	free(j);
fail:
	errno = ENOMEM;
	return NULL;
}

void
agg_job_destroy(struct agg_job *j)
{
	if (j == NULL)
		return;
	free(j->acc_mem);
	free(j->sets);
	free(j);
}

void
agg_job_reset(struct agg_job *j)
{
	size_t i, nsets = (size_t)j->p.pool_size * 2;

	for (i = 0; i < nsets; i++)
		set_clear(&j->sets[i]);
}

void
agg_job_set_token(struct agg_job *j, uint32_t token)
{
	j->p.token = token;
}

void
agg_job_set_members(struct agg_job *j, uint32_t mask)
{
	j->members = mask & j->full_mask;
}

unsigned
agg_job_busy_slots(const struct agg_job *j)
{
	unsigned slot, n = 0;

	for (slot = 0; slot < j->p.pool_size; slot++) {
		const struct agg_set *s = &j->sets[2 * slot];

		uint8_t a = __atomic_load_n(&s[0].state, __ATOMIC_RELAXED);
		uint8_t b = __atomic_load_n(&s[1].state, __ATOMIC_RELAXED);

		if (a == AGG_SET_FILLING || a == AGG_SET_PARTIAL || b == AGG_SET_FILLING ||
		    b == AGG_SET_PARTIAL)
			n++;
	}
	return n;
}

/* inca_dtype_size() without the call, on the path every contribution
 * takes. */
static inline size_t
elem_size(unsigned dtype)
{
	static const uint8_t size[INCA_DTYPE_COUNT] = {
#define INCA_X_(n, v, s) [v] = s,
		INCA_DTYPES(INCA_X_)
#undef INCA_X_
	};

	return dtype < INCA_DTYPE_COUNT ? size[dtype] : 0;
}

static inline enum agg_verdict
drop(struct agg_out *out, enum agg_drop reason)
{
	out->verdict = AGG_DROP;
	out->reason = reason;
	out->first = false;
	out->set = NULL;
	return AGG_DROP;
}

static inline enum agg_verdict
verdict(struct agg_out *out, enum agg_verdict v, struct agg_set *s)
{
	out->verdict = v;
	out->reason = 0;
	out->first = false;
	out->set = s;
	return v;
}

/*
 * The ranks disagree on chunk @s->seq. Without sequence numbers nothing
 * tells a later use from this one, so the contribution is only dropped;
 * with them the set fails, which every member learns (NACK MISMATCH)
 * instead of waiting for a result that cannot come.
 */
static inline enum agg_verdict
mismatch(const struct agg_job *j, struct agg_set *s, struct agg_out *out)
{
	if (!j->p.seq_check)
		return drop(out, AGG_DROP_MISMATCH);
	__atomic_store_n(&s->state, AGG_SET_FAILED, __ATOMIC_RELAXED);
	verdict(out, AGG_MISMATCH, s);
	out->first = true;
	return AGG_MISMATCH;
}

/* RFC 1982 serial number order on 32 bits: is @a before @b? */
static inline bool
seq_before(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) < 0;
}

/*
 * Rule 6: counting @bit in a set clears it in the other set @o, so that a
 * later copy of @o's contribution from this rank is told from a
 * retransmission. A FILLING @o is left alone: its bitmap is what guards
 * its remaining count, and a correct worker (window <= pool) never has
 * both sets of a slot in flight, so only a misbehaving one could get
 * there, and it must not be able to have a contribution counted twice.
 */
static inline void
clear_other(struct agg_set *o, uint32_t bit)
{
	if (o->state != AGG_SET_FILLING && o->state != AGG_SET_PARTIAL)
		o->bitmap &= ~bit;
}

/*
 * Every member counted in @s: the result is ready, or, on a leaf of a
 * tree, the partial is, and the set waits for the parent's result.
 */
static inline enum agg_verdict
complete(struct agg_job *j, struct agg_set *s, struct agg_out *out)
{
	/* Every contribution was anonymous: the root is no rank of this
	 * job, and above it there is nobody to ask (docs/protocol.md,
	 * "Routed chunks"). */
	if (!j->p.tree && j->p.seq_check && (s->flags & INCA_F_ROUTED) &&
	    s->root == AGG_ROOT_NONE)
		return mismatch(j, s, out);
	if (j->p.tree) {
		__atomic_store_n(&s->state, AGG_SET_PARTIAL, __ATOMIC_RELAXED);
		return verdict(out, AGG_PARTIAL, s);
	}
	__atomic_store_n(&s->state, AGG_SET_COMPLETE, __ATOMIC_RELAXED);
	return verdict(out, AGG_COMPLETE, s);
}

/*
 * The root of a routed contribution: its bitmap's one bit, or
 * AGG_ROOT_NONE for an anonymous one (bitmap 0: the root is not a member).
 */
static inline uint8_t
root_of(const struct inca_msg *m)
{
	if (!(m->flags & INCA_F_ROUTED))
		return 0;
	return m->bitmap != 0 ? (uint8_t)__builtin_ctz(m->bitmap) : AGG_ROOT_NONE;
}

/* What a routed contribution adds to its use's AGG_RT_* bits. */
static inline uint8_t
route_bits(const struct inca_msg *m, uint8_t root)
{
	if (!(m->flags & INCA_F_ROUTED))
		return 0;
	if (root == AGG_ROOT_NONE)
		return AGG_RT_ANON;
	return root != m->rank ? AGG_RT_NAMED_OTHER : 0;
}

/*
 * Does @m agree with the root of @s's use? Either every contribution
 * names the same root (a leaf's members, a one-level job), or one names
 * itself and the others are anonymous (a parent's leaves): a named root
 * must be the set's, and anonymous contributions never meet ones that
 * name a root other than their sender.
 */
static inline bool
route_fits(const struct agg_set *s, const struct inca_msg *m)
{
	uint8_t root = root_of(m), rt = s->route | route_bits(m, root);

	if (!(m->flags & INCA_F_ROUTED))
		return true;
	if (root != AGG_ROOT_NONE && s->root != AGG_ROOT_NONE && root != s->root)
		return false;
	return (rt & (AGG_RT_ANON | AGG_RT_NAMED_OTHER)) != (AGG_RT_ANON | AGG_RT_NAMED_OTHER);
}

/* Count @m's route in @s (after route_fits()). */
static inline void
route_note(struct agg_set *s, const struct inca_msg *m)
{
	uint8_t root = root_of(m);

	s->route |= route_bits(m, root);
	if (root != AGG_ROOT_NONE && (m->flags & INCA_F_ROUTED))
		s->root = root;
}

/*
 * Only the root's elements make a gathered chunk's result, whatever the
 * order of arrival; the others' BRIEF contributions count without them.
 */
static inline bool
carries(const struct inca_msg *m)
{
	return !(m->flags & INCA_F_GATHER) || m->rank == root_of(m);
}

/* Rules 1 and 5: the first contribution of a new use of @s. */
static inline enum agg_verdict
start_use(struct agg_job *j, struct agg_set *s, struct agg_set *o, const struct inca_msg *m,
	  uint32_t bit, struct agg_out *out)
{
	if (carries(m))
		j->init[m->dtype](s->acc, m->body, m->count);
	s->root = root_of(m);
	s->route = route_bits(m, s->root);
	s->bitmap = bit;
	s->seq = m->seq;
	s->dtype = m->dtype;
	s->op = m->op;
	s->count = m->count;
	s->offset = m->offset;
	s->flags = m->flags & AGG_KEPT_FLAGS;
	s->exp = m->exp;
	s->remaining = j->p.nworkers - 1;
	clear_other(o, bit);
	if (s->remaining == 0)
		return complete(j, s, out);
	__atomic_store_n(&s->state, AGG_SET_FILLING, __ATOMIC_RELAXED);
	return verdict(out, AGG_PENDING, s);
}

/* Is @m about @s's chunk (its root aside)? */
static inline bool
same_chunk(const struct agg_set *s, const struct inca_msg *m)
{
	return s->dtype == m->dtype && s->op == m->op && s->count == m->count &&
	       s->offset == m->offset &&
	       (s->flags & AGG_SAME_FLAGS) == (m->flags & AGG_SAME_FLAGS);
}

static inline bool
same_use(const struct agg_set *s, const struct inca_msg *m)
{
	return same_chunk(s, m) && route_fits(s, m);
}

enum agg_verdict
agg_contribute(struct agg_job *j, const struct inca_msg *m, struct agg_out *out)
{
	const struct agg_job_params *p = &j->p;
	struct agg_set *s, *o;
	unsigned setno;
	uint32_t bit;

	/* Job checks, in the order docs/protocol.md lists them. */
	if (unlikely(m->type != INCA_MSG_CONTRIB))
		return drop(out, AGG_DROP_NOT_CONTRIB);
	if (unlikely(m->token != p->token))
		return drop(out, AGG_DROP_BAD_TOKEN);
	if (unlikely(m->rank >= p->nworkers))
		return drop(out, AGG_DROP_NOT_MEMBER);
	bit = UINT32_C(1) << m->rank;
	if (unlikely(!(j->members & bit)))
		return drop(out, AGG_DROP_NOT_MEMBER);
	if (unlikely(m->slot >= p->pool_size))
		return drop(out, AGG_DROP_BAD_SLOT);
	if (unlikely(m->dtype >= INCA_DTYPE_COUNT || !(p->dtypes & (1u << m->dtype))))
		return drop(out, AGG_DROP_DTYPE);
	if (unlikely(m->op >= INCA_OP_COUNT || !(p->ops & (1u << m->op))))
		return drop(out, AGG_DROP_OP);
	if (unlikely((unsigned)m->count * inca_dtype_lanes(m->dtype) > p->max_elems))
		return drop(out, AGG_DROP_TOO_LARGE);
	/*
	 * inca_msg_decode() rules these out; checked again because the
	 * kernels would otherwise read beyond the body.
	 */
	if (unlikely(m->count == 0 ||
		     (!(m->flags & INCA_F_BRIEF) &&
		      (m->body == NULL || m->body_len < (size_t)m->count * elem_size(m->dtype)))))
		return drop(out, AGG_DROP_MALFORMED);
	if (unlikely((m->flags & INCA_F_BFP) && m->dtype != INCA_DTYPE_INT32))
		return drop(out, AGG_DROP_DTYPE);
	if (unlikely(m->flags & (INCA_F_ROUTED | INCA_F_GATHER | INCA_F_BRIEF))) {
		/* Decode guarantees the flags' consistency; the core must not
		 * read elements a BRIEF message does not have whatever it is
		 * given, so a root's BRIEF gather is refused here too. */
		if (!(m->flags & INCA_F_ROUTED) || (m->bitmap & (m->bitmap - 1)) != 0 ||
		    ((m->flags & INCA_F_BRIEF) && carries(m)))
			return drop(out, AGG_DROP_MALFORMED);
		if (root_of(m) != AGG_ROOT_NONE && root_of(m) >= p->nworkers)
			return drop(out, AGG_DROP_ROUTE);
	}

	setno = m->flags & INCA_F_SET;
	s = &j->sets[2 * (size_t)m->slot + setno];
	o = &j->sets[2 * (size_t)m->slot + (setno ^ 1)];

	switch (s->state) {
	case AGG_SET_FILLING:
		/* Rule 3 (software only). */
		if (p->seq_check && m->seq != s->seq)
			return drop(out, seq_before(m->seq, s->seq) ? AGG_DROP_STALE :
				    AGG_DROP_CONFLICT);
		/* Rule 2. */
		if (unlikely(!same_use(s, m)))
			return mismatch(j, s, out);
		if (s->bitmap & bit)
			return drop(out, AGG_DROP_DUPLICATE);
		if (s->flags & INCA_F_GATHER) {
			if (carries(m))
				j->init[s->dtype](s->acc, m->body, s->count);
		} else {
			j->combine[s->dtype][s->op](s->acc, m->body, s->count);
		}
		s->bitmap |= bit;
		route_note(s, m);
		if (m->exp > s->exp)
			s->exp = m->exp;
		clear_other(o, bit);
		if (--s->remaining == 0)
			return complete(j, s, out);
		return verdict(out, AGG_PENDING, s);
	case AGG_SET_COMPLETE:
		if (p->seq_check && m->seq != s->seq) {
			/* Rule 5. */
			if (seq_before(m->seq, s->seq))
				return drop(out, AGG_DROP_STALE);
			return start_use(j, s, o, m, bit, out);
		}
		/*
		 * Rule 4: the seq is the set's (or not compared, as on a
		 * Tofino). A set bit means the sender lost the result; a
		 * clear one means it counted this rank in the other set
		 * since: with seq_check that is a late copy, without it
		 * the only thing a Tofino can assume is a new use.
		 */
		if (s->bitmap & bit)
			return verdict(out, AGG_REPLAY, s);
		if (p->seq_check)
			return drop(out, AGG_DROP_STALE);
		return start_use(j, s, o, m, bit, out);
	case AGG_SET_PARTIAL:
		/*
		 * Tree leaf, waiting for the parent: a copy of a counted
		 * contribution means its sender lost nothing yet but waits,
		 * and its retransmission drives the partial's (the parent
		 * answers a repeated partial with a replay). A newer seq
		 * cannot come from a correct worker (the same argument as
		 * CONFLICT: nobody has this chunk's result yet).
		 */
		if (m->seq != s->seq)
			return drop(out, seq_before(m->seq, s->seq) ? AGG_DROP_STALE :
				    AGG_DROP_CONFLICT);
		if (unlikely(!same_use(s, m)))
			return drop(out, AGG_DROP_MISMATCH);
		if (s->bitmap & bit)
			return verdict(out, AGG_RESEND_UP, s);
		return drop(out, AGG_DROP_STALE);
	case AGG_SET_FAILED:
		/* Only with seq_check: rule 7. */
		if (m->seq == s->seq)
			return verdict(out, AGG_MISMATCH, s);
		if (seq_before(m->seq, s->seq))
			return drop(out, AGG_DROP_STALE);
		return start_use(j, s, o, m, bit, out);
	default:
		/* Rule 1. */
		return start_use(j, s, o, m, bit, out);
	}
}

size_t
agg_result_len(const struct agg_set *s)
{
	return INCA_HDR_LEN + (size_t)s->count * elem_size(s->dtype);
}

uint32_t
agg_result_dests(const struct agg_job *j, const struct agg_set *s)
{
	/* An anonymous root (a tree leaf) is none of the members. */
	uint32_t root = s->root < INCA_MAX_WORKERS ? UINT32_C(1) << s->root : 0;

	if (!(s->flags & INCA_F_ROUTED))
		return j->full_mask;
	return (s->flags & INCA_F_GATHER) ? j->full_mask & ~root : root;
}

size_t
agg_result_len_to(const struct agg_job *j, const struct agg_set *s, uint16_t rank)
{
	if (rank < INCA_MAX_WORKERS && (agg_result_dests(j, s) & (UINT32_C(1) << rank)))
		return agg_result_len(s);
	return INCA_HDR_LEN;
}

/*
 * Write a message about set @s (its chunk's fields, its accumulator as the
 * body in wire format) with @type, @job, @rank, @token, @bitmap and RETX
 * when @retx. Returns the length written.
 */
static size_t
set_msg_write(const struct agg_job *j, const struct agg_set *s, uint8_t type, uint16_t job,
	      uint16_t rank, uint32_t token, uint32_t bitmap, bool retx, bool brief, void *buf)
{
	struct inca_msg m = {
		.version = INCA_PROTO_VERSION,
		.type = type,
		.dtype = s->dtype,
		.op = s->op,
		.job = job,
		.rank = rank,
		.token = token,
		.slot = s->slot,
		.flags = (uint8_t)(s->set | (s->flags & AGG_KEPT_FLAGS) | (retx ? INCA_F_RETX : 0) |
				   (brief ? INCA_F_BRIEF : 0)),
		.exp = s->exp,
		.seq = s->seq,
		.offset = s->offset,
		.count = s->count,
		.reason = 0,
		.bitmap = bitmap,
	};

	inca_hdr_encode(&m, buf);
	if (brief)
		return INCA_HDR_LEN;
	j->export[s->dtype]((uint8_t *)buf + INCA_HDR_LEN, s->acc, s->count);
	return agg_result_len(s);
}

size_t
agg_result_write(const struct agg_job *j, const struct agg_set *s, uint16_t dst_rank,
		 bool replay, void *buf)
{
	/* Every rank contributed to a complete set, even when rule 6 has
	 * since cleared the bits of those that moved on. */
	return set_msg_write(j, s, INCA_MSG_RESULT, j->p.job, dst_rank, j->p.token,
			     s->state == AGG_SET_COMPLETE ? j->full_mask : s->bitmap, replay,
			     agg_result_len_to(j, s, dst_rank) == INCA_HDR_LEN, buf);
}

void
agg_result_set_rank(void *msg, uint16_t rank)
{
	uint8_t *p = (uint8_t *)msg + offsetof(struct inca_hdr, rank);

	p[0] = (uint8_t)(rank >> 8);
	p[1] = (uint8_t)rank;
}

/* A gathered chunk whose root is not below the leaf: nothing to send up. */
static inline bool
partial_brief(const struct agg_set *s)
{
	return (s->flags & INCA_F_GATHER) && s->root == AGG_ROOT_NONE;
}

size_t
agg_partial_len(const struct agg_set *s)
{
	return partial_brief(s) ? INCA_HDR_LEN : agg_result_len(s);
}

size_t
agg_partial_write(const struct agg_job *j, const struct agg_set *s, uint16_t job, uint16_t rank,
		  uint32_t token, bool retx, void *buf)
{
	/* At the parent this leaf is the root's member, or not one. */
	uint32_t root = 0;

	if ((s->flags & INCA_F_ROUTED) && s->root != AGG_ROOT_NONE && rank < INCA_MAX_WORKERS)
		root = UINT32_C(1) << rank;
	return set_msg_write(j, s, INCA_MSG_CONTRIB, job, rank, token, root, retx,
			     partial_brief(s), buf);
}

/*
 * Does the leaf need the parent's elements to answer its members? A
 * reduced chunk's sum, when its root is a member here; a gathered
 * chunk's root elements, when its root is not (else they are in the set).
 */
static inline bool
needs_body(const struct agg_set *s)
{
	if (!(s->flags & INCA_F_ROUTED))
		return true;
	if (s->flags & INCA_F_GATHER)
		return s->root == AGG_ROOT_NONE;
	return s->root != AGG_ROOT_NONE;
}

/* The set a parent's message names, if it is a PARTIAL set of that use. */
static struct agg_set *
partial_of(struct agg_job *j, const struct inca_msg *m)
{
	struct agg_set *s;

	if (m->slot >= j->p.pool_size)
		return NULL;
	s = &j->sets[2 * (size_t)m->slot + (m->flags & INCA_F_SET)];
	if (s->state != AGG_SET_PARTIAL || s->seq != m->seq)
		return NULL;
	return s;
}

enum agg_verdict
agg_parent_result(struct agg_job *j, const struct inca_msg *m, struct agg_out *out)
{
	struct agg_set *s;

	if (unlikely(m->type != INCA_MSG_RESULT || !j->p.tree))
		return drop(out, AGG_DROP_NOT_CONTRIB);
	s = partial_of(j, m);
	if (s == NULL)
		return drop(out, AGG_DROP_STALE);
	if (!same_chunk(s, m))
		return drop(out, AGG_DROP_MISMATCH);
	if (!(m->flags & INCA_F_BRIEF) != needs_body(s)) {
		/* The parent routed the chunk elsewhere than this leaf's
		 * members named: the levels disagree on its root. */
		__atomic_store_n(&s->state, AGG_SET_FAILED, __ATOMIC_RELAXED);
		verdict(out, AGG_MISMATCH, s);
		out->first = true;
		return AGG_MISMATCH;
	}
	if (m->flags & INCA_F_BRIEF) {
		/* Nothing comes down that the members need: complete as is. */
		s->exp = m->exp;
		__atomic_store_n(&s->state, AGG_SET_COMPLETE, __ATOMIC_RELAXED);
		return verdict(out, AGG_COMPLETE, s);
	}
	if (unlikely(m->body == NULL || m->body_len < (size_t)m->count * elem_size(m->dtype)))
		return drop(out, AGG_DROP_MALFORMED);
	/* The parent's sum replaces the partial; exp is the tree's maximum. */
	j->init[m->dtype](s->acc, m->body, m->count);
	s->exp = m->exp;
	__atomic_store_n(&s->state, AGG_SET_COMPLETE, __ATOMIC_RELAXED);
	return verdict(out, AGG_COMPLETE, s);
}

enum agg_verdict
agg_parent_fail(struct agg_job *j, const struct inca_msg *m, struct agg_out *out)
{
	struct agg_set *s = partial_of(j, m);

	if (s == NULL)
		return drop(out, AGG_DROP_STALE);
	__atomic_store_n(&s->state, AGG_SET_FAILED, __ATOMIC_RELAXED);
	verdict(out, AGG_MISMATCH, s);
	out->first = true;
	return AGG_MISMATCH;
}

/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * A deterministic simulation of a job: N workers running the worker
 * algorithm of docs/protocol.md (job-wide chunk number k, slot = k mod
 * pool, set = (k / pool) mod 2, a window of W <= pool chunks, retransmission
 * of unanswered chunks after a timeout) against the real aggregation core,
 * over a simulated network that loses, duplicates, reorders and delays
 * packets in both directions, and holds some copies back for very long.
 *
 * Time is a counter of ticks and every random choice comes from one seeded
 * generator, so a run is a pure function of its configuration: a failure
 * reproduces exactly. Messages cross the network encoded and are decoded
 * with inca_msg_decode() on arrival, as in incad and libinca.
 *
 * With nleaves, the job is a two-level aggregation tree (docs/protocol.md,
 * "Aggregation trees"): worker r is rank r / nleaves of leaf r % nleaves,
 * each leaf a job of the core in tree mode whose partial sums go up to a
 * root job of nleaves members, and whose RESULTs come from the root's; the
 * links between leaves and root lose, duplicate, reorder and hold back as
 * the workers' links do.
 *
 * What each run asserts: every RESULT any worker receives (first copy,
 * duplicate or replay) is bitwise the loss-free reference; no (rank, chunk)
 * contribution is ever counted twice, nor counted into a use of the set
 * that belongs to another chunk; every chunk completes exactly once; the
 * run finishes within a bounded number of events; and the paths the
 * network's misbehaviour must have taken (replays, duplicates, stale
 * drops) were taken.
 */
#include <check.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <math.h>

#include <inca/dtype.h>
#include <inca/wire.h>

#include "agg.h"

/*
 * Checks on the simulation's hot paths: Check's own assertions record
 * their location through a syscall each time they pass, which would make
 * the syscalls cost more than the simulation.
 */
#define REQ_MSG(cond, ...) \
	do { \
		if (!(cond)) \
			ck_abort_msg(__VA_ARGS__); \
	} while (0)
#define REQ(cond) REQ_MSG(cond, "%s:%d: %s", __FILE__, __LINE__, #cond)
#define REQ_EQ(a, b) \
	do { \
		long long a_ = (long long)(a), b_ = (long long)(b); \
		REQ_MSG(a_ == b_, "%s:%d: %s == %s: %lld != %lld", __FILE__, __LINE__, #a, #b, \
			a_, b_); \
	} while (0)

#define JOB 0x1234
#define TOKEN 0x5eed5eedu
#define PER 10000 /* probabilities are in 1/PER */

/* How a collective's chunks are routed (docs/protocol.md, "Routed chunks"). */
enum sim_route {
	ROUTE_NONE = 0,  /* allreduce: every rank gets every result */
	ROUTE_SCATTER,   /* ReduceScatter: chunk i's result to rank i mod N only */
	ROUTE_GATHER,    /* AllGather: chunk i carries rank i mod N's elements to the others */
	ROUTE_REDUCE,    /* Reduce: every result to rank N - 1 only */
};

/* One collective: every worker issues the same ones in the same order. */
struct sim_coll {
	uint8_t dtype;
	uint8_t op;
	bool bfp;
	uint32_t nelems;
	uint8_t route;   /* enum sim_route */
};

struct sim_cfg {
	const char *name;
	unsigned nworkers;
	unsigned pool;
	unsigned window;
	unsigned chunk;       /* elements per chunk (the job's max_elems) */
	bool seq_check;
	unsigned loss_up;     /* worker -> aggregator, in 1/PER */
	unsigned loss_down;   /* aggregator -> worker */
	unsigned dup;         /* a second copy, both directions */
	unsigned delay;       /* ticks every packet takes at least */
	unsigned jitter;      /* plus 0..jitter ticks: reordering */
	unsigned late;        /* a copy held back late_delay more ticks */
	unsigned late_delay;
	bool fifo_up;         /* each worker's uplink delivers in order */
	unsigned rto;         /* retransmission timeout, ticks */
	uint64_t k0;          /* first chunk number */
	uint64_t seed;
	const struct sim_coll *colls;
	unsigned ncolls;
	unsigned repeat;      /* the list of collectives is issued this often */
	/* Stop at the first contribution counted into a foreign use. */
	bool expect_violation;
	unsigned nleaves;     /* 0: one aggregator; else a tree of this many leaves */
};

struct sim_stats {
	uint64_t events;
	uint64_t sent_up, sent_down, lost, duplicated, held_late;
	uint64_t retransmits;
	uint64_t verdicts[AGG_RESEND_UP + 1];
	uint64_t drops[AGG_DROP_COUNT];
	uint64_t late_stale;   /* held-back copies the core refused as STALE */
	uint64_t late_counted; /* held-back copies that were still needed */
	uint64_t results_ok;   /* RESULT copies received and checked */
	uint64_t replays_rx;   /* of which replays */
	uint64_t violations;   /* contributions counted twice or into another chunk's use */
	uint64_t violations_late; /* of which held-back copies */
	uint64_t partials_up;  /* tree: partial sums a leaf sent (first copies) */
	uint64_t partials_resent; /* tree: sent again on a member's retransmission */
	uint64_t root_replays; /* tree: replays of the root to a leaf */
	uint64_t parent_drops; /* tree: root RESULTs a leaf had no waiting set for */
	uint64_t briefs_rx;    /* routed: BRIEF RESULT copies received and checked */
	uint64_t brief_up;     /* routed: BRIEF contributions sent (gathers) */
	bool finished;
};

enum pkt_kind {
	PKT_CONTRIB,  /* worker -> its aggregator (the leaf, in a tree) */
	PKT_RESULT,   /* aggregator -> worker */
	PKT_TIMER,
	PKT_UP,       /* tree: leaf -> root, rank = the leaf */
	PKT_DOWN,     /* tree: root -> leaf */
};

#define MAX_LEAVES 8
#define MAX_RANKS (INCA_MAX_WORKERS * MAX_LEAVES)

struct pkt {
	uint8_t kind;
	uint8_t late;
	uint16_t rank;  /* CONTRIB: sender; RESULT: addressee; TIMER: owner; UP, DOWN: leaf */
	uint32_t gen;   /* TIMER: which transmission it guards */
	uint64_t idx;   /* TIMER: chunk index */
	size_t len;
	uint8_t data[];
};

struct ev {
	uint64_t time;
	uint64_t tie;
	struct pkt *p;
};

struct chunk {
	uint16_t coll;
	uint16_t count;
	uint32_t offset;
	bool last;
	int8_t exp;       /* expected exp of the result */
	uint16_t root;    /* routed: the chunk's root (a rank of the whole job) */
	size_t ref_off;   /* reference result in sim.ref */
};

struct worker {
	uint64_t base;    /* lowest chunk index without a result */
	uint64_t next;    /* next chunk index to send for the first time */
	uint8_t *got;
	uint32_t *gen;
};

struct sim {
	const struct sim_cfg *c;
	uint64_t rng;
	struct agg_job *job;
	uint64_t nchunks;
	struct chunk *chunks;
	uint8_t *ref;
	uint32_t *counted;
	uint8_t *completed;
	struct worker w[MAX_RANKS];
	struct ev *heap;
	size_t nheap, cap;
	uint64_t now, counter;
	uint64_t link_last[MAX_RANKS + MAX_LEAVES];
	uint32_t full;
	/* A tree: s->job is the root, of nleaves members. */
	struct agg_job *leaf[MAX_LEAVES];
	uint32_t leaf_full[MAX_LEAVES];
	uint32_t *leaf_counted;   /* nchunks x nleaves: local ranks counted at the leaf */
	uint8_t *leaf_completed;  /* nchunks x nleaves: the leaf's partial went up */
	struct sim_stats st;
	uint8_t buf[INCA_HDR_LEN + INCA_MAX_PAYLOAD_BYTES];
};

/* ---- randomness ---------------------------------------------------------- */

static uint64_t
mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t
rnd(struct sim *s)
{
	return mix64(s->rng += 0x9e3779b97f4a7c15ull);
}

static bool
chance(struct sim *s, unsigned per)
{
	return per != 0 && rnd(s) % PER < per;
}

/* ---- event queue: a binary heap on (time, tie) ------------------------- */

static bool
ev_less(const struct ev *a, const struct ev *b)
{
	return a->time < b->time || (a->time == b->time && a->tie < b->tie);
}

static void
heap_push(struct sim *s, uint64_t time, uint64_t tie, struct pkt *p)
{
	size_t i;

	if (s->nheap == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 1024;
		s->heap = realloc(s->heap, s->cap * sizeof(*s->heap));
		REQ(s->heap != NULL);
	}
	i = s->nheap++;
	s->heap[i] = (struct ev){ time, tie, p };
	while (i > 0 && ev_less(&s->heap[i], &s->heap[(i - 1) / 2])) {
		struct ev t = s->heap[i];

		s->heap[i] = s->heap[(i - 1) / 2];
		s->heap[(i - 1) / 2] = t;
		i = (i - 1) / 2;
	}
}

static struct ev
heap_pop(struct sim *s)
{
	struct ev top = s->heap[0];
	size_t i = 0;

	s->heap[0] = s->heap[--s->nheap];
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		struct ev t;

		if (l < s->nheap && ev_less(&s->heap[l], &s->heap[m]))
			m = l;
		if (r < s->nheap && ev_less(&s->heap[r], &s->heap[m]))
			m = r;
		if (m == i)
			break;
		t = s->heap[i];
		s->heap[i] = s->heap[m];
		s->heap[m] = t;
		i = m;
	}
	return top;
}

static struct pkt *
pkt_new(enum pkt_kind kind, unsigned rank, const void *data, size_t len)
{
	struct pkt *p = malloc(sizeof(*p) + len);

	REQ(p != NULL);
	memset(p, 0, sizeof(*p));
	p->kind = kind;
	p->rank = rank;
	p->len = len;
	if (len)
		memcpy(p->data, data, len);
	return p;
}

/*
 * Put a message on the wire: lost, or delivered once or twice, each copy
 * after its own delay, some copies very late.
 */
static void
net_send(struct sim *s, enum pkt_kind kind, unsigned rank, const void *data, size_t len)
{
	const struct sim_cfg *c = s->c;
	bool up = kind == PKT_CONTRIB || kind == PKT_UP;
	unsigned link = kind == PKT_UP ? MAX_RANKS + rank : rank;
	unsigned copies = 1, i;

	if (up)
		s->st.sent_up++;
	else
		s->st.sent_down++;
	if (chance(s, up ? c->loss_up : c->loss_down)) {
		s->st.lost++;
		return;
	}
	if (chance(s, c->dup)) {
		s->st.duplicated++;
		copies = 2;
	}
	for (i = 0; i < copies; i++) {
		struct pkt *p = pkt_new(kind, rank, data, len);
		uint64_t t = s->now + c->delay + rnd(s) % (c->jitter + 1);
		uint64_t tie = ++s->counter;

		if (chance(s, c->late)) {
			t += c->late_delay;
			p->late = 1;
			s->st.held_late++;
		}
		if (up && c->fifo_up && !p->late) {
			/*
			 * A link that reorders nothing: never before its
			 * predecessor. Held-back copies are the exception the
			 * tests want.
			 */
			if (t < s->link_last[link])
				t = s->link_last[link];
			s->link_last[link] = t;
		} else {
			/* Same-tick arrivals in random order. */
			tie |= (rnd(s) & 0xffffffffull) << 32;
		}
		heap_push(s, t, tie, p);
	}
}

/* ---- data ---------------------------------------------------------------- */

static void
put32(uint8_t *b, unsigned i, uint32_t v)
{
	b[4 * i] = v >> 24;
	b[4 * i + 1] = v >> 16;
	b[4 * i + 2] = v >> 8;
	b[4 * i + 3] = v;
}

static void
put16(uint8_t *b, unsigned i, uint16_t v)
{
	b[2 * i] = v >> 8;
	b[2 * i + 1] = v;
}

static float
u2f(uint32_t u)
{
	float f;

	memcpy(&f, &u, 4);
	return f;
}

static uint32_t
f2u(float f)
{
	uint32_t u;

	memcpy(&u, &f, 4);
	return u;
}

static uint64_t
hash(const struct sim *s, unsigned rank, uint64_t idx, unsigned lane)
{
	return mix64(s->c->seed ^ mix64(((uint64_t)rank << 56) ^ (idx << 16) ^ lane));
}

/*
 * Element @lane of rank @rank's contribution to chunk @idx, in wire format
 * (16-bit types in the low half). Float sums use multiples of a power of
 * two that 32 workers add up exactly in fp32, so that the result cannot
 * depend on the order the network delivered them in; min and max take any
 * non-NaN value.
 */
static uint32_t
input(const struct sim *s, unsigned rank, uint64_t idx, unsigned lane)
{
	const struct sim_coll *cl = &s->c->colls[s->chunks[idx].coll];
	uint64_t h = hash(s, rank, idx, lane);
	int32_t v = (int32_t)(h >> 32);
	uint32_t u = (uint32_t)h;

	switch (cl->dtype) {
	case INCA_DTYPE_INT32:
		return u;
	case INCA_DTYPE_FP32:
		if (cl->op == INCA_OP_SUM)
			return f2u(ldexpf((float)(v % (1 << 18)), -8));
		if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x7fffffu))
			u &= ~0x00800000u;
		return u;
	case INCA_DTYPE_FP16:
		if (cl->op == INCA_OP_SUM)
			return inca_fp32_to_fp16(ldexpf((float)(v % 1025), -4));
		u &= 0xffff;
		if ((u & 0x7c00) == 0x7c00 && (u & 0x3ff))
			u &= ~0x0400u;
		return u;
	default:
		if (cl->op == INCA_OP_SUM)
			return inca_fp32_to_bf16(ldexpf((float)(v % 256), -3));
		u &= 0xffff;
		if ((u & 0x7f80) == 0x7f80 && (u & 0x7f))
			u &= ~0x0080u;
		return u;
	}
}

static int8_t
input_exp(const struct sim *s, unsigned rank, uint64_t idx)
{
	if (!s->c->colls[s->chunks[idx].coll].bfp)
		return 0;
	return (int8_t)(hash(s, rank, idx, 0xffff) % 41) - 20;
}

static float
to_float(unsigned dtype, uint32_t w)
{
	switch (dtype) {
	case INCA_DTYPE_FP32:
		return u2f(w);
	case INCA_DTYPE_FP16:
		return inca_fp16_to_fp32((uint16_t)w);
	default:
		return inca_bf16_to_fp32((uint16_t)w);
	}
}

/* Total order of IEEE 754-2019 minimum/maximum on non-NaN values. */
static bool
f_less(float a, float b)
{
	if (a == 0 && b == 0)
		return signbit(a) && !signbit(b);
	return a < b;
}

/* ---- tree geometry: worker r is rank r / L of leaf r % L ----------------- */

static unsigned
leaf_of(const struct sim *s, unsigned r)
{
	return s->c->nleaves ? r % s->c->nleaves : 0;
}

static unsigned
local_rank(const struct sim *s, unsigned r)
{
	return s->c->nleaves ? r / s->c->nleaves : r;
}

static unsigned
leaf_size(const struct sim *s, unsigned l)
{
	return (s->c->nworkers - l + s->c->nleaves - 1) / s->c->nleaves;
}

/* A 16-bit float sum as a leaf sends it up: rounded once, back to fp32. */
static double
round16(unsigned dtype, double v)
{
	if (dtype == INCA_DTYPE_FP16)
		return inca_fp16_to_fp32(inca_fp32_to_fp16((float)v));
	return inca_bf16_to_fp32(inca_fp32_to_bf16((float)v));
}

/* The loss-free result of chunk @idx, computed without the core. */
static void
reference(struct sim *s, uint64_t idx)
{
	struct chunk *ch = &s->chunks[idx];
	const struct sim_coll *cl = &s->c->colls[ch->coll];
	uint8_t *out = s->ref + ch->ref_off;
	unsigned lane, r, n = s->c->nworkers;
	int exp = -128;

	for (r = 0; r < n; r++)
		if (input_exp(s, r, idx) > exp)
			exp = input_exp(s, r, idx);
	ch->exp = (int8_t)exp;
	if (cl->route == ROUTE_GATHER) {
		/* The root's elements, unchanged (no NaN among the inputs). */
		for (lane = 0; lane < ch->count; lane++) {
			if (inca_dtype_size(cl->dtype) == 4)
				put32(out, lane, input(s, ch->root, idx, lane));
			else
				put16(out, lane, (uint16_t)input(s, ch->root, idx, lane));
		}
		return;
	}
	for (lane = 0; lane < ch->count; lane++) {
		if (cl->dtype == INCA_DTYPE_INT32) {
			uint32_t acc = input(s, 0, idx, lane);

			for (r = 1; r < n; r++) {
				uint32_t v = input(s, r, idx, lane);

				if (cl->op == INCA_OP_SUM)
					acc += v;
				else if (cl->op == INCA_OP_MIN)
					acc = (int32_t)v < (int32_t)acc ? v : acc;
				else
					acc = (int32_t)v > (int32_t)acc ? v : acc;
			}
			put32(out, lane, acc);
			continue;
		}
		/* Exact: a double holds every sum of these values. */
		double sum = 0;
		float best = to_float(cl->dtype, input(s, 0, idx, lane));
		float res;

		for (r = 0; r < n; r++) {
			float v = to_float(cl->dtype, input(s, r, idx, lane));

			sum += v;
			if (cl->op == INCA_OP_MIN ? f_less(v, best) : f_less(best, v))
				best = v;
		}
		/*
		 * A tree rounds a 16-bit sum at every level: each leaf's
		 * partial is a 16-bit value (docs/protocol.md, "Aggregation
		 * trees"). Every partial sum is exact in fp32.
		 */
		if (s->c->nleaves && cl->op == INCA_OP_SUM && cl->dtype != INCA_DTYPE_FP32) {
			unsigned l;

			sum = 0;
			for (l = 0; l < s->c->nleaves; l++) {
				double part = 0;

				for (r = l; r < n; r += s->c->nleaves)
					part += to_float(cl->dtype, input(s, r, idx, lane));
				sum += round16(cl->dtype, part);
			}
		}
		res = cl->op == INCA_OP_SUM ? (float)sum : best;
		REQ(cl->op != INCA_OP_SUM || (double)res == sum);
		if (cl->dtype == INCA_DTYPE_FP32)
			put32(out, lane, f2u(res));
		else if (cl->dtype == INCA_DTYPE_FP16)
			put16(out, lane, inca_fp32_to_fp16(res));
		else
			put16(out, lane, inca_fp32_to_bf16(res));
	}
}

/* ---- the worker ---------------------------------------------------------- */

static uint64_t
chunk_k(const struct sim *s, uint64_t idx)
{
	return s->c->k0 + idx;
}

static void
send_contrib(struct sim *s, unsigned rank, uint64_t idx, bool retx)
{
	const struct chunk *ch = &s->chunks[idx];
	const struct sim_coll *cl = &s->c->colls[ch->coll];
	uint64_t k = chunk_k(s, idx);
	unsigned size = inca_dtype_size(cl->dtype), lane;
	struct inca_msg m = {
		.version = INCA_PROTO_VERSION,
		.type = INCA_MSG_CONTRIB,
		.dtype = cl->dtype,
		.op = cl->op,
		.job = JOB,
		.rank = local_rank(s, rank),
		.token = TOKEN,
		.slot = (uint16_t)(k % s->c->pool),
		.flags = (uint8_t)((k / s->c->pool) % 2 | (retx ? INCA_F_RETX : 0) |
				   (ch->last ? INCA_F_LAST : 0) | (cl->bfp ? INCA_F_BFP : 0)),
		.exp = input_exp(s, rank, idx),
		.seq = (uint32_t)k,
		.offset = ch->offset,
		.count = ch->count,
	};
	size_t body = (size_t)ch->count * size;
	struct pkt *t;

	if (cl->route != ROUTE_NONE) {
		m.flags |= INCA_F_ROUTED | (cl->route == ROUTE_GATHER ? INCA_F_GATHER : 0);
		/* In a tree: the root by its rank at this rank's leaf, or
		 * anonymous under another ("Routed chunks in a tree"). */
		if (leaf_of(s, ch->root) == leaf_of(s, rank))
			m.bitmap = UINT32_C(1) << local_rank(s, ch->root);
		/* A gather's other ranks count in without elements. */
		if (cl->route == ROUTE_GATHER && rank != ch->root) {
			m.flags |= INCA_F_BRIEF;
			body = 0;
			s->st.brief_up++;
		}
	}
	inca_hdr_encode(&m, s->buf);
	for (lane = 0; body != 0 && lane < ch->count; lane++) {
		uint32_t v = input(s, rank, idx, lane);

		if (size == 4)
			put32(s->buf + INCA_HDR_LEN, lane, v);
		else
			put16(s->buf + INCA_HDR_LEN, lane, (uint16_t)v);
	}
	net_send(s, PKT_CONTRIB, rank, s->buf, INCA_HDR_LEN + body);

	t = pkt_new(PKT_TIMER, rank, NULL, 0);
	t->idx = idx;
	t->gen = ++s->w[rank].gen[idx];
	heap_push(s, s->now + s->c->rto, ++s->counter, t);
}

/* Send what the window allows. */
static void
worker_pump(struct sim *s, unsigned rank)
{
	struct worker *w = &s->w[rank];

	while (w->next < s->nchunks && w->next < w->base + s->c->window)
		send_contrib(s, rank, w->next++, false);
}

static void
worker_timer(struct sim *s, const struct pkt *t)
{
	struct worker *w = &s->w[t->rank];

	if (w->got[t->idx] || w->gen[t->idx] != t->gen)
		return;
	s->st.retransmits++;
	send_contrib(s, t->rank, t->idx, true);
}

static void
worker_result(struct sim *s, const struct pkt *p)
{
	struct worker *w = &s->w[p->rank];
	const struct chunk *ch;
	const struct sim_coll *cl;
	struct inca_msg m;
	uint64_t idx, k;

	REQ_EQ(inca_msg_decode(p->data, p->len, s->c->chunk, &m), INCA_WIRE_OK);
	REQ_EQ(m.type, INCA_MSG_RESULT);
	REQ_EQ(m.job, JOB);
	REQ_EQ(m.token, TOKEN);
	REQ_EQ(m.rank, local_rank(s, p->rank));
	idx = (uint32_t)(m.seq - (uint32_t)s->c->k0);
	REQ_MSG(idx < s->nchunks, "%s: result for unknown seq %u", s->c->name, m.seq);
	k = chunk_k(s, idx);
	ch = &s->chunks[idx];
	cl = &s->c->colls[ch->coll];
	/* Every copy, first, duplicate or replay, must be the exact result. */
	REQ_EQ(m.slot, k % s->c->pool);
	REQ_EQ(m.flags & INCA_F_SET, (k / s->c->pool) % 2);
	REQ_EQ(!!(m.flags & INCA_F_LAST), ch->last);
	REQ_EQ(!!(m.flags & INCA_F_BFP), cl->bfp);
	REQ_EQ(m.dtype, cl->dtype);
	REQ_EQ(m.op, cl->op);
	REQ_EQ(m.count, ch->count);
	REQ_EQ(m.offset, ch->offset);
	REQ_EQ(m.bitmap, s->c->nleaves ? s->leaf_full[leaf_of(s, p->rank)] : s->full);
	REQ_EQ(m.exp, ch->exp);
	if (cl->route != ROUTE_NONE) {
		/* Elements exactly where the route sends them, BRIEF elsewhere. */
		bool full = cl->route == ROUTE_GATHER ? p->rank != ch->root : p->rank == ch->root;

		REQ_EQ(m.flags & (INCA_F_ROUTED | INCA_F_GATHER),
		       INCA_F_ROUTED | (cl->route == ROUTE_GATHER ? INCA_F_GATHER : 0));
		REQ_EQ(!!(m.flags & INCA_F_BRIEF), !full);
		REQ_EQ(m.body_len, full ? (size_t)ch->count * inca_dtype_size(cl->dtype) : 0);
		s->st.briefs_rx += !full;
	} else {
		REQ_EQ(m.flags & (INCA_F_ROUTED | INCA_F_GATHER | INCA_F_BRIEF), 0);
	}
	REQ_MSG(memcmp(m.body, s->ref + ch->ref_off, m.body_len) == 0,
		"%s: chunk %llu differs from the reference", s->c->name,
		(unsigned long long)idx);
	s->st.results_ok++;
	if (m.flags & INCA_F_RETX)
		s->st.replays_rx++;
	if (w->got[idx])
		return;
	w->got[idx] = 1;
	while (w->base < s->nchunks && w->got[w->base])
		w->base++;
	worker_pump(s, p->rank);
}

/* ---- the aggregator ------------------------------------------------------ */

/*
 * Note that @m was counted at an aggregator whose counted ranks of this
 * chunk are @counted: never twice, never into the use of another chunk.
 * False (with the violation recorded) if it was.
 */
static bool
count_ok(struct sim *s, const struct pkt *p, const struct inca_msg *m,
	 const struct agg_out *out, uint32_t *counted)
{
	uint32_t bit = UINT32_C(1) << m->rank;

	if (out->set->seq != m->seq || (*counted & bit)) {
		s->st.violations++;
		s->st.violations_late += p->late;
		REQ_MSG(s->c->expect_violation, "%s: rank %u seq %u %s %u", s->c->name, m->rank,
			m->seq, out->set->seq != m->seq ? "counted into the use of seq" :
			"counted twice, set seq", out->set->seq);
		return false;
	}
	*counted |= bit;
	if (p->late)
		s->st.late_counted++;
	return true;
}

static void
drop_seen(struct sim *s, const struct pkt *p, const struct agg_out *out)
{
	s->st.drops[out->reason]++;
	if (p->late && out->reason == AGG_DROP_STALE)
		s->st.late_stale++;
}

/*
 * The top aggregator: the only one of a one-level job (its members the
 * workers), or a tree's root (its members the leaves, whose partials come
 * as PKT_UP and whose results go down as PKT_DOWN).
 */
static void
agg_receive(struct sim *s, const struct pkt *p)
{
	bool tree = s->c->nleaves != 0;
	enum pkt_kind down = tree ? PKT_DOWN : PKT_RESULT;
	unsigned members = tree ? s->c->nleaves : s->c->nworkers;
	struct agg_out out;
	struct inca_msg m;
	uint64_t idx;
	size_t len;
	unsigned r;

	REQ_EQ(inca_msg_decode(p->data, p->len, s->c->chunk, &m), INCA_WIRE_OK);
	REQ_EQ(m.job, JOB);
	REQ(!tree || m.rank == p->rank);
	agg_contribute(s->job, &m, &out);
	s->st.verdicts[out.verdict]++;
	idx = (uint32_t)(m.seq - (uint32_t)s->c->k0);
	REQ(idx < s->nchunks);

	switch (out.verdict) {
	case AGG_PENDING:
	case AGG_COMPLETE:
		if (!count_ok(s, p, &m, &out, &s->counted[idx]))
			return;
		if (out.verdict == AGG_PENDING)
			break;
		REQ_MSG(!s->completed[idx], "%s: chunk %llu completed twice", s->c->name,
			(unsigned long long)idx);
		s->completed[idx] = 1;
		REQ_EQ(s->counted[idx], s->full);
		REQ_EQ(out.set->bitmap, s->full);
		/* One RESULT per member: with the elements, or BRIEF. */
		for (r = 0; r < members; r++) {
			len = agg_result_write(s->job, out.set, r, false, s->buf);
			REQ_EQ(len, agg_result_len_to(s->job, out.set, r));
			net_send(s, down, r, s->buf, len);
		}
		break;
	case AGG_REPLAY:
		REQ(out.set->bitmap & (UINT32_C(1) << m.rank));
		REQ(!s->c->seq_check || out.set->seq == m.seq);
		len = agg_result_write(s->job, out.set, m.rank, true, s->buf);
		net_send(s, down, m.rank, s->buf, len);
		s->st.root_replays += tree;
		break;
	case AGG_MISMATCH:
		/* Every worker here sends the same geometry. */
		REQ_MSG(false, "%s: rank %u seq %u: mismatch in a consistent stream",
			s->c->name, m.rank, m.seq);
		break;
	case AGG_DROP:
		drop_seen(s, p, &out);
		break;
	default:
		REQ_MSG(false, "%s: verdict %d from a job that is no tree's leaf", s->c->name,
			out.verdict);
	}
}

/* A tree's leaf l: its members' contributions. */
static void
leaf_receive(struct sim *s, const struct pkt *p)
{
	unsigned l = leaf_of(s, p->rank);
	struct agg_job *job = s->leaf[l];
	struct agg_out out;
	struct inca_msg m;
	uint64_t idx;
	size_t len;

	REQ_EQ(inca_msg_decode(p->data, p->len, s->c->chunk, &m), INCA_WIRE_OK);
	REQ_EQ(m.rank, local_rank(s, p->rank));
	agg_contribute(job, &m, &out);
	s->st.verdicts[out.verdict]++;
	idx = (uint32_t)(m.seq - (uint32_t)s->c->k0);
	REQ(idx < s->nchunks);

	switch (out.verdict) {
	case AGG_PENDING:
	case AGG_PARTIAL:
		if (!count_ok(s, p, &m, &out, &s->leaf_counted[idx * s->c->nleaves + l]))
			return;
		if (out.verdict == AGG_PENDING)
			break;
		REQ_MSG(!s->leaf_completed[idx * s->c->nleaves + l],
			"%s: leaf %u chunk %llu completed twice", s->c->name, l,
			(unsigned long long)idx);
		s->leaf_completed[idx * s->c->nleaves + l] = 1;
		REQ_EQ(out.set->bitmap, s->leaf_full[l]);
		len = agg_partial_write(job, out.set, JOB, l, TOKEN, false, s->buf);
		net_send(s, PKT_UP, l, s->buf, len);
		s->st.partials_up++;
		break;
	case AGG_RESEND_UP:
		REQ_EQ(out.set->seq, m.seq);
		len = agg_partial_write(job, out.set, JOB, l, TOKEN, true, s->buf);
		net_send(s, PKT_UP, l, s->buf, len);
		s->st.partials_resent++;
		break;
	case AGG_REPLAY:
		REQ(out.set->bitmap & (UINT32_C(1) << m.rank));
		REQ_EQ(out.set->seq, m.seq);
		len = agg_result_write(job, out.set, m.rank, true, s->buf);
		net_send(s, PKT_RESULT, p->rank, s->buf, len);
		break;
	case AGG_DROP:
		drop_seen(s, p, &out);
		break;
	default:
		REQ_MSG(false, "%s: leaf %u: verdict %d", s->c->name, l, out.verdict);
	}
}

/* A tree's leaf l: the root's RESULT, for its members if a set waits for it. */
static void
leaf_down(struct sim *s, const struct pkt *p)
{
	unsigned l = p->rank, lr;
	struct agg_job *job = s->leaf[l];
	struct agg_out out;
	struct inca_msg m;
	size_t len;

	REQ_EQ(inca_msg_decode(p->data, p->len, s->c->chunk, &m), INCA_WIRE_OK);
	REQ_EQ(m.type, INCA_MSG_RESULT);
	REQ_EQ(m.rank, l);
	if (agg_parent_result(job, &m, &out) != AGG_COMPLETE) {
		/* A duplicate, a replay nobody waits for any more, a late copy. */
		REQ_EQ(out.reason, AGG_DROP_STALE);
		s->st.parent_drops++;
		return;
	}
	/* Each member's form: a routed chunk's differ (BRIEF or not). */
	for (lr = 0; lr < leaf_size(s, l); lr++) {
		len = agg_result_write(job, out.set, lr, false, s->buf);
		REQ_EQ(len, agg_result_len_to(job, out.set, lr));
		net_send(s, PKT_RESULT, lr * s->c->nleaves + l, s->buf, len);
	}
}

/* ---- a run ---------------------------------------------------------------- */

static void
sim_setup(struct sim *s, const struct sim_cfg *c)
{
	struct agg_job_params jp = {
		.job = JOB,
		.token = TOKEN,
		.nworkers = c->nleaves ? c->nleaves : c->nworkers,
		.pool_size = c->pool,
		.max_elems = c->chunk,
		.dtypes = (1u << INCA_DTYPE_COUNT) - 1,
		.ops = (1u << INCA_OP_COUNT) - 1,
		.seq_check = c->seq_check,
	};
	uint64_t n = 0, idx;
	size_t ref_bytes = 0;
	unsigned rep, ci, r;

	REQ(c->window >= 1 && c->window <= c->pool);
	REQ(c->nleaves <= MAX_LEAVES && c->nworkers <= MAX_RANKS);
	REQ(c->nleaves ? c->nworkers <= c->nleaves * INCA_MAX_WORKERS && c->nworkers >= c->nleaves
		       : c->nworkers <= INCA_MAX_WORKERS);
	memset(s, 0, sizeof(*s));
	s->c = c;
	s->rng = c->seed;
	s->full = jp.nworkers == 32 ? UINT32_MAX : (UINT32_C(1) << jp.nworkers) - 1;
	s->job = agg_job_create(&jp);
	REQ(s->job != NULL);
	agg_job_set_members(s->job, s->full);
	for (r = 0; r < c->nleaves; r++) {
		struct agg_job_params lp = jp;

		lp.nworkers = (uint16_t)leaf_size(s, r);
		lp.tree = true;
		s->leaf[r] = agg_job_create(&lp);
		REQ(s->leaf[r] != NULL);
		s->leaf_full[r] = lp.nworkers == 32 ? UINT32_MAX : (UINT32_C(1) << lp.nworkers) - 1;
		agg_job_set_members(s->leaf[r], s->leaf_full[r]);
	}

	for (rep = 0; rep < c->repeat; rep++)
		for (ci = 0; ci < c->ncolls; ci++)
			n += (c->colls[ci].nelems + c->chunk - 1) / c->chunk;
	s->nchunks = n;
	s->chunks = calloc(n, sizeof(*s->chunks));
	s->counted = calloc(n, sizeof(*s->counted));
	s->completed = calloc(n, 1);
	REQ(s->chunks && s->counted && s->completed);
	if (c->nleaves) {
		s->leaf_counted = calloc(n * c->nleaves, sizeof(*s->leaf_counted));
		s->leaf_completed = calloc(n * c->nleaves, 1);
		REQ(s->leaf_counted && s->leaf_completed);
	}
	idx = 0;
	for (rep = 0; rep < c->repeat; rep++) {
		for (ci = 0; ci < c->ncolls; ci++) {
			const struct sim_coll *cl = &c->colls[ci];
			uint32_t off;

			for (off = 0; off < cl->nelems; off += c->chunk) {
				struct chunk *ch = &s->chunks[idx++];

				ch->coll = ci;
				ch->offset = off;
				ch->count = cl->nelems - off < c->chunk ? cl->nelems - off :
					    c->chunk;
				ch->last = off + c->chunk >= cl->nelems;
				ch->root = (uint16_t)(cl->route == ROUTE_REDUCE ? c->nworkers - 1 :
						     (off / c->chunk) % c->nworkers);
				ch->ref_off = ref_bytes;
				ref_bytes += (size_t)ch->count * inca_dtype_size(cl->dtype);
			}
		}
	}
	s->ref = malloc(ref_bytes);
	REQ(s->ref != NULL);
	for (idx = 0; idx < n; idx++)
		reference(s, idx);
	for (r = 0; r < c->nworkers; r++) {
		s->w[r].got = calloc(n, 1);
		s->w[r].gen = calloc(n, sizeof(uint32_t));
		REQ(s->w[r].got && s->w[r].gen);
	}
}

static void
sim_teardown(struct sim *s)
{
	unsigned r;

	while (s->nheap)
		free(heap_pop(s).p);
	free(s->heap);
	for (r = 0; r < s->c->nworkers; r++) {
		free(s->w[r].got);
		free(s->w[r].gen);
	}
	free(s->ref);
	free(s->completed);
	free(s->counted);
	free(s->chunks);
	free(s->leaf_counted);
	free(s->leaf_completed);
	agg_job_destroy(s->job);
	for (r = 0; r < s->c->nleaves; r++)
		agg_job_destroy(s->leaf[r]);
}

static bool
all_done(const struct sim *s)
{
	unsigned r;

	for (r = 0; r < s->c->nworkers; r++)
		if (s->w[r].base < s->nchunks)
			return false;
	return true;
}

/*
 * Run until every worker has every result and the network is empty (late
 * copies still arrive after the workers are done), or until the event
 * budget is spent, which fails the run unless a violation was expected.
 */
static struct sim_stats
sim_run(const struct sim_cfg *c)
{
	static struct sim s;
	uint64_t budget, idx;
	unsigned r;

	sim_setup(&s, c);
	/*
	 * Generous: about 3 events per message per worker and chunk in a
	 * loss-free run; loss multiplies that by a small factor.
	 */
	budget = 200 * s.nchunks * c->nworkers + 1000000;
	for (r = 0; r < c->nworkers; r++)
		worker_pump(&s, r);
	while (s.nheap > 0 && s.st.events < budget) {
		struct ev e = heap_pop(&s);

		REQ(e.time >= s.now);
		s.now = e.time;
		s.st.events++;
		switch (e.p->kind) {
		case PKT_CONTRIB:
			if (c->nleaves)
				leaf_receive(&s, e.p);
			else
				agg_receive(&s, e.p);
			break;
		case PKT_UP:
			agg_receive(&s, e.p);
			break;
		case PKT_DOWN:
			leaf_down(&s, e.p);
			break;
		case PKT_RESULT:
			worker_result(&s, e.p);
			break;
		default:
			worker_timer(&s, e.p);
			break;
		}
		free(e.p);
		if (c->expect_violation && s.st.violations > 0)
			break;
	}
	s.st.finished = all_done(&s) && s.nheap == 0;
	if (!c->expect_violation) {
		REQ_MSG(s.st.finished, "%s: not finished after %llu events", c->name,
			(unsigned long long)s.st.events);
		for (idx = 0; idx < s.nchunks; idx++) {
			REQ(s.completed[idx]);
			REQ_EQ(s.counted[idx], s.full);
		}
		/* A correct worker never causes these. */
		REQ_EQ(s.st.drops[AGG_DROP_CONFLICT], 0);
		REQ_EQ(s.st.drops[AGG_DROP_MISMATCH], 0);
		for (r = 0; r < AGG_DROP_COUNT; r++)
			if (r != AGG_DROP_DUPLICATE && r != AGG_DROP_STALE)
				REQ_MSG(s.st.drops[r] == 0, "%s: %llu %s drops", c->name,
					(unsigned long long)s.st.drops[r], agg_drop_name(r));
		REQ_EQ(agg_job_busy_slots(s.job), 0);
		for (r = 0; r < c->nleaves; r++) {
			REQ_EQ(agg_job_busy_slots(s.leaf[r]), 0);
			for (idx = 0; idx < s.nchunks; idx++) {
				REQ(s.leaf_completed[idx * c->nleaves + r]);
				REQ_EQ(s.leaf_counted[idx * c->nleaves + r], s.leaf_full[r]);
			}
		}
	}
	printf("sim %-14s N=%-2u L=%u pool=%-2u W=%-2u chunks=%-6llu ticks=%-8llu events=%-8llu "
	       "lost=%llu dup=%llu late=%llu retx=%llu replay=%llu duplicate=%llu "
	       "stale=%llu (late %llu) up=%llu resent=%llu root-replay=%llu brief=%llu/%llu\n",
	       c->name, c->nworkers, c->nleaves, c->pool, c->window, (unsigned long long)s.nchunks,
	       (unsigned long long)s.now, (unsigned long long)s.st.events,
	       (unsigned long long)s.st.lost, (unsigned long long)s.st.duplicated,
	       (unsigned long long)s.st.held_late, (unsigned long long)s.st.retransmits,
	       (unsigned long long)s.st.verdicts[AGG_REPLAY],
	       (unsigned long long)s.st.drops[AGG_DROP_DUPLICATE],
	       (unsigned long long)s.st.drops[AGG_DROP_STALE],
	       (unsigned long long)s.st.late_stale, (unsigned long long)s.st.partials_up,
	       (unsigned long long)s.st.partials_resent, (unsigned long long)s.st.root_replays,
	       (unsigned long long)s.st.brief_up, (unsigned long long)s.st.briefs_rx);
	fflush(stdout);
	sim_teardown(&s);
	return s.st;
}

/* ---- the collectives ------------------------------------------------------ */

/* Sizes chosen so that most collectives end in a partial chunk. */
static const struct sim_coll mixed[] = {
	{ INCA_DTYPE_INT32, INCA_OP_SUM, false, 1000, ROUTE_NONE },
	{ INCA_DTYPE_FP32, INCA_OP_SUM, false, 777, ROUTE_NONE },
	{ INCA_DTYPE_FP16, INCA_OP_MAX, false, 300, ROUTE_NONE },
	{ INCA_DTYPE_BF16, INCA_OP_SUM, false, 513, ROUTE_NONE },
	{ INCA_DTYPE_INT32, INCA_OP_SUM, true, 640, ROUTE_NONE },
	{ INCA_DTYPE_FP32, INCA_OP_MIN, false, 129, ROUTE_NONE },
	{ INCA_DTYPE_INT32, INCA_OP_MAX, false, 65, ROUTE_NONE },
	{ INCA_DTYPE_BF16, INCA_OP_MIN, false, 100, ROUTE_NONE },
	{ INCA_DTYPE_FP16, INCA_OP_SUM, false, 450, ROUTE_NONE },
	{ INCA_DTYPE_INT32, INCA_OP_MIN, false, 31, ROUTE_NONE },
	{ INCA_DTYPE_FP32, INCA_OP_MAX, false, 1, ROUTE_NONE },
	{ INCA_DTYPE_BF16, INCA_OP_MAX, false, 47, ROUTE_NONE },
};
#define NMIXED (sizeof(mixed) / sizeof(mixed[0]))

static struct sim_cfg
base_cfg(const char *name, unsigned n, unsigned pool, unsigned window, unsigned chunk,
	 unsigned repeat)
{
	struct sim_cfg c = {
		.name = name,
		.nworkers = n,
		.pool = pool,
		.window = window,
		.chunk = chunk,
		.seq_check = true,
		.delay = 10,
		.jitter = 5,
		.seed = 0x1badcafe ^ ((uint64_t)n << 32) ^ pool,
		.colls = mixed,
		.ncolls = NMIXED,
		.repeat = repeat,
	};

	/* Just above the longest loss-free answer time (2 delays + jitter). */
	c.rto = 2 * (c.delay + c.jitter) + c.jitter + 1;
	return c;
}

static void
lossy(struct sim_cfg *c, unsigned loss, unsigned dup, unsigned late)
{
	c->loss_up = loss;
	c->loss_down = loss;
	c->dup = dup;
	c->jitter = 12; /* well above the gap between a worker's packets */
	c->rto = 2 * (c->delay + c->jitter) + c->jitter + 1;
	c->late = late;
	c->late_delay = 40 * c->rto;
}

/* ---- tcases ---------------------------------------------------------------- */

START_TEST(test_loss_free)
{
	static const unsigned ns[] = { 2, 3, 8, 32 };
	static const unsigned pools[] = { 4, 7, 16, 8 };
	unsigned i;

	for (i = 0; i < 4; i++) {
		struct sim_cfg c = base_cfg("loss-free", ns[i], pools[i], pools[i] - i % 2, 16,
					    ns[i] == 32 ? 2 : 6);
		struct sim_stats st;

		/* A timeout above the worst answer time: nothing is ever sent twice. */
		c.rto = 3 * (c.delay + c.jitter);
		st = sim_run(&c);
		ck_assert_uint_eq(st.retransmits, 0);
		ck_assert_uint_eq(st.verdicts[AGG_DROP], 0);
		ck_assert_uint_eq(st.verdicts[AGG_REPLAY], 0);
		ck_assert_uint_eq(st.replays_rx, 0);
		ck_assert_uint_eq(st.results_ok, st.verdicts[AGG_COMPLETE] * c.nworkers);
	}
}
END_TEST

static void
check_misbehaviour_seen(const struct sim_cfg *c, const struct sim_stats *st)
{
	if (c->loss_up || c->loss_down) {
		ck_assert_msg(st->retransmits > 0, "%s: no retransmission", c->name);
		ck_assert_msg(st->verdicts[AGG_REPLAY] > 0 && st->replays_rx > 0,
			      "%s: no replay", c->name);
	}
	if (c->loss_up || c->loss_down || c->dup)
		ck_assert_msg(st->drops[AGG_DROP_DUPLICATE] > 0, "%s: no duplicate", c->name);
	if (c->late && c->seq_check)
		ck_assert_msg(st->late_stale > 0, "%s: no late copy refused", c->name);
}

START_TEST(test_loss_1)
{
	struct sim_cfg c = base_cfg("loss-1%", 8, 8, 8, 8, 30);
	struct sim_stats st;

	lossy(&c, 100, 50, 20);
	st = sim_run(&c);
	check_misbehaviour_seen(&c, &st);
}
END_TEST

START_TEST(test_loss_5)
{
	struct sim_cfg c = base_cfg("loss-5%", 16, 16, 12, 16, 20);
	struct sim_stats st;

	lossy(&c, 500, 100, 30);
	st = sim_run(&c);
	check_misbehaviour_seen(&c, &st);
}
END_TEST

START_TEST(test_loss_20)
{
	struct sim_cfg c = base_cfg("loss-20%", 5, 4, 4, 8, 20);
	struct sim_stats st;

	lossy(&c, 2000, 100, 30);
	st = sim_run(&c);
	check_misbehaviour_seen(&c, &st);
	/* Every stale drop is a copy of a contribution already counted. */
	ck_assert_uint_gt(st.drops[AGG_DROP_STALE], 0);
}
END_TEST

START_TEST(test_every_size)
{
	unsigned n;

	/* 2..32 workers, pools of 4..16, 5 % loss each way. */
	for (n = 2; n <= INCA_MAX_WORKERS; n++) {
		unsigned pool = 4 + n % 13;
		struct sim_cfg c = base_cfg("every-size", n, pool, pool - n % 3, 32, 1);
		struct sim_stats st;

		lossy(&c, 500, 100, 10);
		st = sim_run(&c);
		ck_assert_uint_gt(st.retransmits, 0);
	}
}
END_TEST

START_TEST(test_dup_reorder)
{
	struct sim_cfg c = base_cfg("dup-reorder", 6, 8, 8, 16, 12);
	struct sim_stats st;

	/* No loss; every fourth packet doubled; delays vary by 5 delays. */
	c.dup = 2500;
	c.jitter = 50;
	c.rto = 2 * (c.delay + c.jitter) + c.jitter + 1;
	st = sim_run(&c);
	check_misbehaviour_seen(&c, &st);
	ck_assert_uint_eq(st.lost, 0);
}
END_TEST

START_TEST(test_late_stale)
{
	struct sim_cfg c = base_cfg("late-stale", 4, 4, 4, 8, 10);
	struct sim_stats st;

	/*
	 * 3 % of the packets come back 40 timeouts later, when their set has
	 * been reused many times: every one of them must be refused as
	 * STALE, never counted into the newer use.
	 */
	lossy(&c, 100, 0, 300);
	st = sim_run(&c);
	ck_assert_uint_gt(st.late_stale, 100);
	ck_assert_uint_eq(st.violations, 0);
	check_misbehaviour_seen(&c, &st);
}
END_TEST

START_TEST(test_late_stale_tofino)
{
	struct sim_cfg c = base_cfg("late-tofino", 4, 4, 4, 8, 10);
	struct sim_stats st;

	/*
	 * Without the seq check, on links that keep their order (so that
	 * only the held-back copies arrive out of turn), a late copy finds
	 * its rank's bit cleared in a COMPLETE set, or a FILLING set of a
	 * later use, and is counted into it: the wrong result that the seq
	 * check of test_late_stale prevents.
	 */
	lossy(&c, 100, 0, 300);
	c.seq_check = false;
	c.fifo_up = true;
	c.expect_violation = true;
	st = sim_run(&c);
	ck_assert_uint_eq(st.violations, 1);
	ck_assert_uint_eq(st.violations_late, 1);
}
END_TEST

START_TEST(test_tofino)
{
	struct sim_cfg c = base_cfg("tofino", 8, 8, 8, 8, 30);
	struct sim_stats st;

	/*
	 * Without seq comparisons, exactly-once rests on a worker's copies of
	 * a chunk never arriving after its next use of the slot: each worker's
	 * link keeps its order (as a switch port does), and nothing is held
	 * back. Loss, duplication and reordering across workers remain.
	 */
	lossy(&c, 500, 500, 0);
	c.seq_check = false;
	c.fifo_up = true;
	st = sim_run(&c);
	check_misbehaviour_seen(&c, &st);
}
END_TEST

START_TEST(test_seq_wrap)
{
	/* The chunk numbers cross 2^32 in the middle of the run. */
	struct sim_cfg c = base_cfg("seq-wrap", 6, 12, 10, 8, 6);
	struct sim_stats st;

	c.k0 = (UINT64_C(1) << 32) - 1000;
	lossy(&c, 500, 100, 30);
	st = sim_run(&c);
	check_misbehaviour_seen(&c, &st);
}
END_TEST

/* ---- routed chunks -------------------------------------------------------- */

/* ReduceScatter, AllGather and Reduce mixed with allreduces, every dtype. */
static const struct sim_coll routed[] = {
	{ INCA_DTYPE_INT32, INCA_OP_SUM, false, 1000, ROUTE_SCATTER },
	{ INCA_DTYPE_INT32, INCA_OP_SUM, false, 777, ROUTE_GATHER },
	{ INCA_DTYPE_FP32, INCA_OP_SUM, false, 300, ROUTE_SCATTER },
	{ INCA_DTYPE_INT32, INCA_OP_SUM, false, 65, ROUTE_NONE },
	{ INCA_DTYPE_BF16, INCA_OP_MAX, false, 513, ROUTE_SCATTER },
	{ INCA_DTYPE_FP16, INCA_OP_SUM, false, 129, ROUTE_REDUCE },
	{ INCA_DTYPE_FP32, INCA_OP_MIN, false, 450, ROUTE_GATHER },
	{ INCA_DTYPE_INT32, INCA_OP_SUM, true, 640, ROUTE_SCATTER },
	{ INCA_DTYPE_INT32, INCA_OP_MAX, false, 31, ROUTE_REDUCE },
	{ INCA_DTYPE_FP16, INCA_OP_MIN, false, 47, ROUTE_GATHER },
};
#define NROUTED (sizeof(routed) / sizeof(routed[0]))

static void
routed_run(const char *name, unsigned n, unsigned pool, unsigned loss, unsigned repeat)
{
	struct sim_cfg c = base_cfg(name, n, pool, pool, 8, repeat);
	struct sim_stats st;

	c.colls = routed;
	c.ncolls = NROUTED;
	if (loss == 0) {
		c.rto = 3 * (c.delay + c.jitter);
	} else {
		lossy(&c, loss, 100, 20);
	}
	st = sim_run(&c);
	/* Both forms went out and came back checked. */
	ck_assert_uint_gt(st.brief_up, 0);
	ck_assert_uint_gt(st.briefs_rx, 0);
	if (loss == 0) {
		ck_assert_uint_eq(st.retransmits, 0);
		ck_assert_uint_eq(st.verdicts[AGG_DROP], 0);
		ck_assert_uint_eq(st.results_ok, st.verdicts[AGG_COMPLETE] * c.nworkers);
	} else {
		check_misbehaviour_seen(&c, &st);
	}
}

START_TEST(test_routed_loss_free)
{
	routed_run("routed-clean", 4, 8, 0, 3);
	routed_run("routed-clean", 3, 5, 0, 2);
}
END_TEST

START_TEST(test_routed_loss_5)
{
	routed_run("routed-5%", 8, 8, 500, 6);
}
END_TEST

START_TEST(test_routed_loss_20)
{
	routed_run("routed-20%", 4, 4, 2000, 4);
	routed_run("routed-20%", 32, 8, 2000, 1);
}
END_TEST

/* ---- trees ---------------------------------------------------------------- */

START_TEST(test_tree_loss_free)
{
	static const unsigned ns[] = { 2, 5, 16, 64 };
	static const unsigned ls[] = { 2, 2, 4, 8 };
	unsigned i;

	for (i = 0; i < 4; i++) {
		struct sim_cfg c = base_cfg("tree-loss-free", ns[i], 8, 8 - i % 2, 16, 3);
		struct sim_stats st;

		c.nleaves = ls[i];
		/* Two levels: twice the answer time of one. */
		c.rto = 6 * (c.delay + c.jitter);
		st = sim_run(&c);
		ck_assert_uint_eq(st.retransmits, 0);
		ck_assert_uint_eq(st.partials_resent, 0);
		ck_assert_uint_eq(st.verdicts[AGG_DROP], 0);
		ck_assert_uint_eq(st.parent_drops, 0);
		/* Every worker got every chunk's result once, and nothing else. */
		ck_assert_uint_eq(st.results_ok, (st.partials_up / c.nleaves) * c.nworkers);
	}
}
END_TEST

/* Loss, duplication, reordering and late copies on every link of the tree. */
static void
tree_lossy(const char *name, unsigned n, unsigned l, unsigned loss, unsigned repeat)
{
	struct sim_cfg c = base_cfg(name, n, 8, 8, 16, repeat);
	struct sim_stats st;

	c.nleaves = l;
	lossy(&c, loss, 100, 20);
	c.rto = 2 * c.rto;
	c.late_delay = 40 * c.rto;
	st = sim_run(&c);
	check_misbehaviour_seen(&c, &st);
	/* The leaves' uplinks lost partials and results: a member's
	 * retransmission sent the partial again, and the root replayed. */
	ck_assert_uint_gt(st.partials_resent, 0);
	ck_assert_uint_gt(st.root_replays, 0);
	ck_assert_uint_gt(st.parent_drops, 0);
}

START_TEST(test_tree_loss_5)
{
	tree_lossy("tree-loss-5%", 12, 3, 500, 8);
}
END_TEST

START_TEST(test_tree_loss_20)
{
	tree_lossy("tree-loss-20%", 6, 2, 2000, 4);
}
END_TEST

/*
 * Routed chunks through a tree ("Routed chunks in a tree"): the roots
 * under every leaf, with loss, duplication, reordering and late copies on
 * every link; every worker gets its form of every chunk, exact.
 */
static void
tree_routed(const char *name, unsigned n, unsigned l, unsigned loss, unsigned repeat)
{
	struct sim_cfg c = base_cfg(name, n, 8, 8, 8, repeat);
	struct sim_stats st;

	c.nleaves = l;
	c.colls = routed;
	c.ncolls = NROUTED;
	if (loss == 0) {
		c.rto = 6 * (c.delay + c.jitter);
	} else {
		lossy(&c, loss, 100, 20);
		c.rto = 2 * c.rto;
		c.late_delay = 40 * c.rto;
	}
	st = sim_run(&c);
	ck_assert_uint_gt(st.brief_up, 0);
	ck_assert_uint_gt(st.briefs_rx, 0);
	if (loss == 0) {
		ck_assert_uint_eq(st.retransmits, 0);
		ck_assert_uint_eq(st.verdicts[AGG_DROP], 0);
		ck_assert_uint_eq(st.parent_drops, 0);
		ck_assert_uint_eq(st.results_ok, (st.partials_up / c.nleaves) * c.nworkers);
	} else {
		check_misbehaviour_seen(&c, &st);
		ck_assert_uint_gt(st.partials_resent, 0);
		ck_assert_uint_gt(st.root_replays, 0);
	}
}

START_TEST(test_tree_routed)
{
	tree_routed("tree-routed-clean", 8, 2, 0, 2);
	tree_routed("tree-routed-clean", 7, 3, 0, 2);
	tree_routed("tree-routed-5%", 8, 2, 500, 4);
	tree_routed("tree-routed-20%", 6, 3, 2000, 2);
	/* Beyond 32 ranks: roots a leaf's members can name only at their leaf. */
	tree_routed("tree-routed-96", 96, 4, 100, 1);
}
END_TEST

START_TEST(test_tree_256)
{
	/* 256 ranks: 8 leaves of 32, each seeing only its own. */
	tree_lossy("tree-256", 256, 8, 100, 1);
}
END_TEST

START_TEST(test_deterministic)
{
	struct sim_cfg c = base_cfg("determinism", 4, 4, 3, 16, 2);
	struct sim_stats a, b;

	lossy(&c, 500, 200, 50);
	a = sim_run(&c);
	b = sim_run(&c);
	ck_assert_uint_eq(a.events, b.events);
	ck_assert_uint_eq(a.lost, b.lost);
	ck_assert_uint_eq(a.retransmits, b.retransmits);
	ck_assert_uint_eq(a.verdicts[AGG_REPLAY], b.verdicts[AGG_REPLAY]);
	ck_assert_uint_eq(a.drops[AGG_DROP_STALE], b.drops[AGG_DROP_STALE]);
	ck_assert_uint_eq(a.drops[AGG_DROP_DUPLICATE], b.drops[AGG_DROP_DUPLICATE]);
	/* And the seed matters. */
	c.seed++;
	b = sim_run(&c);
	ck_assert(a.events != b.events || a.lost != b.lost || a.retransmits != b.retransmits);
}
END_TEST

static Suite *
sim_suite(void)
{
	Suite *s = suite_create("sim");
	const struct {
		const char *name;
		const TTest *fn;
	} cases[] = {
		{ "loss_free", test_loss_free },
		{ "loss_1", test_loss_1 },
		{ "loss_5", test_loss_5 },
		{ "loss_20", test_loss_20 },
		{ "every_size", test_every_size },
		{ "dup_reorder", test_dup_reorder },
		{ "late_stale", test_late_stale },
		{ "late_stale_tofino", test_late_stale_tofino },
		{ "tofino", test_tofino },
		{ "seq_wrap", test_seq_wrap },
		{ "deterministic", test_deterministic },
		{ "routed_loss_free", test_routed_loss_free },
		{ "routed_loss_5", test_routed_loss_5 },
		{ "routed_loss_20", test_routed_loss_20 },
		{ "tree_loss_free", test_tree_loss_free },
		{ "tree_loss_5", test_tree_loss_5 },
		{ "tree_loss_20", test_tree_loss_20 },
		{ "tree_256", test_tree_256 },
		{ "tree_routed", test_tree_routed },
	};
	unsigned i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		TCase *tc = tcase_create(cases[i].name);

		tcase_set_timeout(tc, 120);
		tcase_add_test(tc, cases[i].fn);
		suite_add_tcase(s, tc);
	}
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(sim_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

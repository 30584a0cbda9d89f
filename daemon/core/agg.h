/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * The aggregation core: jobs, slot pools with two shadow sets, contributor
 * bitmaps, exactly-once accumulation, completion and replay. It knows
 * nothing of DPDK, sockets or addresses: incad's lcores call it with decoded
 * messages, tests and benchmarks link it directly.
 *
 * Concurrency: a job may be shared by several lcores as long as each slot is
 * only ever touched by one of them (incad steers by slot index). Job
 * creation and destruction are the control plane's, while no lcore uses the
 * job.
 */
#ifndef INCA_AGG_H
#define INCA_AGG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <inca/wire.h>

#include "kernels.h"

/* Why the core refused a contribution. X(name, description). */
#define AGG_DROP_REASONS(X) \
	X(NOT_CONTRIB, "message is not a contribution") \
	X(BAD_TOKEN, "job token does not match") \
	X(NOT_MEMBER, "rank is not an admitted member of the job") \
	X(BAD_SLOT, "slot beyond the job's pool") \
	X(DTYPE, "data type not allowed for the job") \
	X(OP, "operation not allowed for the job") \
	X(TOO_LARGE, "more elements than the job's slots hold") \
	X(MISMATCH, "dtype, op, count, offset or BFP differ within one use of a set") \
	X(DUPLICATE, "contribution already counted, set still filling") \
	X(STALE, "contribution for an older use of the set") \
	X(CONFLICT, "contribution for a newer use while the set is still filling") \
	X(MALFORMED, "element count zero or body shorter than the count says") \
	X(ROUTE, "routed chunk whose root is not a rank of the job")

enum agg_drop {
#define AGG_X_(n, d) AGG_DROP_##n,
	AGG_DROP_REASONS(AGG_X_)
#undef AGG_X_
	AGG_DROP_COUNT
};

const char *agg_drop_name(unsigned reason);
const char *agg_drop_str(unsigned reason);

enum agg_set_state {
	AGG_SET_IDLE = 0,  /* never used since the job (re)started */
	AGG_SET_FILLING,   /* some contributions counted, not all */
	AGG_SET_COMPLETE,  /* result ready; kept for replays until reused */
	AGG_SET_FAILED,    /* the use's contributions disagreed (MISMATCH); kept until reused */
	AGG_SET_PARTIAL,   /* tree leaf: every member counted, the parent's result awaited */
};

/*
 * One shadow set of a slot. Cache-line aligned so that slots owned by
 * different lcores never share a line. acc points into the job's
 * accumulator memory: max_elems 32-bit lanes in host order (int32_t for
 * INT32, float for FP32, FP16 and BF16; a pair of lanes holding one int64_t
 * or double for INT64 and FP64, so at most max_elems / 2 of those).
 */
struct agg_set {
	uint32_t bitmap;    /* ranks counted in the current use */
	uint16_t remaining; /* contributions still missing in FILLING */
	uint8_t state;      /* enum agg_set_state */
	uint8_t dtype;
	uint8_t op;
	/* INCA_F_BFP, LAST, ROUTED and GATHER of the first contribution */
	uint8_t flags;
	int8_t exp;         /* max of the contributions' exponents */
	uint8_t set;        /* 0 or 1: which shadow set this is */
	uint8_t root;       /* ROUTED: the rank of the chunk's root, or AGG_ROOT_NONE */
	uint8_t route;      /* ROUTED: AGG_RT_* of the use's contributions so far */
	uint16_t count;
	uint16_t slot;
	uint32_t seq;
	uint32_t offset;
	void *acc;
} __attribute__((aligned(64)));

/*
 * The root of a routed set that no contribution named: every one so far
 * was anonymous (bitmap 0, docs/protocol.md "Routed chunks in a tree").
 */
#define AGG_ROOT_NONE 0xff
/* A use counted an anonymous contribution. */
#define AGG_RT_ANON 0x01
/* A use counted a contribution naming a root other than its sender. */
#define AGG_RT_NAMED_OTHER 0x02

struct agg_job_params {
	uint16_t job;        /* 1..65535 */
	uint32_t token;
	uint16_t nworkers;   /* 1..INCA_MAX_WORKERS */
	uint16_t pool_size;  /* slots, >= 1 */
	uint16_t max_elems;  /* 32-bit lanes per set, 1..INCA_MAX_ELEMS */
	uint16_t dtypes;     /* allowed data types, bit (1 << enum inca_dtype) */
	uint16_t ops;        /* allowed operations, bit (1 << enum inca_op) */
	bool seq_check;      /* reject stale and conflicting seq (software) */
	/*
	 * A leaf of an aggregation tree: a set whose members all counted is
	 * a partial sum for the parent (PARTIAL), complete only once the
	 * parent's result replaces it (agg_parent_result()). Needs seq_check.
	 */
	bool tree;
};

struct agg_job {
	struct agg_job_params p;
	uint32_t members;     /* admitted ranks; contributions from others drop */
	uint32_t full_mask;   /* (1 << nworkers) - 1 */
	struct agg_set *sets; /* pool_size * 2: slot i's sets at 2i and 2i+1 */
	void *acc_mem;        /* one allocation for every set's accumulator */
	/*
	 * Kernels chosen when the job was created, so that the hot path
	 * makes no lookups. Indexed by enum inca_dtype and enum inca_op.
	 */
	agg_init_fn *init[INCA_DTYPE_COUNT];
	agg_combine_fn *combine[INCA_DTYPE_COUNT][INCA_OP_COUNT];
	agg_export_fn *export[INCA_DTYPE_COUNT];
};

enum agg_verdict {
	AGG_PENDING,  /* counted; the set waits for more contributions */
	AGG_COMPLETE, /* counted and the set completed: send the result to all */
	AGG_REPLAY,   /* already counted and complete: send the result to the sender */
	AGG_DROP,     /* refused; see the reason */
	/*
	 * The chunk's contributions disagree (seq_check only): NACK MISMATCH,
	 * to every member when @first (this contribution failed the set), else
	 * to the sender (a contribution to a set that failed before).
	 */
	AGG_MISMATCH,
	/* Tree leaf: counted and the set's partial is ready: send it to the parent. */
	AGG_PARTIAL,
	/*
	 * Tree leaf: a retransmission into a set still waiting for the
	 * parent: send the partial again (the parent dedups it, or replays).
	 */
	AGG_RESEND_UP,
};

struct agg_out {
	enum agg_verdict verdict;
	enum agg_drop reason;   /* AGG_DROP only */
	bool first;             /* AGG_MISMATCH: the set failed just now */
	struct agg_set *set;    /* COMPLETE, REPLAY, MISMATCH: the set concerned */
};

/*
 * Bytes of memory a job with these parameters takes (the job, its sets and
 * its accumulators, each set's rounded up to 64 bytes); 0 for parameters
 * agg_job_create() refuses.
 */
size_t agg_job_footprint(const struct agg_job_params *p);

/*
 * Create a job with every set IDLE and no member admitted. Returns NULL and
 * sets errno (EINVAL for parameters out of range, ENOMEM). The job keeps
 * the kernels agg_kernels_init() chose at this moment.
 */
struct agg_job *agg_job_create(const struct agg_job_params *p);
/* Free a job; NULL is fine. */
void agg_job_destroy(struct agg_job *j);
/* Return every set to IDLE (after a member left or was evicted). */
void agg_job_reset(struct agg_job *j);
/*
 * Set the token contributions must carry (incad: the session token of the
 * job's incarnation). Like agg_job_reset(), only while no lcore is inside
 * agg_contribute() for the job.
 */
void agg_job_set_token(struct agg_job *j, uint32_t token);
/* Admit exactly the ranks in @mask (bits beyond nworkers are ignored). */
void agg_job_set_members(struct agg_job *j, uint32_t mask);
/* Number of slots with a set in FILLING. Racy but safe from any thread. */
unsigned agg_job_busy_slots(const struct agg_job *j);

/*
 * Count one contribution. @m is a message that inca_msg_decode() accepted,
 * for this job (m->job == j->p.job). The state machine is
 * docs/protocol.md's "Slots and shadow sets". Never allocates or blocks.
 *
 * Job checks come first, in this order, each its own drop reason: type
 * CONTRIB, token, rank admitted (members) and < nworkers, slot < pool_size,
 * dtype and op allowed, count * lanes <= max_elems (a 64-bit element takes
 * two lanes), count and body length
 * consistent (MALFORMED: decode already guarantees it), BFP only on INT32
 * (DTYPE). Without seq_check (the Tofino subset) seq is never compared: a
 * COMPLETE set answers a set bit with a replay and a clear bit with a new
 * use. The MISMATCH check is made in both modes: with seq_check a mismatch
 * fails the set (AGG_SET_FAILED, verdict AGG_MISMATCH) until a newer seq
 * reuses it, without it the contribution is dropped (AGG_DROP_MISMATCH). Rule 6 leaves a FILLING
 * other set's bitmap alone (only a worker with window > pool can get
 * there), so that nothing is ever counted twice whatever the input.
 *
 * @out (not NULL) receives the verdict, the drop reason and, except for
 * drops, the set. Returns the verdict.
 */
enum agg_verdict agg_contribute(struct agg_job *j, const struct inca_msg *m,
				struct agg_out *out);

/*
 * Length of the RESULT message of set @s with its body (header + body).
 */
size_t agg_result_len(const struct agg_set *s);

/*
 * Ranks of @j that receive the elements of set @s's result (docs/protocol.md,
 * "Routed chunks"): every rank, the root of a reduced chunk, or every rank
 * but the root of a gathered one. The others get a BRIEF RESULT.
 */
uint32_t agg_result_dests(const struct agg_job *j, const struct agg_set *s);

/* Length of the RESULT of set @s to rank @rank: with its body, or BRIEF. */
size_t agg_result_len_to(const struct agg_job *j, const struct agg_set *s, uint16_t rank);

/*
 * Write the RESULT message of the COMPLETE set @s into @buf (at least
 * agg_result_len_to(j, s, dst_rank) bytes): header with rank @dst_rank,
 * INCA_F_RETX when @replay, bitmap = every rank (rule 6 may have cleared
 * some of the set's bits since it completed), then the body in wire format
 * (rounded to fp16/bf16 as the protocol says), or none and INCA_F_BRIEF
 * when @dst_rank does not receive the elements of a routed chunk. Returns
 * the length written.
 */
size_t agg_result_write(const struct agg_job *j, const struct agg_set *s, uint16_t dst_rank,
			bool replay, void *buf);

/*
 * Tree leaf: length of the partial of set @s: header only for a gathered
 * chunk whose root is not one of the leaf's members (a BRIEF partial).
 */
size_t agg_partial_len(const struct agg_set *s);

/*
 * Tree leaf: write the partial sum of the PARTIAL set @s as the CONTRIB of
 * rank @rank of the parent's job @job, carrying the parent session @token
 * (RETX when @retx), into @buf (agg_partial_len(s) bytes). A routed set's
 * partial names this leaf (@rank) as the root when the root is one of its
 * members, else it is anonymous (docs/protocol.md, "Routed chunks in a
 * tree"). Returns the length written.
 */
size_t agg_partial_write(const struct agg_job *j, const struct agg_set *s, uint16_t job,
			 uint16_t rank, uint32_t token, bool retx, void *buf);

/*
 * Tree leaf: the parent's RESULT @m (decoded; its job and token already
 * checked by the caller) for a PARTIAL set of the same slot, set, seq and
 * chunk: the parent's sum and exponent replace the partial, the set is
 * COMPLETE (verdict AGG_COMPLETE: send the result to every member).
 * A routed set's RESULT comes BRIEF exactly when the leaf holds what its
 * members need (the sum goes to another leaf's root, or this leaf's root
 * gave the gathered elements); the other form means the levels disagree
 * on the root: the set fails (AGG_MISMATCH with out->first: NACK every
 * member). Anything else is dropped: STALE when no set of this use waits
 * (a duplicate or late RESULT), MISMATCH when the chunk differs.
 */
enum agg_verdict agg_parent_result(struct agg_job *j, const struct inca_msg *m,
				   struct agg_out *out);

/*
 * Tree leaf: the parent failed the chunk named by @m (NACK MISMATCH): the
 * PARTIAL set of that use becomes FAILED (verdict AGG_MISMATCH with
 * out->first: tell every member); else dropped STALE.
 */
enum agg_verdict agg_parent_fail(struct agg_job *j, const struct inca_msg *m,
				 struct agg_out *out);

/*
 * Rewrite the rank field of a RESULT already written by agg_result_write(),
 * for another rank that receives the same form (agg_result_dests()).
 */
void agg_result_set_rank(void *msg, uint16_t rank);

#endif /* INCA_AGG_H */

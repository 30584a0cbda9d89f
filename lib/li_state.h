/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * The state of a communicator, its chunks and its requests: the data every
 * layer works on. Each layer's header says which fields it owns.
 */
#ifndef INCA_LI_STATE_H
#define INCA_LI_STATE_H

#include "li_transport.h"

/* ---- payload codec (codec.c) ------------------------------------------ */

/* How a request's elements travel. */
enum li_mode {
	LI_MODE_NATIVE = 0, /* dtype as is */
	LI_MODE_BFP,        /* float sum as block fixed point (INT32 + INCA_F_BFP) */
	LI_MODE_ORDERED,    /* float min/max as order-preserving INT32 */
	LI_MODE_RAW,        /* bytes as INT32 sum (broadcast) */
};

/* Exponent markers of the BFP scheme (see docs/libinca.md). */
#define LI_EXP_ZERO INT8_MIN  /* every element is zero */
#define LI_EXP_SPECIAL INT8_MAX /* some element is inf or NaN */
#define LI_EXP_MAX_FINITE (INT8_MAX - 1)

/* ceil(log2(n)) for n >= 1. */
unsigned li_ceil_log2(unsigned n);
/* Local BFP exponent of @count elements of float @dtype. */
int8_t li_bfp_local_exp(const void *src, unsigned dtype, size_t count);
/*
 * Encode @count elements of user data at @src (dtype @dtype, op @op) for
 * @mode into wire format at @dst. BFP uses agreed exponent @exp and
 * @nworkers. RAW reads @count int32 lanes, only @avail bytes of them
 * (the rest zero). @src NULL means zeros. Returns payload bytes.
 */
size_t li_encode(void *dst, const void *src, size_t count, unsigned dtype, unsigned op,
		 enum li_mode mode, int8_t exp, unsigned nworkers, size_t avail);
/* The inverse for results: write @count elements (RAW: @avail bytes) at @dst. */
void li_decode(void *dst, const void *wire, size_t count, unsigned dtype, unsigned op,
	       enum li_mode mode, int8_t exp, unsigned nworkers, size_t avail);

/* ---- communicator ----------------------------------------------------- */

enum li_chunk_state {
	LI_CH_EMPTY = 0,
	LI_CH_SENT,  /* contributed, result awaited */
	LI_CH_DONE,  /* result in @payload (kept for the fallback agreement) */
};

/* One entry of the chunk ring: chunk seq k lives at k mod (2 * window). */
struct li_chunk {
	uint64_t seq;
	struct li_req *req;  /* request the chunk belongs to until delivered */
	uint32_t idx;        /* position in the request's stream (primes first) */
	uint16_t count;      /* elements on the wire */
	uint8_t state;       /* enum li_chunk_state */
	uint8_t retx;        /* retransmissions so far */
	uint8_t later;       /* chunks sent after this one that completed since */
	uint8_t lost;        /* presumed lost once: no peer can be late for it */
	uint8_t held;        /* NACK HELD: wait for the full timer, ignore evidence of loss */
	/*
	 * Routed chunks (docs/protocol.md, "Routed chunks"): brief, the
	 * result came BRIEF (no elements for this rank); kept, @payload holds
	 * this rank's own contribution in wire format (@kept_len bytes), kept
	 * for a chunk whose result comes BRIEF, so that the recovery can
	 * rebuild a result nobody received (fallback.c). route, wdtype, wop,
	 * root: the chunk's (a rank of the whole job, as in a tree), for the
	 * recovery, which may run after the request was delivered.
	 */
	uint8_t brief;
	uint8_t kept;
	uint8_t route;
	uint8_t wdtype;
	uint8_t wop;
	uint16_t root;
	uint16_t kept_len;
	int8_t exp_used;     /* BFP exponent the payload was quantised with */
	int8_t res_exp;      /* exp field of the result */
	uint16_t res_len;    /* payload bytes of the result */
	uint64_t deadline;   /* next retransmission, ns */
	uint64_t sent_ns;    /* last (re)transmission */
	uint8_t *payload;    /* result payload in wire format */
};

enum li_req_state {
	LI_REQ_PENDING = 1,
	LI_REQ_DONE = 0,
};

enum li_req_kind {
	LI_KIND_ALLREDUCE = 0,
	LI_KIND_BCAST,
	LI_KIND_CLOSE,  /* window of one-element chunks before LEAVE */
	LI_KIND_STRIPE, /* a striped communicator's collective: its parts in sub[] */
	LI_KIND_RSCAT,  /* ReduceScatter in routed chunks: block b's chunks to rank b */
	LI_KIND_AGATHER, /* AllGather in routed chunks: block b's from rank b to the others */
	LI_KIND_REDUCE, /* Reduce in routed chunks, every one to root */
};

/* How a request's chunks are routed (struct li_chunk.route). */
enum li_route {
	LI_ROUTE_NONE = 0,
	LI_ROUTE_REDUCE, /* ROUTED: reduced, the result to the root */
	LI_ROUTE_GATHER, /* ROUTED + GATHER: the root's elements to the others */
};

struct li_req {
	struct li_req *next;
	struct inca_comm *comm;
	const void *sendbuf;     /* NULL: contribute zeros (broadcast non-root) */
	void *recvbuf;
	size_t count;            /* elements; broadcast: int32 lanes */
	size_t bytes;            /* broadcast: bytes in buf; AGATHER: bytes per block */
	size_t block;            /* RSCAT: elements per block; AGATHER: int32 lanes per block */
	uint32_t cpb;            /* RSCAT, AGATHER: chunks per block */
	uint16_t nblocks;        /* RSCAT, AGATHER: blocks (ranks), interleaved in the stream */
	uint16_t root;           /* REDUCE: the root */
	uint8_t kind;            /* enum li_req_kind */
	uint8_t dtype;           /* user's dtype */
	uint8_t op;
	uint8_t mode;            /* enum li_mode */
	uint8_t wire_dtype;
	uint8_t wire_op;
	uint8_t flags;           /* INCA_F_BFP for BFP */
	uint16_t chunk_elems;
	uint32_t nchunks;        /* data chunks */
	uint32_t nprime;         /* BFP exponent priming chunks (sent first) */
	uint64_t seq0;           /* seq of the first chunk of the stream */
	uint32_t delivered;      /* stream chunks delivered in order */
	int state;               /* enum li_req_state */
	int result;              /* INCA_OK or error once DONE */
	/* LI_KIND_STRIPE: each stripe's part (NULL: none, or done). */
	struct li_req *sub[LI_MAX_STRIPES];
};

/* Internal counters beyond the public ones are not needed: reuse them. */
struct inca_comm {
	/* configuration */
	struct inca_comm_opts o;
	char *agg_str;
	/*
	 * Where this rank aggregates (li_place()): the address of its
	 * aggregator in agg_str, which one of the list it is, and its rank and
	 * group size there (the wire's rank and nworkers). With one aggregator
	 * they are o.rank and o.size; o.rank and o.size stay the job's, for
	 * the agreements, the fallback and the BFP scale.
	 */
	const char *agg_one;
	unsigned agg_index;
	uint16_t wrank;
	uint16_t wsize;
	/*
	 * A striped communicator (collective.c, "Stripes"): no stream of its
	 * own, but one communicator per stripe, each on its own aggregator
	 * (or tree) with job id o.job + s; a collective is cut into one
	 * contiguous part per stripe. Its requests (LI_KIND_STRIPE) are in
	 * head/tail like a stream's.
	 */
	unsigned nstripes;
	struct inca_comm *stripe[LI_MAX_STRIPES];
	uint64_t probe_mark;  /* striped: fb_count at the stripes' last probe */
	char *bind_str;
	struct sockaddr_in agg_addr;
	struct sockaddr_in bind_addr;
	const struct li_transport_ops *tops;
	struct li_transport *tp;
	inca_fallback_fn *fb_fn;
	void *fb_ctx;

	/* membership */
	bool joined;
	/*
	 * Session token of the job incarnation we joined (JOIN_ACK): what
	 * CONTRIB, HEARTBEAT and LEAVE carry. Atomic: the keepalive thread
	 * reads it.
	 */
	uint32_t session;
	/*
	 * Member secret of that JOIN_ACK (its header's bitmap), carried back
	 * in every LEAVE and HEARTBEAT (docs/protocol.md, "Member secrets").
	 * Atomic, as the session.
	 */
	uint32_t secret;
	uint16_t caps;
	uint16_t agg_dtypes;
	uint16_t agg_ops;
	uint16_t pool;
	uint16_t window;
	uint16_t max_elems;
	uint16_t max_payload; /* bytes of the largest payload we send */
	uint32_t hb_ms;
	uint32_t evict_ms;
	bool float_native;
	bool roce_bound;      /* CONTRIBs go over the transport's queue pair */

	/* stream */
	uint64_t next_seq;    /* seq the next issued request starts at */
	uint64_t base;        /* lowest seq whose result was not delivered */
	uint64_t next_send;   /* lowest seq never sent */
	uint64_t rtt_min_ns;  /* smallest completion time of the last epoch */
	uint64_t rtt_min_cur; /* ... of the current epoch */
	uint32_t rtt_samples;
	uint64_t srtt_ns;     /* smoothed completion time (1/8 gain) */
	struct li_chunk *ring;  /* 2 * window entries */
	uint8_t *ring_mem;
	uint32_t ring_n;
	uint16_t ring_pay;    /* payload bytes per ring entry */
	struct li_req *head, *tail; /* requests in issue order */
	struct li_req *send_req;    /* request that holds next_send */
	struct li_req *free_reqs;
	unsigned nreqs;

	/* liveness */
	uint64_t alive_ns;    /* last message from the aggregator (or start of waiting) */
	uint64_t last_tx_ns;  /* atomic: the keepalive thread reads it */
	int ka_allowed;       /* atomic: joined and streaming, heartbeats make sense */
	uint64_t ka_sent;     /* atomic: heartbeats the keepalive thread sent */
	struct li_keepalive *ka;
	uint64_t last_hb_ns;
	int nack_err;         /* a NACK made the stream impossible: pending failure */
	uint16_t nack_reason;
	int stream_err;       /* inca_comm_progress() found the stream broken: recover later */
	int failed;           /* sticky error; atomic (inca_comm_error() reads it) */
	int aborted;          /* atomic: inca_comm_abort() was called */

	/* fallback */
	bool in_fallback;
	uint64_t fb_from;     /* first seq done by the fallback (F) */
	uint64_t fb_count;    /* collectives fully run by the fallback */

	/* I/O buffers */
	uint8_t *tx_mem;      /* LI_BATCH messages */
	uint8_t *rx_mem;      /* LI_BATCH messages */
	struct li_pkt tx[LI_BATCH];
	unsigned ntx;
	size_t footprint;

	struct inca_stats st;
};

static inline void
li_set_last_tx(struct inca_comm *c, uint64_t now)
{
	__atomic_store_n(&c->last_tx_ns, now, __ATOMIC_RELAXED);
}

static inline uint32_t
li_session(const struct inca_comm *c)
{
	return __atomic_load_n(&c->session, __ATOMIC_ACQUIRE);
}

static inline uint32_t
li_secret(const struct inca_comm *c)
{
	return __atomic_load_n(&c->secret, __ATOMIC_ACQUIRE);
}

static inline void
li_set_failed(struct inca_comm *c, int err)
{
	__atomic_store_n(&c->failed, err, __ATOMIC_RELEASE);
}

static inline bool
li_aborted(const struct inca_comm *c)
{
	return __atomic_load_n(&c->aborted, __ATOMIC_ACQUIRE) != 0;
}

static inline void
li_ka_allow(struct inca_comm *c, int on)
{
	__atomic_store_n(&c->ka_allowed, on, __ATOMIC_RELEASE);
}

#endif /* INCA_LI_STATE_H */

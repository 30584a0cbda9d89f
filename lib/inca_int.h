/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * libinca internals shared by its source files. Nothing here is part of the
 * interface: every function is hidden (-fvisibility=hidden) and carries the
 * li_ prefix.
 */
#ifndef INCA_LIB_INT_H
#define INCA_LIB_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>

#include <inca/inca.h>

/*
 * Defaults of struct inca_comm_opts (0 there means these). Elements per
 * packet: as many 32-bit lanes as the MTU holds (360 at 1500, 2048 at
 * 9000): the per-packet cost in the kernels and in the aggregator, not the
 * bytes, is what limits a host, and headers are 74 bytes per frame
 * whatever the payload. Window: about LI_DEF_INFLIGHT bytes of payload in
 * flight, within [LI_DEF_WINDOW_MIN, LI_DEF_WINDOW_MAX] chunks: 32 at MTU
 * 1500, 8 at 9000. More in flight only queues in the bottleneck's buffer,
 * and measured through tbf links on a loaded host it costs goodput (48
 * chunks of 1440 bytes ran at a third of the rate of 24; docs/benchmarks.md).
 */
#define LI_DEF_INFLIGHT (64u * 1024)
#define LI_DEF_WINDOW_MIN 8
#define LI_DEF_WINDOW_MAX 32
#define LI_DEF_MTU 1500
#define LI_DEF_TIMEOUT_MS 20
#define LI_DEF_GIVE_UP_MS 3000
#define LI_DEF_PROBE_EVERY 64
#define LI_DEF_OP_TIMEOUT_MS 60000
/* Longest single sleep of a wait, so that inca_comm_abort() is seen soon. */
#define LI_WAIT_SLICE_MS 100
/* The local window is capped: the result ring is 2 x window x payload. */
#define LI_MAX_WINDOW 1024
/* Retransmission timeouts double per retry up to this many times... */
#define LI_MAX_BACKOFF_SHIFT 4
/* ...and never exceed this (ns). */
#define LI_RTO_MAX_NS 2000000000ull
/* Completions of chunks sent later that mark a chunk as lost at once. */
#define LI_FAST_RETX 3
/* Samples per epoch of the minimum completion time. */
#define LI_RTT_EPOCH 256
/* Floor of the retry timer of a chunk presumed lost (ns). */
#define LI_FAST_RTO_MIN_NS 1000000ull
/*
 * Coalesced waiting (engine.c, li_progress): while the window holds the
 * sender back and at least LI_NAP_MIN_INFLIGHT chunks are out, sleep for
 * 1 / LI_NAP_DIV of the smoothed completion time instead of waking at each
 * result, within [LI_NAP_MIN_NS, LI_NAP_MAX_NS].
 */
#define LI_NAP_MIN_INFLIGHT 8
#define LI_NAP_DIV 4
#define LI_NAP_MIN_NS 20000ull
#define LI_NAP_MAX_NS 2000000ull
/* Requests in flight per communicator. */
#define LI_MAX_REQUESTS 1024
/* Packets per sendmmsg / recvmmsg call. */
#define LI_BATCH 32
/* IPv4 + UDP header bytes in front of the INCA header inside the MTU. */
#define LI_IP_UDP_LEN 28
/* Largest INCA message: header and the largest payload. */
#define LI_MAX_MSG (INCA_HDR_LEN + INCA_MAX_PAYLOAD_BYTES)

/* ---- transport -------------------------------------------------------- */

/* One datagram: @len bytes at @buf (send: to send; recv: capacity in, length out). */
struct li_pkt {
	void *buf;
	size_t len;
};

struct li_transport;

/*
 * A way to exchange INCA messages with one aggregator. The kernel UDP one is
 * the only implementation today; DPDK, AF_XDP or RDMA ones plug in here.
 * Errors are negative INCA_E* codes.
 */
struct li_transport_ops {
	const char *name;
	/* Connect to @agg, optionally from @bind (port 0: any). */
	int (*open)(struct li_transport **t, const struct sockaddr_in *agg,
		    const struct sockaddr_in *bind, size_t rcvbuf);
	/* Send up to @n datagrams; returns how many went out (0: try later) or an error. */
	int (*send_batch)(struct li_transport *t, const struct li_pkt *pkts, unsigned n);
	/* Receive up to @n datagrams without blocking; returns how many (0: none). */
	int (*recv_batch)(struct li_transport *t, struct li_pkt *pkts, unsigned n);
	void (*close)(struct li_transport *t);
	/* A descriptor to poll for input, or -1. */
	int (*fd)(const struct li_transport *t);
};

extern const struct li_transport_ops li_udp_ops;

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
};

struct li_req {
	struct li_req *next;
	struct inca_comm *comm;
	const void *sendbuf;     /* NULL: contribute zeros (broadcast non-root) */
	void *recvbuf;
	size_t count;            /* elements; broadcast: int32 lanes */
	size_t bytes;            /* broadcast: bytes in buf */
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
};

/* Internal counters beyond the public ones are not needed: reuse them. */
struct inca_comm {
	/* configuration */
	struct inca_comm_opts o;
	char *agg_str;
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
	bool need_recovery;   /* JOIN failed at create: agree at first use */
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

/* log.c / comm.c */
void li_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
uint64_t li_now_ns(void);

/* comm.c: membership */
int li_join(struct inca_comm *c, uint32_t give_up_ms);
void li_leave(struct inca_comm *c, uint32_t wait_ms);
int li_hello(struct inca_comm *c, uint32_t wait_ms);
void li_stream_reset(struct inca_comm *c);
int li_send_ctrl(struct inca_comm *c, unsigned type);

/* engine.c */
int li_progress(struct inca_comm *c, int timeout_ms);
int li_flush(struct inca_comm *c);
void li_handle_msg(struct inca_comm *c, const void *buf, size_t len);
void li_deliver_ready(struct inca_comm *c);
void li_req_layout(struct inca_comm *c, struct li_req *r);
void li_req_complete(struct inca_comm *c, struct li_req *r, int result);
int li_fail_stream(struct inca_comm *c, int err);
void li_close_stream(struct inca_comm *c);

/* keepalive.c */
void li_keepalive_stop(struct inca_comm *c);

/* agree.c: agreements across ranks over opts.oob or the fallback */
bool li_can_agree(const struct inca_comm *c);
int li_agree_minmax(struct inca_comm *c, const uint32_t *v, unsigned n, uint32_t *mn,
		    uint32_t *mx);
int li_agree_membership(struct inca_comm *c, int local);


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

/* fallback.c */
int li_recover(struct inca_comm *c);
int li_teardown(struct inca_comm *c);
int li_fb_run(struct inca_comm *c, struct li_req *r);
int li_fb_call(struct inca_comm *c, const void *sendbuf, void *recvbuf, size_t count,
	       unsigned dtype, unsigned op);

#endif /* INCA_LIB_INT_H */

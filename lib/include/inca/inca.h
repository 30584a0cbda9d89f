/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/**
 * @file
 * libinca: the worker side of INCA (In-Network Collective Aggregation).
 *
 * A worker creates one communicator per job it takes part in, then calls
 * collectives on it. Every worker of a job must issue the same collectives,
 * with the same element counts, data types and operations, in the same
 * order (as with MPI). Data streams to the aggregator in chunks of at most
 * one packet each through a sliding window; results are written straight
 * into the caller's buffer.
 *
 * Progress: there is no hidden thread. Packets are sent and received only
 * inside inca_allreduce(), inca_broadcast(), inca_barrier(),
 * inca_reduce_scatter(), inca_allgather(), inca_reduce(), inca_test(),
 * inca_wait() and inca_comm_progress(). Requests started with
 * inca_iallreduce() advance when any of these is called.
 *
 * Threads: a communicator is used by one thread at a time (calls on one
 * communicator must not overlap); different communicators are independent
 * and may be used from different threads at once. Each function states
 * its thread-safety below.
 *
 * Errors: functions return INCA_OK (0) or a negative enum inca_error;
 * inca_strerror() describes one. The library never prints and never exits;
 * install a log function with inca_set_log_fn() to see what it does.
 */
#ifndef INCA_INCA_H
#define INCA_INCA_H

#include <stddef.h>
#include <stdint.h>

#include <inca/dtype.h>
#include <inca/wire.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Symbols of the shared library's interface; everything else is hidden. */
#if defined(__GNUC__) || defined(__clang__)
#define INCA_API __attribute__((visibility("default")))
#else
#define INCA_API
#endif

/** Version of the library these headers belong to. */
#define INCA_VERSION_MAJOR 0
#define INCA_VERSION_MINOR 3
#define INCA_VERSION_PATCH 0
/** Version as one comparable number: 0xMMmmpp. */
#define INCA_VERSION_NUM \
	((INCA_VERSION_MAJOR << 16) | (INCA_VERSION_MINOR << 8) | INCA_VERSION_PATCH)

/**
 * Version of the library actually linked, "MAJOR.MINOR.PATCH".
 * Thread-safe.
 */
INCA_API const char *inca_version_string(void);

/**
 * Error codes. X(name, value, description). INCA_OK is 0, every error is
 * negative.
 */
#define INCA_ERRORS(X) \
	X(OK, 0, "success") \
	X(EINVAL, -1, "invalid argument") \
	X(ENOMEM, -2, "out of memory") \
	X(ETIMEDOUT, -3, "the aggregator did not answer within give_up_ms") \
	X(EREFUSED, -4, "the aggregator refused the request (NACK)") \
	X(EUNREACH, -5, "the aggregator address cannot be resolved or reached") \
	X(EIO, -6, "socket error") \
	X(EBUSY, -7, "too many requests in flight") \
	X(ECANCELED, -8, "the request was cancelled") \
	X(EFALLBACK, -9, "the fallback allreduce failed") \
	X(ENOTSUP, -10, "data type or operation not supported by the aggregator") \
	X(EPROTO, -11, "the ranks disagree or the aggregator broke the protocol") \
	X(EFAILED, -12, "the communicator failed earlier and cannot be used")

/** Error codes of every libinca function. */
enum inca_error {
#define INCA_X_(n, v, d) INCA_##n = v,
	INCA_ERRORS(INCA_X_)
#undef INCA_X_
};

/**
 * Description of an error code (or of a positive value: "unknown error").
 * Never NULL. Thread-safe.
 */
INCA_API const char *inca_strerror(int err);

/** How floating-point data travels. */
enum inca_float_mode {
	/** Native when the aggregator has INCA_CAP_NATIVE_FLOAT, else BFP. */
	INCA_FLOAT_AUTO = 0,
	/** fp32/fp16/bf16 on the wire; INCA_ENOTSUP if the aggregator can't. */
	INCA_FLOAT_NATIVE,
	/** Sums as block fixed point, min/max as order-preserving int32. */
	INCA_FLOAT_BFP,
};

/**
 * How a worker's messages travel to its aggregator (docs/libinca.md,
 * "Transports").
 */
enum inca_transport {
	/** INCA_TRANSPORT from the environment when it is set, else UDP. */
	INCA_TRANSPORT_DEFAULT = 0,
	/** Everything over the kernel's UDP socket. */
	INCA_TRANSPORT_UDP,
	/**
	 * CONTRIBs and their answers as RoCEv2 UD SENDs through libibverbs
	 * when the aggregator has INCA_CAP_ROCE; control messages over UDP.
	 * Without a usable RDMA device it logs a warning and uses UDP.
	 */
	INCA_TRANSPORT_VERBS,
	/**
	 * CONTRIBs and their answers through an AF_XDP socket on the
	 * worker's interface (libxdp, generic XDP, copy mode); control
	 * messages over UDP. Where it cannot start it logs a warning and uses
	 * UDP.
	 */
	INCA_TRANSPORT_XDP,
};

/** Log levels passed to an inca_log_fn. */
enum inca_log_level {
	INCA_LOG_ERR = 0,
	INCA_LOG_WARN,
	INCA_LOG_INFO,
	INCA_LOG_DEBUG,
};

/**
 * A log function: @p msg is one line without a trailing newline. Called
 * from whichever thread uses the communicator that logs.
 */
typedef void inca_log_fn(void *ctx, int level, const char *msg);

/**
 * Install the process-wide log function (NULL: no logging, the default).
 * Messages above @p max_level are not produced. Thread-safe.
 */
INCA_API void inca_set_log_fn(inca_log_fn *fn, void *ctx, int max_level);

/** What a fallback function is asked to do: a host allreduce. */
struct inca_fallback_args {
	/** Input; may equal recvbuf (in place: use MPI_IN_PLACE with MPI). */
	const void *sendbuf;
	/** Output, @c count elements. */
	void *recvbuf;
	/** Number of elements. */
	size_t count;
	/** enum inca_dtype of the elements. */
	unsigned dtype;
	/** enum inca_op. */
	unsigned op;
};

/**
 * A host allreduce across the same ranks as the communicator: every rank
 * receives op over all ranks' sendbuf. Returns 0 or a negative value
 * (reported as INCA_EFALLBACK). The library calls it from the thread that
 * called into the communicator, and every rank makes the same sequence of
 * calls.
 */
typedef int inca_fallback_fn(void *ctx, const struct inca_fallback_args *a);

/**
 * An out-of-band allgather across the communicator's ranks, in the style of
 * UCC's oob: every rank passes @p bytes bytes at @p sendbuf and receives
 * size * @p bytes bytes at @p recvbuf, rank i's block at offset i * @p bytes.
 * Returns 0 or a negative value. It must return (with an error) within a
 * bound of its own when a rank does not come: the library's agreements
 * wait no longer than it does. Called from the thread that called into the
 * communicator; every rank makes the same sequence of calls.
 * Ready-made ones: inca_tcp_group_allgather() below, the MPI interposer's
 * (MPI_Allgather) and the PyTorch integration's (torch's store).
 */
typedef int inca_oob_allgather_fn(void *ctx, const void *sendbuf, void *recvbuf, size_t bytes);

/**
 * Options of a communicator; initialise with inca_comm_opts_init(), which
 * records the size the caller was compiled with in @c struct_size: a
 * library with more fields gives the ones a caller does not know their
 * defaults.
 */
struct inca_comm_opts {
	/** sizeof(struct inca_comm_opts) as the caller knows it. */
	uint32_t struct_size;
	/** Aggregator "IPv4[:port]" or "host[:port]" (port 18766 if omitted). */
	const char *aggregator;
	/** Local "IPv4[:port]" to send from (NULL: any address, any port). */
	const char *bind;
	/** Job id, 1..65535. */
	uint16_t job;
	/** This worker's rank, 0..size-1. */
	uint16_t rank;
	/** Number of workers of the job, 1..INCA_MAX_WORKERS. */
	uint16_t size;
	/** Job token every message carries. */
	uint32_t token;
	/** Chunks in flight wanted (0: 32). The aggregator may grant fewer. */
	uint16_t window;
	/** Slots wanted for the job (0: the aggregator's default). */
	uint16_t pool_size;
	/** Elements per packet wanted (0: 256). The aggregator may grant fewer. */
	uint16_t max_elems;
	/** Largest IP packet to send (0: 1500); bounds the payload bytes. */
	uint16_t mtu;
	/**
	 * Retransmission timer of the oldest outstanding chunk in ms (0: 20);
	 * doubles per retry up to 16x. Chunks with evidence of loss retry
	 * sooner (docs/libinca.md, "Loss").
	 */
	uint32_t timeout_ms;
	/**
	 * Aggregator silence in ms after which the library gives up: falls back,
	 * or returns INCA_ETIMEDOUT (0: 3000).
	 */
	uint32_t give_up_ms;
	/** enum inca_float_mode. */
	int float_mode;
	/**
	 * In fallback mode, try to return to the aggregator every this many
	 * collectives (0: 64; UINT32_MAX: never).
	 */
	uint32_t probe_every;
	/**
	 * Fallback host allreduce used from creation on (also settable later
	 * with inca_comm_set_fallback()). With one here, a failed JOIN does
	 * not fail inca_comm_create(): the communicator starts in fallback mode.
	 */
	inca_fallback_fn *fallback;
	/** Context passed to @c fallback. */
	void *fallback_ctx;
	/**
	 * Longest a blocking call (inca_allreduce, inca_wait, ...) waits for a
	 * collective on the aggregator, in ms (0: 60000). Beyond it the call
	 * returns INCA_ETIMEDOUT and the communicator fails: a peer that stopped
	 * calling, or that called a different collective, ends here even while
	 * the aggregator answers. The fallback function's own waits are the
	 * fallback's to bound.
	 */
	uint32_t op_timeout_ms;
	/**
	 * Out-of-band allgather for the all-or-none agreements: at creation
	 * (did every rank join, with the same session and grants?) and when
	 * returning from the fallback. NULL: the fallback function serves as
	 * one (an int32 sum); with neither, creation is each rank's own and a
	 * partial join ends in op_timeout_ms (docs/libinca.md, "Failures").
	 */
	inca_oob_allgather_fn *oob;
	/** Context passed to @c oob. */
	void *oob_ctx;
	/**
	 * enum inca_transport. DEFAULT (0) reads INCA_TRANSPORT at creation,
	 * so that every process picks its own (a host may have no RDMA NIC).
	 */
	int transport;
};

/**
 * Fill the first @p size bytes of @p o with the defaults (every numeric
 * field 0 means "default") and set o->struct_size = @p size. Use the macro
 * inca_comm_opts_init(); bindings from other languages pass their
 * structure's size. Thread-safe.
 */
INCA_API void inca_comm_opts_init_sized(struct inca_comm_opts *o, size_t size);
#define inca_comm_opts_init(o) inca_comm_opts_init_sized((o), sizeof(*(o)))

/**
 * Override fields of @p o from the environment: INCA_AGGREGATOR, INCA_BIND,
 * INCA_JOB, INCA_RANK (else OMPI_COMM_WORLD_RANK, PMI_RANK), INCA_SIZE
 * (else OMPI_COMM_WORLD_SIZE, PMI_SIZE), INCA_TOKEN, INCA_WINDOW,
 * INCA_POOL_SIZE, INCA_MAX_ELEMS, INCA_MTU, INCA_TIMEOUT_MS,
 * INCA_GIVE_UP_MS, INCA_FLOAT_MODE (auto, native, bfp), INCA_PROBE_EVERY,
 * INCA_OP_TIMEOUT_MS, INCA_TRANSPORT (udp, verbs).
 * String fields point into the environment. Returns INCA_EINVAL when a
 * variable is malformed (and names it through the log function).
 * Thread-safe as long as nobody modifies the environment meanwhile.
 */
INCA_API int inca_comm_opts_from_env(struct inca_comm_opts *o);

/** A communicator: one worker's membership in one job. Opaque. */
struct inca_comm;
/** An allreduce in flight. Opaque. */
struct inca_request;

/**
 * Create a communicator and join the job: HELLO (capabilities), then JOIN,
 * each retried with backoff until give_up_ms; then, with an oob allgather
 * or a fallback in @p o, every rank agrees on the outcome (all or none):
 * the job is used only when every rank joined the same incarnation
 * (session) with the same grants and float mode. Otherwise every rank
 * leaves and, with a fallback, every rank gets INCA_OK and a communicator
 * in fallback mode; without one, every rank gets the same error (the
 * lowest of the ranks' errors; INCA_EPROTO when all joined but disagree).
 * Invalid options (INCA_EINVAL) return at once, before any agreement.
 * Thread-safe (creates independent state).
 */
INCA_API int inca_comm_create(const struct inca_comm_opts *o, struct inca_comm **out);

/**
 * inca_comm_create() with the options @p base (NULL: defaults) overridden
 * by the environment (see inca_comm_opts_from_env()). Thread-safe under the
 * same condition as inca_comm_opts_from_env().
 */
INCA_API int inca_comm_create_env(const struct inca_comm_opts *base, struct inca_comm **out);

/**
 * Leave the job (LEAVE, waiting briefly for its answer) and free the
 * communicator and every request still attached to it. NULL is fine.
 * Not thread-safe with other calls on @p c.
 */
INCA_API void inca_comm_destroy(struct inca_comm *c);

/**
 * Register (or, with NULL, remove) the fallback host allreduce. Not
 * thread-safe with other calls on @p c.
 */
INCA_API void inca_comm_set_fallback(struct inca_comm *c, inca_fallback_fn *fn, void *ctx);

/** Value for sendbuf: operate in place on recvbuf. */
#define INCA_IN_PLACE ((const void *)1)

/**
 * Allreduce of @p count elements of @p dtype with @p op, blocking until
 * the result is in @p recvbuf. @p sendbuf may equal @p recvbuf or be
 * INCA_IN_PLACE. count 0 is a no-op that still must be matched by every
 * rank. Requests started earlier on @p c complete first. Not thread-safe
 * with other calls on @p c.
 *
 * INT64 and FP64 (8-byte elements, at most max_elems / 2 a chunk) go to
 * the aggregator natively when it advertised them (incad does; a switch,
 * whose ALUs are 32-bit, does not); otherwise the call returns
 * INCA_ENOTSUP before anything is sent, on every rank alike, and the
 * caller runs its host collective. INT64 results are exact (SUM wraps
 * modulo 2^64); FP64 sums depend on arrival order as fp32 ones do.
 */
INCA_API int inca_allreduce(struct inca_comm *c, const void *sendbuf, void *recvbuf,
			    size_t count, unsigned dtype, unsigned op);

/**
 * Start an allreduce; *req receives a request to complete with inca_test()
 * or inca_wait(). Several requests may be in flight: their chunks stream
 * in issue order through one window, and they complete in issue order.
 * The buffers must stay untouched until the request completes. Returns
 * INCA_EBUSY beyond 1024 requests in flight. Not thread-safe with other
 * calls on @p c.
 */
INCA_API int inca_iallreduce(struct inca_comm *c, const void *sendbuf, void *recvbuf,
			     size_t count, unsigned dtype, unsigned op,
			     struct inca_request **req);

/**
 * Make progress without waiting and report whether *req completed. When
 * *done is set to 1, the request's result is returned and *req is freed
 * and set to NULL. In fallback mode the host allreduce runs inside this
 * call and may block. Not thread-safe with other calls on the request's
 * communicator.
 */
INCA_API int inca_test(struct inca_request **req, int *done);

/**
 * Block until *req completes; return its result, free it, set *req to NULL.
 * Not thread-safe with other calls on the request's communicator.
 */
INCA_API int inca_wait(struct inca_request **req);

/**
 * Broadcast @p bytes bytes of @p buf from @p root to every rank, bit-exact
 * whatever the content (an int32 sum of the raw bytes in which the other
 * ranks contribute zeros). Blocking. Not thread-safe with other calls on
 * @p c.
 */
INCA_API int inca_broadcast(struct inca_comm *c, void *buf, size_t bytes, unsigned root);

/**
 * ReduceScatter: reduce the @p size x @p recvcount elements of @p dtype at
 * @p sendbuf (every rank's whole input) with @p op, and leave in
 * @p recvbuf the @p recvcount elements of block @p rank of the result
 * (block b is elements b x recvcount .. (b + 1) x recvcount - 1). Where the
 * aggregator advertises INCA_CAP_ROUTED each chunk's result goes to its
 * block's owner only (docs/protocol.md, "Routed chunks"): a rank receives
 * recvcount elements, not size x recvcount; elsewhere (an older incad, a
 * switch, a striped communicator, floats without native aggregation) it
 * is an allreduce of which each rank keeps its block. The result is the
 * allreduce's, bit for bit. @p sendbuf and @p recvbuf must not overlap.
 * Blocking; falls back to the host collective mid-operation like
 * inca_allreduce(). Not thread-safe with other calls on @p c.
 */
INCA_API int inca_reduce_scatter(struct inca_comm *c, const void *sendbuf, void *recvbuf,
				 size_t recvcount, unsigned dtype, unsigned op);

/**
 * AllGather: every rank contributes @p bytes bytes at @p sendbuf and
 * receives every rank's, block r at @p recvbuf + r x @p bytes (@p size x
 * @p bytes in all), bit-exact whatever the content. @p sendbuf may be
 * INCA_IN_PLACE (this rank's block is already at its place in @p recvbuf).
 * Where the aggregator advertises INCA_CAP_ROUTED a rank sends only its
 * block and the aggregator replicates it to the others; elsewhere it is
 * an int32 sum of blocks that are zero but for their owner's. Blocking;
 * falls back to the host collective mid-operation. Not thread-safe with
 * other calls on @p c.
 */
INCA_API int inca_allgather(struct inca_comm *c, const void *sendbuf, void *recvbuf,
			    size_t bytes);

/**
 * Reduce @p count elements of @p dtype with @p op to rank @p root, whose
 * @p recvbuf gets the result (the other ranks' @p recvbuf is not written
 * and may be NULL). @p sendbuf may be INCA_IN_PLACE at the root. With
 * INCA_CAP_ROUTED only the root receives the elements; elsewhere an
 * allreduce. Blocking; falls back mid-operation. Not thread-safe with
 * other calls on @p c.
 */
INCA_API int inca_reduce(struct inca_comm *c, const void *sendbuf, void *recvbuf, size_t count,
			 unsigned dtype, unsigned op, unsigned root);

/**
 * Return once every rank has entered the barrier (an allreduce of one
 * int32). Not thread-safe with other calls on @p c.
 */
INCA_API int inca_barrier(struct inca_comm *c);

/**
 * Service the communicator between collectives: receive and discard late
 * packets and keep the membership alive (HEARTBEAT) during long compute
 * phases. Never blocks. Not thread-safe with other calls on @p c.
 */
INCA_API int inca_comm_progress(struct inca_comm *c);

/**
 * Make every current and later wait on @p c return: the call blocked in it
 * returns INCA_ECANCELED within about 100 ms, the requests in flight
 * complete with INCA_ECANCELED, and later calls return INCA_EFAILED.
 * inca_comm_destroy() must still be called. Thread-safe: meant to be
 * called from another thread (a watchdog, a signal-handling thread).
 */
INCA_API void inca_comm_abort(struct inca_comm *c);

/**
 * The error that failed the communicator (INCA_ETIMEDOUT, INCA_EPROTO,
 * INCA_ECANCELED, ...), or INCA_OK while it works. Thread-safe: another
 * thread may poll it while one is blocked in a collective.
 */
INCA_API int inca_comm_error(const struct inca_comm *c);

/**
 * Start (@p on != 0) or stop a background thread that sends a HEARTBEAT
 * whenever the communicator sent nothing for half the aggregator's
 * heartbeat interval, so that compute phases longer than the aggregator's
 * eviction time (inca_comm_info().evict_ms) between collectives do not cost
 * the membership. The thread only sends: everything else still happens in
 * the caller's calls. Off by default; inca_comm_destroy() stops it. Without
 * a membership (fallback from the start) it is a no-op. Not thread-safe
 * with other calls on @p c.
 */
INCA_API int inca_comm_keepalive(struct inca_comm *c, int on);

/**
 * Counters of a communicator. X(name, description).
 */
#define INCA_STATS_FIELDS(X) \
	X(tx_pkts, "packets sent") \
	X(tx_bytes, "INCA message bytes sent (headers included)") \
	X(rx_pkts, "packets received") \
	X(rx_bytes, "INCA message bytes received") \
	X(retransmits, "contributions sent again after a timeout") \
	X(replays, "results received marked as replays (RETX)") \
	X(dup_results, "results ignored: duplicate, stale or unexpected") \
	X(rx_invalid, "packets dropped: malformed or not for this member") \
	X(nacks, "NACKs received (by reason in nack_reasons)") \
	X(heartbeats, "HEARTBEATs sent") \
	X(send_errors, "send calls that failed (counted, retried later)") \
	X(collectives, "collectives started") \
	X(chunks, "chunks completed through the aggregator") \
	X(bfp_chunks, "chunks that travelled as block fixed point") \
	X(recoveries, "switches from the aggregator to the fallback") \
	X(fallback_calls, "calls of the fallback function") \
	X(fallback_collectives, "collectives completed (partly) by the fallback") \
	X(probes, "attempts to return from fallback to the aggregator") \
	X(rejoins, "successful returns to the aggregator") \
	X(routed_chunks, "of the chunks, those routed (ReduceScatter, AllGather, Reduce)") \
	X(brief_results, "of the routed chunks, results that came BRIEF (no elements)")

/** Counter snapshot filled by inca_comm_stats(). */
struct inca_stats {
#define INCA_X_(n, d) uint64_t n;
	INCA_STATS_FIELDS(INCA_X_)
#undef INCA_X_
	/** NACKs by enum inca_nack_reason. */
	uint64_t nack_reasons[INCA_NACK_MAX_];
};

/**
 * Copy the communicator's counters into the first @p size bytes of @p st
 * (use the macro inca_comm_stats(); a caller compiled with fewer counters
 * gets those it knows). Not thread-safe with other calls on @p c.
 */
INCA_API void inca_comm_stats_sized(const struct inca_comm *c, struct inca_stats *st,
				    size_t size);
#define inca_comm_stats(c, st) inca_comm_stats_sized((c), (st), sizeof(*(st)))

/** Name of the counter at index @p i of INCA_STATS_FIELDS, NULL past the end. Thread-safe. */
INCA_API const char *inca_stats_name(unsigned i);

/** What the communicator currently uses, for inca_comm_info(). */
struct inca_comm_info {
	int in_fallback;       /**< 1: collectives run through the fallback */
	int float_native;      /**< 1: floats travel natively */
	uint16_t window;       /**< chunks in flight (0 if never joined) */
	uint16_t pool_size;    /**< slots granted */
	uint16_t max_elems;    /**< elements per packet granted */
	uint16_t caps;         /**< INCA_CAP_* of the aggregator */
	uint32_t hb_ms;        /**< heartbeat interval the aggregator wants */
	uint32_t evict_ms;     /**< silence after which the aggregator evicts */
	size_t footprint;      /**< bytes the communicator allocated */
	uint32_t session;      /**< session token of the incarnation joined (0: none) */
	int transport;         /**< enum inca_transport in use (after any fallback) */
	int udp_gso;           /**< 1: datagrams to the aggregator leave as UDP GSO buffers */
	int udp_gro;           /**< 1: the UDP socket takes GRO trains (UDP_GRO) */
	uint64_t gso_sends;    /**< send calls that carried several datagrams as one GSO buffer */
	uint64_t gro_pkts;     /**< datagrams received inside GRO trains */
	uint64_t xdp_tx_pkts;  /**< datagrams sent through the AF_XDP socket (xdp) */
	uint64_t xdp_rx_pkts;  /**< datagrams received through the AF_XDP socket (xdp) */
	/**
	 * Data types the aggregator aggregates, bit (1 << enum inca_dtype), as
	 * its CAPS said (0: none reached). A collective of a 64-bit dtype it
	 * lacks returns INCA_ENOTSUP: callers route those to their host
	 * collective up front.
	 */
	uint16_t dtypes;
	uint16_t ops;          /**< operations, bit (1 << enum inca_op), likewise */
};

/**
 * Fill the first @p size bytes of @p info (use the macro inca_comm_info()).
 * Not thread-safe with other calls on @p c.
 */
INCA_API void inca_comm_info_sized(const struct inca_comm *c, struct inca_comm_info *info,
				   size_t size);
#define inca_comm_info(c, info) inca_comm_info_sized((c), (info), sizeof(*(info)))

/**
 * A group of processes that meet at a TCP rendezvous: the ready-made
 * out-of-band allgather (and a host allreduce for the fallback) for jobs
 * without MPI or torch. Rank 0 listens on @p addr ("IPv4:port"), the
 * others connect to it; every exchange goes through rank 0. Every wait is
 * bounded by @p timeout_ms (0: 30000): creation when a rank does not come,
 * an exchange when a rank stops or dies (its connection closes: the others
 * fail at once). After a failed exchange the group is broken: every later
 * call fails too. Thread-safe as long as one thread uses a group at a time.
 */
struct inca_tcp_group;

/** Connect (or, as rank 0, accept) the group. */
INCA_API int inca_tcp_group_create(const char *addr, unsigned rank, unsigned size,
				   uint32_t timeout_ms, struct inca_tcp_group **out);

/** Close the group's connections and free it. NULL is fine. */
INCA_API void inca_tcp_group_destroy(struct inca_tcp_group *g);

/** An inca_oob_allgather_fn: @p ctx is the struct inca_tcp_group. */
INCA_API int inca_tcp_group_allgather(void *ctx, const void *sendbuf, void *recvbuf,
				      size_t bytes);

/**
 * An inca_fallback_fn: @p ctx is the struct inca_tcp_group. An allgather
 * of every rank's input, reduced in rank order on every rank (fp16 and
 * bf16 through fp32, rounded once; int64 wrapping and fp64 with the
 * aggregator's NaN and -0 rules), so all ranks get bit-identical
 * results. Its traffic is size x the message through rank 0: meant for
 * the fallback of small jobs and tests, not as a fast allreduce.
 */
INCA_API int inca_tcp_group_allreduce(void *ctx, const struct inca_fallback_args *a);

/**
 * Bound on the absolute error of one element of a block-fixed-point sum of
 * @p nworkers values whose largest magnitude has binary exponent @p exp
 * (|x| < 2^exp for every input of its chunk) and whose fp32 result is
 * @p result: nworkers * 2^(-s - 1) + 2^-24 * |result|, with
 * s = 30 - ceil(log2 nworkers) - exp. Thread-safe.
 */
INCA_API double inca_bfp_error_bound(unsigned nworkers, int exp, double result);

#ifdef __cplusplus
}
#endif

#endif /* INCA_INCA_H */

/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * libinca is built in layers; each includes the header of the one below
 * and nothing calls upward:
 *
 *   li_util.h       constants, logging, the clock            util.c
 *   li_transport.h  datagrams to and from the aggregator     udp.c, xdp.c, transport.c
 *     li_verbs.h      ... over RoCEv2 UD queue pairs          verbs.c, verbs_logic.c
 *   li_state.h      the communicator's state (every layer's data)
 *   li_member.h     HELLO, JOIN, LEAVE, heartbeats            member.c, keepalive.c
 *   li_stream.h     requests as a windowed chunk stream      codec.c, engine.c
 *   li_recover.h    agreements, the fallback, recovery       agree.c, fallback.c
 *   (public API)    create/destroy, collectives              comm.c, collective.c
 *
 * Nothing here is part of the interface: every function is hidden
 * (-fvisibility=hidden) and carries the li_ prefix.
 */
#ifndef INCA_LI_UTIL_H
#define INCA_LI_UTIL_H

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
/* Aggregators (or trees) one communicator's collectives are striped across. */
#define LI_MAX_STRIPES 8
/* Packets per sendmmsg / recvmmsg call. */
#define LI_BATCH 32
/* IPv4 + UDP header bytes in front of the INCA header inside the MTU. */
#define LI_IP_UDP_LEN 28
/* Largest INCA message: header and the largest payload. */
#define LI_MAX_MSG (INCA_HDR_LEN + INCA_MAX_PAYLOAD_BYTES)

/* util.c */
void li_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
uint64_t li_now_ns(void);

#endif /* INCA_LI_UTIL_H */

/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * The transport layer: datagrams between one worker and its aggregator.
 */
#ifndef INCA_LI_TRANSPORT_H
#define INCA_LI_TRANSPORT_H

#include "li_util.h"

/* ---- transport -------------------------------------------------------- */

/* One datagram: @len bytes at @buf (send: to send; recv: capacity in, length out). */
struct li_pkt {
	void *buf;
	size_t len;
};

struct li_transport;

struct inca_roce_ext;

/*
 * A way to exchange INCA messages with one aggregator: kernel UDP (udp.c),
 * RoCEv2 UD queue pairs with UDP for control (verbs.c) and AF_XDP with UDP
 * for control (xdp.c); a DPDK one would plug in here. Errors are negative INCA_E* codes.
 */
struct li_transport_ops {
	const char *name;
	/*
	 * Connect to @agg, optionally from @bind (port 0: any). @rcvbuf is
	 * the socket buffer wanted, @window the chunks the worker will ask to
	 * have in flight (what a transport with posted receives must hold).
	 */
	int (*open)(struct li_transport **t, const struct sockaddr_in *agg,
		    const struct sockaddr_in *bind, size_t rcvbuf, unsigned window);
	/* Send up to @n datagrams; returns how many went out (0: try later) or an error. */
	int (*send_batch)(struct li_transport *t, const struct li_pkt *pkts, unsigned n);
	/* Receive up to @n datagrams without blocking; returns how many (0: none). */
	int (*recv_batch)(struct li_transport *t, struct li_pkt *pkts, unsigned n);
	void (*close)(struct li_transport *t);
	/* A descriptor to poll for input, or -1. */
	int (*fd)(const struct li_transport *t);

	/*
	 * Optional (NULL in udp): the data path is bound at JOIN
	 * (docs/protocol.md, "Binding a queue pair at JOIN").
	 *
	 * join_ext: write the JOIN's extension at @buf (NULL: only say its
	 * length) when the aggregator's CAPS had INCA_CAP_ROCE; returns its
	 * length, 0 when the transport cannot bind (then the JOIN goes
	 * without one and data stays on UDP).
	 */
	size_t (*join_ext)(struct li_transport *t, void *buf);
	/*
	 * joined: the JOIN_ACK's extension, @peer NULL when it had none or
	 * the JOIN went without one, and the granted @max_elems. Binds
	 * CONTRIBs to the peer's queue pair, or unbinds (data on UDP). An
	 * error means the binding failed (no address handle, a grant beyond
	 * the RoCE MTU): the transport offers no extension from then on, and
	 * the caller joins again without one.
	 */
	int (*joined)(struct li_transport *t, const struct inca_roce_ext *peer,
		      unsigned max_elems);
	/* Largest max_elems of 32-bit lanes one bound data message carries (0: any). */
	unsigned (*max_elems)(const struct li_transport *t);
	/* The UDP socket control messages go out on, for the keepalive thread's send(). */
	int (*ctrl_fd)(const struct li_transport *t);
	/* Optional: add the transport's offloads and counters to @info. */
	void (*info)(const struct li_transport *t, struct inca_comm_info *info);
};

extern const struct li_transport_ops li_udp_ops;
#if INCA_HAVE_VERBS
extern const struct li_transport_ops li_verbs_ops;
#endif
#if INCA_HAVE_XDP
extern const struct li_transport_ops li_xdp_ops;
#endif

/*
 * Open the transport @kind (enum inca_transport, resolved) into @ops and
 * @t. A verbs transport that cannot start here (built without libibverbs,
 * no RDMA device, no RoCE v2 GID for the local address, a verbs call
 * failing), or an xdp one (built without libxdp, no permission, an
 * interface without XDP or with another program) is logged once with the
 * reason and replaced by udp: the choice
 * of transport never fails a communicator. transport.c.
 */
int li_transport_open(int kind, const struct li_transport_ops **ops, struct li_transport **t,
		      const struct sockaddr_in *agg, const struct sockaddr_in *bind,
		      size_t rcvbuf, unsigned window);
/*
 * Cut a UDP GRO train of @len bytes at @buf, segments of @seg bytes (the
 * last one shorter; 0: one datagram), into @pkts[0..n) from byte *@off
 * on, copying; a segment larger than its buffer is reported with length 0.
 * Advances *@off; returns the datagrams written. udp.c.
 */
unsigned li_udp_gro_split(const uint8_t *buf, size_t len, size_t seg, size_t *off,
			  struct li_pkt *pkts, unsigned n);

typedef int li_recv_fn(struct li_transport *t, struct li_pkt *pkts, unsigned n);

/*
 * recv_batch of a transport with two sources: its own data path @own (on
 * @t) and the UDP socket @udp that carries control (verbs, xdp). Up to @n
 * (at most LI_BATCH) datagrams; which source is read first alternates
 * (*@first flips each call), so that a flood on one does not starve the
 * other. An error of the second source is returned only when the first
 * gave nothing. transport.c.
 */
int li_recv_both(struct li_transport *t, li_recv_fn *own, struct li_transport *udp,
		 bool *first, struct li_pkt *pkts, unsigned n);

/* INCA_TRANSPORT's value @s to an enum inca_transport, -1 if it names none. */
int li_transport_parse(const char *s);

#endif /* INCA_LI_TRANSPORT_H */

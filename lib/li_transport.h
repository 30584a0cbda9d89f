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

#endif /* INCA_LI_TRANSPORT_H */

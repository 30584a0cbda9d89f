/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * Choosing a transport: udp always works where the aggregator is
 * reachable; verbs needs libibverbs at build time and an RDMA device with a
 * RoCE v2 GID for the local address at run time; xdp needs libxdp and
 * libbpf at build time, and CAP_NET_ADMIN / CAP_BPF and an Ethernet
 * interface without an XDP program at run time. When it cannot start, the
 * communicator gets udp and one warning saying why, never an error: a job
 * runs on every host, with or without a RoCE NIC.
 */

#include <string.h>

#include "li_transport.h"

int
li_transport_parse(const char *s)
{
	if (strcmp(s, "udp") == 0)
		return INCA_TRANSPORT_UDP;
	if (strcmp(s, "verbs") == 0)
		return INCA_TRANSPORT_VERBS;
	if (strcmp(s, "xdp") == 0)
		return INCA_TRANSPORT_XDP;
	return -1;
}

int
li_transport_open(int kind, const struct li_transport_ops **ops, struct li_transport **t,
		  const struct sockaddr_in *agg, const struct sockaddr_in *bind, size_t rcvbuf,
		  unsigned window)
{
	if (kind == INCA_TRANSPORT_VERBS) {
#if INCA_HAVE_VERBS
		int ret = li_verbs_ops.open(t, agg, bind, rcvbuf, window);

		/* verbs_open logged why it cannot run here; any other
		 * error is the UDP socket's, which udp would meet too. */
		if (ret != INCA_ENOTSUP) {
			if (ret == INCA_OK)
				*ops = &li_verbs_ops;
			return ret;
		}
#else
		li_log(INCA_LOG_WARN, "INCA_TRANSPORT=verbs: libinca was built without "
		       "libibverbs; using udp");
#endif
	}
	if (kind == INCA_TRANSPORT_XDP) {
#if INCA_HAVE_XDP
		int ret = li_xdp_ops.open(t, agg, bind, rcvbuf, window);

		/* xdp_open logged why it cannot run here. */
		if (ret != INCA_ENOTSUP) {
			if (ret == INCA_OK)
				*ops = &li_xdp_ops;
			return ret;
		}
#else
		li_log(INCA_LOG_WARN, "INCA_TRANSPORT=xdp: libinca was built without "
		       "libxdp; using udp");
#endif
	}
	*ops = &li_udp_ops;
	return li_udp_ops.open(t, agg, bind, rcvbuf, window);
}

int
li_recv_both(struct li_transport *t, li_recv_fn *own, struct li_transport *udp, bool *first,
	     struct li_pkt *pkts, unsigned n)
{
	int a, b;

	if (n > LI_BATCH)
		n = LI_BATCH;
	*first = !*first;
	if (*first) {
		a = own(t, pkts, n);
		if (a < 0 || (unsigned)a == n)
			return a;
		b = li_udp_ops.recv_batch(udp, pkts + a, n - (unsigned)a);
	} else {
		a = li_udp_ops.recv_batch(udp, pkts, n);
		if (a < 0 || (unsigned)a == n)
			return a;
		b = own(t, pkts + a, n - (unsigned)a);
	}
	return b < 0 ? (a > 0 ? a : b) : a + b;
}

/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * The verbs transport's decisions that need no RDMA device: addresses,
 * the choice of device, port and GID, the work request of one message,
 * receive buffers, payload sizes, routing. verbs_logic.c implements them so
 * that tests/unit/test_verbs.c checks them on a machine without an RDMA NIC;
 * verbs.c applies them to libibverbs. Part of the transport layer
 * (li_transport.h).
 */
#ifndef INCA_LI_VERBS_H
#define INCA_LI_VERBS_H

#include "li_transport.h"

#if INCA_HAVE_VERBS
#include <infiniband/verbs.h>
#endif

/* What a UD receive buffer holds in front of the message: the GRH, or for
 * RoCEv2 over IPv4, 20 unspecified bytes and the IPv4 header. */
#define LI_VB_GRH_LEN 40
/* Offset of the IPv4 source address in that buffer (RoCEv2 over IPv4). */
#define LI_VB_GRH_IPV4_SRC (LI_VB_GRH_LEN - 20 + 12)
/* Receives kept posted beyond twice the window: NACKs and replays. */
#define LI_VB_RX_MARGIN 16
/* Every this many send work requests, one is signalled (and a post's last). */
#define LI_VB_SIGNAL_EVERY 16
/* Send work requests (and send buffers) in flight. */
#define LI_VB_SQ_DEPTH 128
/* Hop limit (IPv4 TTL) of our RoCEv2 packets, as INCA's UDP ones. */
#define LI_VB_HOP_LIMIT 64
/* Longest device name (IBV_SYSFS_NAME_MAX). */
#define LI_VB_NAME_MAX 64

/* The IPv4-mapped GID ::ffff:a.b.c.d of @ipv4 (network byte order). */
void li_vb_gid_from_ipv4(uint8_t gid[16], uint32_t ipv4);
/* The IPv4 address (network byte order) of an IPv4-mapped GID; false if not one. */
bool li_vb_gid_to_ipv4(const uint8_t gid[16], uint32_t *ipv4);

/* INCA_ROCE_DEV: a device name and optionally a port ("mlx5_0", "mlx5_0:2"). */
struct li_vb_dev_spec {
	char name[LI_VB_NAME_MAX];
	unsigned port; /* 0: any port */
};
/* Parse @s into @spec; -1 when malformed (empty name, bad port, too long). */
int li_vb_parse_dev(const char *s, struct li_vb_dev_spec *spec);

/* One GID table entry of one port of one device, as the device reports it. */
struct li_vb_gid {
	const char *dev;
	unsigned port;
	unsigned index;
	uint8_t gid[16];
	bool roce_v2;     /* GID type RoCE v2 (not RoCE v1, not IB) */
	bool port_active; /* the port's state is ACTIVE */
};
/*
 * The entry of @tab to send from: a RoCE v2 GID that is the IPv4-mapped
 * @local_ip (network byte order), on the device (and port) of @spec when
 * one is given, on an active port when there is one, else the first in
 * table order. Returns its index, or -1 with @why saying what is missing.
 */
int li_vb_choose(const struct li_vb_gid *tab, unsigned n, const struct li_vb_dev_spec *spec,
		 uint32_t local_ip, const char **why);

/* Bytes of an IBV_MTU_* value (1: 256 ... 5: 4096), 0 if unknown. */
unsigned li_vb_mtu_bytes(int ibv_mtu);
/*
 * Largest element count of @elem_size bytes whose INCA message (header,
 * body, pad to 32 bits) fits one packet of RoCE MTU @mtu (docs/protocol.md,
 * "MTU and payload classes"), within the wire's limits.
 */
unsigned li_vb_max_elems(unsigned mtu, unsigned elem_size);

/* Which way a message goes. */
enum li_vb_route {
	LI_VB_UDP = 0,
	LI_VB_QP,
};
/* CONTRIBs over the queue pair once it is bound; everything else by UDP. */
enum li_vb_route li_vb_route(const void *msg, size_t len, bool bound);

/*
 * Whether send work request number @seq (counted over the queue pair's
 * life), the @i-th of a post of @n, asks for a completion: every
 * LI_VB_SIGNAL_EVERY-th and the post's last, so that a completion frees
 * every buffer before it and the send queue never fills with requests no
 * completion accounts for.
 */
bool li_vb_signaled(uint64_t seq, unsigned i, unsigned n);

/*
 * The message of a completed receive: @byte_len (what the completion says,
 * GRH included) to the message's length, 0 when it is shorter than a GRH
 * (invalid) or longer than @cap (the caller's buffer: reported empty so
 * that decoding rejects it, as udp does with a truncated datagram).
 */
size_t li_vb_rx_len(uint32_t byte_len, size_t cap);
/*
 * Whether a receive with GRH buffer @grh and source queue pair @src_qp came
 * from the bound aggregator (@agg_ip network byte order, @agg_qpn): what
 * connect() does for the UDP socket.
 */
bool li_vb_rx_from(const uint8_t *grh, uint32_t src_qp, uint32_t agg_ip, uint32_t agg_qpn);

#if INCA_HAVE_VERBS
/*
 * Fill one UD SEND of the @len-byte message at @msg to queue pair @qpn
 * (Q_Key @qkey) through @ah: inline when @len <= @max_inline (the device
 * copies it at post time), else copied into the registered @slot (@lkey).
 * The caller links @wr->next.
 */
void li_vb_fill_send(struct ibv_send_wr *wr, struct ibv_sge *sge, const void *msg,
		     size_t len, void *slot, uint32_t lkey, uint32_t max_inline,
		     struct ibv_ah *ah, uint32_t qpn, uint32_t qkey, uint64_t wr_id,
		     bool signaled);
#endif

#endif /* INCA_LI_VERBS_H */

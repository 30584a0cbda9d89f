/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * The transmit path and frame building (tx.c): the leaf every module that
 * answers or forwards builds on. Drop counting lives here too.
 */
#ifndef INCAD_TX_H
#define INCAD_TX_H

#include <stdint.h>

#include "incad.h"

/*
 * Queue @m for transmission on port index @port. Takes ownership of @m:
 * the I/O lcore buffers it per port, other lcores and the control thread
 * pass it back through their tx ring; a frame that cannot be queued is
 * freed and counted.
 */
void incad_tx(struct incad_lcore *lc, struct rte_mbuf *m, uint16_t port);

/* Where an answer goes. */
struct incad_dest {
	uint16_t port;       /* index into incad.ports */
	uint8_t mac[6];
	uint32_t ip;         /* host order */
	uint32_t local_ip;   /* the source address of the answer */
	uint16_t udp_port;
	uint16_t vlan;       /* 802.1Q VLAN id to tag the frame with, 0: none */
	uint32_t qpn;        /* RoCEv2: the destination queue pair; 0: UDP */
	uint32_t qkey;       /* RoCEv2: its Q_Key */
};

/*
 * Build a frame carrying the INCA message @hdr (+ @body of @body_len bytes)
 * to @d. Returns a new mbuf owned by the caller, or NULL (counted NO_MBUF).
 */
struct rte_mbuf *incad_build_msg(struct incad_lcore *lc, const struct incad_dest *d,
				 const struct inca_msg *hdr, const void *body,
				 size_t body_len);

/* The answer address of the sender of @meta's frame. */
void incad_dest_of(const struct incad_meta *meta, struct incad_dest *d);

/* Count a drop of one of the daemon's reasons. */
static inline void
incad_drop(struct incad_lcore *lc, enum incad_drop reason)
{
	lc->st.drop[reason]++;
}

/* Free @m and count why. */
static inline void
incad_drop_mbuf(struct incad_lcore *lc, struct rte_mbuf *m, enum incad_drop reason)
{
	lc->st.drop[reason]++;
	rte_pktmbuf_free(m);
}

/*
 * Ethernet, IPv4 and UDP headers in front of an INCA message of @msg_len
 * bytes already at @p + INCA_ENCAP_LEN.
 */
void incad_frame_headers(uint8_t *p, const uint8_t dst_mac[6],
			 const struct rte_ether_addr *src_mac, uint32_t src_ip, uint32_t dst_ip,
			 uint16_t dst_port, size_t msg_len);

/*
 * Tag @m (an untagged frame, refcount 1) with 802.1Q VLAN @vlan; 0 leaves it
 * untagged. Returns @m, or NULL when it was freed (counted NO_MBUF).
 */
struct rte_mbuf *incad_vlan_tag(struct incad_lcore *lc, struct rte_mbuf *m, uint16_t vlan);

/*
 * Turn @m, an untagged Ethernet / IPv4 / UDP frame of an INCA message as
 * incad_frame_headers() makes it, into the RoCEv2 UD SEND of the same
 * message to queue pair @qpn with Q_Key @qkey: BTH and DETH in front of
 * the message, pad and ICRC behind it, UDP to port 4791 without checksum.
 * Returns @m, or NULL when it was freed (counted NO_MBUF).
 */
struct rte_mbuf *incad_roce_wrap(struct incad_lcore *lc, struct rte_mbuf *m, uint32_t qpn,
				 uint32_t qkey);

/*
 * Does the ICRC of the RoCEv2 packet whose IPv4 header is at @ip verify?
 * The IPv4 total length covers the packet and its ICRC; 8 bytes in front
 * of @ip must be the frame's (the Ethernet header): they are borrowed and
 * restored, as are the masked fields.
 */
bool incad_roce_icrc_ok(uint8_t *ip);

/* Build the header of an answer to @req: echo of its job fields. */
void incad_reply_hdr(const struct inca_msg *req, uint8_t type, uint16_t reason,
		     struct inca_msg *out);

/* Send what the I/O lcore buffered on every port. */
void incad_tx_flush_io(struct incad_lcore *lc);
/* Pass what an aggregation lcore buffered to its tx ring. */
void incad_tx_flush_lcore(struct incad_lcore *lc);

#endif /* INCAD_TX_H */

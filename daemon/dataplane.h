/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * The dataplane: the lcore loops, INCA frame handling, contributions,
 * results and the transmit path shared by every module.
 */
#ifndef INCAD_DATAPLANE_H
#define INCAD_DATAPLANE_H

#include <stdint.h>

#include "incad.h"

/* Entry point of a dataplane lcore; @arg is its struct incad_lcore. */
int incad_lcore_main(void *arg);

/*
 * Queue @m for transmission on port index @port. Takes ownership of @m:
 * the I/O lcore buffers it per port, other lcores pass it back through
 * their tx ring; a frame that cannot be queued is freed and counted.
 */
void incad_tx(struct incad_lcore *lc, struct rte_mbuf *m, uint16_t port);

/* Where an answer goes. */
struct incad_dest {
	uint16_t port;       /* index into incad.ports */
	uint8_t mac[6];
	uint32_t ip;         /* host order */
	uint32_t local_ip;   /* the source address of the answer */
	uint16_t udp_port;
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

/* The non-INCA side (l2.c): ARP, ICMP, MAC learning and forwarding. */
int incad_l2_init(void);
void incad_l2_fini(void);
/* Learn the source MAC of a frame received on @port (switch mode). */
void incad_l2_learn(const struct rte_ether_addr *mac, uint16_t port, uint64_t now);
/* Forward (or flood) a frame not addressed to incad. Takes @m. */
void incad_l2_forward(struct incad_lcore *lc, struct rte_mbuf *m, uint16_t in_port,
		      uint64_t now);
/* Flood @m to every port but @in_port. Takes @m. */
void incad_l2_flood(struct incad_lcore *lc, struct rte_mbuf *m, uint16_t in_port);
/* Handle an ARP frame at @l3 bytes into @m. Takes @m. */
void incad_l2_arp(struct incad_lcore *lc, struct rte_mbuf *m, uint16_t in_port, size_t l3,
		  uint64_t now);
/* Answer the ICMP echo request in @m (IPv4 header valid, for us). Takes @m. */
void incad_l2_icmp(struct incad_lcore *lc, struct rte_mbuf *m, uint16_t in_port, size_t l3);
/* Entries in the MAC and neighbour tables (racy, for telemetry). */
unsigned int incad_l2_macs(void);
unsigned int incad_l2_neighbours(void);

#endif /* INCAD_DATAPLANE_H */

/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * What makes incad a host and a switch besides an aggregator (l2.c).
 */
#ifndef INCAD_L2_H
#define INCAD_L2_H

#include <stdbool.h>
#include <stdint.h>

#include "tx.h"

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
/*
 * The MAC and port of neighbour @ip, learned from ARP (its requests to
 * incad or its replies). False when unknown.
 */
bool incad_l2_neigh_lookup(uint32_t ip, uint8_t mac[6], uint16_t *port);
/* Forget @ip's MAC (a neighbour that fell silent may come back elsewhere). */
void incad_l2_neigh_forget(uint32_t ip);
/* Broadcast an ARP request for @ip on port index @port (the I/O lcore). */
void incad_l2_arp_request(struct incad_lcore *lc, uint16_t port, uint32_t ip);
/* Entries in the MAC and neighbour tables (racy, for telemetry). */
unsigned int incad_l2_macs(void);
unsigned int incad_l2_neighbours(void);

#endif /* INCAD_L2_H */

/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * Internet checksum for the hot path. DPDK 22.11's rte_raw_cksum() adds
 * 16 bits at a time and relies on the compiler to vectorise it, which it
 * does not at -O2. Adding the 16-bit words into the lanes of vectors is
 * several times faster and gives the same result (RFC 1071: the sum in
 * memory order does not depend on the host's byte order, nor on how the
 * words are grouped before folding). All sums here are in memory order:
 * a field is added as it lies in the frame, never converted.
 */
#ifndef INCAD_CSUM_H
#define INCAD_CSUM_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <rte_byteorder.h>
#include <rte_ip.h>
#include <rte_udp.h>

typedef uint16_t (*incad_csum_fn)(const void *buf, size_t len);

/* The version of incad_raw_cksum() for this CPU, set before main(). */
extern incad_csum_fn incad_csum_impl;

/*
 * As rte_raw_cksum(): the folded, not complemented, sum in memory order.
 * csum.c has an AVX-512, an AVX2 and a baseline version.
 */
static inline uint16_t
incad_raw_cksum(const void *buf, size_t len)
{
	return incad_csum_impl(buf, len);
}

/* Fold a sum of memory-order words to 16 bits; 0 only if the sum is 0. */
static inline uint16_t
incad_csum_fold(uint64_t s)
{
	s = (s & 0xffffffff) + (s >> 32);
	s = (s & 0xffffffff) + (s >> 32);
	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	return (uint16_t)s;
}

/* Folded sum of an IPv4 header without options (20 bytes). */
static inline uint16_t
incad_ipv4_sum20(const struct rte_ipv4_hdr *ip)
{
	const uint8_t *p = (const uint8_t *)ip;
	uint32_t w0, w1, w2, w3, w4;

	/* Word by word: one 20-byte copy would be read back through the
	 * stack, stalling on store forwarding. */
	memcpy(&w0, p, 4);
	memcpy(&w1, p + 4, 4);
	memcpy(&w2, p + 8, 4);
	memcpy(&w3, p + 12, 4);
	memcpy(&w4, p + 16, 4);
	return incad_csum_fold((uint64_t)w0 + w1 + w2 + w3 + w4);
}

/*
 * Folded sum of the UDP datagram after the IPv4 header @ip (no options)
 * with its pseudo header. The pseudo header's addresses are the 8 bytes
 * just before the UDP header, so they are summed with it in one pass; its
 * protocol and length words are added apart.
 */
static inline uint16_t
incad_udp_sum20(const struct rte_ipv4_hdr *ip, size_t udp_len)
{
	const struct rte_udp_hdr *udp = (const struct rte_udp_hdr *)(ip + 1);

	return incad_csum_fold((uint64_t)incad_raw_cksum(&ip->src_addr, 8 + udp_len) +
			       rte_cpu_to_be_16(IPPROTO_UDP) + udp->dgram_len);
}

#endif /* INCAD_CSUM_H */

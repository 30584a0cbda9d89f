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

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <rte_byteorder.h>
#include <rte_ip.h>
#include <rte_udp.h>

typedef uint16_t (*incad_csum_fn)(const void *buf, size_t len);

/* The version of incad_raw_cksum() for this CPU, set before main(). */
extern incad_csum_fn incad_csum_impl;

/* One version built into csum.c, and whether this CPU can run it. */
struct incad_csum_variant {
	const char *name;
	incad_csum_fn fn;
	bool usable;
};

/*
 * Every version built (@n of them), for tests and benchmarks only: the
 * daemon calls incad_raw_cksum(). Valid once constructors have run.
 */
const struct incad_csum_variant *incad_csum_variants(unsigned int *n);

/*
 * As rte_raw_cksum(): the folded, not complemented, sum in memory order.
 * csum.c has AVX512_VNNI, AVX-512BW, AVX2 and baseline versions.
 */
static inline uint16_t
incad_raw_cksum(const void *buf, size_t len)
{
	return incad_csum_impl(buf, len);
}

/*
 * Fold a sum of memory-order words to 16 bits; 0 only if the sum is 0.
 * The high half of s plus s rotated by half its width is the sum of its
 * halves with the carry out added back in (an end-around carry): the
 * same modulo 2^32 - 1, and so modulo 0xffff, and 0 only if s is 0. Half
 * the operations of folding by masks and shifts, for the same result.
 */
static inline uint16_t
incad_csum_fold(uint64_t s)
{
	uint32_t v;

	s += (s >> 32) | (s << 32);
	v = (uint32_t)(s >> 32);
	v += (v >> 16) | (v << 16);
	return (uint16_t)(v >> 16);
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

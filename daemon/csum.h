/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * Internet checksum for the hot path. DPDK 22.11's rte_raw_cksum() adds
 * 16 bits at a time and relies on the compiler to vectorise it, which it
 * does not at -O2. Adding the 16-bit words into the lanes of GNU C vectors
 * (SSE2 on any x86-64, NEON on aarch64) is several times faster and gives
 * the same result (RFC 1071: the sum in memory order does not depend on the
 * host's byte order, nor on how the words are grouped before folding).
 */
#ifndef INCAD_CSUM_H
#define INCAD_CSUM_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <rte_ip.h>

typedef uint32_t incad_v4u32 __attribute__((vector_size(16)));

/* As rte_raw_cksum(): the folded, not complemented, sum in memory order. */
static inline uint16_t
incad_raw_cksum(const void *buf, size_t len)
{
	const incad_v4u32 lo16 = {0xffff, 0xffff, 0xffff, 0xffff};
	incad_v4u32 a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0}, x0, x1, x2, x3;
	const uint8_t *p = buf;
	uint64_t s = 0, x;
	uint32_t w;
	uint16_t h;
	unsigned int i;

	/* 16-bit words added into 32-bit lanes, four vectors at a time: a
	 * lane gains at most 2 * 0xffff per block, so it cannot overflow
	 * below 2 GiB of data. */
	while (len >= 64) {
		memcpy(&x0, p, 16);
		memcpy(&x1, p + 16, 16);
		memcpy(&x2, p + 32, 16);
		memcpy(&x3, p + 48, 16);
		a0 += (x0 & lo16) + (x0 >> 16);
		a1 += (x1 & lo16) + (x1 >> 16);
		a2 += (x2 & lo16) + (x2 >> 16);
		a3 += (x3 & lo16) + (x3 >> 16);
		p += 64;
		len -= 64;
	}
	a0 += a1 + a2 + a3;
	for (i = 0; i < 4; i++)
		s += a0[i];
	while (len >= 8) {
		memcpy(&x, p, 8);
		s += (x & 0xffffffff) + (x >> 32);
		p += 8;
		len -= 8;
	}
	if (len >= 4) {
		memcpy(&w, p, 4);
		s += w;
		p += 4;
		len -= 4;
	}
	if (len >= 2) {
		memcpy(&h, p, 2);
		s += h;
		p += 2;
		len -= 2;
	}
	if (len != 0) {
		/* The last byte is the first of a word whose second is zero. */
		h = 0;
		memcpy(&h, p, 1);
		s += h;
	}
	s = (s & 0xffffffff) + (s >> 32);
	s = (s & 0xffffffff) + (s >> 32);
	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	return (uint16_t)s;
}

/* Sum of the UDP datagram at @l4 and its IPv4 pseudo header, folded. */
static inline uint16_t
incad_udp_sum(const struct rte_ipv4_hdr *ip, const void *l4, size_t l4_len)
{
	uint32_t s = (uint32_t)incad_raw_cksum(l4, l4_len) + rte_ipv4_phdr_cksum(ip, 0);

	s = (s & 0xffff) + (s >> 16);
	return (uint16_t)s;
}

#endif /* INCAD_CSUM_H */

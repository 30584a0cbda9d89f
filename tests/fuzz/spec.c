/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * Independent models of docs/protocol.md's "Frame checks" and "Message
 * checks" tables. They are written from the tables, in the tables' order,
 * sharing no code with lib/wire.c (not even its byte readers or its
 * checksum), so that a fuzzer comparing the two finds the inputs on which
 * the codec and the specification disagree.
 */
#include <stdbool.h>

#include "fuzz.h"

static unsigned
be16(const uint8_t *p)
{
	return (unsigned)p[0] * 256u + p[1];
}

static uint32_t
be32(const uint8_t *p)
{
	return ((uint32_t)be16(p) << 16) | be16(p + 2);
}

/* Sizes of the data types, from the "Data types" table. */
static unsigned
spec_dtype_size(unsigned dtype)
{
	switch (dtype) {
	case 0: /* int32 */
	case 1: /* fp32 */
		return 4;
	case 2: /* fp16 */
	case 3: /* bf16 */
		return 2;
	case 4: /* int64 */
	case 5: /* fp64 */
		return 8;
	default:
		return 0;
	}
}

enum inca_wire_err
spec_msg_check(const uint8_t *b, size_t len, unsigned max_elems)
{
	unsigned type, dtype, op, flags, rank, job, count, reason, size, limit;
	bool data, fixed_body;
	size_t body;

	if (len < 32)
		return INCA_WIRE_SHORT;
	type = b[1];
	dtype = b[2];
	op = b[3];
	job = be16(b + 4);
	rank = be16(b + 6);
	flags = b[14];
	count = be16(b + 24);
	reason = be16(b + 26);
	body = len - 32;

	if (b[0] != 2)
		return INCA_WIRE_VERSION;
	if (type < 1 || type > 11)
		return INCA_WIRE_TYPE;
	if (dtype > 5)
		return INCA_WIRE_DTYPE;
	if (op > 2)
		return INCA_WIRE_OP;
	if (flags & 0x80)
		return INCA_WIRE_FLAGS;
	if (rank >= 32)
		return INCA_WIRE_RANK;
	if (job == 0 && type != 3 /* HELLO */ && type != 4 /* CAPS */)
		return INCA_WIRE_JOB;

	data = type == 1 /* CONTRIB */ || type == 2 /* RESULT */;
	size = spec_dtype_size(dtype);
	limit = max_elems == 0 || max_elems > 4096 ? 4096 : max_elems;
	if (data) {
		/* "Payload classes": an 8-byte element takes two 32-bit lanes. */
		if (count == 0 || count * (size == 8 ? 2u : 1u) > limit ||
		    (size_t)count * size > 8192)
			return INCA_WIRE_COUNT;
		/* BRIEF (0x40): the header alone. */
		if (body != ((flags & 0x40) ? 0 : (size_t)count * size))
			return INCA_WIRE_LEN;
	} else {
		if (count != 0)
			return INCA_WIRE_COUNT;
		/* HELLO, CAPS: exactly one control body; JOIN, JOIN_ACK: one,
		 * or one and the 16-byte RoCEv2 extension. */
		fixed_body = type >= 3 && type <= 6;
		if (type == 5 || type == 6 ? body != 32 && body != 48 :
		    fixed_body ? body != 32 : body != 0 && body != 32)
			return INCA_WIRE_CTRL_LEN;
	}

	if (type == 11 /* NACK */) {
		if (reason == 0 || reason > 17) /* 17: HELD, the last of the NACK reasons table */
			return INCA_WIRE_REASON;
	} else if (reason != 0) {
		return INCA_WIRE_REASON;
	}

	if (!data && body >= 32) {
		const uint8_t *c = b + 32;
		unsigned nworkers = be16(c + 8), pool = be16(c + 10), window = be16(c + 12);

		if (c[0] > c[1] || nworkers > 32 || (type == 5 /* JOIN */ && nworkers == 0) ||
		    (window != 0 && pool != 0 && window > pool) || be16(c + 6) > 4096 ||
		    (be16(c + 14) & ~0x3fu) != 0) /* caps: NATIVE_FLOAT BFP SEQ_CHECK FIXED_COUNT ROCE ROUTED */
			return INCA_WIRE_CTRL_FIELD;
	}
	if (!data && body == 48) {
		/* The RoCEv2 extension: qpn 2..0xFFFFFF, qkey bit 31 clear, zeros. */
		const uint8_t *x = b + 64;

		if (be32(x) < 2 || be32(x) > 0xffffff || (x[4] & 0x80) || be32(x + 8) != 0 ||
		    be32(x + 12) != 0)
			return INCA_WIRE_CTRL_FIELD;
	}
	if ((flags & 0x08) && dtype != 0)
		return INCA_WIRE_BFP_DTYPE;
	if (data) {
		/* ROUTED 0x10, GATHER 0x20, BRIEF 0x40, in the ROUTE row's order. */
		uint32_t bitmap = be32(b + 28);
		bool routed = flags & 0x10, gather = flags & 0x20, brief = flags & 0x40;

		if (!routed && (gather || brief))
			return INCA_WIRE_ROUTE;
		if (gather && (flags & 0x08))
			return INCA_WIRE_ROUTE;
		if (routed && type == 1 /* CONTRIB */) {
			/* 0 is the anonymous root (a tree). */
			bool one = (bitmap & (bitmap - 1)) == 0;

			if (!one)
				return INCA_WIRE_ROUTE;
			if (!gather && brief)
				return INCA_WIRE_ROUTE;
			if (gather && (bitmap == (uint32_t)1 << rank) == brief)
				return INCA_WIRE_ROUTE;
		}
	}
	return INCA_WIRE_OK;
}

/* One's complement sum, folded at every step (RFC 1071's other way). */
static uint32_t
oc_add(uint32_t sum, unsigned word)
{
	sum += word;
	return (sum & 0xffff) + (sum >> 16);
}

static uint32_t
oc_bytes(uint32_t sum, const uint8_t *p, size_t n)
{
	size_t i;

	for (i = 0; i + 1 < n; i += 2)
		sum = oc_add(sum, be16(p + i));
	if (n & 1)
		sum = oc_add(sum, (unsigned)p[n - 1] << 8);
	return sum;
}

enum inca_wire_err
spec_frame_check(const uint8_t *fr, size_t len, uint16_t port, struct spec_frame *f)
{
	size_t l3 = 14, room, ihl, total, udp_len;
	const uint8_t *ip, *udp;
	unsigned ethertype, frag;
	uint32_t sum;

	if (len < 14)
		return INCA_WIRE_ETH_SHORT;
	ethertype = be16(fr + 12);
	if (ethertype == 0x8100) {
		if (len < 18)
			return INCA_WIRE_ETH_SHORT;
		ethertype = be16(fr + 16);
		l3 = 18;
	}
	if (ethertype != 0x0800)
		return INCA_WIRE_NOT_IPV4;
	room = len - l3;
	if (room < 20)
		return INCA_WIRE_IP_SHORT;
	ip = fr + l3;
	if (ip[0] >> 4 != 4)
		return INCA_WIRE_IP_VERSION;
	ihl = (ip[0] & 15u) * 4u;
	if (ihl < 20 || ihl > room)
		return INCA_WIRE_IP_HDR_LEN;
	total = be16(ip + 2);
	if (total < ihl || total > room)
		return INCA_WIRE_IP_TOTAL_LEN;
	/* A header with the right checksum sums to all ones. */
	if (oc_bytes(0, ip, ihl) != 0xffff)
		return INCA_WIRE_IP_CSUM;
	frag = be16(ip + 6);
	if ((frag & 0x2000) || (frag & 0x1fff))
		return INCA_WIRE_IP_FRAGMENT;
	if (ip[9] != 17)
		return INCA_WIRE_NOT_UDP;
	if (total - ihl < 8)
		return INCA_WIRE_UDP_SHORT;
	udp = ip + ihl;
	udp_len = be16(udp + 4);
	if (udp_len != total - ihl)
		return INCA_WIRE_UDP_LEN;
	if (be16(udp + 2) != port)
		return INCA_WIRE_WRONG_PORT;
	if (be16(udp + 6) != 0) {
		sum = oc_bytes(0, ip + 12, 8); /* pseudo header: addresses, */
		sum = oc_add(sum, 17);         /* protocol, */
		sum = oc_add(sum, (unsigned)udp_len); /* and UDP length */
		sum = oc_bytes(sum, udp, udp_len);
		if (sum != 0xffff)
			return INCA_WIRE_UDP_CSUM;
	}
	f->msg_off = l3 + ihl + 8;
	f->msg_len = udp_len - 8;
	f->src_ip = be32(ip + 12);
	f->dst_ip = be32(ip + 16);
	f->src_port = (uint16_t)be16(udp);
	f->dst_port = (uint16_t)be16(udp + 2);
	return INCA_WIRE_OK;
}

enum inca_wire_err
spec_roce_check(const uint8_t *b, size_t len, size_t *msg_off, size_t *msg_len)
{
	unsigned pad;

	/* BTH 12, DETH 8, an INCA header 32, ICRC 4. */
	if (len < 12 + 8 + 32 + 4)
		return INCA_WIRE_ROCE_SHORT;
	if (b[0] != 0x64)
		return INCA_WIRE_ROCE_OPCODE;
	if ((b[1] & 0x0f) != 0)
		return INCA_WIRE_ROCE_TVER;
	if (be16(b + 2) != 0xffff)
		return INCA_WIRE_ROCE_PKEY;
	pad = (b[1] >> 4) & 3;
	if ((len - 24) % 4 != 0 || len - 24 - pad < 32)
		return INCA_WIRE_ROCE_PAD;
	*msg_off = 20;
	*msg_len = len - 24 - pad;
	return INCA_WIRE_OK;
}

/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * The INCA wire codec: validation and decoding of INCA messages and of the
 * Ethernet / IPv4 / UDP frames around them. This code sees every packet the
 * aggregator receives, so it reads fields byte by byte (no alignment
 * assumption), never beyond the length it was given, and reports a distinct
 * reason for every malformed case instead of failing.
 */

#include <stdbool.h>
#include <string.h>

#include <inca/wire.h>

#define ETH_HLEN 14
#define VLAN_HLEN 4
#define ETHERTYPE_IPV4 0x0800
#define ETHERTYPE_VLAN 0x8100
#define IPV4_MIN_HLEN 20
#define IPV4_DF 0x4000
#define IPV4_MF 0x2000
#define IPV4_FRAG_OFF 0x1fff
#define IPPROTO_UDP_ 17
#define UDP_HLEN 8

static inline uint16_t
get16(const uint8_t *p)
{
	return (uint16_t)((p[0] << 8) | p[1]);
}

static inline uint32_t
get32(const uint8_t *p)
{
	return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) |
	       ((uint32_t)p[2] << 8) | p[3];
}

static inline void
put16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = v & 0xff;
}

static inline void
put32(uint8_t *p, uint32_t v)
{
	p[0] = v >> 24;
	p[1] = (v >> 16) & 0xff;
	p[2] = (v >> 8) & 0xff;
	p[3] = v & 0xff;
}

/* Name tables, generated from the X-macros so that they cannot drift. */

static const unsigned int dtype_sizes[INCA_DTYPE_COUNT] = {
#define INCA_X_(n, v, s) [v] = s,
	INCA_DTYPES(INCA_X_)
#undef INCA_X_
};

/* Lower-case names are what users type in configs; the X-macro carries the
 * upper-case ones, so these two tables are spelled out and checked by the
 * unit test for completeness. */
static const char *const dtype_names[INCA_DTYPE_COUNT] = {
	[INCA_DTYPE_INT32] = "int32",
	[INCA_DTYPE_FP32] = "fp32",
	[INCA_DTYPE_FP16] = "fp16",
	[INCA_DTYPE_BF16] = "bf16",
	[INCA_DTYPE_INT64] = "int64",
	[INCA_DTYPE_FP64] = "fp64",
};
_Static_assert(INCA_DTYPE_COUNT == 6, "add the new data type to dtype_names");

static const char *const op_names[INCA_OP_COUNT] = {
	[INCA_OP_SUM] = "sum",
	[INCA_OP_MIN] = "min",
	[INCA_OP_MAX] = "max",
};
_Static_assert(INCA_OP_COUNT == 3, "add the new operation to op_names");

static const char *const msg_type_names[INCA_MSG_MAX_] = {
#define INCA_X_(n, v, d) [v] = #n,
	INCA_MSG_TYPES(INCA_X_)
#undef INCA_X_
};

static const char *const nack_names[INCA_NACK_MAX_] = {
	[INCA_NACK_NONE] = "NONE",
#define INCA_X_(n, v, d) [v] = #n,
	INCA_NACK_REASONS(INCA_X_)
#undef INCA_X_
};

static const char *const nack_strs[INCA_NACK_MAX_] = {
	[INCA_NACK_NONE] = "no reason",
#define INCA_X_(n, v, d) [v] = d,
	INCA_NACK_REASONS(INCA_X_)
#undef INCA_X_
};

static const char *const wire_err_names[INCA_WIRE_ERR_COUNT] = {
#define INCA_X_(n, d) [INCA_WIRE_##n] = #n,
	INCA_WIRE_ERRORS(INCA_X_)
#undef INCA_X_
};

static const char *const wire_err_strs[INCA_WIRE_ERR_COUNT] = {
#define INCA_X_(n, d) [INCA_WIRE_##n] = d,
	INCA_WIRE_ERRORS(INCA_X_)
#undef INCA_X_
};

static inline const char *
lookup(const char *const *table, unsigned int n, unsigned int i)
{
	if (i >= n || table[i] == NULL)
		return "?";
	return table[i];
}

unsigned
inca_dtype_size(unsigned dtype)
{
	return dtype < INCA_DTYPE_COUNT ? dtype_sizes[dtype] : 0;
}

const char *
inca_dtype_name(unsigned dtype)
{
	return lookup(dtype_names, INCA_DTYPE_COUNT, dtype);
}

const char *
inca_op_name(unsigned op)
{
	return lookup(op_names, INCA_OP_COUNT, op);
}

const char *
inca_msg_type_name(unsigned type)
{
	return lookup(msg_type_names, INCA_MSG_MAX_, type);
}

const char *
inca_nack_name(unsigned reason)
{
	return lookup(nack_names, INCA_NACK_MAX_, reason);
}

const char *
inca_nack_str(unsigned reason)
{
	return lookup(nack_strs, INCA_NACK_MAX_, reason);
}

const char *
inca_wire_err_name(unsigned err)
{
	return lookup(wire_err_names, INCA_WIRE_ERR_COUNT, err);
}

const char *
inca_wire_err_str(unsigned err)
{
	return lookup(wire_err_strs, INCA_WIRE_ERR_COUNT, err);
}

/* Message codec. Offsets come from the C definition of the header. */

#define HDR_OFF(field) offsetof(struct inca_hdr, field)

static inline int
is_data(unsigned int type)
{
	return type == INCA_MSG_CONTRIB || type == INCA_MSG_RESULT;
}

static inline int
is_known_type(unsigned int type)
{
	return type < INCA_MSG_MAX_ && msg_type_names[type] != NULL;
}

static inline int
is_known_reason(unsigned int reason)
{
	return reason != INCA_NACK_NONE && reason < INCA_NACK_MAX_ &&
	       nack_names[reason] != NULL;
}

/* Body length rule of a control message. */
static enum inca_wire_err
check_ctrl_len(unsigned int type, size_t body_len)
{
	switch (type) {
	case INCA_MSG_HELLO:
	case INCA_MSG_CAPS:
		return body_len == INCA_CTRL_LEN ? INCA_WIRE_OK : INCA_WIRE_CTRL_LEN;
	case INCA_MSG_JOIN:
	case INCA_MSG_JOIN_ACK:
		/* Optionally followed by a RoCEv2 binding. */
		return body_len == INCA_CTRL_LEN || body_len == INCA_CTRL_LEN + INCA_ROCE_EXT_LEN ?
			INCA_WIRE_OK : INCA_WIRE_CTRL_LEN;
	default:
		/* LEAVE, LEAVE_ACK, HEARTBEAT, HEARTBEAT_ACK, NACK. */
		return body_len == 0 || body_len == INCA_CTRL_LEN ?
			INCA_WIRE_OK : INCA_WIRE_CTRL_LEN;
	}
}

static enum inca_wire_err
check_ctrl_fields(unsigned int type, const void *body)
{
	struct inca_ctrl_info c;

	inca_ctrl_decode(body, &c);
	if (c.ver_min > c.ver_max)
		return INCA_WIRE_CTRL_FIELD;
	if (c.nworkers > INCA_MAX_WORKERS)
		return INCA_WIRE_CTRL_FIELD;
	if (type == INCA_MSG_JOIN && c.nworkers == 0)
		return INCA_WIRE_CTRL_FIELD;
	if (c.window != 0 && c.pool_size != 0 && c.window > c.pool_size)
		return INCA_WIRE_CTRL_FIELD;
	if (c.max_elems > INCA_MAX_ELEMS)
		return INCA_WIRE_CTRL_FIELD;
	if (c.caps & ~INCA_CAP_MASK)
		return INCA_WIRE_CTRL_FIELD;
	return INCA_WIRE_OK;
}

/* A RoCEv2 binding: a real queue pair, a non-controlled Q_Key, zeros. */
static enum inca_wire_err
check_roce_ext(const uint8_t *p)
{
	uint32_t qpn = get32(p), qkey = get32(p + 4);

	if (qpn < INCA_ROCE_QPN_MIN || qpn > INCA_ROCE_QPN_MAX || (qkey & 0x80000000u) ||
	    get32(p + 8) != 0 || get32(p + 12) != 0)
		return INCA_WIRE_CTRL_FIELD;
	return INCA_WIRE_OK;
}

/*
 * The ROUTED, GATHER and BRIEF flags of a data message (docs/protocol.md,
 * "Routed chunks"). Other messages are not checked: a NACK echoes the
 * flags of the CONTRIB it refuses.
 */
static bool
route_ok(const struct inca_msg *m)
{
	const uint8_t f = m->flags;
	bool root;

	if (!(f & INCA_F_ROUTED))
		return !(f & (INCA_F_GATHER | INCA_F_BRIEF));
	if ((f & INCA_F_GATHER) && (f & INCA_F_BFP))
		return false;
	if (m->type != INCA_MSG_CONTRIB)
		return true;
	/* A CONTRIB names its root by one bit, or none (0: the root is not
	 * a member, "Routed chunks in a tree"), and says who sends elements. */
	if ((m->bitmap & (m->bitmap - 1)) != 0)
		return false;
	root = m->bitmap == UINT32_C(1) << m->rank;
	if (!(f & INCA_F_GATHER))
		return !(f & INCA_F_BRIEF);
	return root ? !(f & INCA_F_BRIEF) : (f & INCA_F_BRIEF) != 0;
}

/*
 * The checks run in the order of enum inca_wire_err, and the first failing
 * one is reported, so a message malformed in several ways always gets the
 * same reason (docs/protocol.md, "Validation").
 */
enum inca_wire_err
inca_msg_decode(const void *buf, size_t len, unsigned max_elems, struct inca_msg *m)
{
	const uint8_t *p = buf;
	enum inca_wire_err err;
	unsigned int limit;
	size_t size;

	if (len < INCA_HDR_LEN)
		return INCA_WIRE_SHORT;
	m->version = p[HDR_OFF(version)];
	m->type = p[HDR_OFF(type)];
	m->dtype = p[HDR_OFF(dtype)];
	m->op = p[HDR_OFF(op)];
	m->job = get16(p + HDR_OFF(job));
	m->rank = get16(p + HDR_OFF(rank));
	m->token = get32(p + HDR_OFF(token));
	m->slot = get16(p + HDR_OFF(slot));
	m->flags = p[HDR_OFF(flags)];
	m->exp = (int8_t)p[HDR_OFF(exp)];
	m->seq = get32(p + HDR_OFF(seq));
	m->offset = get32(p + HDR_OFF(offset));
	m->count = get16(p + HDR_OFF(count));
	m->reason = get16(p + HDR_OFF(reason));
	m->bitmap = get32(p + HDR_OFF(bitmap));
	m->body = p + INCA_HDR_LEN;
	m->body_len = len - INCA_HDR_LEN;

	if (m->version != INCA_PROTO_VERSION)
		return INCA_WIRE_VERSION;
	if (!is_known_type(m->type))
		return INCA_WIRE_TYPE;
	if (m->dtype >= INCA_DTYPE_COUNT)
		return INCA_WIRE_DTYPE;
	if (m->op >= INCA_OP_COUNT)
		return INCA_WIRE_OP;
	if (m->flags & ~INCA_F_MASK)
		return INCA_WIRE_FLAGS;
	if (m->rank >= INCA_MAX_WORKERS)
		return INCA_WIRE_RANK;
	if (m->job == 0 && m->type != INCA_MSG_HELLO && m->type != INCA_MSG_CAPS)
		return INCA_WIRE_JOB;

	if (is_data(m->type)) {
		limit = max_elems == 0 || max_elems > INCA_MAX_ELEMS ?
			INCA_MAX_ELEMS : max_elems;
		size = inca_dtype_size(m->dtype);
		if (m->count == 0 || m->count * inca_dtype_lanes(m->dtype) > limit ||
		    m->count * size > INCA_MAX_PAYLOAD_BYTES)
			return INCA_WIRE_COUNT;
		if (m->body_len != ((m->flags & INCA_F_BRIEF) ? 0 : m->count * size))
			return INCA_WIRE_LEN;
	} else {
		if (m->count != 0)
			return INCA_WIRE_COUNT;
		err = check_ctrl_len(m->type, m->body_len);
		if (err != INCA_WIRE_OK)
			return err;
	}

	if (m->type == INCA_MSG_NACK ? !is_known_reason(m->reason) : m->reason != 0)
		return INCA_WIRE_REASON;
	if (!is_data(m->type) && m->body_len >= INCA_CTRL_LEN) {
		err = check_ctrl_fields(m->type, m->body);
		if (err == INCA_WIRE_OK && m->body_len > INCA_CTRL_LEN)
			err = check_roce_ext((const uint8_t *)m->body + INCA_CTRL_LEN);
		if (err != INCA_WIRE_OK)
			return err;
	}
	if ((m->flags & INCA_F_BFP) && m->dtype != INCA_DTYPE_INT32)
		return INCA_WIRE_BFP_DTYPE;
	if (is_data(m->type) && !route_ok(m))
		return INCA_WIRE_ROUTE;
	return INCA_WIRE_OK;
}

void
inca_hdr_encode(const struct inca_msg *m, void *buf)
{
	uint8_t *p = buf;

	p[HDR_OFF(version)] = m->version;
	p[HDR_OFF(type)] = m->type;
	p[HDR_OFF(dtype)] = m->dtype;
	p[HDR_OFF(op)] = m->op;
	put16(p + HDR_OFF(job), m->job);
	put16(p + HDR_OFF(rank), m->rank);
	put32(p + HDR_OFF(token), m->token);
	put16(p + HDR_OFF(slot), m->slot);
	p[HDR_OFF(flags)] = m->flags;
	p[HDR_OFF(exp)] = (uint8_t)m->exp;
	put32(p + HDR_OFF(seq), m->seq);
	put32(p + HDR_OFF(offset), m->offset);
	put16(p + HDR_OFF(count), m->count);
	put16(p + HDR_OFF(reason), m->reason);
	put32(p + HDR_OFF(bitmap), m->bitmap);
}

/*
 * The control body codec takes its offsets from struct inca_ctrl itself, so
 * that it cannot disagree with the C definition (the spec-layout test ties
 * that to docs/protocol.md).
 */
#define CTRL_OFF(field) offsetof(struct inca_ctrl, field)

void
inca_ctrl_decode(const void *buf, struct inca_ctrl_info *c)
{
	const uint8_t *p = buf;

	c->ver_min = p[CTRL_OFF(ver_min)];
	c->ver_max = p[CTRL_OFF(ver_max)];
	c->dtypes = get16(p + CTRL_OFF(dtypes));
	c->ops = get16(p + CTRL_OFF(ops));
	c->max_elems = get16(p + CTRL_OFF(max_elems));
	c->nworkers = get16(p + CTRL_OFF(nworkers));
	c->pool_size = get16(p + CTRL_OFF(pool_size));
	c->window = get16(p + CTRL_OFF(window));
	c->caps = get16(p + CTRL_OFF(caps));
	c->hb_ms = get32(p + CTRL_OFF(hb_ms));
	c->evict_ms = get32(p + CTRL_OFF(evict_ms));
	c->pool_base = get32(p + CTRL_OFF(pool_base));
	c->session = get32(p + CTRL_OFF(session));
}

void
inca_ctrl_encode(const struct inca_ctrl_info *c, void *buf)
{
	uint8_t *p = buf;

	memset(p, 0, INCA_CTRL_LEN);
	p[CTRL_OFF(ver_min)] = c->ver_min;
	p[CTRL_OFF(ver_max)] = c->ver_max;
	put16(p + CTRL_OFF(dtypes), c->dtypes);
	put16(p + CTRL_OFF(ops), c->ops);
	put16(p + CTRL_OFF(max_elems), c->max_elems);
	put16(p + CTRL_OFF(nworkers), c->nworkers);
	put16(p + CTRL_OFF(pool_size), c->pool_size);
	put16(p + CTRL_OFF(window), c->window);
	put16(p + CTRL_OFF(caps), c->caps);
	put32(p + CTRL_OFF(hb_ms), c->hb_ms);
	put32(p + CTRL_OFF(evict_ms), c->evict_ms);
	put32(p + CTRL_OFF(pool_base), c->pool_base);
	put32(p + CTRL_OFF(session), c->session);
}

int
inca_roce_ext_decode(const struct inca_msg *m, struct inca_roce_ext *x)
{
	const uint8_t *p = (const uint8_t *)m->body + INCA_CTRL_LEN;

	if ((m->type != INCA_MSG_JOIN && m->type != INCA_MSG_JOIN_ACK) ||
	    m->body_len != INCA_CTRL_LEN + INCA_ROCE_EXT_LEN)
		return 0;
	x->qpn = get32(p);
	x->qkey = get32(p + 4);
	x->rsvd[0] = get32(p + 8);
	x->rsvd[1] = get32(p + 12);
	return 1;
}

void
inca_roce_ext_encode(const struct inca_roce_ext *x, void *buf)
{
	uint8_t *p = buf;

	put32(p, x->qpn);
	put32(p + 4, x->qkey);
	put32(p + 8, 0);
	put32(p + 12, 0);
}

/*
 * RoCEv2. BTH: opcode, SE | M | PadCnt(2) | TVer(4), P_Key, FECN | BECN |
 * resv6, DestQP(24), A | resv7, PSN(24). DETH: Q_Key, resv8, SrcQP(24).
 */
enum inca_wire_err
inca_roce_parse(const void *buf, size_t len, struct inca_roce_info *r, const uint8_t **msg,
		size_t *msg_len)
{
	const uint8_t *p = buf;
	size_t payload;

	if (len < INCA_ROCE_HDR_LEN + INCA_HDR_LEN + INCA_ICRC_LEN)
		return INCA_WIRE_ROCE_SHORT;
	r->opcode = p[0];
	r->pad = (p[1] >> 4) & 3;
	r->pkey = get16(p + 2);
	r->dqpn = get32(p + 4) & 0xffffff;
	r->psn = get32(p + 8) & 0xffffff;
	r->qkey = get32(p + 12);
	r->sqpn = get32(p + 16) & 0xffffff;
	if (r->opcode != INCA_ROCE_OP_UD_SEND_ONLY)
		return INCA_WIRE_ROCE_OPCODE;
	if ((p[1] & 0x0f) != 0)
		return INCA_WIRE_ROCE_TVER;
	if (r->pkey != INCA_ROCE_PKEY)
		return INCA_WIRE_ROCE_PKEY;
	/* An InfiniBand payload is whole 32-bit words; the pad count says
	 * how many bytes of the last one are not the message's. */
	payload = len - INCA_ROCE_HDR_LEN - INCA_ICRC_LEN;
	if (payload % 4 != 0 || payload - r->pad < INCA_HDR_LEN)
		return INCA_WIRE_ROCE_PAD;
	*msg = p + INCA_ROCE_HDR_LEN;
	*msg_len = payload - r->pad;
	return INCA_WIRE_OK;
}

size_t
inca_roce_encap(void *buf, const struct inca_roce_info *r, size_t msg_len)
{
	uint8_t *p = buf;
	unsigned int pad = (unsigned int)(-msg_len & 3);

	p[0] = r->opcode;
	p[1] = (uint8_t)(pad << 4); /* SE 0, MigReq 0, TVer 0 */
	put16(p + 2, r->pkey);
	put32(p + 4, r->dqpn & 0xffffff); /* FECN, BECN, resv6: 0 */
	put32(p + 8, r->psn & 0xffffff);  /* AckReq 0 */
	put32(p + 12, r->qkey);
	put32(p + 16, r->sqpn & 0xffffff);
	memset(p + INCA_ROCE_HDR_LEN + msg_len, 0, pad);
	return INCA_ROCE_HDR_LEN + msg_len + pad + INCA_ICRC_LEN;
}

/* Frames. */

/*
 * Sum of the 16-bit big-endian words of @p buf plus @p sum, not folded.
 * Every frame inca_frame_parse() accepts is summed here, so eight bytes
 * are added at a time: the ones' complement sum of the words as they lie
 * in memory does not depend on how they are grouped, and comes out
 * byte-swapped on a little-endian host (RFC 1071, 2.(B)), which one swap
 * of the folded 16-bit result undoes.
 */
static uint64_t
csum_add(const uint8_t *p, size_t len, uint64_t sum)
{
	uint64_t s0 = 0, s1 = 0, x, y;
	uint32_t w;
	uint16_t h;

	/* Two 32-bit halves per 64-bit word: each sum grows by less than
	 * 2^33 per 16 bytes, so no buffer of less than 2^35 bytes can
	 * overflow it. */
	while (len >= 16) {
		memcpy(&x, p, 8);
		memcpy(&y, p + 8, 8);
		s0 += (x & 0xffffffff) + (x >> 32);
		s1 += (y & 0xffffffff) + (y >> 32);
		p += 16;
		len -= 16;
	}
	s0 += s1;
	if (len >= 8) {
		memcpy(&x, p, 8);
		s0 += (x & 0xffffffff) + (x >> 32);
		p += 8;
		len -= 8;
	}
	if (len >= 4) {
		memcpy(&w, p, 4);
		s0 += w;
		p += 4;
		len -= 4;
	}
	if (len >= 2) {
		memcpy(&h, p, 2);
		s0 += h;
		p += 2;
		len -= 2;
	}
	if (len != 0) {
		/* The last byte is the first of a word whose second is zero. */
		h = 0;
		memcpy(&h, p, 1);
		s0 += h;
	}
	while (s0 >> 16)
		s0 = (s0 & 0xffff) + (s0 >> 16);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	s0 = (uint16_t)((s0 << 8) | (s0 >> 8));
#endif
	return sum + s0;
}

static uint16_t
csum_fold(uint64_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

uint16_t
inca_csum(const void *buf, size_t len, uint32_t sum)
{
	return csum_fold(csum_add(buf, len, sum));
}

/* Sum of the IPv4 pseudo header of a UDP datagram of @p udp_len bytes. */
static uint32_t
pseudo_sum(uint32_t src_ip, uint32_t dst_ip, size_t udp_len)
{
	return (src_ip >> 16) + (src_ip & 0xffff) + (dst_ip >> 16) + (dst_ip & 0xffff) +
	       IPPROTO_UDP_ + (uint32_t)udp_len;
}

/*
 * Order of the checks: link, IP, UDP framing, then the destination port
 * before the UDP checksum, so that a switch-mode daemon classifies any UDP
 * datagram that is not for INCA as WRONG_PORT (to forward it) without
 * summing its payload.
 */
enum inca_wire_err
inca_frame_parse(const void *frame, size_t len, uint16_t udp_port, struct inca_frame *f)
{
	const uint8_t *eth = frame;
	const uint8_t *ip, *udp;
	size_t l3_off = ETH_HLEN;
	size_t room, ihl, tot, udp_len;
	uint16_t ethertype, frag, ucsum;

	if (len < ETH_HLEN)
		return INCA_WIRE_ETH_SHORT;
	ethertype = get16(eth + 12);
	if (ethertype == ETHERTYPE_VLAN) {
		/* One 802.1Q tag, as a host or DPU port without VLAN
		 * stripping delivers it. */
		if (len < ETH_HLEN + VLAN_HLEN)
			return INCA_WIRE_ETH_SHORT;
		ethertype = get16(eth + 16);
		l3_off += VLAN_HLEN;
	}
	if (ethertype != ETHERTYPE_IPV4)
		return INCA_WIRE_NOT_IPV4;

	ip = eth + l3_off;
	room = len - l3_off;
	if (room < IPV4_MIN_HLEN)
		return INCA_WIRE_IP_SHORT;
	if ((ip[0] >> 4) != 4)
		return INCA_WIRE_IP_VERSION;
	ihl = (size_t)(ip[0] & 0x0f) * 4;
	if (ihl < IPV4_MIN_HLEN || ihl > room)
		return INCA_WIRE_IP_HDR_LEN;
	/* The frame may be longer than the datagram (Ethernet padding). */
	tot = get16(ip + 2);
	if (tot < ihl || tot > room)
		return INCA_WIRE_IP_TOTAL_LEN;
	if (inca_csum(ip, ihl, 0) != 0)
		return INCA_WIRE_IP_CSUM;
	frag = get16(ip + 6);
	if (frag & (IPV4_MF | IPV4_FRAG_OFF))
		return INCA_WIRE_IP_FRAGMENT;
	if (ip[9] != IPPROTO_UDP_)
		return INCA_WIRE_NOT_UDP;

	udp = ip + ihl;
	if (tot - ihl < UDP_HLEN)
		return INCA_WIRE_UDP_SHORT;
	udp_len = get16(udp + 4);
	if (udp_len != tot - ihl)
		return INCA_WIRE_UDP_LEN;
	if (get16(udp + 2) != udp_port)
		return INCA_WIRE_WRONG_PORT;
	f->src_ip = get32(ip + 12);
	f->dst_ip = get32(ip + 16);
	ucsum = get16(udp + 6);
	if (ucsum != 0 &&
	    csum_fold(csum_add(udp, udp_len, pseudo_sum(f->src_ip, f->dst_ip, udp_len))) != 0)
		return INCA_WIRE_UDP_CSUM;

	f->eth = eth;
	f->src_port = get16(udp);
	f->dst_port = get16(udp + 2);
	f->msg = udp + UDP_HLEN;
	f->msg_len = udp_len - UDP_HLEN;
	return INCA_WIRE_OK;
}

size_t
inca_frame_build(void *frame, const uint8_t dst_mac[6], const uint8_t src_mac[6],
		 uint32_t src_ip, uint32_t dst_ip, uint16_t src_port, uint16_t dst_port,
		 size_t msg_len)
{
	uint8_t *eth = frame;
	uint8_t *ip = eth + ETH_HLEN;
	uint8_t *udp = ip + IPV4_MIN_HLEN;
	size_t udp_len = UDP_HLEN + msg_len;
	size_t ip_len = IPV4_MIN_HLEN + udp_len;
	uint16_t c;

	/* An IPv4 datagram cannot be longer; there is nothing to build. */
	if (ip_len > 0xffff)
		return 0;

	memcpy(eth, dst_mac, 6);
	memcpy(eth + 6, src_mac, 6);
	put16(eth + 12, ETHERTYPE_IPV4);

	ip[0] = 0x45;
	ip[1] = 0;
	put16(ip + 2, (uint16_t)ip_len);
	put16(ip + 4, 0);
	put16(ip + 6, IPV4_DF);
	ip[8] = 64;
	ip[9] = IPPROTO_UDP_;
	put16(ip + 10, 0);
	put32(ip + 12, src_ip);
	put32(ip + 16, dst_ip);
	put16(ip + 10, inca_csum(ip, IPV4_MIN_HLEN, 0));

	put16(udp, src_port);
	put16(udp + 2, dst_port);
	put16(udp + 4, (uint16_t)udp_len);
	put16(udp + 6, 0);
	c = csum_fold(csum_add(udp, udp_len, pseudo_sum(src_ip, dst_ip, udp_len)));
	/* A computed 0 is sent as 0xffff: 0 on the wire means "no checksum". */
	put16(udp + 6, c == 0 ? 0xffff : c);
	return ETH_HLEN + ip_len;
}

/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * Unit tests of the wire codec (lib/wire.c): message round trips, one test
 * case per rejection reason (each builds a valid message or frame, checks
 * that it is accepted, breaks it in exactly one way and checks the exact
 * reason), the checksums, and truncation at every length. Inputs handed to
 * the parsers are copied into buffers of their exact size so that AddressSanitizer
 * reports any read beyond the length.
 */

#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <inca/wire.h>

#define BUF_CAP 10000
#define BASE_COUNT 4

static const uint8_t mac_a[6] = { 0x02, 0, 0, 0, 0, 0x01 };
static const uint8_t mac_b[6] = { 0x02, 0, 0, 0, 0, 0x02 };
#define IP_A 0x0a4d0001u /* 10.77.0.1 */
#define IP_B 0x0a4d0002u /* 10.77.0.2 */
#define PORT_W 40000

/* Helpers. */

static uint16_t
rd16(const uint8_t *p)
{
	return (uint16_t)((p[0] << 8) | p[1]);
}

static void
wr16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = v & 0xff;
}

/* An independent Internet checksum: sum as 32-bit words, fold at the end. */
static uint16_t
ref_csum(const uint8_t *p, size_t len, uint32_t sum)
{
	size_t i;

	for (i = 0; i + 1 < len; i += 2)
		sum += rd16(p + i);
	if (len & 1)
		sum += p[len - 1] << 8;
	while (sum > 0xffff)
		sum = (sum >> 16) + (sum & 0xffff);
	return (uint16_t)~sum;
}

/* Offset of the IPv4 header in a frame (one optional VLAN tag). */
static size_t
ip_off(const uint8_t *fr)
{
	return rd16(fr + 12) == 0x8100 ? 18 : 14;
}

static void
fix_ip_csum(uint8_t *fr)
{
	uint8_t *ip = fr + ip_off(fr);
	size_t ihl = (ip[0] & 0xf) * 4;

	wr16(ip + 10, 0);
	wr16(ip + 10, ref_csum(ip, ihl, 0));
}

static void
fix_udp_csum(uint8_t *fr)
{
	uint8_t *ip = fr + ip_off(fr);
	uint8_t *udp = ip + (ip[0] & 0xf) * 4;
	size_t ulen = rd16(udp + 4);
	uint32_t ps = rd16(ip + 12) + rd16(ip + 14) + rd16(ip + 16) + rd16(ip + 18) + 17 +
		      (uint32_t)ulen;
	uint16_t c;

	wr16(udp + 6, 0);
	c = ref_csum(udp, ulen, ps);
	wr16(udp + 6, c == 0 ? 0xffff : c);
}

/* Exact-size heap copies, so that a read past the end is an ASan error. */
static enum inca_wire_err
decode_exact(const uint8_t *buf, size_t len, unsigned int max_elems, struct inca_msg *m)
{
	uint8_t *copy = malloc(len ? len : 1);
	enum inca_wire_err e;

	ck_assert_ptr_nonnull(copy);
	memcpy(copy, buf, len);
	e = inca_msg_decode(copy, len, max_elems, m);
	/* The body pointer must stay inside the copy; re-base it on buf. */
	if (e == INCA_WIRE_OK) {
		ck_assert_ptr_eq(m->body, copy + INCA_HDR_LEN);
		m->body = buf + INCA_HDR_LEN;
	}
	free(copy);
	return e;
}

static enum inca_wire_err
parse_exact(const uint8_t *fr, size_t len, uint16_t port, struct inca_frame *f)
{
	uint8_t *copy = malloc(len ? len : 1);
	enum inca_wire_err e;

	ck_assert_ptr_nonnull(copy);
	memcpy(copy, fr, len);
	e = inca_frame_parse(copy, len, port, f);
	if (e == INCA_WIRE_OK) {
		ck_assert(f->msg >= copy && f->msg + f->msg_len <= copy + len);
		ck_assert_ptr_eq(f->eth, copy);
		f->msg = fr + (f->msg - copy);
		f->eth = fr;
	}
	free(copy);
	return e;
}

static int
is_data_type(unsigned int type)
{
	return type == INCA_MSG_CONTRIB || type == INCA_MSG_RESULT;
}

/* A valid message of @p type with every header field set to something. */
static void
base_msg(unsigned int type, struct inca_msg *m)
{
	memset(m, 0, sizeof(*m));
	m->version = INCA_PROTO_VERSION;
	m->type = type;
	m->job = 0x1234;
	m->rank = 3;
	m->token = 0xdeadbeef;
	if (is_data_type(type)) {
		m->dtype = INCA_DTYPE_INT32;
		m->op = INCA_OP_SUM;
		m->slot = 0x0102;
		m->flags = INCA_F_SET | INCA_F_LAST;
		m->exp = -5;
		m->seq = 0x80000001;
		m->offset = 0x00abcdef;
		m->count = BASE_COUNT;
		if (type == INCA_MSG_RESULT)
			m->bitmap = 0x0000000f;
	}
	if (type == INCA_MSG_NACK) {
		m->reason = INCA_NACK_QUOTA_EXHAUSTED;
		m->slot = 7;
		m->seq = 99;
	}
	if (type == INCA_MSG_JOIN)
		m->dtype = INCA_DTYPE_FP32;
}

static void
base_ctrl(unsigned int type, struct inca_ctrl_info *c)
{
	memset(c, 0, sizeof(*c));
	c->ver_min = 1;
	c->ver_max = 1;
	c->dtypes = 0xf;
	c->ops = 0x7;
	c->max_elems = 256;
	c->nworkers = type == INCA_MSG_JOIN || type == INCA_MSG_JOIN_ACK ? 4 : 0;
	c->pool_size = 64;
	c->window = 16;
	c->caps = INCA_CAP_NATIVE_FLOAT | INCA_CAP_SEQ_CHECK;
	c->hb_ms = 100;
	c->evict_ms = 3000;
	c->pool_base = 0x10000;
}

/* Length of the body a valid message of @p type carries by default. */
static size_t
base_body_len(const struct inca_msg *m)
{
	if (is_data_type(m->type))
		return (size_t)m->count * inca_dtype_size(m->dtype);
	return INCA_CTRL_LEN;
}

/* Encode a message with its default body into @p buf; returns its length. */
static size_t
encode_msg(const struct inca_msg *m, uint8_t *buf)
{
	struct inca_ctrl_info c;
	size_t body = base_body_len(m);
	size_t i;

	inca_hdr_encode(m, buf);
	if (is_data_type(m->type)) {
		for (i = 0; i < body; i++)
			buf[INCA_HDR_LEN + i] = (uint8_t)(i * 7 + 1);
	} else {
		base_ctrl(m->type, &c);
		inca_ctrl_encode(&c, buf + INCA_HDR_LEN);
	}
	return INCA_HDR_LEN + body;
}

static size_t
valid_msg(unsigned int type, uint8_t *buf)
{
	struct inca_msg m;

	base_msg(type, &m);
	return encode_msg(&m, buf);
}

/* A valid frame carrying a CONTRIB to the INCA port. */
static size_t
valid_frame(uint8_t *fr)
{
	size_t n = valid_msg(INCA_MSG_CONTRIB, fr + INCA_ENCAP_LEN);

	return inca_frame_build(fr, mac_b, mac_a, IP_A, IP_B, PORT_W, INCA_UDP_PORT, n);
}

static void
set_ctrl_field(uint8_t *buf, void (*edit)(struct inca_ctrl_info *))
{
	struct inca_ctrl_info c;

	inca_ctrl_decode(buf + INCA_HDR_LEN, &c);
	edit(&c);
	inca_ctrl_encode(&c, buf + INCA_HDR_LEN);
}

#define HO(field) offsetof(struct inca_hdr, field)

/*
 * The rejection cases. Each starts from a valid message of base_type (or a
 * valid frame) that the test first checks is accepted, then breaks it in
 * exactly one way.
 */
struct reject_case {
	enum inca_wire_err err;
	const char *what;
	int frame;                /* 1: inca_frame_parse, 0: inca_msg_decode */
	unsigned int base_type;   /* message cases */
	unsigned int max_elems;   /* message cases: decode limit */
	/* Break buf (length *len, capacity BUF_CAP) in place. */
	void (*breaker)(uint8_t *buf, size_t *len);
};

/* Message breakers. */
static void
b_short31(uint8_t *b, size_t *l)
{
	(void)b;
	*l = INCA_HDR_LEN - 1;
}

static void
b_short0(uint8_t *b, size_t *l)
{
	(void)b;
	*l = 0;
}

static void
b_ver0(uint8_t *b, size_t *l)
{
	(void)l;
	b[HO(version)] = 0;
}

static void
b_ver1(uint8_t *b, size_t *l)
{
	(void)l;
	b[HO(version)] = 1;
}

static void
b_ver3(uint8_t *b, size_t *l)
{
	(void)l;
	b[HO(version)] = 3;
}

static void
b_type0(uint8_t *b, size_t *l)
{
	(void)l;
	b[HO(type)] = 0;
}

static void
b_type12(uint8_t *b, size_t *l)
{
	(void)l;
	b[HO(type)] = INCA_MSG_MAX_;
}

static void
b_type255(uint8_t *b, size_t *l)
{
	(void)l;
	b[HO(type)] = 255;
}

static void
b_dtype4(uint8_t *b, size_t *l)
{
	(void)l;
	b[HO(dtype)] = INCA_DTYPE_COUNT;
}

static void
b_dtype255(uint8_t *b, size_t *l)
{
	(void)l;
	b[HO(dtype)] = 255;
}

static void
b_op3(uint8_t *b, size_t *l)
{
	(void)l;
	b[HO(op)] = INCA_OP_COUNT;
}

static void
b_flags80_contrib(uint8_t *b, size_t *l)
{
	(void)l;
	b[HO(flags)] |= 0x80;
}

static void
put_bitmap(uint8_t *b, uint32_t v)
{
	b[HO(bitmap)] = (uint8_t)(v >> 24);
	b[HO(bitmap) + 1] = (uint8_t)(v >> 16);
	b[HO(bitmap) + 2] = (uint8_t)(v >> 8);
	b[HO(bitmap) + 3] = (uint8_t)v;
}

/* Routed chunks (docs/protocol.md): the base message is from rank 3. */
static void
b_len_brief_body(uint8_t *b, size_t *l)
{
	(void)l;
	b[HO(flags)] |= INCA_F_ROUTED | INCA_F_GATHER | INCA_F_BRIEF;
	put_bitmap(b, 1u << 0);
}

static void
b_route_gather_alone(uint8_t *b, size_t *l)
{
	(void)l;
	b[HO(flags)] |= INCA_F_GATHER;
}

static void
b_route_brief_alone(uint8_t *b, size_t *l)
{
	b[HO(flags)] |= INCA_F_BRIEF;
	*l = INCA_HDR_LEN;
}

static void
b_route_gather_bfp(uint8_t *b, size_t *l)
{
	(void)l;
	b[HO(flags)] |= INCA_F_ROUTED | INCA_F_GATHER | INCA_F_BFP;
}

static void
b_route_anon_elems(uint8_t *b, size_t *l)
{
	(void)l;
	b[HO(flags)] |= INCA_F_ROUTED | INCA_F_GATHER;
	put_bitmap(b, 0);
}

static void
b_route_two_roots(uint8_t *b, size_t *l)
{
	(void)l;
	b[HO(flags)] |= INCA_F_ROUTED;
	put_bitmap(b, 0x3);
}

static void
b_route_brief_reduce(uint8_t *b, size_t *l)
{
	b[HO(flags)] |= INCA_F_ROUTED | INCA_F_BRIEF;
	put_bitmap(b, 1u << 0);
	*l = INCA_HDR_LEN;
}

static void
b_route_root_brief(uint8_t *b, size_t *l)
{
	b[HO(flags)] |= INCA_F_ROUTED | INCA_F_GATHER | INCA_F_BRIEF;
	put_bitmap(b, 1u << 3);
	*l = INCA_HDR_LEN;
}

static void
b_route_other_elems(uint8_t *b, size_t *l)
{
	(void)l;
	b[HO(flags)] |= INCA_F_ROUTED | INCA_F_GATHER;
	put_bitmap(b, 1u << 0);
}

static void
b_flags80(uint8_t *b, size_t *l)
{
	(void)l;
	b[HO(flags)] |= 0x80;
}

static void
b_rank32(uint8_t *b, size_t *l)
{
	(void)l;
	wr16(b + HO(rank), INCA_MAX_WORKERS);
}

static void
b_rankff(uint8_t *b, size_t *l)
{
	(void)l;
	wr16(b + HO(rank), 0xffff);
}

static void
b_job0(uint8_t *b, size_t *l)
{
	(void)l;
	wr16(b + HO(job), 0);
}

static void
b_count0(uint8_t *b, size_t *l)
{
	wr16(b + HO(count), 0);
	*l = INCA_HDR_LEN;
}

/* A count whose body would exceed INCA_MAX_PAYLOAD_BYTES, body present. */
static void
b_count_bytes(uint8_t *b, size_t *l)
{
	unsigned int n = INCA_MAX_PAYLOAD_BYTES / 4 + 1;

	wr16(b + HO(count), n);
	memset(b + INCA_HDR_LEN, 0, n * 4);
	*l = INCA_HDR_LEN + n * 4;
}

/* With max_elems = 64 in the case: 65 elements, body present. */
static void
b_count65(uint8_t *b, size_t *l)
{
	wr16(b + HO(count), 65);
	memset(b + INCA_HDR_LEN, 0, 65 * 4);
	*l = INCA_HDR_LEN + 65 * 4;
}

static void
b_count_ctrl(uint8_t *b, size_t *l)
{
	(void)l;
	wr16(b + HO(count), 1);
}

static void
b_len_minus1(uint8_t *b, size_t *l)
{
	(void)b;
	*l -= 1;
}

static void
b_len_plus4(uint8_t *b, size_t *l)
{
	memset(b + *l, 0, 4);
	*l += 4;
}

static void
b_len_fp16(uint8_t *b, size_t *l)
{
	/* BASE_COUNT elements of 4 bytes labelled as 2-byte fp16. */
	(void)l;
	b[HO(dtype)] = INCA_DTYPE_FP16;
}

static void
b_len_hdr_only(uint8_t *b, size_t *l)
{
	(void)b;
	*l = INCA_HDR_LEN;
}

static void
b_ctrl_31(uint8_t *b, size_t *l)
{
	(void)b;
	*l = INCA_HDR_LEN + 31;
}

static void
b_ctrl_33(uint8_t *b, size_t *l)
{
	b[*l] = 0;
	*l += 1;
}

static void
b_ctrl_16(uint8_t *b, size_t *l)
{
	(void)b;
	*l = INCA_HDR_LEN + 16;
}

static void
b_reason1(uint8_t *b, size_t *l)
{
	(void)l;
	wr16(b + HO(reason), 1);
}

static void
b_reason0(uint8_t *b, size_t *l)
{
	(void)l;
	wr16(b + HO(reason), 0);
}

static void
b_reason_max(uint8_t *b, size_t *l)
{
	(void)l;
	wr16(b + HO(reason), INCA_NACK_MAX_);
}

static void
e_ver(struct inca_ctrl_info *c)
{
	c->ver_min = 2;
	c->ver_max = 1;
}

static void
e_nw0(struct inca_ctrl_info *c)
{
	c->nworkers = 0;
}

static void
e_nw33(struct inca_ctrl_info *c)
{
	c->nworkers = INCA_MAX_WORKERS + 1;
}

static void
e_window(struct inca_ctrl_info *c)
{
	c->pool_size = 8;
	c->window = 9;
}

static void
e_caps(struct inca_ctrl_info *c)
{
	c->caps = INCA_CAP_MASK + 1;
}

static void
e_maxel(struct inca_ctrl_info *c)
{
	c->max_elems = INCA_MAX_ELEMS + 1;
}

static void
b_cf_ver(uint8_t *b, size_t *l)
{
	(void)l;
	set_ctrl_field(b, e_ver);
}

static void
b_cf_nw0(uint8_t *b, size_t *l)
{
	(void)l;
	set_ctrl_field(b, e_nw0);
}

static void
b_cf_nw33(uint8_t *b, size_t *l)
{
	(void)l;
	set_ctrl_field(b, e_nw33);
}

static void
b_cf_window(uint8_t *b, size_t *l)
{
	(void)l;
	set_ctrl_field(b, e_window);
}

static void
b_cf_caps(uint8_t *b, size_t *l)
{
	(void)l;
	set_ctrl_field(b, e_caps);
}

static void
b_cf_maxel(uint8_t *b, size_t *l)
{
	(void)l;
	set_ctrl_field(b, e_maxel);
}

static void
b_bfp_fp32(uint8_t *b, size_t *l)
{
	(void)l;
	b[HO(dtype)] = INCA_DTYPE_FP32;
	b[HO(flags)] |= INCA_F_BFP;
}

static void
b_bfp_fp16(uint8_t *b, size_t *l)
{
	b[HO(dtype)] = INCA_DTYPE_FP16;
	b[HO(flags)] |= INCA_F_BFP;
	*l = INCA_HDR_LEN + BASE_COUNT * 2;
}

/* Frame breakers. */
static void
f_eth13(uint8_t *f, size_t *l)
{
	(void)f;
	*l = 13;
}

static void
insert_vlan(uint8_t *f, size_t *l)
{
	memmove(f + 16, f + 12, *l - 12);
	wr16(f + 12, 0x8100);
	wr16(f + 14, 0x0064);
	*l += 4;
}

static void
f_vlan17(uint8_t *f, size_t *l)
{
	insert_vlan(f, l);
	*l = 17;
}

static void
f_ipv6(uint8_t *f, size_t *l)
{
	(void)l;
	wr16(f + 12, 0x86dd);
}

static void
f_qinq(uint8_t *f, size_t *l)
{
	(void)l;
	wr16(f + 12, 0x88a8);
}

static void
f_ip19(uint8_t *f, size_t *l)
{
	(void)f;
	*l = 14 + 19;
}

static void
f_ipver6(uint8_t *f, size_t *l)
{
	(void)l;
	f[14] = 0x65;
	fix_ip_csum(f);
}

static void
f_ihl4(uint8_t *f, size_t *l)
{
	(void)l;
	f[14] = 0x44;
	/* The checksum over the 20 real bytes stays right. */
	wr16(f + 24, 0);
	wr16(f + 24, ref_csum(f + 14, 20, 0));
}

static void
f_ihl_beyond(uint8_t *f, size_t *l)
{
	/* IHL 15 (60 bytes) in a frame with 40 bytes after Ethernet. */
	f[14] = 0x4f;
	*l = 14 + 40;
}

static void
f_tot_over(uint8_t *f, size_t *l)
{
	wr16(f + 16, (uint16_t)(*l - 14 + 1));
	fix_ip_csum(f);
}

static void
f_tot_under(uint8_t *f, size_t *l)
{
	(void)l;
	wr16(f + 16, 19);
	fix_ip_csum(f);
}

static void
f_ipcsum(uint8_t *f, size_t *l)
{
	(void)l;
	f[24] ^= 0x01;
}

static void
f_ipcsum_addr(uint8_t *f, size_t *l)
{
	(void)l;
	f[29] ^= 0x80;
}

static void
f_mf(uint8_t *f, size_t *l)
{
	(void)l;
	f[20] |= 0x20;
	fix_ip_csum(f);
}

static void
f_fragoff(uint8_t *f, size_t *l)
{
	(void)l;
	wr16(f + 20, 0x4001);
	fix_ip_csum(f);
}

static void
f_tcp(uint8_t *f, size_t *l)
{
	(void)l;
	f[23] = 6;
	fix_ip_csum(f);
}

static void
f_udp_short(uint8_t *f, size_t *l)
{
	(void)l;
	/* The IP datagram holds 7 bytes of UDP; the frame is longer. */
	wr16(f + 16, 20 + 7);
	fix_ip_csum(f);
}

static void
f_ulen_minus(uint8_t *f, size_t *l)
{
	(void)l;
	wr16(f + 38, rd16(f + 38) - 1);
}

static void
f_ulen_plus(uint8_t *f, size_t *l)
{
	(void)l;
	wr16(f + 38, rd16(f + 38) + 1);
}

static void
f_ulen7(uint8_t *f, size_t *l)
{
	(void)l;
	wr16(f + 38, 7);
}

static void
f_ucsum_body(uint8_t *f, size_t *l)
{
	f[*l - 1] ^= 0x40;
}

static void
f_ucsum_field(uint8_t *f, size_t *l)
{
	(void)l;
	f[41] ^= 0x01;
}

static void
f_ucsum_ip(uint8_t *f, size_t *l)
{
	/* A different source address with a right IP checksum: only the
	 * pseudo header catches it. */
	(void)l;
	f[27] ^= 0x04;
	fix_ip_csum(f);
}

static void
f_port(uint8_t *f, size_t *l)
{
	(void)l;
	wr16(f + 36, INCA_UDP_PORT + 1);
	fix_udp_csum(f);
}

static void
f_port_src(uint8_t *f, size_t *l)
{
	/* Source and destination swapped: a RESULT-like frame coming back. */
	(void)l;
	wr16(f + 34, INCA_UDP_PORT);
	wr16(f + 36, PORT_W);
	fix_udp_csum(f);
}


/* JOIN with a RoCEv2 extension appended (valid), then broken. */
static void
add_ext(uint8_t *b, size_t *l, uint32_t qpn, uint32_t qkey, uint32_t rsvd)
{
	struct inca_roce_ext x = { .qpn = qpn, .qkey = qkey };

	inca_roce_ext_encode(&x, b + *l);
	b[*l + 12] = (uint8_t)rsvd;
	*l += INCA_ROCE_EXT_LEN;
}

static void b_ext_short(uint8_t *b, size_t *l) { add_ext(b, l, 0x123, 7, 0); *l -= 4; }
static void b_ext_caps48(uint8_t *b, size_t *l) { add_ext(b, l, 0x123, 7, 0); }
static void b_ext_qpn1(uint8_t *b, size_t *l) { add_ext(b, l, 1, 7, 0); }
static void b_ext_qpnbig(uint8_t *b, size_t *l) { add_ext(b, l, 0x1000000, 7, 0); }
static void b_ext_qkey(uint8_t *b, size_t *l) { add_ext(b, l, 0x123, 0x80000000u, 0); }
static void b_ext_rsvd(uint8_t *b, size_t *l) { add_ext(b, l, 0x123, 7, 1); }
static void
b_ext_caps(uint8_t *b, size_t *l)
{
	add_ext(b, l, 0x123, 7, 0);
	b[INCA_HDR_LEN + offsetof(struct inca_ctrl, caps)] |= 0x80;
}

/*
 * RoCEv2 payloads (from the BTH to the ICRC): a valid UD SEND of a CONTRIB
 * of @p n bytes of INCA message, then broken. The ICRC is zero: checking it
 * is the receiver's (incad, tests/dpdk), not inca_roce_parse()'s.
 */
static size_t
valid_roce(uint8_t *b)
{
	struct inca_roce_info r = {
		.opcode = INCA_ROCE_OP_UD_SEND_ONLY, .pkey = INCA_ROCE_PKEY,
		.dqpn = 0x494e, .psn = 0x000001, .qkey = 0x494e4341, .sqpn = 0x000201,
	};
	size_t n = valid_msg(INCA_MSG_CONTRIB, b + INCA_ROCE_HDR_LEN);

	return inca_roce_encap(b, &r, n);
}

static void r_short(uint8_t *b, size_t *l) { (void)b; *l = INCA_ROCE_HDR_LEN + INCA_HDR_LEN + 3; }
static void r_rc_send(uint8_t *b, size_t *l) { (void)l; b[0] = 0x04; }
static void r_cnp(uint8_t *b, size_t *l) { (void)l; b[0] = 0x81; }
static void r_imm(uint8_t *b, size_t *l) { (void)l; b[0] = 0x65; }
static void r_tver(uint8_t *b, size_t *l) { (void)l; b[1] |= 0x01; }
static void r_pkey(uint8_t *b, size_t *l) { (void)l; b[3] = 0xfe; }
static void r_pkey_limited(uint8_t *b, size_t *l) { (void)l; b[2] = 0x7f; }
static void r_odd(uint8_t *b, size_t *l) { b[*l] = 0; *l += 1; }
static void
r_pad_eats_hdr(uint8_t *b, size_t *l)
{
	/* Exactly a header's worth of payload, of which the pad claims 3. */
	*l = INCA_ROCE_HDR_LEN + INCA_HDR_LEN + INCA_ICRC_LEN;
	b[1] |= 0x30;
}

#define MSG(e, w, t, b) { INCA_WIRE_##e, w, 0, INCA_MSG_##t, 0, b }
#define MSGX(e, w, t, mx, b) { INCA_WIRE_##e, w, 0, INCA_MSG_##t, mx, b }
#define FRM(e, w, b) { INCA_WIRE_##e, w, 1, 0, 0, b }
#define ROCE(e, w, b) { INCA_WIRE_##e, w, 2, 0, 0, b }

/* In the order of enum inca_wire_err; every reason but OK has a case. */
static const struct reject_case cases[] = {
	FRM(ETH_SHORT, "13-byte frame", f_eth13),
	FRM(ETH_SHORT, "VLAN tag cut short", f_vlan17),
	FRM(NOT_IPV4, "IPv6 ethertype", f_ipv6),
	FRM(NOT_IPV4, "802.1ad outer tag", f_qinq),
	FRM(IP_SHORT, "19 bytes of IPv4", f_ip19),
	FRM(IP_VERSION, "IP version 6 under IPv4 ethertype", f_ipver6),
	FRM(IP_HDR_LEN, "IHL 4", f_ihl4),
	FRM(IP_HDR_LEN, "IHL beyond the frame", f_ihl_beyond),
	FRM(IP_TOTAL_LEN, "total length beyond the frame", f_tot_over),
	FRM(IP_TOTAL_LEN, "total length below the header", f_tot_under),
	FRM(IP_CSUM, "checksum field flipped", f_ipcsum),
	FRM(IP_CSUM, "address flipped", f_ipcsum_addr),
	FRM(IP_FRAGMENT, "more fragments", f_mf),
	FRM(IP_FRAGMENT, "fragment offset", f_fragoff),
	FRM(NOT_UDP, "TCP", f_tcp),
	FRM(UDP_SHORT, "7 bytes of UDP", f_udp_short),
	FRM(UDP_LEN, "UDP length one short", f_ulen_minus),
	FRM(UDP_LEN, "UDP length one long", f_ulen_plus),
	FRM(UDP_LEN, "UDP length 7", f_ulen7),
	FRM(UDP_CSUM, "payload byte flipped", f_ucsum_body),
	FRM(UDP_CSUM, "checksum field flipped", f_ucsum_field),
	FRM(UDP_CSUM, "source address changed", f_ucsum_ip),
	FRM(WRONG_PORT, "other destination port", f_port),
	FRM(WRONG_PORT, "INCA port only as source", f_port_src),
	MSG(SHORT, "31 bytes", CONTRIB, b_short31),
	MSG(SHORT, "empty", HELLO, b_short0),
	MSG(VERSION, "version 0", CONTRIB, b_ver0),
	MSG(VERSION, "version 1", JOIN, b_ver1),
	MSG(VERSION, "version 3", JOIN, b_ver3),
	MSG(TYPE, "type 0", CONTRIB, b_type0),
	MSG(TYPE, "one past NACK", NACK, b_type12),
	MSG(TYPE, "type 255", HEARTBEAT, b_type255),
	MSG(DTYPE, "dtype 4 in CONTRIB", CONTRIB, b_dtype4),
	MSG(DTYPE, "dtype 255 in JOIN", JOIN, b_dtype255),
	MSG(OP, "op 3", RESULT, b_op3),
	MSG(OP, "op 3 in JOIN", JOIN, b_op3),
	MSG(FLAGS, "flag 0x80", CONTRIB, b_flags80_contrib),
	MSG(FLAGS, "flag 0x80 in HEARTBEAT", HEARTBEAT, b_flags80),
	MSG(RANK, "rank 32", CONTRIB, b_rank32),
	MSG(RANK, "rank 65535 in JOIN", JOIN, b_rankff),
	MSG(JOB, "job 0 in CONTRIB", CONTRIB, b_job0),
	MSG(JOB, "job 0 in JOIN", JOIN, b_job0),
	MSG(JOB, "job 0 in LEAVE", LEAVE, b_job0),
	MSG(JOB, "job 0 in NACK", NACK, b_job0),
	MSG(COUNT, "count 0", CONTRIB, b_count0),
	MSG(COUNT, "int32 body above 8192 bytes", CONTRIB, b_count_bytes),
	MSGX(COUNT, "count above negotiated max_elems", CONTRIB, 64, b_count65),
	MSG(COUNT, "count in HEARTBEAT", HEARTBEAT, b_count_ctrl),
	MSG(LEN, "body one byte short", CONTRIB, b_len_minus1),
	MSG(LEN, "one element too many", RESULT, b_len_plus4),
	MSG(LEN, "fp16 count with int32 body", CONTRIB, b_len_fp16),
	MSG(LEN, "no body", CONTRIB, b_len_hdr_only),
	MSG(LEN, "BRIEF with a body", CONTRIB, b_len_brief_body),
	MSG(CTRL_LEN, "HELLO without body", HELLO, b_len_hdr_only),
	MSG(CTRL_LEN, "JOIN with 31 bytes", JOIN, b_ctrl_31),
	MSG(CTRL_LEN, "JOIN_ACK with 33 bytes", JOIN_ACK, b_ctrl_33),
	MSG(CTRL_LEN, "CAPS with 16 bytes", CAPS, b_ctrl_16),
	MSG(CTRL_LEN, "LEAVE with 16 bytes", LEAVE, b_ctrl_16),
	MSG(CTRL_LEN, "NACK with 33 bytes", NACK, b_ctrl_33),
	MSG(CTRL_LEN, "JOIN with a 12-byte extension", JOIN, b_ext_short),
	MSG(CTRL_LEN, "CAPS with a RoCE extension", CAPS, b_ext_caps48),
	MSG(REASON, "reason in CONTRIB", CONTRIB, b_reason1),
	MSG(REASON, "reason in JOIN_ACK", JOIN_ACK, b_reason1),
	MSG(REASON, "NACK without reason", NACK, b_reason0),
	MSG(REASON, "NACK with unknown reason", NACK, b_reason_max),
	MSG(CTRL_FIELD, "ver_min > ver_max", HELLO, b_cf_ver),
	MSG(CTRL_FIELD, "JOIN with nworkers 0", JOIN, b_cf_nw0),
	MSG(CTRL_FIELD, "JOIN with 33 workers", JOIN, b_cf_nw33),
	MSG(CTRL_FIELD, "JOIN_ACK with 33 workers", JOIN_ACK, b_cf_nw33),
	MSG(CTRL_FIELD, "window > pool_size", JOIN, b_cf_window),
	MSG(CTRL_FIELD, "unknown caps bit", CAPS, b_cf_caps),
	MSG(CTRL_FIELD, "max_elems above 4096", HELLO, b_cf_maxel),
	MSG(CTRL_FIELD, "ver range in NACK body", NACK, b_cf_ver),
	MSG(CTRL_FIELD, "RoCE extension with QP 1", JOIN, b_ext_qpn1),
	MSG(CTRL_FIELD, "RoCE extension with a 25-bit QP", JOIN_ACK, b_ext_qpnbig),
	MSG(CTRL_FIELD, "RoCE extension with a controlled Q_Key", JOIN, b_ext_qkey),
	MSG(CTRL_FIELD, "RoCE extension with a reserved byte", JOIN, b_ext_rsvd),
	MSG(CTRL_FIELD, "RoCE extension behind a bad control body", JOIN, b_ext_caps),
	MSG(BFP_DTYPE, "BFP on fp32", CONTRIB, b_bfp_fp32),
	MSG(BFP_DTYPE, "BFP on fp16", RESULT, b_bfp_fp16),
	MSG(BFP_DTYPE, "BFP on fp32 JOIN", JOIN, b_bfp_fp32),
	MSG(ROUTE, "GATHER without ROUTED", CONTRIB, b_route_gather_alone),
	MSG(ROUTE, "BRIEF RESULT without ROUTED", RESULT, b_route_brief_alone),
	MSG(ROUTE, "GATHER with BFP", RESULT, b_route_gather_bfp),
	MSG(ROUTE, "anonymous GATHER CONTRIB with elements", CONTRIB, b_route_anon_elems),
	MSG(ROUTE, "ROUTED CONTRIB with two roots", CONTRIB, b_route_two_roots),
	MSG(ROUTE, "BRIEF reduce contribution", CONTRIB, b_route_brief_reduce),
	MSG(ROUTE, "BRIEF gather contribution from the root", CONTRIB, b_route_root_brief),
	MSG(ROUTE, "gather elements from another rank", CONTRIB, b_route_other_elems),
	ROCE(ROCE_SHORT, "RoCE payload without room for a header", r_short),
	ROCE(ROCE_OPCODE, "RC SEND only", r_rc_send),
	ROCE(ROCE_OPCODE, "CNP", r_cnp),
	ROCE(ROCE_OPCODE, "UD SEND only with immediate", r_imm),
	ROCE(ROCE_TVER, "transport version 1", r_tver),
	ROCE(ROCE_PKEY, "partition key 0xfffe", r_pkey),
	ROCE(ROCE_PKEY, "limited member of the default partition", r_pkey_limited),
	ROCE(ROCE_PAD, "payload not whole words", r_odd),
	ROCE(ROCE_PAD, "pad leaves less than a header", r_pad_eats_hdr),
};
#define NCASES (sizeof(cases) / sizeof(cases[0]))

START_TEST(test_reject)
{
	const struct reject_case *rc = &cases[_i];
	static uint8_t buf[BUF_CAP];
	struct inca_roce_info ri;
	struct inca_frame f;
	struct inca_msg m;
	const uint8_t *rm;
	size_t len, rlen;
	enum inca_wire_err e;
	int pass;

	memset(buf, 0, sizeof(buf));
	if (rc->frame == 1)
		len = valid_frame(buf);
	else if (rc->frame == 2)
		len = valid_roce(buf);
	else
		len = valid_msg(rc->base_type, buf);
	/* The starting point is valid, then the one defect gives the one reason. */
	for (pass = 0; pass < 2; pass++) {
		if (pass == 1)
			rc->breaker(buf, &len);
		if (rc->frame == 1)
			e = parse_exact(buf, len, INCA_UDP_PORT, &f);
		else if (rc->frame == 2)
			e = inca_roce_parse(buf, len, &ri, &rm, &rlen);
		else
			e = decode_exact(buf, len, rc->max_elems, &m);
		if (pass == 0)
			ck_assert_msg(e == INCA_WIRE_OK, "%s: base not valid: %s", rc->what,
				      inca_wire_err_name(e));
	}
	ck_assert_msg(e == rc->err, "%s: got %s, want %s", rc->what, inca_wire_err_name(e),
		      inca_wire_err_name(rc->err));
}
END_TEST

/* Every reason has at least one case, and the table is in enum order (the
 * per-reason tcases below take contiguous ranges of it). */
START_TEST(test_reject_coverage)
{
	unsigned int e, i, seen;

	for (i = 1; i < NCASES; i++)
		ck_assert_int_le(cases[i - 1].err, cases[i].err);
	for (e = INCA_WIRE_OK + 1; e < INCA_WIRE_ERR_COUNT; e++) {
		/* The receiver's own checks of a RoCE packet (its ICRC, queue
		 * pair and Q_Key): incad's, tested against incad (tests/dpdk). */
		if (e == INCA_WIRE_ROCE_ICRC || e == INCA_WIRE_ROCE_QPN || e == INCA_WIRE_ROCE_QKEY)
			continue;
		seen = 0;
		for (i = 0; i < NCASES; i++)
			seen += cases[i].err == e;
		ck_assert_msg(seen > 0, "no test for %s", inca_wire_err_name(e));
	}
}
END_TEST

/* Round trips. */

static void
check_msg_eq(const struct inca_msg *a, const struct inca_msg *b)
{
	ck_assert_uint_eq(a->version, b->version);
	ck_assert_uint_eq(a->type, b->type);
	ck_assert_uint_eq(a->dtype, b->dtype);
	ck_assert_uint_eq(a->op, b->op);
	ck_assert_uint_eq(a->job, b->job);
	ck_assert_uint_eq(a->rank, b->rank);
	ck_assert_uint_eq(a->token, b->token);
	ck_assert_uint_eq(a->slot, b->slot);
	ck_assert_uint_eq(a->flags, b->flags);
	ck_assert_int_eq(a->exp, b->exp);
	ck_assert_uint_eq(a->seq, b->seq);
	ck_assert_uint_eq(a->offset, b->offset);
	ck_assert_uint_eq(a->count, b->count);
	ck_assert_uint_eq(a->reason, b->reason);
	ck_assert_uint_eq(a->bitmap, b->bitmap);
}

static void
check_ctrl_eq(const struct inca_ctrl_info *a, const struct inca_ctrl_info *b)
{
	ck_assert_uint_eq(a->ver_min, b->ver_min);
	ck_assert_uint_eq(a->ver_max, b->ver_max);
	ck_assert_uint_eq(a->dtypes, b->dtypes);
	ck_assert_uint_eq(a->ops, b->ops);
	ck_assert_uint_eq(a->max_elems, b->max_elems);
	ck_assert_uint_eq(a->nworkers, b->nworkers);
	ck_assert_uint_eq(a->pool_size, b->pool_size);
	ck_assert_uint_eq(a->window, b->window);
	ck_assert_uint_eq(a->caps, b->caps);
	ck_assert_uint_eq(a->hb_ms, b->hb_ms);
	ck_assert_uint_eq(a->evict_ms, b->evict_ms);
	ck_assert_uint_eq(a->pool_base, b->pool_base);
	ck_assert_uint_eq(a->session, b->session);
}

/* Every message type, every data type for the data messages. */
START_TEST(test_roundtrip_all_types)
{
	static uint8_t buf[BUF_CAP];
	struct inca_ctrl_info c, cd;
	struct inca_msg m, d;
	unsigned int type = (unsigned int)_i, dt;
	size_t len;

	for (dt = 0; dt < (is_data_type(type) ? INCA_DTYPE_COUNT : 1u); dt++) {
		base_msg(type, &m);
		if (is_data_type(type)) {
			m.dtype = dt;
			m.op = INCA_OP_MAX;
			m.count = INCA_MAX_PAYLOAD_BYTES / inca_dtype_size(dt);
			m.flags = dt == INCA_DTYPE_INT32 ? INCA_F_BFP | INCA_F_RETX : 0;
		}
		len = encode_msg(&m, buf);
		ck_assert_int_eq(decode_exact(buf, len, 0, &d), INCA_WIRE_OK);
		check_msg_eq(&m, &d);
		ck_assert_ptr_eq(d.body, buf + INCA_HDR_LEN);
		ck_assert_uint_eq(d.body_len, len - INCA_HDR_LEN);
		if (!is_data_type(type)) {
			base_ctrl(type, &c);
			inca_ctrl_decode(d.body, &cd);
			check_ctrl_eq(&c, &cd);
		}
	}
}
END_TEST

/* The byte positions and the big-endian order of every header field. */
START_TEST(test_hdr_bytes)
{
	struct inca_msg m = {
		.version = 1, .type = 2, .dtype = 3, .op = 2, .job = 0x0405,
		.rank = 0x0607, .token = 0x08090a0b, .slot = 0x0c0d, .flags = 0x0e,
		.exp = -2, .seq = 0x10111213, .offset = 0x14151617, .count = 0x1819,
		.reason = 0x1a1b, .bitmap = 0x1c1d1e1f,
	};
	uint8_t buf[INCA_HDR_LEN + 1];
	const uint8_t want[INCA_HDR_LEN] = {
		1, 2, 3, 2, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 0xfe,
		16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31,
	};

	buf[INCA_HDR_LEN] = 0xa5;
	inca_hdr_encode(&m, buf);
	ck_assert_mem_eq(buf, want, INCA_HDR_LEN);
	/* Encode writes exactly the header. */
	ck_assert_uint_eq(buf[INCA_HDR_LEN], 0xa5);
}
END_TEST

START_TEST(test_ctrl_bytes)
{
	struct inca_ctrl_info c = {
		.ver_min = 1, .ver_max = 2, .dtypes = 0x0304, .ops = 0x0506,
		.max_elems = 0x0708, .nworkers = 0x090a, .pool_size = 0x0b0c,
		.window = 0x0d0e, .caps = 0x0f10, .hb_ms = 0x11121314,
		.evict_ms = 0x15161718, .pool_base = 0x191a1b1c, .session = 0x1d1e1f20,
	};
	struct inca_ctrl_info d;
	uint8_t buf[INCA_CTRL_LEN + 1];

	memset(buf, 0xff, sizeof(buf));
	inca_ctrl_encode(&c, buf);
	ck_assert_uint_eq(buf[offsetof(struct inca_ctrl, ver_min)], 1);
	ck_assert_uint_eq(buf[offsetof(struct inca_ctrl, ver_max)], 2);
	ck_assert_uint_eq(rd16(buf + offsetof(struct inca_ctrl, dtypes)), 0x0304);
	ck_assert_uint_eq(rd16(buf + offsetof(struct inca_ctrl, ops)), 0x0506);
	ck_assert_uint_eq(rd16(buf + offsetof(struct inca_ctrl, max_elems)), 0x0708);
	ck_assert_uint_eq(rd16(buf + offsetof(struct inca_ctrl, nworkers)), 0x090a);
	ck_assert_uint_eq(rd16(buf + offsetof(struct inca_ctrl, pool_size)), 0x0b0c);
	ck_assert_uint_eq(rd16(buf + offsetof(struct inca_ctrl, window)), 0x0d0e);
	ck_assert_uint_eq(rd16(buf + offsetof(struct inca_ctrl, caps)), 0x0f10);
	ck_assert_uint_eq(buf[offsetof(struct inca_ctrl, hb_ms)], 0x11);
	ck_assert_uint_eq(buf[offsetof(struct inca_ctrl, hb_ms) + 3], 0x14);
	ck_assert_uint_eq(buf[offsetof(struct inca_ctrl, evict_ms)], 0x15);
	ck_assert_uint_eq(buf[offsetof(struct inca_ctrl, pool_base) + 3], 0x1c);
	ck_assert_uint_eq(buf[offsetof(struct inca_ctrl, session)], 0x1d);
	ck_assert_uint_eq(buf[offsetof(struct inca_ctrl, session) + 3], 0x20);
	/* Nothing is written past the body. */
	ck_assert_uint_eq(buf[INCA_CTRL_LEN], 0xff);
	inca_ctrl_decode(buf, &d);
	check_ctrl_eq(&c, &d);
}
END_TEST

/* Boundaries that must be accepted. */
START_TEST(test_accept_edges)
{
	static uint8_t buf[BUF_CAP];
	struct inca_msg m, d;
	size_t len;

	/* HELLO and CAPS may carry job 0; rank 31 is the last rank. */
	base_msg(INCA_MSG_HELLO, &m);
	m.job = 0;
	m.rank = INCA_MAX_WORKERS - 1;
	len = encode_msg(&m, buf);
	ck_assert_int_eq(decode_exact(buf, len, 0, &d), INCA_WIRE_OK);
	base_msg(INCA_MSG_CAPS, &m);
	m.job = 0;
	len = encode_msg(&m, buf);
	ck_assert_int_eq(decode_exact(buf, len, 0, &d), INCA_WIRE_OK);

	/* LEAVE, LEAVE_ACK, HEARTBEAT, HEARTBEAT_ACK, NACK: empty bodies. */
	for (m.type = INCA_MSG_LEAVE; m.type <= INCA_MSG_NACK; m.type++) {
		base_msg(m.type, &m);
		len = encode_msg(&m, buf);
		ck_assert_int_eq(decode_exact(buf, INCA_HDR_LEN, 0, &d), INCA_WIRE_OK);
		ck_assert_uint_eq(d.body_len, 0);
		ck_assert_int_eq(decode_exact(buf, len, 0, &d), INCA_WIRE_OK);
	}

	/* Element counts at each limit. */
	base_msg(INCA_MSG_CONTRIB, &m);
	m.dtype = INCA_DTYPE_FP16;
	m.count = INCA_MAX_ELEMS;
	len = encode_msg(&m, buf);
	ck_assert_int_eq(decode_exact(buf, len, 0, &d), INCA_WIRE_OK);
	m.dtype = INCA_DTYPE_BF16;
	len = encode_msg(&m, buf);
	ck_assert_int_eq(decode_exact(buf, len, INCA_MAX_ELEMS, &d), INCA_WIRE_OK);
	/* A limit above the absolute one is clamped to it. */
	m.count = INCA_MAX_ELEMS + 1;
	len = encode_msg(&m, buf);
	ck_assert_int_eq(decode_exact(buf, len, 65535, &d), INCA_WIRE_COUNT);
	m.dtype = INCA_DTYPE_INT32;
	m.count = INCA_PAYLOAD_SMALL;
	len = encode_msg(&m, buf);
	ck_assert_int_eq(decode_exact(buf, len, INCA_PAYLOAD_SMALL, &d), INCA_WIRE_OK);
	m.count = INCA_PAYLOAD_LARGE;
	len = encode_msg(&m, buf);
	ck_assert_int_eq(decode_exact(buf, len, INCA_PAYLOAD_SMALL, &d), INCA_WIRE_COUNT);
	ck_assert_int_eq(decode_exact(buf, len, INCA_PAYLOAD_LARGE, &d), INCA_WIRE_OK);
	m.count = 1;
	len = encode_msg(&m, buf);
	ck_assert_int_eq(decode_exact(buf, len, 1, &d), INCA_WIRE_OK);
	/* 64-bit elements take two lanes of max_elems: 32 of them fill 64,
	 * 33 do not fit; 1024 (8192 bytes) is the largest message. */
	m.dtype = INCA_DTYPE_INT64;
	m.count = INCA_PAYLOAD_SMALL / 2;
	len = encode_msg(&m, buf);
	ck_assert_int_eq(decode_exact(buf, len, INCA_PAYLOAD_SMALL, &d), INCA_WIRE_OK);
	m.dtype = INCA_DTYPE_FP64;
	m.count = INCA_PAYLOAD_SMALL / 2 + 1;
	len = encode_msg(&m, buf);
	ck_assert_int_eq(decode_exact(buf, len, INCA_PAYLOAD_SMALL, &d), INCA_WIRE_COUNT);
	ck_assert_int_eq(decode_exact(buf, len, INCA_PAYLOAD_SMALL + 2, &d), INCA_WIRE_OK);
	m.count = INCA_MAX_PAYLOAD_BYTES / 8;
	len = encode_msg(&m, buf);
	ck_assert_int_eq(decode_exact(buf, len, 0, &d), INCA_WIRE_OK);
	m.count++;
	len = encode_msg(&m, buf);
	ck_assert_int_eq(decode_exact(buf, len, 0, &d), INCA_WIRE_COUNT);
	ck_assert_uint_eq(inca_dtype_lanes(INCA_DTYPE_INT64), 2);
	ck_assert_uint_eq(inca_dtype_lanes(INCA_DTYPE_FP16), 1);
	ck_assert_uint_eq(inca_dtype_lanes(INCA_DTYPE_COUNT), 0);

	/* Every flag that goes with a body and BFP together is fine on int32. */
	base_msg(INCA_MSG_RESULT, &m);
	m.flags = INCA_F_MASK & ~(INCA_F_GATHER | INCA_F_BRIEF);
	len = encode_msg(&m, buf);
	ck_assert_int_eq(decode_exact(buf, len, 0, &d), INCA_WIRE_OK);

	/* Routed chunks: each valid form (docs/protocol.md, "Routed chunks"). */
	base_msg(INCA_MSG_CONTRIB, &m);
	m.flags = INCA_F_ROUTED | INCA_F_BFP;
	m.bitmap = UINT32_C(1) << 31;
	len = encode_msg(&m, buf);
	ck_assert_int_eq(decode_exact(buf, len, 0, &d), INCA_WIRE_OK);
	ck_assert_uint_eq(d.bitmap, m.bitmap);
	m.flags = INCA_F_ROUTED | INCA_F_GATHER;
	m.bitmap = UINT32_C(1) << m.rank;
	len = encode_msg(&m, buf);
	ck_assert_int_eq(decode_exact(buf, len, 0, &d), INCA_WIRE_OK);
	m.flags = INCA_F_ROUTED | INCA_F_GATHER | INCA_F_BRIEF;
	m.bitmap = 1;
	inca_hdr_encode(&m, buf);
	ck_assert_int_eq(decode_exact(buf, INCA_HDR_LEN, 0, &d), INCA_WIRE_OK);
	ck_assert_uint_eq(d.body_len, 0);
	ck_assert_uint_eq(d.count, m.count);
	/* The anonymous root of a tree ("Routed chunks in a tree"): a
	 * reduced chunk's elements, a gathered chunk's BRIEF. */
	m.flags = INCA_F_ROUTED | INCA_F_GATHER | INCA_F_BRIEF;
	m.bitmap = 0;
	inca_hdr_encode(&m, buf);
	ck_assert_int_eq(decode_exact(buf, INCA_HDR_LEN, 0, &d), INCA_WIRE_OK);
	ck_assert_uint_eq(d.bitmap, 0);
	m.flags = INCA_F_ROUTED;
	len = encode_msg(&m, buf);
	ck_assert_int_eq(decode_exact(buf, len, 0, &d), INCA_WIRE_OK);
	base_msg(INCA_MSG_RESULT, &m);
	m.flags = INCA_F_ROUTED | INCA_F_BRIEF;
	inca_hdr_encode(&m, buf);
	ck_assert_int_eq(decode_exact(buf, INCA_HDR_LEN, 0, &d), INCA_WIRE_OK);
	m.flags = INCA_F_ROUTED | INCA_F_GATHER | INCA_F_BRIEF;
	inca_hdr_encode(&m, buf);
	ck_assert_int_eq(decode_exact(buf, INCA_HDR_LEN, 0, &d), INCA_WIRE_OK);
	/* A NACK echoes a routed CONTRIB's flags; they are not checked there. */
	base_msg(INCA_MSG_NACK, &m);
	m.flags = INCA_F_ROUTED | INCA_F_GATHER | INCA_F_BRIEF;
	len = encode_msg(&m, buf);
	ck_assert_int_eq(decode_exact(buf, INCA_HDR_LEN, 0, &d), INCA_WIRE_OK);

	/* Control bodies: window == pool_size, zero pool/window (defaults),
	 * 32 workers, every caps bit. */
	{
		struct inca_ctrl_info c;

		base_msg(INCA_MSG_JOIN, &m);
		len = encode_msg(&m, buf);
		base_ctrl(INCA_MSG_JOIN, &c);
		c.window = c.pool_size;
		c.nworkers = INCA_MAX_WORKERS;
		c.caps = INCA_CAP_MASK;
		c.max_elems = INCA_MAX_ELEMS;
		inca_ctrl_encode(&c, buf + INCA_HDR_LEN);
		ck_assert_int_eq(decode_exact(buf, len, 0, &d), INCA_WIRE_OK);
		c.window = 5;
		c.pool_size = 0;
		inca_ctrl_encode(&c, buf + INCA_HDR_LEN);
		ck_assert_int_eq(decode_exact(buf, len, 0, &d), INCA_WIRE_OK);
		c.window = 0;
		c.pool_size = 5;
		inca_ctrl_encode(&c, buf + INCA_HDR_LEN);
		ck_assert_int_eq(decode_exact(buf, len, 0, &d), INCA_WIRE_OK);
	}

	/* Every known NACK reason. */
	base_msg(INCA_MSG_NACK, &m);
	for (m.reason = 1; m.reason < INCA_NACK_MAX_; m.reason++) {
		inca_hdr_encode(&m, buf);
		ck_assert_int_eq(decode_exact(buf, INCA_HDR_LEN, 0, &d), INCA_WIRE_OK);
		ck_assert_uint_eq(d.reason, m.reason);
	}
}
END_TEST

/* Message truncated at every length: rejected, never read beyond. */
START_TEST(test_msg_truncation)
{
	static uint8_t buf[BUF_CAP];
	struct inca_msg m;
	size_t len, n;
	unsigned int type;
	enum inca_wire_err e;

	for (type = INCA_MSG_CONTRIB; type < INCA_MSG_MAX_; type++) {
		len = valid_msg(type, buf);
		for (n = 0; n < len; n++) {
			e = decode_exact(buf, n, 0, &m);
			if (n < INCA_HDR_LEN) {
				ck_assert_int_eq(e, INCA_WIRE_SHORT);
				continue;
			}
			/* A control message with an empty body is legal for
			 * the types that allow one. */
			if (n == INCA_HDR_LEN && type >= INCA_MSG_LEAVE) {
				ck_assert_int_eq(e, INCA_WIRE_OK);
				continue;
			}
			ck_assert_int_eq(e, is_data_type(type) ? INCA_WIRE_LEN :
					 INCA_WIRE_CTRL_LEN);
		}
	}
}
END_TEST

/* Frame build/parse. */

START_TEST(test_frame_roundtrip)
{
	static uint8_t fr[BUF_CAP];
	struct inca_frame f;
	struct inca_msg m;
	size_t n, len;

	n = valid_msg(INCA_MSG_CONTRIB, fr + INCA_ENCAP_LEN);
	len = inca_frame_build(fr, mac_b, mac_a, IP_A, IP_B, PORT_W, INCA_UDP_PORT, n);
	ck_assert_uint_eq(len, INCA_ENCAP_LEN + n);
	ck_assert_mem_eq(fr, mac_b, 6);
	ck_assert_mem_eq(fr + 6, mac_a, 6);
	ck_assert_uint_eq(rd16(fr + 12), 0x0800);
	ck_assert_uint_eq(fr[14], 0x45);
	ck_assert_uint_eq(rd16(fr + 16), 20 + 8 + n);
	ck_assert_uint_eq(rd16(fr + 18), 0);      /* id */
	ck_assert_uint_eq(rd16(fr + 20), 0x4000); /* DF, no offset */
	ck_assert_uint_eq(fr[22], 64);
	ck_assert_uint_eq(fr[23], 17);
	ck_assert_uint_eq(ref_csum(fr + 14, 20, 0), 0);
	ck_assert_uint_eq(rd16(fr + 38), 8 + n);
	ck_assert_uint_ne(rd16(fr + 40), 0);

	ck_assert_int_eq(parse_exact(fr, len, INCA_UDP_PORT, &f), INCA_WIRE_OK);
	ck_assert_uint_eq(f.src_ip, IP_A);
	ck_assert_uint_eq(f.dst_ip, IP_B);
	ck_assert_uint_eq(f.src_port, PORT_W);
	ck_assert_uint_eq(f.dst_port, INCA_UDP_PORT);
	ck_assert_ptr_eq(f.eth, fr);
	ck_assert_ptr_eq(f.msg, fr + INCA_ENCAP_LEN);
	ck_assert_uint_eq(f.msg_len, n);
	ck_assert_int_eq(decode_exact(f.msg, f.msg_len, 0, &m), INCA_WIRE_OK);
	ck_assert_uint_eq(m.type, INCA_MSG_CONTRIB);

	/* A configured port other than the default. */
	n = valid_msg(INCA_MSG_HELLO, fr + INCA_ENCAP_LEN);
	len = inca_frame_build(fr, mac_a, mac_b, IP_B, IP_A, 5000, 6000, n);
	ck_assert_int_eq(parse_exact(fr, len, 6000, &f), INCA_WIRE_OK);
	ck_assert_int_eq(parse_exact(fr, len, INCA_UDP_PORT, &f), INCA_WIRE_WRONG_PORT);

	/* No room in an IPv4 datagram: nothing built. */
	ck_assert_uint_eq(inca_frame_build(fr, mac_a, mac_b, IP_A, IP_B, 1, 2, 65536 - 28), 0);
}
END_TEST

/*
 * The same frame as scapy 2.5 builds it:
 *   Ether(dst="02:00:00:00:00:02", src="02:00:00:00:00:01") /
 *   IP(src="10.77.0.1", dst="10.77.0.2", ttl=64, flags="DF", id=0) /
 *   UDP(sport=40000, dport=18766) / Raw(bytes(range(37)))
 * An independent implementation of both checksums (odd payload length).
 */
static const uint8_t scapy_frame[] = {
	0x02, 0x00, 0x00, 0x00, 0x00, 0x02, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01,
	0x08, 0x00, 0x45, 0x00, 0x00, 0x41, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11,
	0x26, 0x10, 0x0a, 0x4d, 0x00, 0x01, 0x0a, 0x4d, 0x00, 0x02, 0x9c, 0x40,
	0x49, 0x4e, 0x00, 0x2d, 0xae, 0x23,
};

START_TEST(test_frame_matches_scapy)
{
	uint8_t fr[INCA_ENCAP_LEN + 37];
	size_t len, i;

	for (i = 0; i < 37; i++)
		fr[INCA_ENCAP_LEN + i] = (uint8_t)i;
	len = inca_frame_build(fr, mac_b, mac_a, IP_A, IP_B, PORT_W, INCA_UDP_PORT, 37);
	ck_assert_uint_eq(len, sizeof(fr));
	ck_assert_mem_eq(fr, scapy_frame, sizeof(scapy_frame));
}
END_TEST

START_TEST(test_csum)
{
	/* RFC 1071, section 3: the sum of these words is 0xddf2. */
	const uint8_t v[] = { 0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7 };
	uint8_t odd[] = { 0x12, 0x34, 0x56 };
	uint8_t big[4000];
	size_t i;

	ck_assert_uint_eq(inca_csum(v, sizeof(v), 0), 0x220d);
	/* The starting sum is added (a pseudo header): 0xddf2 + 0x220d. */
	ck_assert_uint_eq(inca_csum(v, sizeof(v), 0x220d), 0);
	ck_assert_uint_eq(inca_csum(v, 0, 0), 0xffff);
	/* An odd trailing byte counts as the high byte of a word. */
	ck_assert_uint_eq(inca_csum(odd, 3, 0), (uint16_t)~(0x1234 + 0x5600));
	/* Many carries: must fold completely. */
	memset(big, 0xff, sizeof(big));
	for (i = 1; i < sizeof(big); i += 97)
		big[i] = (uint8_t)i;
	/* 0xfffffff0 is 0xfff0 in ones' complement arithmetic. */
	ck_assert_uint_eq(inca_csum(big, sizeof(big), 0xfffffff0),
			  ref_csum(big, sizeof(big), 0xfff0));
	for (i = 0; i < sizeof(big); i += 331)
		ck_assert_uint_eq(inca_csum(big, i, 0), ref_csum(big, i, 0));
	ck_assert_uint_eq(inca_csum(big, sizeof(big), 0x12345),
			  ref_csum(big, sizeof(big), 0x2345 + 1));
}
END_TEST

START_TEST(test_udp_csum)
{
	static uint8_t fr[BUF_CAP];
	struct inca_frame f;
	size_t len, n;
	uint16_t c;

	/* Valid as built. */
	len = valid_frame(fr);
	ck_assert_int_eq(parse_exact(fr, len, INCA_UDP_PORT, &f), INCA_WIRE_OK);
	/* Zero means "not computed": accepted even with the payload changed. */
	wr16(fr + 40, 0);
	fr[len - 1] ^= 0x11;
	ck_assert_int_eq(parse_exact(fr, len, INCA_UDP_PORT, &f), INCA_WIRE_OK);
	/* Corrupted: rejected. */
	len = valid_frame(fr);
	wr16(fr + 40, rd16(fr + 40) ^ 0x0100);
	ck_assert_int_eq(parse_exact(fr, len, INCA_UDP_PORT, &f), INCA_WIRE_UDP_CSUM);

	/* A datagram whose checksum computes to 0 is sent as 0xffff. Put
	 * the checksum of a datagram with a zero word into that word: the
	 * new sum is 0xffff, its complement 0. */
	n = valid_msg(INCA_MSG_HEARTBEAT, fr + INCA_ENCAP_LEN);
	wr16(fr + INCA_ENCAP_LEN + n - 2, 0);
	len = inca_frame_build(fr, mac_b, mac_a, IP_A, IP_B, PORT_W, INCA_UDP_PORT, n);
	c = rd16(fr + 40);
	wr16(fr + INCA_ENCAP_LEN + n - 2, c);
	len = inca_frame_build(fr, mac_b, mac_a, IP_A, IP_B, PORT_W, INCA_UDP_PORT, n);
	ck_assert_uint_eq(rd16(fr + 40), 0xffff);
	ck_assert_int_eq(parse_exact(fr, len, INCA_UDP_PORT, &f), INCA_WIRE_OK);
}
END_TEST

START_TEST(test_frame_variants)
{
	static uint8_t fr[BUF_CAP];
	struct inca_frame f;
	struct inca_msg m;
	size_t len;

	/* One 802.1Q tag. */
	len = valid_frame(fr);
	insert_vlan(fr, &len);
	ck_assert_int_eq(parse_exact(fr, len, INCA_UDP_PORT, &f), INCA_WIRE_OK);
	ck_assert_ptr_eq(f.msg, fr + INCA_ENCAP_LEN + 4);
	ck_assert_int_eq(decode_exact(f.msg, f.msg_len, 0, &m), INCA_WIRE_OK);

	/* IPv4 options (4 NOPs and an end-of-list would do; any bytes). */
	len = valid_frame(fr);
	memmove(fr + 38, fr + 34, len - 34);
	memset(fr + 34, 0x01, 4);
	fr[14] = 0x46;
	wr16(fr + 16, rd16(fr + 16) + 4);
	fix_ip_csum(fr);
	len += 4;
	ck_assert_int_eq(parse_exact(fr, len, INCA_UDP_PORT, &f), INCA_WIRE_OK);
	ck_assert_ptr_eq(f.msg, fr + INCA_ENCAP_LEN + 4);
	ck_assert_uint_eq(f.src_ip, IP_A);
	ck_assert_int_eq(decode_exact(f.msg, f.msg_len, 0, &m), INCA_WIRE_OK);

	/* Ethernet padding after the datagram is not part of the message. */
	valid_msg(INCA_MSG_HEARTBEAT, fr + INCA_ENCAP_LEN);
	len = inca_frame_build(fr, mac_b, mac_a, IP_A, IP_B, PORT_W, INCA_UDP_PORT,
			       INCA_HDR_LEN);
	memset(fr + len, 0, 10);
	ck_assert_int_eq(parse_exact(fr, len + 10, INCA_UDP_PORT, &f), INCA_WIRE_OK);
	ck_assert_uint_eq(f.msg_len, INCA_HDR_LEN);

	/* DF alone is not a fragment; TOS and TTL are not checked. */
	len = valid_frame(fr);
	fr[15] = 0xb8;
	fr[22] = 1;
	fix_ip_csum(fr);
	ck_assert_int_eq(parse_exact(fr, len, INCA_UDP_PORT, &f), INCA_WIRE_OK);
	wr16(fr + 20, 0);
	fix_ip_csum(fr);
	ck_assert_int_eq(parse_exact(fr, len, INCA_UDP_PORT, &f), INCA_WIRE_OK);
}
END_TEST

/* A valid frame cut at every length is rejected, never read beyond. */
START_TEST(test_frame_truncation)
{
	static uint8_t fr[BUF_CAP];
	struct inca_frame f;
	size_t len, n, opt;
	enum inca_wire_err e;

	for (opt = 0; opt < 3; opt++) {
		len = valid_frame(fr);
		if (opt == 1)
			insert_vlan(fr, &len);
		if (opt == 2) {
			/* Maximal IPv4 options: IHL 15. */
			memmove(fr + 74, fr + 34, len - 34);
			memset(fr + 34, 0x01, 40);
			fr[14] = 0x4f;
			wr16(fr + 16, rd16(fr + 16) + 40);
			fix_ip_csum(fr);
			len += 40;
		}
		ck_assert_int_eq(parse_exact(fr, len, INCA_UDP_PORT, &f), INCA_WIRE_OK);
		for (n = 0; n < len; n++) {
			e = parse_exact(fr, n, INCA_UDP_PORT, &f);
			ck_assert_msg(e != INCA_WIRE_OK, "accepted at %zu of %zu", n, len);
		}
	}
}
END_TEST

/*
 * Random corruption of valid frames: parse and decode must never crash or
 * read out of bounds (ASan), and what they accept must be self-consistent.
 */
START_TEST(test_frame_random)
{
	static uint8_t base[BUF_CAP], fr[BUF_CAP];
	struct inca_frame f;
	struct inca_msg m;
	uint32_t x = 12345;
	size_t blen, len, i, k, flips;
	unsigned int ok = 0;

	blen = valid_frame(base);
	for (i = 0; i < 20000; i++) {
		memcpy(fr, base, blen);
		len = blen;
		x = x * 1103515245 + 12345;
		flips = 1 + (x >> 16) % 4;
		for (k = 0; k < flips; k++) {
			x = x * 1103515245 + 12345;
			fr[(x >> 8) % blen] ^= (uint8_t)(1 + (x >> 24) % 255);
		}
		x = x * 1103515245 + 12345;
		if ((x >> 20) % 3 == 0)
			len = (x >> 4) % (blen + 1);
		/* Half the time make the IP checksum right to get deeper. */
		if ((x & 0x100) && len >= 34 && (fr[14] & 0xf) >= 5 &&
		    14 + (size_t)(fr[14] & 0xf) * 4 <= len && rd16(fr + 12) == 0x0800)
			fix_ip_csum(fr);
		if (parse_exact(fr, len, INCA_UDP_PORT, &f) != INCA_WIRE_OK)
			continue;
		ck_assert(f.msg_len + (size_t)(f.msg - fr) <= len);
		ck_assert_uint_eq(f.dst_port, INCA_UDP_PORT);
		if (decode_exact(f.msg, f.msg_len, 0, &m) == INCA_WIRE_OK) {
			ok++;
			ck_assert_uint_le(m.body_len, f.msg_len);
		}
	}
	/* Some inputs must have made it through (else nothing was tested). */
	ck_assert_uint_gt(ok, 0);
}
END_TEST

/* Name tables. */

static void
check_names(const char *what, const char *(*fn)(unsigned), unsigned int lo,
	    unsigned int hi, const unsigned int *valid, unsigned int nvalid)
{
	unsigned int i, j;
	const char *a;

	for (i = 0; i < nvalid; i++) {
		a = fn(valid[i]);
		ck_assert_ptr_nonnull(a);
		ck_assert_msg(strcmp(a, "?") != 0 && a[0] != '\0', "%s %u has no name", what,
			      valid[i]);
		for (j = 0; j < i; j++)
			ck_assert_msg(strcmp(a, fn(valid[j])) != 0, "%s %u and %u share '%s'",
				      what, valid[i], valid[j], a);
	}
	/* Values around the valid ones are "?". */
	for (i = lo; i <= hi; i++) {
		for (j = 0; j < nvalid && valid[j] != i; j++)
			;
		if (j == nvalid)
			ck_assert_str_eq(fn(i), "?");
	}
	ck_assert_str_eq(fn(0xffffffffu), "?");
}

/* RoCEv2: what inca_roce_encap() writes, inca_roce_parse() reads back,
 * byte for byte where the layout is fixed (docs/protocol.md, "Packet
 * layout"); an odd fp16 count is padded to whole words and the pad is not
 * part of the message; a JOIN's extension round-trips and others have none. */
START_TEST(test_roce_roundtrip)
{
	static uint8_t b[BUF_CAP];
	struct inca_roce_info in = {
		.opcode = INCA_ROCE_OP_UD_SEND_ONLY, .pkey = INCA_ROCE_PKEY,
		.dqpn = 0xabcdef, .psn = 0x123456, .qkey = 0x7edcba98, .sqpn = 0x000002,
	}, out;
	static const uint8_t hdr[INCA_ROCE_HDR_LEN] = {
		0x64, 0x20, 0xff, 0xff, 0x00, 0xab, 0xcd, 0xef, 0x00, 0x12, 0x34, 0x56,
		0x7e, 0xdc, 0xba, 0x98, 0x00, 0x00, 0x00, 0x02,
	};
	struct inca_roce_ext x = { .qpn = 0xfffffe, .qkey = 0x494e4341 }, y;
	struct inca_msg m;
	const uint8_t *msg;
	size_t n, len, mlen;

	base_msg(INCA_MSG_CONTRIB, &m);
	m.dtype = INCA_DTYPE_FP16;
	m.count = 3;
	memset(b, 0xee, sizeof(b));
	n = encode_msg(&m, b + INCA_ROCE_HDR_LEN);
	ck_assert_uint_eq(n, INCA_HDR_LEN + 6);
	len = inca_roce_encap(b, &in, n);
	ck_assert_uint_eq(len, INCA_ROCE_HDR_LEN + n + 2 + INCA_ICRC_LEN);
	ck_assert_mem_eq(b, hdr, sizeof(hdr));
	ck_assert_uint_eq(b[INCA_ROCE_HDR_LEN + n], 0);
	ck_assert_uint_eq(b[INCA_ROCE_HDR_LEN + n + 1], 0);
	ck_assert_int_eq(inca_roce_parse(b, len, &out, &msg, &mlen), INCA_WIRE_OK);
	ck_assert_uint_eq(out.opcode, in.opcode);
	ck_assert_uint_eq(out.pad, 2);
	ck_assert_uint_eq(out.pkey, in.pkey);
	ck_assert_uint_eq(out.dqpn, in.dqpn);
	ck_assert_uint_eq(out.psn, in.psn);
	ck_assert_uint_eq(out.qkey, in.qkey);
	ck_assert_uint_eq(out.sqpn, in.sqpn);
	ck_assert_ptr_eq(msg, b + INCA_ROCE_HDR_LEN);
	ck_assert_uint_eq(mlen, n);
	ck_assert_int_eq(inca_msg_decode(msg, mlen, 0, &m), INCA_WIRE_OK);
	ck_assert_uint_eq(m.count, 3);

	/* JOIN with and without the binding; JOIN_ACK with it. */
	n = valid_msg(INCA_MSG_JOIN, b);
	ck_assert_int_eq(inca_msg_decode(b, n, 0, &m), INCA_WIRE_OK);
	ck_assert_int_eq(inca_roce_ext_decode(&m, &y), 0);
	inca_roce_ext_encode(&x, b + n);
	ck_assert_int_eq(inca_msg_decode(b, n + INCA_ROCE_EXT_LEN, 0, &m), INCA_WIRE_OK);
	ck_assert_int_eq(inca_roce_ext_decode(&m, &y), 1);
	ck_assert_uint_eq(y.qpn, x.qpn);
	ck_assert_uint_eq(y.qkey, x.qkey);
	n = valid_msg(INCA_MSG_JOIN_ACK, b);
	inca_roce_ext_encode(&x, b + n);
	ck_assert_int_eq(inca_msg_decode(b, n + INCA_ROCE_EXT_LEN, 0, &m), INCA_WIRE_OK);
	ck_assert_int_eq(inca_roce_ext_decode(&m, &y), 1);
}
END_TEST

START_TEST(test_names)
{
	static const unsigned int types[] = {
#define INCA_X_(n, v, d) v,
		INCA_MSG_TYPES(INCA_X_)
#undef INCA_X_
	};
	static const unsigned int dtypes[] = {
#define INCA_X_(n, v, s) v,
		INCA_DTYPES(INCA_X_)
#undef INCA_X_
	};
	static const unsigned int dsizes[] = {
#define INCA_X_(n, v, s) s,
		INCA_DTYPES(INCA_X_)
#undef INCA_X_
	};
	static const unsigned int ops[] = {
#define INCA_X_(n, v) v,
		INCA_OPS(INCA_X_)
#undef INCA_X_
	};
	static const unsigned int reasons[] = {
#define INCA_X_(n, v, d) v,
		INCA_NACK_REASONS(INCA_X_)
#undef INCA_X_
	};
	unsigned int errs[INCA_WIRE_ERR_COUNT];
	unsigned int i;

	for (i = 0; i < INCA_WIRE_ERR_COUNT; i++)
		errs[i] = i;
	check_names("type", inca_msg_type_name, 0, INCA_MSG_MAX_ + 5, types,
		    sizeof(types) / sizeof(types[0]));
	check_names("dtype", inca_dtype_name, 0, INCA_DTYPE_COUNT + 5, dtypes,
		    sizeof(dtypes) / sizeof(dtypes[0]));
	check_names("op", inca_op_name, 0, INCA_OP_COUNT + 5, ops,
		    sizeof(ops) / sizeof(ops[0]));
	check_names("nack", inca_nack_name, 1, INCA_NACK_MAX_ + 5, reasons,
		    sizeof(reasons) / sizeof(reasons[0]));
	check_names("nack str", inca_nack_str, 1, INCA_NACK_MAX_ + 5, reasons,
		    sizeof(reasons) / sizeof(reasons[0]));
	check_names("wire err", inca_wire_err_name, 0, INCA_WIRE_ERR_COUNT + 5, errs,
		    INCA_WIRE_ERR_COUNT);
	check_names("wire err str", inca_wire_err_str, 0, INCA_WIRE_ERR_COUNT + 5, errs,
		    INCA_WIRE_ERR_COUNT);

	/* The symbolic names are the X-macro names. */
	ck_assert_str_eq(inca_msg_type_name(INCA_MSG_JOIN_ACK), "JOIN_ACK");
	ck_assert_str_eq(inca_nack_name(INCA_NACK_QUOTA_EXHAUSTED), "QUOTA_EXHAUSTED");
	ck_assert_str_eq(inca_wire_err_name(INCA_WIRE_IP_CSUM), "IP_CSUM");
	ck_assert_str_eq(inca_dtype_name(INCA_DTYPE_BF16), "bf16");
	ck_assert_str_eq(inca_op_name(INCA_OP_MIN), "min");
	for (i = 0; i < sizeof(dtypes) / sizeof(dtypes[0]); i++)
		ck_assert_uint_eq(inca_dtype_size(dtypes[i]), dsizes[i]);
	ck_assert_uint_eq(inca_dtype_size(INCA_DTYPE_COUNT), 0);
	ck_assert_uint_eq(inca_dtype_size(0xffffffffu), 0);
}
END_TEST

static Suite *
wire_suite(void)
{
	Suite *s = suite_create("wire");
	TCase *tc;
	/* Check keeps the name pointers; they must outlive the suite. */
	static char names[INCA_WIRE_ERR_COUNT][48];
	unsigned int e, first, last;

	/* One test case per rejection reason, named after it. */
	for (e = INCA_WIRE_OK + 1; e < INCA_WIRE_ERR_COUNT; e++) {
		for (first = 0; first < NCASES && cases[first].err != e; first++)
			;
		for (last = first; last < NCASES && cases[last].err == e; last++)
			;
		snprintf(names[e], sizeof(names[e]), "reject_%s", inca_wire_err_name(e));
		tc = tcase_create(names[e]);
		tcase_set_timeout(tc, 10);
		tcase_add_loop_test(tc, test_reject, (int)first, (int)last);
		suite_add_tcase(s, tc);
	}
	tc = tcase_create("reject_coverage");
	tcase_add_test(tc, test_reject_coverage);
	suite_add_tcase(s, tc);

	tc = tcase_create("roundtrip");
	tcase_set_timeout(tc, 10);
	tcase_add_loop_test(tc, test_roundtrip_all_types, INCA_MSG_CONTRIB, INCA_MSG_MAX_);
	suite_add_tcase(s, tc);
	tc = tcase_create("hdr_bytes");
	tcase_add_test(tc, test_hdr_bytes);
	suite_add_tcase(s, tc);
	tc = tcase_create("ctrl_bytes");
	tcase_add_test(tc, test_ctrl_bytes);
	suite_add_tcase(s, tc);
	tc = tcase_create("accept_edges");
	tcase_add_test(tc, test_accept_edges);
	suite_add_tcase(s, tc);
	tc = tcase_create("msg_truncation");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_msg_truncation);
	suite_add_tcase(s, tc);
	tc = tcase_create("frame_roundtrip");
	tcase_add_test(tc, test_frame_roundtrip);
	suite_add_tcase(s, tc);
	tc = tcase_create("frame_matches_scapy");
	tcase_add_test(tc, test_frame_matches_scapy);
	suite_add_tcase(s, tc);
	tc = tcase_create("csum");
	tcase_add_test(tc, test_csum);
	suite_add_tcase(s, tc);
	tc = tcase_create("udp_csum");
	tcase_add_test(tc, test_udp_csum);
	suite_add_tcase(s, tc);
	tc = tcase_create("frame_variants");
	tcase_add_test(tc, test_frame_variants);
	suite_add_tcase(s, tc);
	tc = tcase_create("frame_truncation");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_frame_truncation);
	suite_add_tcase(s, tc);
	tc = tcase_create("frame_random");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_frame_random);
	suite_add_tcase(s, tc);
	tc = tcase_create("roce_roundtrip");
	tcase_add_test(tc, test_roce_roundtrip);
	suite_add_tcase(s, tc);
	tc = tcase_create("names");
	tcase_add_test(tc, test_names);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(wire_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

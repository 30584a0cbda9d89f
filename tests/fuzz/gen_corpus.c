/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * Writes the fuzzers' seed corpora with the codec itself (inca_hdr_encode,
 * inca_ctrl_encode, inca_frame_build), so that the seeds are what INCA
 * senders really produce, plus one malformed variant per validation check:
 *
 *     gen_corpus OUTDIR CONF
 *
 * writes OUTDIR/msg (UDP payloads), OUTDIR/frame (fuzz_frame's records:
 * ctrl byte, 16-bit length, Ethernet frame) and OUTDIR/config (CONF, which
 * is conf/incad.conf, and variants of it). Regenerate the committed corpus
 * with tests/fuzz/run-fuzz.sh --gen (docs/fuzzing.md).
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <inca/dtype.h>
#include <inca/wire.h>

#define MAX_FRAME (INCA_ENCAP_LEN + 4 + 40 + INCA_HDR_LEN + INCA_MAX_PAYLOAD_BYTES + 64)
#define MAX_FILE (1 << 16)

/* The fuzz_frame ctrl bits (tests/fuzz/fuzz_frame.c). */
#define CTRL_MEMBER 0x04
#define CTRL_ALT_PORT 0x08
#define CTRL_ALL_COPIES 0x10
#define CTRL_RESET 0x20
#define CTRL_ROCE 0x40
#define ALT_PORT 4791

static const char *outdir;
static unsigned files;

static const uint8_t agg_mac[6] = {0x02, 0x00, 0x00, 0x00, 0x00, 0x01};
static const uint8_t wrk_mac[6] = {0x02, 0x00, 0x00, 0x00, 0x01, 0x0a};
#define AGG_IP 0x0a4d0001u  /* 10.77.0.1 */
#define WRK_IP 0x0a4d000au  /* 10.77.0.10 */

static void
write_file(const char *sub, const char *name, const void *buf, size_t len)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s/%s", outdir, sub, name);
	f = fopen(path, "wb");
	if (f == NULL || fwrite(buf, 1, len, f) != len || fclose(f) != 0) {
		fprintf(stderr, "gen_corpus: %s: %s\n", path, strerror(errno));
		exit(1);
	}
	files++;
}

/* ---- messages ----------------------------------------------------------- */

struct msgbuf {
	uint8_t b[INCA_HDR_LEN + INCA_MAX_PAYLOAD_BYTES + 64];
	size_t len;
};

static uint32_t rng_state = 12345;

static uint32_t
rng(void)
{
	/* xorshift32: the corpus is the same on every run. */
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 17;
	rng_state ^= rng_state << 5;
	return rng_state;
}

/* Elements of @dtype, big-endian; @special mixes in NaN, inf, -0, subnormals. */
static void
fill_body(uint8_t *p, unsigned dtype, unsigned count, bool special)
{
	static const float specials[] = {NAN, INFINITY, -INFINITY, -0.0f, 1e-40f, 65504.0f,
					 3.4e38f, -3.4e38f, 6e-8f};
	unsigned i;

	for (i = 0; i < count; i++) {
		float f = (float)((int32_t)(rng() % 2001) - 1000) / 8.0f;
		uint32_t v;

		if (special && i % 3 == 0)
			f = specials[(i / 3) % (sizeof(specials) / sizeof(specials[0]))];
		switch (dtype) {
		case INCA_DTYPE_INT32:
			v = rng() % 200001 - 100000;
			p[4 * i] = v >> 24;
			p[4 * i + 1] = v >> 16;
			p[4 * i + 2] = v >> 8;
			p[4 * i + 3] = v;
			break;
		case INCA_DTYPE_FP32:
			memcpy(&v, &f, 4);
			p[4 * i] = v >> 24;
			p[4 * i + 1] = v >> 16;
			p[4 * i + 2] = v >> 8;
			p[4 * i + 3] = v;
			break;
		case INCA_DTYPE_FP16:
			v = inca_fp32_to_fp16(f);
			p[2 * i] = v >> 8;
			p[2 * i + 1] = v;
			break;
		case INCA_DTYPE_INT64:
		case INCA_DTYPE_FP64: {
			double d = f;
			uint64_t w = (uint64_t)(int64_t)(rng() % 200001 - 100000) << 20;
			unsigned b;

			if (dtype == INCA_DTYPE_FP64)
				memcpy(&w, &d, 8);
			for (b = 0; b < 8; b++)
				p[8 * i + b] = (uint8_t)(w >> (56 - 8 * b));
			break;
		}
		default:
			v = inca_fp32_to_bf16(f);
			p[2 * i] = v >> 8;
			p[2 * i + 1] = v;
			break;
		}
	}
}

static struct inca_msg
hdr(unsigned type, uint16_t job, uint16_t rank, uint32_t token)
{
	struct inca_msg m = {
		.version = INCA_PROTO_VERSION,
		.type = type,
		.job = job,
		.rank = rank,
		.token = token,
	};
	return m;
}

static void
mk_data(struct msgbuf *mb, const struct inca_msg *m, bool special)
{
	inca_hdr_encode(m, mb->b);
	fill_body(mb->b + INCA_HDR_LEN, m->dtype, m->count, special);
	mb->len = INCA_HDR_LEN +
		  ((m->flags & INCA_F_BRIEF) ? 0 : (size_t)m->count * inca_dtype_size(m->dtype));
}

static void
mk_ctrl(struct msgbuf *mb, const struct inca_msg *m, const struct inca_ctrl_info *c)
{
	inca_hdr_encode(m, mb->b);
	mb->len = INCA_HDR_LEN;
	if (c != NULL) {
		inca_ctrl_encode(c, mb->b + INCA_HDR_LEN);
		mb->len += INCA_CTRL_LEN;
	}
}

static struct inca_msg
contrib(uint16_t job, uint32_t token, uint16_t rank, uint16_t slot, uint8_t flags,
	uint32_t seq, unsigned dtype, unsigned op, uint16_t count)
{
	struct inca_msg m = hdr(INCA_MSG_CONTRIB, job, rank, token);

	m.slot = slot;
	m.flags = flags;
	m.seq = seq;
	m.offset = seq * count;
	m.dtype = dtype;
	m.op = op;
	m.count = count;
	return m;
}

static const struct inca_ctrl_info caps_body = {
	.ver_min = 1, .ver_max = 1, .dtypes = 0xf, .ops = 0x7, .max_elems = 1024,
	.caps = INCA_CAP_MASK, .hb_ms = 1000, .evict_ms = 5000,
};

/* One valid message of every type, the first job's (fuzz_frame's job 1). */
static unsigned
valid_msgs(struct msgbuf *out, const char **names)
{
	struct inca_ctrl_info join = {.ver_min = 1, .ver_max = 1, .dtypes = 0x1, .ops = 0x1,
				      .max_elems = 64, .nworkers = 3, .pool_size = 4,
				      .window = 4};
	struct inca_ctrl_info ack = join;
	struct inca_msg m;
	unsigned n = 0;

	ack.caps = INCA_CAP_MASK;
	ack.hb_ms = 1000;
	ack.evict_ms = 5000;
	ack.pool_base = 128;

	/* A JOIN and its JOIN_ACK binding a RoCEv2 queue pair. */
	{
		struct inca_roce_ext x = {.qpn = 0x200, .qkey = 0x1000};

		m = hdr(INCA_MSG_JOIN, 1, 0, 0x1234);
		mk_ctrl(&out[n], &m, &join);
		inca_roce_ext_encode(&x, out[n].b + out[n].len);
		out[n].len += INCA_ROCE_EXT_LEN;
		names[n++] = "join-roce";
		m = hdr(INCA_MSG_JOIN_ACK, 1, 0, 0x1234);
		mk_ctrl(&out[n], &m, &ack);
		x.qpn = 0x494e;
		x.qkey = 0x494e4341;
		inca_roce_ext_encode(&x, out[n].b + out[n].len);
		out[n].len += INCA_ROCE_EXT_LEN;
		names[n++] = "join-ack-roce";
	}
	m = contrib(1, 0x1234, 0, 0, 0, 0, INCA_DTYPE_INT32, INCA_OP_SUM, 8);
	names[n] = "contrib-int32-sum";
	mk_data(&out[n++], &m, false);
	m = contrib(1, 0x1234, 1, 1, INCA_F_SET | INCA_F_LAST, 5, INCA_DTYPE_FP32, INCA_OP_MIN,
		    16);
	names[n] = "contrib-fp32-min-set1-last";
	mk_data(&out[n++], &m, true);
	m = contrib(1, 0x1234, 2, 2, INCA_F_RETX, 6, INCA_DTYPE_FP16, INCA_OP_MAX, 32);
	names[n] = "contrib-fp16-max-retx";
	mk_data(&out[n++], &m, true);
	m = contrib(1, 0x1234, 0, 3, 0, 7, INCA_DTYPE_BF16, INCA_OP_SUM, 64);
	names[n] = "contrib-bf16-sum";
	mk_data(&out[n++], &m, true);
	m = contrib(1, 0x1234, 0, 0, INCA_F_BFP, 8, INCA_DTYPE_INT32, INCA_OP_SUM, 8);
	m.exp = -12;
	names[n] = "contrib-bfp";
	mk_data(&out[n++], &m, false);
	m = contrib(1, 0x1234, 2, 0, INCA_F_RETX, 0, INCA_DTYPE_INT32, INCA_OP_SUM, 8);
	m.type = INCA_MSG_RESULT;
	m.bitmap = 0x7;
	names[n] = "result";
	mk_data(&out[n++], &m, false);

	m = hdr(INCA_MSG_HELLO, 0, 0, 0);
	names[n] = "hello";
	mk_ctrl(&out[n++], &m, &join);
	m = hdr(INCA_MSG_CAPS, 0, 0, 0);
	names[n] = "caps";
	mk_ctrl(&out[n++], &m, &caps_body);
	m = hdr(INCA_MSG_JOIN, 1, 1, 0x1234);
	m.dtype = INCA_DTYPE_FP32;
	names[n] = "join";
	mk_ctrl(&out[n++], &m, &join);
	m = hdr(INCA_MSG_JOIN_ACK, 1, 1, 0x1234);
	names[n] = "join-ack";
	mk_ctrl(&out[n++], &m, &ack);
	m = hdr(INCA_MSG_LEAVE, 1, 1, 0x1234);
	names[n] = "leave";
	mk_ctrl(&out[n++], &m, NULL);
	names[n] = "leave-body";
	mk_ctrl(&out[n++], &m, &(struct inca_ctrl_info){0});
	m = hdr(INCA_MSG_LEAVE_ACK, 1, 1, 0x1234);
	names[n] = "leave-ack";
	mk_ctrl(&out[n++], &m, NULL);
	m = hdr(INCA_MSG_HEARTBEAT, 1, 2, 0x1234);
	names[n] = "heartbeat";
	mk_ctrl(&out[n++], &m, NULL);
	m = hdr(INCA_MSG_HEARTBEAT_ACK, 1, 2, 0x1234);
	names[n] = "heartbeat-ack";
	mk_ctrl(&out[n++], &m, NULL);
	m = hdr(INCA_MSG_NACK, 1, 0, 0x1234);
	m.reason = INCA_NACK_MEMBER_LOST;
	m.slot = 3;
	m.seq = 77;
	names[n] = "nack";
	mk_ctrl(&out[n++], &m, NULL);
	m.reason = INCA_NACK_BAD_VERSION;
	names[n] = "nack-bad-version";
	mk_ctrl(&out[n++], &m, &caps_body);
	return n;
}

/* The largest data messages, and the first count beyond each limit. */
static unsigned
edge_msgs(struct msgbuf *out, const char **names)
{
	struct inca_msg m;
	unsigned n = 0;

	m = contrib(7, 0, 0, 0, 0, 1, INCA_DTYPE_FP16, INCA_OP_SUM, 4096);
	names[n] = "contrib-fp16-4096";
	mk_data(&out[n++], &m, true);
	m = contrib(1, 0x1234, 1, 0, 0, 1, INCA_DTYPE_INT32, INCA_OP_MAX, 2048);
	names[n] = "contrib-int32-2048";
	mk_data(&out[n++], &m, false);
	m.count = 2049;
	names[n] = "bad-count-int32-2049";
	mk_data(&out[n++], &m, false);
	m = contrib(1, 0x1234, 1, 0, 0, 1, INCA_DTYPE_INT32, INCA_OP_SUM, 257);
	names[n] = "contrib-int32-257";
	mk_data(&out[n++], &m, false);
	/* 64-bit elements: two lanes each, so 1024 is the largest count. */
	m = contrib(1, 0x1234, 1, 0, 0, 1, INCA_DTYPE_INT64, INCA_OP_SUM, 1024);
	names[n] = "contrib-int64-1024";
	mk_data(&out[n++], &m, false);
	m.count = 1025;
	names[n] = "bad-count-int64-1025";
	mk_data(&out[n++], &m, false);
	m = contrib(1, 0x1234, 1, 0, 0, 1, INCA_DTYPE_FP64, INCA_OP_MIN, 3);
	names[n] = "contrib-fp64-3";
	mk_data(&out[n++], &m, false);
	return n;
}

/* One message per rejection reason of the "Message checks" table. */
static unsigned
bad_msgs(struct msgbuf *out, const char **names)
{
	struct inca_msg base = contrib(1, 0x1234, 0, 0, 0, 3, INCA_DTYPE_INT32, INCA_OP_SUM, 4);
	struct inca_ctrl_info join = {.ver_min = 1, .ver_max = 1, .nworkers = 3};
	struct inca_msg m;
	unsigned n = 0;

#define BAD_DATA(name_, field, value) \
	do { \
		m = base; \
		m.field = value; \
		names[n] = name_; \
		mk_data(&out[n++], &m, false); \
	} while (0)
	BAD_DATA("bad-version", version, 2);
	BAD_DATA("bad-type-0", type, 0);
	BAD_DATA("bad-type-12", type, 12);
	BAD_DATA("bad-op", op, 3);
	BAD_DATA("bad-flags", flags, 0x10);
	BAD_DATA("bad-rank", rank, 32);
	BAD_DATA("bad-job", job, 0);
	BAD_DATA("bad-reason", reason, 1);
	BAD_DATA("bad-bfp-dtype", flags, INCA_F_BFP);
	out[n - 1].b[2] = INCA_DTYPE_FP32; /* the body stays 4-byte elements */

	m = base;
	m.dtype = INCA_DTYPE_COUNT;
	inca_hdr_encode(&m, out[n].b);
	out[n].len = INCA_HDR_LEN + 16;
	names[n++] = "bad-dtype";

	m = base;
	m.count = 0;
	inca_hdr_encode(&m, out[n].b);
	out[n].len = INCA_HDR_LEN;
	names[n++] = "bad-count-0";

	m = base;
	names[n] = "bad-len";
	mk_data(&out[n], &m, false);
	out[n++].len -= 1;

	names[n] = "short-header";
	mk_data(&out[n], &m, false);
	out[n++].len = INCA_HDR_LEN - 1;

	m = hdr(INCA_MSG_JOIN, 1, 0, 0x1234);
	names[n] = "bad-ctrl-len";
	mk_ctrl(&out[n], &m, &join);
	out[n++].len -= 1;
	m.count = 1;
	names[n] = "bad-ctrl-count";
	mk_ctrl(&out[n++], &m, &join);
	m.count = 0;
	join.nworkers = 0;
	names[n] = "bad-ctrl-nworkers";
	mk_ctrl(&out[n++], &m, &join);
	join.nworkers = 3;
	join.pool_size = 2;
	join.window = 3;
	names[n] = "bad-ctrl-window";
	mk_ctrl(&out[n++], &m, &join);
	join.window = 0;
	join.caps = 0x8;
	names[n] = "bad-ctrl-caps";
	mk_ctrl(&out[n++], &m, &join);
	m = hdr(INCA_MSG_NACK, 1, 0, 0x1234);
	names[n] = "bad-nack-reason-0";
	mk_ctrl(&out[n++], &m, NULL);
	m.reason = 16;
	names[n] = "bad-nack-reason-16";
	mk_ctrl(&out[n++], &m, NULL);
	m = hdr(INCA_MSG_HEARTBEAT, 1, 0, 0x1234);
	names[n] = "bad-heartbeat-len";
	mk_ctrl(&out[n], &m, &caps_body);
	out[n++].len = INCA_HDR_LEN + 16;
#undef BAD_DATA
	return n;
}

/* ---- frames ------------------------------------------------------------- */

struct records {
	uint8_t b[MAX_FILE];
	size_t len;
};

static size_t
frame_of(uint8_t *frame, const struct msgbuf *mb, uint16_t port)
{
	memcpy(frame + INCA_ENCAP_LEN, mb->b, mb->len);
	return inca_frame_build(frame, agg_mac, wrk_mac, WRK_IP, AGG_IP, 40000, port, mb->len);
}

static void
rec_add(struct records *r, uint8_t ctrl, const uint8_t *frame, size_t len)
{
	if (r->len + 3 + len > sizeof(r->b)) {
		fprintf(stderr, "gen_corpus: record file too large\n");
		exit(1);
	}
	r->b[r->len] = ctrl;
	r->b[r->len + 1] = (uint8_t)(len >> 8);
	r->b[r->len + 2] = (uint8_t)len;
	memcpy(r->b + r->len + 3, frame, len);
	r->len += 3 + len;
}

static void
rec_msg(struct records *r, uint8_t ctrl, const struct msgbuf *mb)
{
	static uint8_t frame[MAX_FRAME];
	size_t len = frame_of(frame, mb, (ctrl & CTRL_ALT_PORT) ? ALT_PORT : INCA_UDP_PORT);

	rec_add(r, ctrl, frame, len);
}

static void
rec_contrib(struct records *r, uint8_t ctrl, const struct inca_msg *m, bool special)
{
	struct msgbuf mb;

	mk_data(&mb, m, special);
	rec_msg(r, ctrl, &mb);
}

static void
put16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = (uint8_t)v;
}

/* Recompute the IPv4 header checksum of the frame's header at @ip. */
static void
fix_ip_csum(uint8_t *ip)
{
	size_t ihl = (size_t)(ip[0] & 15) * 4;

	put16(ip + 10, 0);
	put16(ip + 10, inca_csum(ip, ihl, 0));
}

/* Malformed and unusual frames around one valid CONTRIB. */
static void
frame_variants(void)
{
	struct inca_msg m = contrib(1, 0x1234, 0, 0, 0, 100, INCA_DTYPE_INT32, INCA_OP_SUM, 4);
	static uint8_t base[MAX_FRAME], f[MAX_FRAME];
	struct records r;
	struct msgbuf mb;
	size_t len;

	mk_data(&mb, &m, false);
	len = frame_of(base, &mb, INCA_UDP_PORT);

#define VARIANT(name, flen, ctrl, edit) \
	do { \
		memcpy(f, base, len); \
		edit; \
		r.len = 0; \
		rec_add(&r, ctrl, f, flen); \
		write_file("frame", "frame-" name, r.b, r.len); \
	} while (0)
	VARIANT("valid", len, 0, (void)0);
	VARIANT("empty", 0, 0, (void)0);
	VARIANT("eth-short", 13, 0, (void)0);
	VARIANT("ipv6", len, 0, put16(f + 12, 0x86dd));
	VARIANT("ip-short", 14 + 19, 0, (void)0);
	VARIANT("ip-version-6", len, 0, (f[14] = 0x65, fix_ip_csum(f + 14)));
	VARIANT("ihl-4", len, 0, (f[14] = 0x44));
	VARIANT("ip-total-long", len, 0, (put16(f + 16, len - 13), fix_ip_csum(f + 14)));
	VARIANT("ip-total-short", len, 0, (put16(f + 16, 19), fix_ip_csum(f + 14)));
	VARIANT("ip-csum", len, 0, (f[24] ^= 0x5a));
	VARIANT("ip-mf", len, 0, (put16(f + 20, 0x2000), fix_ip_csum(f + 14)));
	VARIANT("ip-frag-off", len, 0, (put16(f + 20, 0x0001), fix_ip_csum(f + 14)));
	VARIANT("tcp", len, 0, (f[23] = 6, fix_ip_csum(f + 14)));
	VARIANT("udp-short", len, 0, (put16(f + 16, 27), fix_ip_csum(f + 14)));
	VARIANT("udp-len", len, 0, put16(f + 38, 9));
	VARIANT("wrong-port", len, 0, put16(f + 36, 53));
	VARIANT("alt-port", len, CTRL_ALT_PORT, (void)0);
	VARIANT("udp-csum-zero", len, 0, put16(f + 40, 0));
	VARIANT("udp-csum-bad", len, 0, (f[len - 1] ^= 1));
	VARIANT("eth-padding", len + 20, 0, memset(f + len, 0, 20));
	VARIANT("cut-in-udp", 14 + 20 + 4, 0, (void)0);
	VARIANT("cut-in-inca", len - 10, 0, (void)0);
#undef VARIANT

	/* One 802.1Q tag in front of IPv4. */
	memcpy(f, base, 12);
	put16(f + 12, 0x8100);
	put16(f + 14, 0x0005);
	memcpy(f + 16, base + 12, len - 12);
	r.len = 0;
	rec_add(&r, 0, f, len + 4);
	write_file("frame", "frame-vlan", r.b, r.len);

	/* RoCEv2 UD SENDs of the same CONTRIB to port 4791 (the ICRC is
	 * zero: fuzz_frame checks the envelope as inca_roce_parse() does), and
	 * one per RoCEv2 check. */
	{
		struct inca_roce_info ri = {.opcode = INCA_ROCE_OP_UD_SEND_ONLY,
					    .pkey = INCA_ROCE_PKEY, .dqpn = 0x494e,
					    .qkey = 0x494e4341, .sqpn = 0x200};
		size_t ulen, rl;

		memcpy(f + INCA_ENCAP_LEN + INCA_ROCE_HDR_LEN, mb.b, mb.len);
		ulen = inca_roce_encap(f + INCA_ENCAP_LEN, &ri, mb.len);
		memset(f + INCA_ENCAP_LEN + ulen - INCA_ICRC_LEN, 0, INCA_ICRC_LEN);
		rl = inca_frame_build(f, agg_mac, wrk_mac, WRK_IP, AGG_IP, 0xc100, ALT_PORT, ulen);
		memcpy(base, f, rl);
		len = rl;
	}
#define VARIANT(name, flen, edit) \
	do { \
		memcpy(f, base, len); \
		edit; \
		r.len = 0; \
		rec_add(&r, CTRL_ALT_PORT | CTRL_ROCE, f, flen); \
		write_file("frame", "frame-roce-" name, r.b, r.len); \
	} while (0)
	VARIANT("valid", len, (void)0);
	VARIANT("short", INCA_ENCAP_LEN + 40, (put16(f + 16, 68), put16(f + 38, 48),
					       fix_ip_csum(f + 14), put16(f + 40, 0)));
	VARIANT("rc-send", len, (f[INCA_ENCAP_LEN] = 0x04, put16(f + 40, 0)));
	VARIANT("tver", len, (f[INCA_ENCAP_LEN + 1] |= 1, put16(f + 40, 0)));
	VARIANT("pkey", len, (f[INCA_ENCAP_LEN + 3] = 0xfe, put16(f + 40, 0)));
	VARIANT("pad", len, (f[INCA_ENCAP_LEN + 1] |= 0x30, put16(f + 40, 0)));
#undef VARIANT

	/* IPv4 options (IHL 6): incad accepts them. */
	memcpy(f, base, 14);
	memcpy(f + 14, base + 14, 20);
	memset(f + 34, 0x01, 4); /* four NOP options */
	memcpy(f + 38, base + 34, len - 34);
	f[14] = 0x46;
	put16(f + 16, len - 14 + 4);
	fix_ip_csum(f + 14);
	r.len = 0;
	rec_add(&r, 0, f, len + 4);
	write_file("frame", "frame-ip-options", r.b, r.len);
}

/*
 * Whole rounds on fuzz_frame's jobs: every rank contributes, the set
 * completes, a retransmission gets a replay, and the set is reused.
 */
static void
rounds(void)
{
	static struct records r;
	char name[64];
	unsigned dtype, op, rank;
	struct inca_msg m;

	/* Job 1: 3 ranks, seq_check, every dtype and op. */
	for (dtype = 0; dtype < INCA_DTYPE_COUNT; dtype++) {
		for (op = 0; op < INCA_OP_COUNT; op++) {
			r.len = 0;
			for (rank = 0; rank < 3; rank++) {
				m = contrib(1, 0x1234, rank, dtype, dtype & 1, 10 + dtype,
					    dtype, op, dtype == 0 ? 64 : 8 + dtype);
				rec_contrib(&r, rank == 0 ? CTRL_RESET :
					    rank == 2 ? CTRL_ALL_COPIES : 0, &m, op != 0);
			}
			m.rank = 1;
			m.flags |= INCA_F_RETX;
			rec_contrib(&r, 0, &m, false); /* replay */
			snprintf(name, sizeof(name), "round-job1-%s-%s", inca_dtype_name(dtype),
				 inca_op_name(op));
			write_file("frame", name, r.b, r.len);
		}
	}

	/* Job 1: every drop of the rules, then a new use of the set. */
	r.len = 0;
	m = contrib(1, 0x1234, 0, 1, 0, 5, INCA_DTYPE_INT32, INCA_OP_SUM, 4);
	rec_contrib(&r, CTRL_RESET, &m, false);
	rec_contrib(&r, 0, &m, false);            /* DUPLICATE */
	m.seq = 4;
	rec_contrib(&r, 0, &m, false);            /* STALE */
	m.seq = 6;
	rec_contrib(&r, 0, &m, false);            /* CONFLICT */
	m.seq = 5;
	m.rank = 1;
	m.count = 3;
	rec_contrib(&r, 0, &m, false);            /* MISMATCH */
	m.count = 4;
	rec_contrib(&r, 0, &m, false);
	m.rank = 2;
	rec_contrib(&r, 0, &m, false);            /* COMPLETE */
	m.token = 1;
	rec_contrib(&r, 0, &m, false);            /* BAD_TOKEN */
	m.token = 0x1234;
	m.slot = 4;
	rec_contrib(&r, 0, &m, false);            /* BAD_SLOT */
	m.slot = 1;
	m.rank = 0;
	m.seq = 4;
	rec_contrib(&r, 0, &m, false);            /* STALE: older than the set's */
	m.flags = INCA_F_SET;
	m.seq = 9;
	rec_contrib(&r, 0, &m, false);            /* other set: rule 6 clears bit 0 */
	m.flags = 0;
	m.seq = 5;
	rec_contrib(&r, 0, &m, false);            /* STALE: complete, bit clear */
	m.seq = 13;
	rec_contrib(&r, 0, &m, false);            /* new use */
	m.seq = 5;
	rec_contrib(&r, 0, &m, false);            /* STALE: older, filling */
	write_file("frame", "rules-job1", r.b, r.len);

	/* Job 2: 2 ranks, no seq_check (the Tofino subset). */
	r.len = 0;
	m = contrib(2, 0xdeadbeef, 0, 1, 0, 0, INCA_DTYPE_FP32, INCA_OP_SUM, 200);
	rec_contrib(&r, CTRL_RESET, &m, true);
	m.rank = 1;
	rec_contrib(&r, CTRL_ALL_COPIES, &m, true);
	m.seq = 99;
	rec_contrib(&r, 0, &m, true);              /* bit set: replay */
	m.flags = INCA_F_SET;
	m.seq = 2;
	rec_contrib(&r, 0, &m, true);              /* other set; clears bit 1 in set 0 */
	m.flags = 0;
	m.seq = 4;
	rec_contrib(&r, 0, &m, true);              /* bit clear: new use */
	m.op = INCA_OP_MAX;
	m.rank = 0;
	rec_contrib(&r, 0, &m, true);              /* OP */
	write_file("frame", "rules-job2-noseq", r.b, r.len);

	/* Job 7: one rank, so each contribution completes at once. */
	r.len = 0;
	m = contrib(7, 0, 0, 0, 0, 1, INCA_DTYPE_FP16, INCA_OP_SUM, 4096);
	rec_contrib(&r, 0, &m, true);
	rec_contrib(&r, 0, &m, true);
	write_file("frame", "job7-fp16-4096", r.b, r.len);
	r.len = 0;
	m = contrib(7, 0, 0, 0, INCA_F_SET, 2, INCA_DTYPE_BF16, INCA_OP_MIN, 100);
	rec_contrib(&r, 0, &m, true);
	m.dtype = INCA_DTYPE_INT32;
	rec_contrib(&r, 0, &m, false);             /* DTYPE */
	write_file("frame", "job7-bf16-min", r.b, r.len);

	/* Job 300: all 32 ranks. */
	r.len = 0;
	for (rank = 0; rank < 32; rank++) {
		m = contrib(300, 0x494e4341, rank, 2, 0, 1, INCA_DTYPE_FP32, INCA_OP_MAX, 8);
		rec_contrib(&r, rank == 0 ? CTRL_RESET : rank == 31 ? CTRL_ALL_COPIES : 0,
			    &m, true);
	}
	write_file("frame", "round-job300-32-ranks", r.b, r.len);

	/* Job 9: rank 2 is not admitted until a membership event. */
	r.len = 0;
	for (rank = 0; rank < 4; rank++) {
		m = contrib(9, 9, rank, 1, 0, 1, INCA_DTYPE_INT32, INCA_OP_SUM, 32);
		m.flags = INCA_F_BFP;
		m.exp = (int8_t)(rank * 3 - 5);
		rec_contrib(&r, rank == 0 ? CTRL_RESET : 0, &m, false);
	}
	m.rank = 2;
	rec_contrib(&r, CTRL_MEMBER, &m, false);   /* admitted; the job restarts */
	for (rank = 0; rank < 4; rank++) {
		if (rank == 2)
			continue;
		m.rank = rank;
		rec_contrib(&r, rank == 3 ? CTRL_ALL_COPIES : 0, &m, false);
	}
	write_file("frame", "round-job9-member", r.b, r.len);

	/* Job 1, routed chunks: a reduce to rank 2, a replay of its BRIEF
	 * form, a gather from rank 1 with the others BRIEF, a root's copy
	 * and a disagreement on the root (docs/protocol.md, "Routed chunks"). */
	r.len = 0;
	for (rank = 0; rank < 3; rank++) {
		m = contrib(1, 0x1234, rank, 2, 0, 2, INCA_DTYPE_INT32, INCA_OP_SUM, 16);
		m.flags = INCA_F_ROUTED;
		m.bitmap = 1u << 2;
		rec_contrib(&r, rank == 0 ? CTRL_RESET : rank == 2 ? CTRL_ALL_COPIES : 0, &m,
			    false);
	}
	m.rank = 0;
	rec_contrib(&r, 0, &m, false);             /* BRIEF replay */
	for (rank = 0; rank < 3; rank++) {
		m = contrib(1, 0x1234, rank, 3, 0, 3, INCA_DTYPE_FP32, INCA_OP_SUM, 8);
		m.flags = INCA_F_ROUTED | INCA_F_GATHER | (rank == 1 ? 0 : INCA_F_BRIEF);
		m.bitmap = 1u << 1;
		rec_contrib(&r, rank == 2 ? CTRL_ALL_COPIES : 0, &m, true);
		if (rank == 1)
			rec_contrib(&r, 0, &m, true);      /* DUPLICATE */
	}
	m = contrib(1, 0x1234, 0, 0, INCA_F_SET, 4, INCA_DTYPE_INT32, INCA_OP_SUM, 4);
	m.flags |= INCA_F_ROUTED;
	m.bitmap = 1u << 0;
	rec_contrib(&r, 0, &m, false);
	m.rank = 1;
	m.bitmap = 1u << 1;
	rec_contrib(&r, 0, &m, false);             /* MISMATCH: another root */
	write_file("frame", "routed-job1", r.b, r.len);
}

static void
messages(void)
{
	static struct msgbuf msgs[64];
	static struct records r;
	const char *names[64];
	char name[64];
	unsigned n = 0, i;

	n += valid_msgs(msgs + n, names + n);
	n += edge_msgs(msgs + n, names + n);
	n += bad_msgs(msgs + n, names + n);
	for (i = 0; i < n; i++) {
		write_file("msg", names[i], msgs[i].b, msgs[i].len);
		/* The same message in a frame, decoded with the default limit. */
		r.len = 0;
		rec_msg(&r, 0, &msgs[i]);
		snprintf(name, sizeof(name), "msg-%s", names[i]);
		write_file("frame", name, r.b, r.len);
	}
}

/* ---- configuration ------------------------------------------------------ */

static char *
read_text(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf;

	if (f == NULL) {
		fprintf(stderr, "gen_corpus: %s: %s\n", path, strerror(errno));
		exit(1);
	}
	buf = malloc(MAX_FILE);
	if (buf == NULL)
		exit(1);
	*len = fread(buf, 1, MAX_FILE - 1, f);
	buf[*len] = '\0';
	fclose(f);
	return buf;
}

/* CONF with its first @from replaced by @to. */
static void
conf_variant(const char *conf, const char *name, const char *from, const char *to)
{
	const char *at = strstr(conf, from);
	char *out;
	size_t n;

	if (at == NULL) {
		fprintf(stderr, "gen_corpus: '%s' not in the configuration\n", from);
		exit(1);
	}
	out = malloc(strlen(conf) + strlen(to) + 1);
	if (out == NULL)
		exit(1);
	n = (size_t)(at - conf);
	memcpy(out, conf, n);
	strcpy(out + n, to);
	strcat(out, at + strlen(from));
	write_file("config", name, out, strlen(out));
	free(out);
}

static void
write_text(const char *name, const char *text)
{
	write_file("config", name, text, strlen(text));
}

static void
configs(const char *conf_path)
{
	size_t len;
	char *conf = read_text(conf_path, &len);

	write_file("config", "incad.conf", conf, len);
	conf_variant(conf, "switch-mode", "mode = \"aggregator\"", "mode = \"switch\"");
	conf_variant(conf, "bad-mode", "mode = \"aggregator\"", "mode = \"router\"");
	conf_variant(conf, "bad-max-elems", "max_elems = 1024;", "max_elems = 5000;");
	conf_variant(conf, "bad-ring", "ring_size = 1024;", "ring_size = 1000;");
	conf_variant(conf, "bad-window", "window = 32;", "window = 100;");
	conf_variant(conf, "bad-evict", "evict_ms = 5000;", "evict_ms = 10;");
	conf_variant(conf, "bad-key", "inca_port = 18766;", "inca_prot = 18766;");
	conf_variant(conf, "bad-type", "inca_port = 18766;", "inca_port = \"18766\";");
	conf_variant(conf, "int64", "inca_port = 18766;", "inca_port = 18766L;");
	conf_variant(conf, "float", "inca_port = 18766;", "inca_port = 18766.0;");
	conf_variant(conf, "syntax", "inca_port = 18766;", "inca_port = 18766");
	conf_variant(conf, "bad-ipv4", "\"10.77.0.1/24\"", "\"10.77.0.256/24\"");
	conf_variant(conf, "bad-prefix", "\"10.77.0.1/24\"", "\"10.77.0.1/33\"");
	conf_variant(conf, "mac", "# mac = \"02:00:00:00:00:01\";",
		     "mac = \"02:00:00:00:00:01\";");
	conf_variant(conf, "bad-mac", "# mac = \"02:00:00:00:00:01\";",
		     "mac = \"01:00:5e:00:00:01\";");
	conf_variant(conf, "two-devices", "device = \"net_pcap0\";",
		     "device = \"net_pcap0\"; pci = \"0000:01:00.0\";");
	conf_variant(conf, "token-hex-high", "token = 0x1234;", "token = 0xfffffffe;");
	conf_variant(conf, "bad-dtype", "\"bf16\"]", "\"fp64\"]");
	conf_variant(conf, "bad-member-rank", "{ rank = 0;", "{ rank = 5;");
	conf_variant(conf, "bad-job-range", "job_ids = [1, 65535];", "job_ids = [2, 10];");
	conf_variant(conf, "bad-quota", "slot_quota = 4096;", "slot_quota = 10;");
	conf_variant(conf, "bad-sources", "sources = [\"10.77.0.0/16\"];", "sources = [16];");
	write_text("empty", "");
	write_text("minimal",
		   "ports = ( { name = \"p0\"; device = \"net_null0\";"
		   " ipv4 = \"10.77.0.1\"; } );\n");
	write_text("no-ports", "mode = \"aggregator\";\n");
	write_text("ports-array", "ports = [1, 2, 3];\n");
	write_text("many",
		   "workers = 2;\n"
		   "idle = { policy = \"poll\"; };\n"
		   "aggregation = { pool_size = 8; max_elems = 4096; window = 8;"
		   " max_slots = 64; };\n"
		   "timeouts = { heartbeat_ms = 100; evict_ms = 86400000; };\n"
		   "ports = (\n"
		   "  { name = \"a\"; devargs = \"net_af_packet0,iface=veth0\";"
		   " ipv4 = \"10.77.1.1/24\"; mtu = 9000; },\n"
		   "  { name = \"b\"; pci = \"0000:3b:00.0\"; ipv4 = \"10.77.2.1/24\";"
		   " mac = \"02:aa:bb:cc:dd:ee\"; rx_queue_size = 64; }\n"
		   ");\n"
		   "tenants = (\n"
		   "  { name = \"t1\"; token = 1; job_ids = [1, 99]; slot_quota = 32; },\n"
		   "  { name = \"t2\"; token = 1; job_ids = [100, 199];"
		   " dynamic_jobs = true; sources = [\"10.77.1.0/24\", \"10.77.2.7\"]; },\n"
		   "  { name = \"t3\"; job_ids = [200, 299]; }\n"
		   ");\n"
		   "jobs = (\n"
		   "  { id = 5; tenant = \"t1\"; nworkers = 32; pool_size = 16;"
		   " dtypes = [\"int32\"]; ops = [\"sum\", \"max\"];\n"
		   "    members = ( { rank = 31; ipv4 = \"10.77.1.31\"; udp_port = 5000; } ); },\n"
		   "  { id = 150; tenant = \"t2\"; nworkers = 1; pool_size = 4; window = 2; },\n"
		   "  { id = 250; tenant = \"t3\"; token = 0x80000000; nworkers = 2; }\n"
		   ");\n");
	write_text("lists",
		   "ports = ( { name = \"p0\"; device = \"d\"; ipv4 = \"1.2.3.4\"; } );\n"
		   "tenants = ( { name = \"t\"; token = 1; sources = [\"1.0.0.0/8\","
		   " \"2.0.0.0/8\", \"3.0.0.0/8\", \"4.0.0.0/8\", \"5.0.0.0/8\", \"6.0.0.0/8\","
		   " \"7.0.0.0/8\", \"8.0.0.0/8\", \"9.0.0.0/8\", \"10.0.0.0/8\", \"11.0.0.0/8\","
		   " \"12.0.0.0/8\", \"13.0.0.0/8\", \"14.0.0.0/8\", \"15.0.0.0/8\","
		   " \"16.0.0.0/8\", \"17.0.0.0/8\"]; } );\n"
		   "jobs = ( { id = 1; tenant = \"t\"; nworkers = 4; dtypes = []; ops = [1];\n"
		   "    members = ( { rank = 1; ipv4 = \"1.1.1.1\"; },"
		   " { rank = 1; ipv4 = \"1.1.1.2\"; }, 5 ); } );\n");
	/* Short inputs also go to incad_parse_ipv4() as they are. */
	write_text("addr-plain", "10.77.0.1");
	write_text("addr-max", "255.255.255.255");
	write_text("addr-prefix", "10.77.0.0/16");
	write_text("no-token",
		   "ports = ( { name = \"p0\"; device = \"d\"; ipv4 = \"1.2.3.4\"; } );\n"
		   "tenants = ( { name = \"t\"; dynamic_jobs = true; } );\n"
		   "jobs = ( { id = 1; tenant = \"t\"; nworkers = 2; } );\n");
	write_text("tenant-overlap",
		   "ports = ( { name = \"p0\"; device = \"d\"; ipv4 = \"1.2.3.4\"; } );\n"
		   "tenants = ( { name = \"x\"; token = 7; }, { name = \"x\"; token = 7;"
		   " job_ids = [3, 4]; } );\n"
		   "jobs = ( { id = 3; tenant = \"y\"; nworkers = 2; },"
		   " { id = 3; tenant = \"x\"; nworkers = 0; } );\n");
	free(conf);
}

int
main(int argc, char **argv)
{
	static const char *const subs[] = {"msg", "frame", "config"};
	char path[4096];
	unsigned i;

	if (argc != 3) {
		fprintf(stderr, "usage: %s OUTDIR CONF\n", argv[0]);
		return 2;
	}
	outdir = argv[1];
	for (i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "%s/%s", outdir, subs[i]);
		if (mkdir(path, 0755) != 0 && errno != EEXIST) {
			fprintf(stderr, "gen_corpus: %s: %s\n", path, strerror(errno));
			return 1;
		}
	}
	messages();
	frame_variants();
	rounds();
	configs(argv[2]);
	printf("gen_corpus: %u files in %s\n", files, outdir);
	return 0;
}

/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * Input for the Wireshark dissector test (test_dissector.py): wire.h's
 * tables as the compiler sees them, and a capture of INCA frames built with
 * the codec together with what each frame carries.
 *
 *   inca_pcap_gen tables
 *	one line per table entry (message types, data types, operations,
 *	flags, NACK reasons, capabilities, message-level wire errors) and the
 *	protocol constants; expanded from the X-macros, so the dissector's
 *	tables are compared with the header itself.
 *
 *   inca_pcap_gen pcap CAPTURE EXPECT [SEED]
 *	CAPTURE: a pcap file of every message type and data type, NACKs with
 *	every reason, boundary values, one malformed message per message
 *	check, frames on other ports, frames cut by the snaplen, and mutated
 *	messages, JOINs with the RoCEv2 extension, and RoCEv2 frames (valid,
 *	one per RoCEv2 check, and with broken messages inside). EXPECT: one
 *	line per frame, tab-separated key=value pairs: the header and control
 *	body fields as encoded, the elements, the codec's verdict (errors=NAME,
 *	empty when the codec accepts it), the aggregator port (port=) and
 *	whether the payload is an INCA message at all (inca=). RoCEv2 frames
 *	add roce=1, claim= (whether a dissector that sees the InfiniBand
 *	payload can take it for INCA: a UD SEND-only starting with version and
 *	type), BTH and DETH as Wireshark's infiniband.* fields and the ICRC.
 */

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include <inca/dtype.h>
#include <inca/wire.h>

#define AGG_IP 0x0a4d0001u	/* 10.77.0.1 */
#define WORKER_IP 0x0a4d000au	/* 10.77.0.10 + rank */
#define WORKER_PORT 40000
#define OTHER_PORT 19000	/* the port the preference test moves INCA to */
#define FRAME_CAP (INCA_ENCAP_LEN + INCA_HDR_LEN + INCA_MAX_PAYLOAD_BYTES + 64)
#define EXPECT_CAP 4096
#define EXPECT_ELEMS 64
#define FUZZ_FRAMES 400
#define JOB 7
#define TOKEN 0xc0ffee01u
#define AGG_QPN 0x0001a4u	/* the aggregator's UD queue pair */
#define AGG_QKEY 0x494e4341u	/* "INCA" */
#define WORKER_QPN 0x000100u	/* + rank */
#define WORKER_QKEY 0x11110000u	/* + rank */
#define ETH_LEN 14		/* untagged, as inca_frame_build writes it */
#define IPV4_LEN 20
#define UDP_LEN 8

_Static_assert(ETH_LEN + IPV4_LEN + UDP_LEN == INCA_ENCAP_LEN, "frame layout");

static const uint8_t agg_mac[6] = { 0x02, 0x77, 0, 0, 0, 0x01 };

struct gen {
	FILE *pcap;
	FILE *expect;
	unsigned int frames;
	int fuzz;		/* frames are mutations: may be broken many ways */
	uint64_t rng;
	char line[EXPECT_CAP];
	size_t line_len;
};

/* What a frame carries besides its message. */
struct frame_opts {
	int from_agg;		/* the aggregator sends it (else a worker) */
	uint16_t port;		/* the aggregator's UDP port; 0: INCA_UDP_PORT */
	size_t snap;		/* bytes captured; 0: the whole frame */
	int not_inca;		/* the payload is some other UDP traffic */
};

static void __attribute__((noreturn, format(printf, 1, 2)))
die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("inca_pcap_gen: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(1);
}

static uint32_t
rnd(struct gen *g)
{
	/* xorshift64*: reproducible from the seed printed by the test. */
	g->rng ^= g->rng >> 12;
	g->rng ^= g->rng << 25;
	g->rng ^= g->rng >> 27;
	return (uint32_t)((g->rng * 0x2545f4914f6cdd1dull) >> 32);
}

static void
put16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = v & 0xff;
}

static void
put32(uint8_t *p, uint32_t v)
{
	put16(p, v >> 16);
	put16(p + 2, v & 0xffff);
}

static void
le32(FILE *f, uint32_t v)
{
	uint8_t b[4] = { v & 0xff, (v >> 8) & 0xff, (v >> 16) & 0xff, v >> 24 };

	if (fwrite(b, 1, 4, f) != 4)
		die("write: %s", strerror(errno));
}

static void
pcap_header(FILE *f)
{
	le32(f, 0xa1b2c3d4);	/* microsecond timestamps */
	le32(f, 2 | (4u << 16)); /* version 2.4 */
	le32(f, 0);		/* thiszone */
	le32(f, 0);		/* sigfigs */
	le32(f, 65535);		/* snaplen */
	le32(f, 1);		/* LINKTYPE_ETHERNET */
}

static void __attribute__((format(printf, 3, 4)))
kv(struct gen *g, const char *key, const char *fmt, ...)
{
	va_list ap;
	int n;

	n = snprintf(g->line + g->line_len, EXPECT_CAP - g->line_len, "%s%s=",
		     g->line_len ? "\t" : "", key);
	if (n < 0 || (size_t)n >= EXPECT_CAP - g->line_len)
		die("expectation line too long");
	g->line_len += n;
	va_start(ap, fmt);
	n = vsnprintf(g->line + g->line_len, EXPECT_CAP - g->line_len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= EXPECT_CAP - g->line_len)
		die("expectation line too long");
	g->line_len += n;
}

/* A float as the test parses it back: %.9g is exact for fp32. */
static void
fmt_float(char *buf, size_t cap, float v)
{
	if (isnan(v))
		snprintf(buf, cap, "NaN");
	else if (isinf(v))
		snprintf(buf, cap, v < 0 ? "-inf" : "inf");
	else if (v == 0 && signbit(v))
		snprintf(buf, cap, "-0");
	else
		snprintf(buf, cap, "%.9g", (double)v);
}

/* A double as the test parses it back: %.17g is exact for fp64. */
static void
fmt_double(char *buf, size_t cap, double v)
{
	if (isnan(v))
		snprintf(buf, cap, "NaN");
	else if (isinf(v))
		snprintf(buf, cap, v < 0 ? "-inf" : "inf");
	else if (v == 0 && signbit(v))
		snprintf(buf, cap, "-0");
	else
		snprintf(buf, cap, "%.17g", v);
}

/*
 * The first elements of a data message body (at most EXPECT_ELEMS: the
 * dissector shows 16 by default), and their bit patterns for floats.
 */
static void
expect_elems(struct gen *g, unsigned int dtype, const uint8_t *body, size_t n)
{
	char vals[EXPECT_ELEMS * 32], bits[EXPECT_ELEMS * 20], one[48];
	size_t vl = 0, bl = 0, i;

	vals[0] = bits[0] = '\0';
	if (n > EXPECT_ELEMS)
		n = EXPECT_ELEMS;
	for (i = 0; i < n; i++) {
		const uint8_t *p = body + i * inca_dtype_size(dtype);
		uint32_t w = 0;
		uint64_t q = 0;
		double d;
		float f;
		unsigned b;

		if (inca_dtype_size(dtype) == 8) {
			for (b = 0; b < 8; b++)
				q = q << 8 | p[b];
			memcpy(&d, &q, 8);
			if (dtype == INCA_DTYPE_INT64)
				snprintf(one, sizeof(one), "%lld", (long long)(int64_t)q);
			else
				fmt_double(one, sizeof(one), d);
			vl += snprintf(vals + vl, sizeof(vals) - vl, "%s%s", i ? "," : "", one);
			if (dtype == INCA_DTYPE_FP64)
				bl += snprintf(bits + bl, sizeof(bits) - bl, "%s0x%016llx",
					       i ? "," : "", (unsigned long long)q);
			continue;
		}

		if (inca_dtype_size(dtype) == 4)
			w = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | p[2] << 8 | p[3];
		else
			w = (uint32_t)(p[0] << 8 | p[1]);
		switch (dtype) {
		case INCA_DTYPE_INT32:
			snprintf(one, sizeof(one), "%d", (int32_t)w);
			break;
		case INCA_DTYPE_FP32:
			memcpy(&f, &w, 4);
			fmt_float(one, sizeof(one), f);
			break;
		case INCA_DTYPE_FP16:
			fmt_float(one, sizeof(one), inca_fp16_to_fp32((uint16_t)w));
			break;
		default:
			fmt_float(one, sizeof(one), inca_bf16_to_fp32((uint16_t)w));
			break;
		}
		vl += snprintf(vals + vl, sizeof(vals) - vl, "%s%s", i ? "," : "", one);
		if (dtype != INCA_DTYPE_INT32)
			bl += snprintf(bits + bl, sizeof(bits) - bl, "%s0x%0*x", i ? "," : "",
				       dtype == INCA_DTYPE_FP32 ? 8 : 4, w);
	}
	kv(g, "elems", "%s", vals);
	if (dtype != INCA_DTYPE_INT32 && dtype != INCA_DTYPE_INT64)
		kv(g, "bits", "%s", bits);
}

static void
expect_ctrl(struct gen *g, const uint8_t *body)
{
	struct inca_ctrl_info c;

	inca_ctrl_decode(body, &c);
	kv(g, "inca.ctrl.ver_min", "%u", c.ver_min);
	kv(g, "inca.ctrl.ver_max", "%u", c.ver_max);
	kv(g, "inca.ctrl.dtypes", "%u", c.dtypes);
	kv(g, "inca.ctrl.ops", "%u", c.ops);
	kv(g, "inca.ctrl.max_elems", "%u", c.max_elems);
	kv(g, "inca.ctrl.nworkers", "%u", c.nworkers);
	kv(g, "inca.ctrl.pool_size", "%u", c.pool_size);
	kv(g, "inca.ctrl.window", "%u", c.window);
	kv(g, "inca.ctrl.caps", "%u", c.caps);
	kv(g, "inca.ctrl.hb_ms", "%u", c.hb_ms);
	kv(g, "inca.ctrl.evict_ms", "%u", c.evict_ms);
	kv(g, "inca.ctrl.pool_base", "%u", c.pool_base);
	kv(g, "inca.ctrl.session", "%u",
	   (uint32_t)body[28] << 24 | (uint32_t)body[29] << 16 | body[30] << 8 | body[31]);
}

static uint32_t
get(const uint8_t *p, size_t n)
{
	uint32_t v = 0;

	while (n--)
		v = v << 8 | *p++;
	return v;
}

/*
 * The fields of the message in @p msg as its bytes say, read here rather
 * than by the codec, so that a message the codec rejects is described too.
 */
static void
expect_msg(struct gen *g, const uint8_t *msg, size_t len)
{
	unsigned int type, dtype;
	size_t body_len;

	if (len < INCA_HDR_LEN)
		return;
	type = msg[1];
	dtype = msg[2];
	body_len = len - INCA_HDR_LEN;
	kv(g, "inca.version", "%u", msg[0]);
	kv(g, "inca.type", "%u", type);
	if (msg[0] != INCA_PROTO_VERSION)
		return;
	kv(g, "inca.dtype", "%u", dtype);
	kv(g, "inca.op", "%u", msg[3]);
	kv(g, "inca.job", "%u", get(msg + 4, 2));
	kv(g, "inca.rank", "%u", get(msg + 6, 2));
	kv(g, "inca.token", "%u", get(msg + 8, 4));
	kv(g, "inca.slot", "%u", get(msg + 12, 2));
	kv(g, "inca.flags", "%u", msg[14]);
	kv(g, "inca.exp", "%d", (int8_t)msg[15]);
	kv(g, "inca.seq", "%u", get(msg + 16, 4));
	kv(g, "inca.offset", "%u", get(msg + 20, 4));
	kv(g, "inca.count", "%u", get(msg + 24, 2));
	kv(g, "inca.reason", "%u", get(msg + 26, 2));
	kv(g, "inca.bitmap", "%u", get(msg + 28, 4));
	if ((type == INCA_MSG_CONTRIB || type == INCA_MSG_RESULT) && inca_dtype_size(dtype))
		expect_elems(g, dtype, msg + INCA_HDR_LEN, body_len / inca_dtype_size(dtype));
	else if (type >= INCA_MSG_HELLO && type < INCA_MSG_MAX_ && body_len >= INCA_CTRL_LEN)
		expect_ctrl(g, msg + INCA_HDR_LEN);
	/* The dissector shows the extension where the codec would read one. */
	if ((type == INCA_MSG_JOIN || type == INCA_MSG_JOIN_ACK) &&
	    body_len == INCA_CTRL_LEN + INCA_ROCE_EXT_LEN) {
		const uint8_t *x = msg + INCA_HDR_LEN + INCA_CTRL_LEN;

		kv(g, "inca.roce_ext.qpn", "%u", get(x, 4));
		kv(g, "inca.roce_ext.qkey", "%u", get(x + 4, 4));
		kv(g, "inca.roce_ext.reserved", "%llu",
		   (unsigned long long)get(x + 8, 4) << 32 | get(x + 12, 4));
	}
}

/*
 * Appends a frame of @p len bytes, @p cap of them captured, to the capture
 * and ends its expectation line; @p msg_len is the length of the INCA
 * message the dissector is to show.
 */
static void
emit(struct gen *g, const uint8_t *frame, size_t len, size_t cap, uint16_t port, int not_inca,
     size_t msg_len)
{
	g->frames++;
	le32(g->pcap, 1700000000u + g->frames);
	le32(g->pcap, 0);
	le32(g->pcap, (uint32_t)cap);
	le32(g->pcap, (uint32_t)len);
	if (fwrite(frame, 1, cap, g->pcap) != cap)
		die("write: %s", strerror(errno));

	kv(g, "port", "%u", port);
	kv(g, "fuzz", "%d", g->fuzz);
	kv(g, "inca", "%d", !not_inca);
	kv(g, "snap", "%zu", cap < len ? cap : 0);
	kv(g, "len", "%zu", msg_len);
	g->line[g->line_len++] = '\n';
	if (fwrite(g->line, 1, g->line_len, g->expect) != g->line_len)
		die("write: %s", strerror(errno));
	g->line_len = 0;
}

/*
 * Wraps a UDP payload of msg_len bytes (at frame + INCA_ENCAP_LEN) into a
 * frame and appends it to the capture; writes the expectation line.
 */
static void
write_frame(struct gen *g, uint8_t *frame, size_t msg_len, const struct frame_opts *o,
	    unsigned int rank)
{
	uint8_t worker_mac[6] = { 0x02, 0x77, 0, 0, 0, 0x0a + (rank & 0x1f) };
	uint16_t port = o->port ? o->port : INCA_UDP_PORT;
	uint32_t wip = WORKER_IP + (rank & 0x1f);
	size_t len, cap;

	if (o->from_agg)
		len = inca_frame_build(frame, worker_mac, agg_mac, AGG_IP, wip, port,
				       WORKER_PORT + (rank & 0x1f), msg_len);
	else
		len = inca_frame_build(frame, agg_mac, worker_mac, wip, AGG_IP,
				       WORKER_PORT + (rank & 0x1f), port, msg_len);
	if (len == 0)
		die("frame %u: cannot build", g->frames + 1);
	cap = o->snap && o->snap < len ? o->snap : len;
	emit(g, frame, len, cap, port, o->not_inca, msg_len);
}

/*
 * One INCA message: header @p m (written as given), @p body_len bytes of
 * @p body. The codec's verdict must be @p want: that is how a malformed
 * case proves it is malformed in exactly the intended way.
 */
static void
msg_frame(struct gen *g, const struct inca_msg *m, const void *body, size_t body_len,
	  enum inca_wire_err want, const struct frame_opts *o)
{
	static uint8_t frame[FRAME_CAP];
	uint8_t *msg = frame + INCA_ENCAP_LEN;
	size_t msg_len = INCA_HDR_LEN + body_len;
	enum inca_wire_err err;
	struct inca_msg d;

	if (body_len > FRAME_CAP - INCA_ENCAP_LEN - INCA_HDR_LEN)
		die("body too long");
	inca_hdr_encode(m, msg);
	if (body_len)
		memcpy(msg + INCA_HDR_LEN, body, body_len);
	err = inca_msg_decode(msg, msg_len, 0, &d);
	if (err != want)
		die("frame %u: codec says %s, the case was written for %s", g->frames + 1,
		    inca_wire_err_name(err), inca_wire_err_name(want));
	expect_msg(g, msg, msg_len);
	kv(g, "errors", "%s", err == INCA_WIRE_OK ? "" : inca_wire_err_name(err));
	write_frame(g, frame, msg_len, o, m->rank);
}

/* Raw bytes as a UDP payload (short messages, fuzz, other protocols). */
static void
raw_frame(struct gen *g, const uint8_t *p, size_t len, const struct frame_opts *o)
{
	static uint8_t frame[FRAME_CAP];
	enum inca_wire_err err;
	struct inca_msg d;

	memcpy(frame + INCA_ENCAP_LEN, p, len);
	err = inca_msg_decode(p, len, 0, &d);
	expect_msg(g, p, len);
	kv(g, "errors", "%s", err == INCA_WIRE_OK ? "" : inca_wire_err_name(err));
	write_frame(g, frame, len, o, len >= 8 ? p[7] : 0);
}

static struct inca_msg
hdr(unsigned int type, unsigned int rank)
{
	struct inca_msg m;

	memset(&m, 0, sizeof(m));
	m.version = INCA_PROTO_VERSION;
	m.type = type;
	m.job = JOB;
	m.rank = rank;
	m.token = TOKEN;
	return m;
}

static size_t
ctrl_body(uint8_t *b, uint8_t vmin, uint8_t vmax, uint16_t dtypes, uint16_t ops,
	  uint16_t max_elems, uint16_t nworkers, uint16_t pool, uint16_t window,
	  uint16_t caps, uint32_t hb, uint32_t evict, uint32_t base)
{
	struct inca_ctrl_info c = {
		.ver_min = vmin, .ver_max = vmax, .dtypes = dtypes, .ops = ops,
		.max_elems = max_elems, .nworkers = nworkers, .pool_size = pool,
		.window = window, .caps = caps, .hb_ms = hb, .evict_ms = evict,
		.pool_base = base,
	};

	inca_ctrl_encode(&c, b);
	return INCA_CTRL_LEN;
}

/* Element i of a test payload of @p dtype: special values first, then a ramp. */
static void
elem(uint8_t *p, unsigned int dtype, unsigned int i, int salt)
{
	static const uint32_t i32[] = { 1, 0xfffffffe, 0x7fffffff, 0x80000000, 0, 100 };
	static const uint32_t f32[] = {
		0x3fc00000, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00000,
		0x7f7fffff, 0x00000001, 0x3dcccccd, 0xc2c80000,
	};
	static const uint16_t f16[] = {
		0x3c00, 0xc000, 0x7bff, 0x0001, 0x8000, 0x7c00, 0xfc00, 0x7e00, 0x3555,
		0x03ff, 0xfbff,
	};
	static const uint16_t b16[] = {
		0x3f80, 0xc040, 0x7f7f, 0x0001, 0x7f80, 0xff80, 0x7fc0, 0x8000, 0x3eab,
		0x007f,
	};
	static const uint64_t i64[] = { 1, 0xfffffffffffffffe, 0x7fffffffffffffff,
					0x8000000000000000, 0, 0x100000000 };
	static const uint64_t f64[] = {
		0x3ff8000000000000, 0x8000000000000000, 0x7ff0000000000000,
		0xfff0000000000000, 0x7ff8000000000000, 0x7fefffffffffffff,
		0x0000000000000001, 0x3fb999999999999a, 0xc059000000000000,
	};
	uint64_t q;
	uint32_t v;
	double d;

	switch (dtype) {
	case INCA_DTYPE_INT64:
	case INCA_DTYPE_FP64:
		d = (double)(salt + 1) * 0.125 * (double)i - 7.0;
		if (dtype == INCA_DTYPE_INT64)
			q = i < sizeof(i64) / 8 ? i64[i] :
			    (uint64_t)((int64_t)salt * 1000000000000LL + (int64_t)i * 7 - 50);
		else if (i < sizeof(f64) / 8)
			q = f64[i];
		else
			memcpy(&q, &d, 8);
		put32(p, (uint32_t)(q >> 32));
		put32(p + 4, (uint32_t)q);
		break;
	case INCA_DTYPE_INT32:
		v = i < sizeof(i32) / 4 ? i32[i] : (uint32_t)(salt * 1000 + (int)i * 7 - 50);
		put32(p, v);
		break;
	case INCA_DTYPE_FP32: {
		float f = (float)(salt + 1) * 0.25f * (float)i - 3.0f;

		if (i < sizeof(f32) / 4)
			v = f32[i];
		else
			memcpy(&v, &f, 4);
		put32(p, v);
		break;
	}
	case INCA_DTYPE_FP16:
		put16(p, i < sizeof(f16) / 2 ? f16[i] :
		      inca_fp32_to_fp16((float)i * 0.5f - (float)salt));
		break;
	default:
		put16(p, i < sizeof(b16) / 2 ? b16[i] :
		      inca_fp32_to_bf16((float)i * -0.125f + (float)salt));
		break;
	}
}

static size_t
payload(uint8_t *b, unsigned int dtype, unsigned int count, int salt)
{
	unsigned int i;

	for (i = 0; i < count; i++)
		elem(b + i * inca_dtype_size(dtype), dtype, i, salt);
	return (size_t)count * inca_dtype_size(dtype);
}

static const struct frame_opts to_agg = { 0 };
static const struct frame_opts from_agg = { .from_agg = 1 };

static void
gen_control(struct gen *g)
{
	uint8_t b[2 * INCA_CTRL_LEN];
	struct inca_msg m;
	unsigned int t;
	size_t n;

	m = hdr(INCA_MSG_HELLO, 0);
	m.job = 0;
	m.token = 0;
	n = ctrl_body(b, 1, 1, 0x000f, 0x0007, 1024, 0, 0, 0, 0, 0, 0, 0);
	msg_frame(g, &m, b, n, INCA_WIRE_OK, &to_agg);
	m.type = INCA_MSG_CAPS;
	n = ctrl_body(b, 1, 1, 0x000f, 0x0007, 4096, 0, 0, 0, INCA_CAP_MASK, 100, 1000, 0);
	msg_frame(g, &m, b, n, INCA_WIRE_OK, &from_agg);

	m = hdr(INCA_MSG_JOIN, 1);
	n = ctrl_body(b, 1, 1, 0x0001, 0x0001, 256, 2, 64, 0, 0, 0, 0, 0);
	msg_frame(g, &m, b, n, INCA_WIRE_OK, &to_agg);
	m.type = INCA_MSG_JOIN_ACK;
	m.dtype = INCA_DTYPE_BF16;
	m.op = INCA_OP_MAX;
	n = ctrl_body(b, 1, 1, 0x000c, 0x0005, 256, 2, 64, 32,
		      INCA_CAP_BFP | INCA_CAP_SEQ_CHECK, 100, 1000, 128);
	msg_frame(g, &m, b, n, INCA_WIRE_OK, &from_agg);
	/* A window with the default pool (0), and a window equal to the pool. */
	m = hdr(INCA_MSG_JOIN, INCA_MAX_WORKERS - 1);
	n = ctrl_body(b, 1, 1, 0x0002, 0x0006, 0, INCA_MAX_WORKERS, 0, 16, 0, 0, 0, 0);
	msg_frame(g, &m, b, n, INCA_WIRE_OK, &to_agg);
	m.type = INCA_MSG_JOIN_ACK;
	n = ctrl_body(b, 1, 1, 0x0002, 0x0006, INCA_MAX_ELEMS, INCA_MAX_WORKERS, 16, 16,
		      INCA_CAP_MASK, 0xffffffff, 0xfffffffe, 0xfffffffd);
	msg_frame(g, &m, b, n, INCA_WIRE_OK, &from_agg);

	/* LEAVE .. HEARTBEAT_ACK without a body and with a body of zeros. */
	for (t = INCA_MSG_LEAVE; t <= INCA_MSG_HEARTBEAT_ACK; t++) {
		m = hdr(t, 2);
		memset(b, 0, sizeof(b));
		msg_frame(g, &m, b, 0, INCA_WIRE_OK, t % 2 ? &to_agg : &from_agg);
		msg_frame(g, &m, b, INCA_CTRL_LEN, INCA_WIRE_OK, t % 2 ? &to_agg : &from_agg);
	}

	/* A NACK for every reason wire.h has; BAD_VERSION with a CAPS body. */
#define NACK_(name, v, d) \
	m = hdr(INCA_MSG_NACK, 3); \
	m.reason = v; \
	m.slot = 9; \
	m.flags = INCA_F_SET | INCA_F_RETX; \
	m.seq = 4242; \
	m.offset = 512; \
	n = v == INCA_NACK_BAD_VERSION ? \
		ctrl_body(b, 1, 1, 0x000f, 0x0007, 4096, 0, 0, 0, INCA_CAP_MASK, 100, \
			  1000, 0) : 0; \
	msg_frame(g, &m, b, n, INCA_WIRE_OK, &from_agg);
	INCA_NACK_REASONS(NACK_)
#undef NACK_
}

static void
gen_data(struct gen *g)
{
	static uint8_t b[INCA_MAX_PAYLOAD_BYTES + 64]; /* room for the over-limit cases */
	struct inca_msg m;
	unsigned int d, op;
	size_t n;

	/* Every data type with every operation, both directions. */
	for (d = 0; d < INCA_DTYPE_COUNT; d++) {
		for (op = 0; op < INCA_OP_COUNT; op++) {
			m = hdr(INCA_MSG_CONTRIB, d * 3 + op);
			m.dtype = d;
			m.op = op;
			m.slot = 3 + op;
			m.flags = op == 1 ? INCA_F_SET : 0;
			m.seq = 42 + d;
			m.offset = 256 * op;
			m.count = d == INCA_DTYPE_INT32 ? 6 : 11;
			n = payload(b, d, m.count, (int)op);
			msg_frame(g, &m, b, n, INCA_WIRE_OK, &to_agg);
		}
		m = hdr(INCA_MSG_RESULT, 1);
		m.dtype = d;
		m.op = INCA_OP_SUM;
		m.slot = 5;
		m.flags = INCA_F_SET | INCA_F_LAST | INCA_F_RETX;
		m.seq = 69;
		m.offset = 17664;
		m.count = 40;
		m.bitmap = 0x00000003;
		n = payload(b, d, m.count, 2);
		msg_frame(g, &m, b, n, INCA_WIRE_OK, &from_agg);
	}

	/* Block fixed point: int32 with a signed exponent either way. */
	m = hdr(INCA_MSG_CONTRIB, 0);
	m.flags = INCA_F_BFP;
	m.exp = -5;
	m.count = 4;
	m.seq = 1;
	n = payload(b, INCA_DTYPE_INT32, m.count, 5);
	msg_frame(g, &m, b, n, INCA_WIRE_OK, &to_agg);
	m = hdr(INCA_MSG_RESULT, 0);
	m.flags = INCA_F_BFP | INCA_F_SET;
	m.exp = 7;
	m.count = 4;
	m.seq = 1;
	m.bitmap = 0x80000001;
	msg_frame(g, &m, b, n, INCA_WIRE_OK, &from_agg);

	/* The edges of every field, and the largest payload of each size. */
	m = hdr(INCA_MSG_CONTRIB, INCA_MAX_WORKERS - 1);
	m.job = 0xffff;
	m.token = 0xffffffff;
	m.slot = 0xffff;
	m.flags = INCA_F_MASK & ~(INCA_F_BFP | INCA_F_GATHER | INCA_F_BRIEF);
	m.bitmap = UINT32_C(1) << 31; /* ROUTED: the root */
	m.exp = -128;
	m.seq = 0xffffffff;
	m.offset = 0xffffffff;
	m.dtype = INCA_DTYPE_FP16;
	m.count = INCA_MAX_ELEMS;
	n = payload(b, m.dtype, m.count, 1);
	msg_frame(g, &m, b, n, INCA_WIRE_OK, &to_agg);
	m = hdr(INCA_MSG_RESULT, 0);
	m.dtype = INCA_DTYPE_FP32;
	m.op = INCA_OP_MIN;
	m.exp = 127;
	m.count = INCA_MAX_PAYLOAD_BYTES / 4;
	m.bitmap = 0xffffffff;
	n = payload(b, m.dtype, m.count, 3);
	msg_frame(g, &m, b, n, INCA_WIRE_OK, &from_agg);
	m = hdr(INCA_MSG_CONTRIB, 4);
	m.count = INCA_PAYLOAD_LARGE;
	m.seq = 1000;
	n = payload(b, INCA_DTYPE_INT32, m.count, 4);
	msg_frame(g, &m, b, n, INCA_WIRE_OK, &to_agg);
	m.type = INCA_MSG_CONTRIB;
	m.count = 1;
	m.dtype = INCA_DTYPE_BF16;
	n = payload(b, m.dtype, m.count, 0);
	msg_frame(g, &m, b, n, INCA_WIRE_OK, &to_agg);
}

/*
 * One malformed message per message check of the spec, each broken in one
 * way only (the codec's verdict is checked in msg_frame).
 */
static void
gen_malformed(struct gen *g)
{
	static uint8_t b[INCA_MAX_PAYLOAD_BYTES + 16];
	uint8_t raw[INCA_HDR_LEN];
	struct inca_msg m, c;
	size_t n;

	/* SHORT: a header cut at 31 and at 10 bytes. */
	m = hdr(INCA_MSG_CONTRIB, 0);
	m.count = 1;
	inca_hdr_encode(&m, raw);
	raw_frame(g, raw, INCA_HDR_LEN - 1, &to_agg);
	raw_frame(g, raw, 10, &to_agg);

	m = hdr(INCA_MSG_HELLO, 0);
	m.version = INCA_PROTO_VERSION + 1;
	n = ctrl_body(b, 1, 2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
	msg_frame(g, &m, b, n, INCA_WIRE_VERSION, &to_agg);
	m.version = 0;
	msg_frame(g, &m, b, n, INCA_WIRE_VERSION, &to_agg);

	m = hdr(0, 0);
	msg_frame(g, &m, b, 0, INCA_WIRE_TYPE, &to_agg);
	m.type = INCA_MSG_MAX_;
	msg_frame(g, &m, b, 0, INCA_WIRE_TYPE, &to_agg);
	m.type = 0xff;
	msg_frame(g, &m, b, 0, INCA_WIRE_TYPE, &to_agg);

	c = hdr(INCA_MSG_CONTRIB, 0);
	c.count = 2;
	n = payload(b, INCA_DTYPE_INT32, c.count, 0);
	m = c;
	m.dtype = INCA_DTYPE_COUNT;
	msg_frame(g, &m, b, n, INCA_WIRE_DTYPE, &to_agg);
	m = c;
	m.op = INCA_OP_COUNT;
	msg_frame(g, &m, b, n, INCA_WIRE_OP, &to_agg);
	m = c;
	m.flags = INCA_F_SET | 0x80;
	msg_frame(g, &m, b, n, INCA_WIRE_FLAGS, &to_agg);
	m.flags = 0x80 | INCA_F_RETX;
	msg_frame(g, &m, b, n, INCA_WIRE_FLAGS, &to_agg);
	m = c;
	m.rank = INCA_MAX_WORKERS;
	msg_frame(g, &m, b, n, INCA_WIRE_RANK, &to_agg);
	m = c;
	m.job = 0;
	msg_frame(g, &m, b, n, INCA_WIRE_JOB, &to_agg);
	m = c;
	m.count = 0;
	msg_frame(g, &m, b, 0, INCA_WIRE_COUNT, &to_agg);
	m.dtype = INCA_DTYPE_FP32;
	m.count = INCA_MAX_PAYLOAD_BYTES / 4 + 1;
	n = payload(b, m.dtype, m.count, 0);
	msg_frame(g, &m, b, n, INCA_WIRE_COUNT, &to_agg);
	m.dtype = INCA_DTYPE_FP16;
	m.count = INCA_MAX_ELEMS + 1;
	n = payload(b, m.dtype, m.count, 0);
	msg_frame(g, &m, b, n, INCA_WIRE_COUNT, &to_agg);
	m = c;
	n = payload(b, INCA_DTYPE_INT32, c.count, 0);
	msg_frame(g, &m, b, n - 1, INCA_WIRE_LEN, &to_agg);
	msg_frame(g, &m, b, n + 4, INCA_WIRE_LEN, &to_agg);
	m.type = INCA_MSG_RESULT;
	m.reason = INCA_NACK_EVICTED;
	msg_frame(g, &m, b, n, INCA_WIRE_REASON, &from_agg);
	m = c;
	m.dtype = INCA_DTYPE_BF16;
	m.flags = INCA_F_BFP;
	n = payload(b, m.dtype, m.count, 0);
	msg_frame(g, &m, b, n, INCA_WIRE_BFP_DTYPE, &to_agg);

	/* Routed chunks: a gather's BRIEF contribution and result, a reduce's
	 * BRIEF result, and the ROUTE error of a gather without its root. */
	m = c;
	m.flags = INCA_F_ROUTED | INCA_F_GATHER | INCA_F_BRIEF;
	m.bitmap = UINT32_C(1) << ((m.rank + 1) % INCA_MAX_WORKERS);
	msg_frame(g, &m, b, 0, INCA_WIRE_OK, &to_agg);
	m.type = INCA_MSG_RESULT;
	msg_frame(g, &m, b, 0, INCA_WIRE_OK, &from_agg);
	m.flags = INCA_F_ROUTED | INCA_F_BRIEF;
	msg_frame(g, &m, b, 0, INCA_WIRE_OK, &from_agg);
	m = c;
	m.flags = INCA_F_ROUTED | INCA_F_GATHER;
	m.bitmap = 0;
	n = payload(b, m.dtype, m.count, 0);
	msg_frame(g, &m, b, n, INCA_WIRE_ROUTE, &to_agg);

	/* Control messages. */
	m = hdr(INCA_MSG_HEARTBEAT, 0);
	m.count = 1;
	msg_frame(g, &m, b, 0, INCA_WIRE_COUNT, &to_agg);
	m = hdr(INCA_MSG_JOIN, 0);
	msg_frame(g, &m, b, 0, INCA_WIRE_CTRL_LEN, &to_agg);
	m.job = 0;
	n = ctrl_body(b, 1, 1, 1, 1, 0, 2, 0, 0, 0, 0, 0, 0);
	msg_frame(g, &m, b, n, INCA_WIRE_JOB, &to_agg);
	m = hdr(INCA_MSG_HEARTBEAT, 0);
	msg_frame(g, &m, b, 16, INCA_WIRE_CTRL_LEN, &to_agg);
	m = hdr(INCA_MSG_HELLO, 0);
	memset(b, 0, INCA_CTRL_LEN + 1);
	msg_frame(g, &m, b, INCA_CTRL_LEN + 1, INCA_WIRE_CTRL_LEN, &to_agg);
	m = hdr(INCA_MSG_NACK, 0);
	msg_frame(g, &m, b, 0, INCA_WIRE_REASON, &from_agg);
	m.reason = INCA_NACK_MAX_;
	msg_frame(g, &m, b, 0, INCA_WIRE_REASON, &from_agg);

	m = hdr(INCA_MSG_JOIN, 0);
	n = ctrl_body(b, 2, 1, 1, 1, 0, 2, 0, 0, 0, 0, 0, 0);
	msg_frame(g, &m, b, n, INCA_WIRE_CTRL_FIELD, &to_agg);
	n = ctrl_body(b, 1, 1, 1, 1, 0, INCA_MAX_WORKERS + 1, 0, 0, 0, 0, 0, 0);
	msg_frame(g, &m, b, n, INCA_WIRE_CTRL_FIELD, &to_agg);
	n = ctrl_body(b, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
	msg_frame(g, &m, b, n, INCA_WIRE_CTRL_FIELD, &to_agg);
	n = ctrl_body(b, 1, 1, 1, 1, 0, 2, 8, 9, 0, 0, 0, 0);
	msg_frame(g, &m, b, n, INCA_WIRE_CTRL_FIELD, &to_agg);
	n = ctrl_body(b, 1, 1, 1, 1, INCA_MAX_ELEMS + 1, 2, 0, 0, 0, 0, 0, 0);
	msg_frame(g, &m, b, n, INCA_WIRE_CTRL_FIELD, &to_agg);
	m.type = INCA_MSG_CAPS;
	n = ctrl_body(b, 1, 1, 1, 1, 0, 0, 0, 0, INCA_CAP_MASK + 1, 0, 0, 0);
	msg_frame(g, &m, b, n, INCA_WIRE_CTRL_FIELD, &from_agg);
}

/* Other ports, captures cut short, and traffic that is not INCA. */
static void
gen_ports(struct gen *g)
{
	static uint8_t b[INCA_MAX_PAYLOAD_BYTES + 64]; /* room for the over-limit cases */
	struct frame_opts o = { 0 };
	struct inca_msg m;
	uint8_t junk[60];
	size_t n, i;

	o.port = OTHER_PORT;
	m = hdr(INCA_MSG_CONTRIB, 2);
	m.count = 8;
	m.seq = 77;
	n = payload(b, INCA_DTYPE_INT32, m.count, 1);
	msg_frame(g, &m, b, n, INCA_WIRE_OK, &o);
	m = hdr(INCA_MSG_JOIN, 2);
	n = ctrl_body(b, 1, 1, 1, 1, 64, 4, 16, 8, 0, 0, 0, 0);
	msg_frame(g, &m, b, n, INCA_WIRE_OK, &o);
	o.from_agg = 1;
	m = hdr(INCA_MSG_HEARTBEAT_ACK, 2);
	msg_frame(g, &m, b, 0, INCA_WIRE_OK, &o);
	m = hdr(INCA_MSG_NACK, 2);
	m.reason = INCA_NACK_TOO_LARGE;
	msg_frame(g, &m, b, 0, INCA_WIRE_OK, &o);
	/* Malformed on another port: the heuristic must not claim these. */
	m = hdr(INCA_MSG_CONTRIB, 2);
	m.count = 8;
	msg_frame(g, &m, b, 4, INCA_WIRE_LEN, &o);
	m.count = 0;
	msg_frame(g, &m, b, 0, INCA_WIRE_COUNT, &o);
	m.count = 1;
	m.rank = INCA_MAX_WORKERS;
	msg_frame(g, &m, b, 4, INCA_WIRE_RANK, &o);
	m.rank = 2;
	m.reason = INCA_NACK_JOB_FULL;
	msg_frame(g, &m, b, 4, INCA_WIRE_REASON, &o);
	m = hdr(INCA_MSG_HEARTBEAT, 2);
	m.count = 1;
	msg_frame(g, &m, b, 0, INCA_WIRE_COUNT, &o);
	m = hdr(INCA_MSG_JOIN, 2);
	msg_frame(g, &m, b, 0, INCA_WIRE_CTRL_LEN, &o);
	m.job = 0;
	n = ctrl_body(b, 1, 1, 1, 1, 64, 4, 16, 8, 0, 0, 0, 0);
	msg_frame(g, &m, b, n, INCA_WIRE_JOB, &o);
	m = hdr(INCA_MSG_LEAVE, 2);
	msg_frame(g, &m, b, 8, INCA_WIRE_CTRL_LEN, &o);
	m = hdr(INCA_MSG_NACK, 2);
	msg_frame(g, &m, b, 0, INCA_WIRE_REASON, &o);
	m.reason = INCA_NACK_MAX_;
	msg_frame(g, &m, b, 0, INCA_WIRE_REASON, &o);
	m.reason = INCA_NACK_EVICTED;
	m.flags = 0x80;
	msg_frame(g, &m, b, 0, INCA_WIRE_FLAGS, &o);
	m.flags = 0;
	m.version = INCA_PROTO_VERSION + 1;
	msg_frame(g, &m, b, 0, INCA_WIRE_VERSION, &o);
	m.version = INCA_PROTO_VERSION;
	m.type = INCA_MSG_MAX_;
	m.reason = 0;
	msg_frame(g, &m, b, 0, INCA_WIRE_TYPE, &o);
	m = hdr(INCA_MSG_RESULT, 2);
	m.count = 1;
	m.dtype = INCA_DTYPE_COUNT;
	msg_frame(g, &m, b, 4, INCA_WIRE_DTYPE, &o);
	m.dtype = INCA_DTYPE_INT32;
	m.op = INCA_OP_COUNT;
	msg_frame(g, &m, b, 4, INCA_WIRE_OP, &o);
	m.op = INCA_OP_SUM;
	m.dtype = INCA_DTYPE_FP16;
	m.count = INCA_MAX_ELEMS + 1;
	n = payload(b, m.dtype, m.count, 0);
	msg_frame(g, &m, b, n, INCA_WIRE_COUNT, &o);
	m.dtype = INCA_DTYPE_FP32;
	m.count = INCA_MAX_PAYLOAD_BYTES / 4 + 1;
	n = payload(b, m.dtype, m.count, 0);
	msg_frame(g, &m, b, n, INCA_WIRE_COUNT, &o);
	inca_hdr_encode(&m, b);
	raw_frame(g, b, INCA_HDR_LEN - 1, &o);
	/* Well-formed on another port at the edges the heuristic checks. */
	m.dtype = INCA_DTYPE_FP16;
	m.count = INCA_MAX_ELEMS;
	n = payload(b, m.dtype, m.count, 0);
	msg_frame(g, &m, b, n, INCA_WIRE_OK, &o);
	m = hdr(INCA_MSG_LEAVE_ACK, INCA_MAX_WORKERS - 1);
	memset(b, 0, INCA_CTRL_LEN);
	msg_frame(g, &m, b, INCA_CTRL_LEN, INCA_WIRE_OK, &o);
	m = hdr(INCA_MSG_CAPS, 0);
	m.job = 0;
	n = ctrl_body(b, 1, 1, 1, 1, 64, 0, 0, 0, INCA_CAP_BFP, 50, 500, 0);
	msg_frame(g, &m, b, n, INCA_WIRE_OK, &o);

	o.not_inca = 1;
	o.from_agg = 0;
	for (i = 0; i < sizeof(junk); i++)
		junk[i] = (uint8_t)("not INCA: some other datagram on a UDP port"[i % 44]);
	raw_frame(g, junk, sizeof(junk), &o);
	junk[0] = INCA_PROTO_VERSION;	/* a version byte alone is not enough */
	raw_frame(g, junk, sizeof(junk), &o);

	/* The snaplen cut the header, or the payload. */
	m = hdr(INCA_MSG_CONTRIB, 1);
	m.count = 256;
	n = payload(b, INCA_DTYPE_INT32, m.count, 1);
	o = to_agg;
	o.snap = INCA_ENCAP_LEN + 20;
	msg_frame(g, &m, b, n, INCA_WIRE_OK, &o);
	o.snap = INCA_ENCAP_LEN + INCA_HDR_LEN + 4 * 5 + 2;
	msg_frame(g, &m, b, n, INCA_WIRE_OK, &o);
	m = hdr(INCA_MSG_JOIN_ACK, 1);
	n = ctrl_body(b, 1, 1, 1, 1, 64, 4, 16, 8, 0, 0, 0, 0);
	o.from_agg = 1;
	o.snap = INCA_ENCAP_LEN + INCA_HDR_LEN + 10;
	msg_frame(g, &m, b, n, INCA_WIRE_OK, &o);
}

/* The 16-byte RoCEv2 extension after a control body of @p b (32 bytes). */
static size_t
roce_ext(uint8_t *b, uint32_t qpn, uint32_t qkey)
{
	struct inca_roce_ext x = { .qpn = qpn, .qkey = qkey };

	inca_roce_ext_encode(&x, b + INCA_CTRL_LEN);
	return INCA_CTRL_LEN + INCA_ROCE_EXT_LEN;
}

/*
 * JOIN and JOIN_ACK binding a queue pair (docs/protocol.md, "Binding a
 * queue pair at JOIN"), at the edges of its fields, and broken: every
 * CTRL_FIELD reason of the extension and every body length it can get
 * wrong.
 */
static void
gen_roce_ext(struct gen *g)
{
	uint8_t b[2 * INCA_CTRL_LEN + INCA_ROCE_EXT_LEN];
	struct frame_opts o = { .port = OTHER_PORT };
	struct inca_msg m;
	size_t n;

	m = hdr(INCA_MSG_JOIN, 1);
	ctrl_body(b, 2, 2, 0x000d, 0x0001, 248, 4, 64, 32, 0, 0, 0, 0);
	n = roce_ext(b, WORKER_QPN + 1, WORKER_QKEY + 1);
	msg_frame(g, &m, b, n, INCA_WIRE_OK, &to_agg);
	m.type = INCA_MSG_JOIN_ACK;
	ctrl_body(b, 2, 2, 0x000d, 0x0001, 248, 4, 64, 32, INCA_CAP_ROCE | INCA_CAP_SEQ_CHECK,
		  100, 1000, 64);
	n = roce_ext(b, AGG_QPN, AGG_QKEY);
	msg_frame(g, &m, b, n, INCA_WIRE_OK, &from_agg);
	m = hdr(INCA_MSG_JOIN, 2);
	ctrl_body(b, 2, 2, 0x0001, 0x0001, 0, 4, 0, 0, 0, 0, 0, 0);
	n = roce_ext(b, INCA_ROCE_QPN_MIN, 0x7fffffff);
	msg_frame(g, &m, b, n, INCA_WIRE_OK, &to_agg);
	m.type = INCA_MSG_JOIN_ACK;
	n = roce_ext(b, INCA_ROCE_QPN_MAX, 0);
	msg_frame(g, &m, b, n, INCA_WIRE_OK, &from_agg);
	/* Well-formed on another port: the heuristic takes the longer body. */
	m = hdr(INCA_MSG_JOIN, 3);
	ctrl_body(b, 2, 2, 0x0001, 0x0001, 64, 4, 16, 8, 0, 0, 0, 0);
	n = roce_ext(b, WORKER_QPN + 3, WORKER_QKEY);
	msg_frame(g, &m, b, n, INCA_WIRE_OK, &o);

	/* CTRL_FIELD: each field of the extension, then a bad control body
	 * in front of a good extension (one reason for the body). */
	m = hdr(INCA_MSG_JOIN, 1);
	ctrl_body(b, 2, 2, 0x0001, 0x0001, 0, 4, 0, 0, 0, 0, 0, 0);
	n = roce_ext(b, INCA_ROCE_QPN_MIN - 1, WORKER_QKEY);
	msg_frame(g, &m, b, n, INCA_WIRE_CTRL_FIELD, &to_agg);
	n = roce_ext(b, 0, WORKER_QKEY);
	msg_frame(g, &m, b, n, INCA_WIRE_CTRL_FIELD, &to_agg);
	n = roce_ext(b, INCA_ROCE_QPN_MAX + 1, WORKER_QKEY);
	msg_frame(g, &m, b, n, INCA_WIRE_CTRL_FIELD, &to_agg);
	n = roce_ext(b, WORKER_QPN, 0x80000000u);
	msg_frame(g, &m, b, n, INCA_WIRE_CTRL_FIELD, &to_agg);
	n = roce_ext(b, WORKER_QPN, WORKER_QKEY);
	b[INCA_CTRL_LEN + INCA_ROCE_EXT_LEN - 1] = 1;
	msg_frame(g, &m, b, n, INCA_WIRE_CTRL_FIELD, &to_agg);
	m.type = INCA_MSG_JOIN_ACK;
	n = roce_ext(b, AGG_QPN, AGG_QKEY);
	b[INCA_CTRL_LEN + 8] = 0x80;
	msg_frame(g, &m, b, n, INCA_WIRE_CTRL_FIELD, &from_agg);
	m.type = INCA_MSG_JOIN;
	ctrl_body(b, 2, 2, 0x0001, 0x0001, 0, 0, 0, 0, 0, 0, 0, 0);
	n = roce_ext(b, WORKER_QPN, WORKER_QKEY);
	msg_frame(g, &m, b, n, INCA_WIRE_CTRL_FIELD, &to_agg);

	/* CTRL_LEN: the extension where no extension goes, or cut. */
	ctrl_body(b, 2, 2, 0x0001, 0x0001, 0, 4, 0, 0, 0, 0, 0, 0);
	n = roce_ext(b, WORKER_QPN, WORKER_QKEY);
	msg_frame(g, &m, b, n - 8, INCA_WIRE_CTRL_LEN, &to_agg);
	memset(b + n, 0, INCA_CTRL_LEN - INCA_ROCE_EXT_LEN);
	msg_frame(g, &m, b, 2 * INCA_CTRL_LEN, INCA_WIRE_CTRL_LEN, &to_agg);
	m = hdr(INCA_MSG_HELLO, 0);
	m.job = 0;
	msg_frame(g, &m, b, n, INCA_WIRE_CTRL_LEN, &to_agg);
	m.type = INCA_MSG_CAPS;
	ctrl_body(b, 2, 2, 0x000f, 0x0007, 4096, 0, 0, 0, INCA_CAP_MASK, 100, 1000, 0);
	msg_frame(g, &m, b, n, INCA_WIRE_CTRL_LEN, &from_agg);
	m = hdr(INCA_MSG_HEARTBEAT, 1);
	memset(b, 0, n);
	roce_ext(b, WORKER_QPN, WORKER_QKEY);
	msg_frame(g, &m, b, n, INCA_WIRE_CTRL_LEN, &to_agg);
}

/* How a RoCEv2 frame departs from a valid one; all zero: valid. */
struct roce_opts {
	int from_agg;
	uint8_t opcode;		/* 0: UD SEND only */
	uint8_t tver;
	uint16_t pkey;		/* 0: the default partition */
	int set_pad;		/* write pad as the pad count, not what encap computed */
	uint8_t pad;
	size_t cut;		/* bytes taken off the end of the padded payload */
	int shift;		/* the message moved: -8 without DETH (RC), 4 after ImmDt */
	int bad_icrc;
	int rerouted;		/* a router changed what the ICRC leaves out */
};

/*
 * The ICRC of an untagged RoCEv2 frame of @p len bytes (ICRC included), by
 * the spec's definition and with zlib's CRC-32, so that it shares nothing
 * with the dissector or the codec: over 8 bytes of ones, the IPv4 and UDP
 * headers and BTH to the end of the payload, with the fields routers may
 * change as ones.
 */
static uint32_t
roce_icrc(const uint8_t *frame, size_t len)
{
	static uint8_t buf[8 + FRAME_CAP];
	size_t n = len - ETH_LEN - INCA_ICRC_LEN;
	uint8_t *ip = buf + 8, *udp = ip + IPV4_LEN, *bth = udp + UDP_LEN;

	memset(buf, 0xff, 8);
	memcpy(ip, frame + ETH_LEN, n);
	ip[1] = 0xff;			/* DSCP, ECN */
	ip[8] = 0xff;			/* TTL */
	ip[10] = ip[11] = 0xff;		/* header checksum */
	udp[6] = udp[7] = 0xff;		/* checksum */
	bth[4] = 0xff;			/* FECN, BECN, reserved */
	return (uint32_t)crc32(crc32(0L, Z_NULL, 0), buf, (uInt)(8 + n));
}

static uint32_t
le32_at(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/*
 * An INCA message (@p msg, @p msg_len bytes, possibly shorter than a
 * header) as the payload of a RoCEv2 UD SEND built with inca_roce_encap(),
 * changed as @p o says. The verdict of the receiver's checks in the spec's
 * order (frame, inca_roce_parse, the ICRC computed here, inca_msg_decode)
 * must be @p want.
 */
static void
roce_frame(struct gen *g, const uint8_t *msg, size_t msg_len, enum inca_wire_err want,
	   const struct roce_opts *o)
{
	static uint8_t frame[FRAME_CAP];
	uint8_t *ip = frame + ETH_LEN, *pl = frame + INCA_ENCAP_LEN;
	unsigned int rank = msg_len >= 8 ? msg[7] & 0x1f : 0;
	uint8_t worker_mac[6] = { 0x02, 0x77, 0, 0, 0, 0x0a + rank };
	uint32_t wip = WORKER_IP + rank, icrc, good;
	struct inca_roce_info ri, r;
	const uint8_t *rmsg;
	size_t len, flen, payload, shown, rlen;
	enum inca_wire_err err;
	struct inca_frame f;
	struct inca_msg d;
	unsigned int pad;
	uint16_t sport;
	int data, claim;

	data = msg_len >= 2 && (msg[1] == INCA_MSG_CONTRIB || msg[1] == INCA_MSG_RESULT);
	memset(&ri, 0, sizeof(ri));
	ri.opcode = o->opcode ? o->opcode : INCA_ROCE_OP_UD_SEND_ONLY;
	ri.pkey = o->pkey ? o->pkey : INCA_ROCE_PKEY;
	ri.dqpn = o->from_agg ? WORKER_QPN + rank : AGG_QPN;
	ri.qkey = o->from_agg ? WORKER_QKEY + rank : AGG_QKEY;
	ri.sqpn = o->from_agg ? AGG_QPN : WORKER_QPN + rank;
	ri.psn = data && msg_len >= 20 ? get(msg + 16, 4) & 0xffffff : 0;
	memcpy(pl + INCA_ROCE_HDR_LEN, msg, msg_len);
	len = inca_roce_encap(pl, &ri, msg_len) - o->cut;
	if (o->shift) {
		/* Where the opcode's own headers put the payload, so that only
		 * the opcode says the packet is not INCA's. */
		memmove(pl + INCA_ROCE_HDR_LEN + o->shift, pl + INCA_ROCE_HDR_LEN,
			len - INCA_ROCE_HDR_LEN - INCA_ICRC_LEN);
		if (o->shift > 0)
			put32(pl + INCA_ROCE_HDR_LEN, 0x494e4341);	/* ImmDt */
		len += o->shift;
	}
	pl[1] |= o->tver;
	if (o->set_pad)
		pl[1] = (uint8_t)((pl[1] & ~0x30) | o->pad << 4);

	/* incad's source port for a pair of queue pairs; RoCEv2 senders send
	 * no UDP checksum. */
	sport = (uint16_t)(49152 + ((ri.sqpn ^ ri.dqpn) % 16384));
	if (o->from_agg)
		flen = inca_frame_build(frame, worker_mac, agg_mac, AGG_IP, wip, sport,
					INCA_ROCE_PORT, len);
	else
		flen = inca_frame_build(frame, agg_mac, worker_mac, wip, AGG_IP, sport,
					INCA_ROCE_PORT, len);
	if (flen == 0)
		die("frame %u: cannot build", g->frames + 1);
	put16(frame + INCA_ENCAP_LEN - 2, 0);
	good = roce_icrc(frame, flen);
	icrc = o->bad_icrc ? good ^ 0x00000100u : good;
	if (o->rerouted) {
		/* DSCP 26 with ECN CE, one hop less, BECN: none of it is in the
		 * ICRC, all of it a router may change. */
		ip[1] = 26 << 2 | 3;
		ip[8]--;
		put16(ip + 10, 0);
		put16(ip + 10, inca_csum(ip, IPV4_LEN, 0));
		pl[4] |= 0x40;
	}
	frame[flen - 4] = icrc & 0xff;
	frame[flen - 3] = (icrc >> 8) & 0xff;
	frame[flen - 2] = (icrc >> 16) & 0xff;
	frame[flen - 1] = icrc >> 24;

	err = inca_frame_parse(frame, flen, INCA_ROCE_PORT, &f);
	if (err != INCA_WIRE_OK)
		die("frame %u: RoCEv2 frame fails the frame checks: %s", g->frames + 1,
		    inca_wire_err_name(err));
	err = inca_roce_parse(f.msg, f.msg_len, &r, &rmsg, &rlen);
	if (err == INCA_WIRE_OK && le32_at(frame + flen - 4) != roce_icrc(frame, flen))
		err = INCA_WIRE_ROCE_ICRC;
	if (err == INCA_WIRE_OK)
		err = inca_msg_decode(rmsg, rlen, 0, &d);
	if (err != want)
		die("frame %u: the checks say %s, the case was written for %s", g->frames + 1,
		    inca_wire_err_name(err), inca_wire_err_name(want));

	/* What the dissector shows as the message: the payload without its
	 * pad, unless the pad count would cut into the header (ROCE_PAD). */
	payload = len - INCA_ROCE_HDR_LEN - INCA_ICRC_LEN;
	pad = (pl[1] >> 4) & 3;
	shown = payload - pad >= INCA_HDR_LEN ? payload - pad : payload;
	claim = pl[0] == INCA_ROCE_OP_UD_SEND_ONLY && payload >= 2 &&
		msg[0] == INCA_PROTO_VERSION && msg[1] >= 1 && msg[1] < INCA_MSG_MAX_;
	expect_msg(g, msg, shown < msg_len ? shown : msg_len);
	kv(g, "errors", "%s", err == INCA_WIRE_OK ? "" : inca_wire_err_name(err));
	kv(g, "roce", "1");
	kv(g, "claim", "%d", claim);
	if (claim) {
		/* BTH and DETH as the bytes say, as Wireshark's InfiniBand
		 * dissector names them. */
		kv(g, "infiniband.bth.opcode", "%u", pl[0]);
		kv(g, "infiniband.bth.padcnt", "%u", pad);
		kv(g, "infiniband.bth.tver", "%u", pl[1] & 0x0f);
		kv(g, "infiniband.bth.p_key", "%u", get(pl + 2, 2));
		kv(g, "infiniband.bth.destqp", "%u", get(pl + 5, 3));
		kv(g, "infiniband.bth.psn", "%u", get(pl + 9, 3));
		kv(g, "infiniband.deth.q_key", "%u", get(pl + 12, 4));
		kv(g, "infiniband.deth.srcqp", "%u", get(pl + 17, 3));
		kv(g, "inca.roce.icrc", "%u", icrc);
		kv(g, "inca.roce.icrc.computed", "%u", good);
	}
	emit(g, frame, flen, flen, INCA_ROCE_PORT, 0, shown);
}

/* A message from a header and a body, for roce_frame(). */
static size_t
build_msg(uint8_t *buf, const struct inca_msg *m, const void *body, size_t body_len)
{
	inca_hdr_encode(m, buf);
	memcpy(buf + INCA_HDR_LEN, body, body_len);
	return INCA_HDR_LEN + body_len;
}

/*
 * RoCEv2 (docs/protocol.md, "RoCEv2 transport"): data messages of both
 * directions, padded and not, then one malformed frame per RoCEv2 check,
 * each broken in that way only (the others hold, the ICRC is right), and
 * messages the message checks refuse inside a good envelope. ROCE_QPN and
 * ROCE_QKEY have no frame: any queue pair or Q_Key is some aggregator's.
 */
static void
gen_roce(struct gen *g)
{
	static uint8_t b[INCA_MAX_PAYLOAD_BYTES], mb[INCA_HDR_LEN + INCA_MAX_PAYLOAD_BYTES];
	struct roce_opts w = { 0 }, a = { .from_agg = 1 }, o;
	struct inca_msg m;
	size_t n;

	m = hdr(INCA_MSG_CONTRIB, 3);
	m.slot = 2;
	m.seq = 0x01000005;	/* the PSN is its low 24 bits */
	m.count = 6;
	n = payload(b, INCA_DTYPE_INT32, m.count, 1);
	roce_frame(g, mb, build_msg(mb, &m, b, n), INCA_WIRE_OK, &w);
	m.type = INCA_MSG_RESULT;
	m.flags = INCA_F_SET | INCA_F_LAST;
	m.count = 40;
	m.bitmap = 0x0000000f;
	n = payload(b, INCA_DTYPE_INT32, m.count, 2);
	roce_frame(g, mb, build_msg(mb, &m, b, n), INCA_WIRE_OK, &a);
	/* Odd counts of 16-bit elements: 2 bytes of pad. */
	m = hdr(INCA_MSG_CONTRIB, 1);
	m.dtype = INCA_DTYPE_FP16;
	m.slot = 7;
	m.seq = 99;
	m.count = 7;
	n = payload(b, m.dtype, m.count, 0);
	roce_frame(g, mb, build_msg(mb, &m, b, n), INCA_WIRE_OK, &w);
	m.type = INCA_MSG_RESULT;
	m.flags = INCA_F_RETX;
	m.bitmap = 0x3;
	roce_frame(g, mb, build_msg(mb, &m, b, n), INCA_WIRE_OK, &a);
	m = hdr(INCA_MSG_CONTRIB, 0);
	m.dtype = INCA_DTYPE_BF16;
	m.op = INCA_OP_MAX;
	m.count = 1;
	n = payload(b, m.dtype, m.count, 3);
	roce_frame(g, mb, build_msg(mb, &m, b, n), INCA_WIRE_OK, &w);
	/* The largest fp32 RESULT of a 1024-byte RoCE MTU, and a data NACK. */
	m = hdr(INCA_MSG_RESULT, 2);
	m.dtype = INCA_DTYPE_FP32;
	m.count = 248;
	m.bitmap = 0x7;
	n = payload(b, m.dtype, m.count, 1);
	roce_frame(g, mb, build_msg(mb, &m, b, n), INCA_WIRE_OK, &a);
	m = hdr(INCA_MSG_NACK, 2);
	m.reason = INCA_NACK_MISMATCH;
	m.slot = 4;
	m.seq = 17;
	roce_frame(g, mb, build_msg(mb, &m, b, 0), INCA_WIRE_OK, &a);
	/* Rewritten on the way by what the ICRC leaves out: still valid. */
	m = hdr(INCA_MSG_CONTRIB, 4);
	m.count = 3;
	n = payload(b, INCA_DTYPE_INT32, m.count, 0);
	o = w;
	o.rerouted = 1;
	roce_frame(g, mb, build_msg(mb, &m, b, n), INCA_WIRE_OK, &o);

	/* ROCE_SHORT: a header cut to whole words, and to version and type. */
	m = hdr(INCA_MSG_CONTRIB, 5);
	m.count = 1;
	inca_hdr_encode(&m, mb);
	roce_frame(g, mb, INCA_HDR_LEN - 4, INCA_WIRE_ROCE_SHORT, &w);
	roce_frame(g, mb, 2, INCA_WIRE_ROCE_SHORT, &w);
	/* ROCE_OPCODE: a UD SEND with immediate and an RC SEND only, each with
	 * the message where its opcode puts a payload (after ImmDt; after BTH,
	 * as RC has no DETH), and a CNP. */
	m.count = 2;
	n = build_msg(mb, &m, b, payload(b, INCA_DTYPE_INT32, 2, 0));
	o = w;
	o.opcode = 0x65;
	o.shift = 4;
	roce_frame(g, mb, n, INCA_WIRE_ROCE_OPCODE, &o);
	o.opcode = 0x04;
	o.shift = -INCA_DETH_LEN;
	roce_frame(g, mb, n, INCA_WIRE_ROCE_OPCODE, &o);
	o.opcode = 0x81;
	o.shift = 0;
	roce_frame(g, mb, n, INCA_WIRE_ROCE_OPCODE, &o);
	m.count = 1;
	n = build_msg(mb, &m, b, payload(b, INCA_DTYPE_INT32, 1, 0));
	/* ROCE_TVER, ROCE_PKEY: another version, another partition, and the
	 * default partition as a limited member. */
	o = w;
	o.tver = 1;
	roce_frame(g, mb, n, INCA_WIRE_ROCE_TVER, &o);
	o = w;
	o.pkey = 0xfffe;
	roce_frame(g, mb, n, INCA_WIRE_ROCE_PKEY, &o);
	o.pkey = 0x7fff;
	roce_frame(g, mb, n, INCA_WIRE_ROCE_PKEY, &o);
	/* ROCE_PAD: a payload that is not whole words (3 fp16 elements sent
	 * without their pad), and a pad count that eats into the header. */
	m = hdr(INCA_MSG_CONTRIB, 6);
	m.dtype = INCA_DTYPE_FP16;
	m.count = 3;
	o = w;
	o.set_pad = 1;
	o.pad = 0;
	o.cut = 2;
	roce_frame(g, mb, build_msg(mb, &m, b, payload(b, m.dtype, 3, 0)), INCA_WIRE_ROCE_PAD,
		   &o);
	m = hdr(INCA_MSG_HEARTBEAT, 6);
	o = w;
	o.set_pad = 1;
	o.pad = 1;
	roce_frame(g, mb, build_msg(mb, &m, b, 0), INCA_WIRE_ROCE_PAD, &o);
	/* ROCE_ICRC: an int32 CONTRIB and a padded fp16 RESULT. */
	m = hdr(INCA_MSG_CONTRIB, 7);
	m.count = 2;
	o = w;
	o.bad_icrc = 1;
	roce_frame(g, mb, build_msg(mb, &m, b, payload(b, INCA_DTYPE_INT32, 2, 0)),
		   INCA_WIRE_ROCE_ICRC, &o);
	m.type = INCA_MSG_RESULT;
	m.dtype = INCA_DTYPE_FP16;
	m.count = 5;
	o = a;
	o.bad_icrc = 1;
	roce_frame(g, mb, build_msg(mb, &m, b, payload(b, m.dtype, 5, 0)), INCA_WIRE_ROCE_ICRC,
		   &o);

	/* The message checks on the payload without its pad: a body 2 bytes
	 * short of count x size (the pad does not make up for it), flags. */
	m = hdr(INCA_MSG_CONTRIB, 8);
	m.dtype = INCA_DTYPE_FP16;
	m.count = 4;
	roce_frame(g, mb, build_msg(mb, &m, b, payload(b, m.dtype, 3, 0)), INCA_WIRE_LEN, &w);
	m.flags = 0x80;
	roce_frame(g, mb, build_msg(mb, &m, b, payload(b, m.dtype, 4, 0)), INCA_WIRE_FLAGS, &w);
}

/*
 * Valid messages with random bytes changed, cut or extended: the dissector
 * must agree with the codec on whether each is valid and never fail.
 */
static void
gen_fuzz(struct gen *g)
{
	static uint8_t b[INCA_HDR_LEN + 1200];
	unsigned int i, k, flips;
	struct inca_msg m;
	size_t len;

	g->fuzz = 1;
	for (i = 0; i < FUZZ_FRAMES; i++) {
		unsigned int type = 1 + rnd(g) % (INCA_MSG_MAX_ - 1);

		m = hdr(type, rnd(g) % INCA_MAX_WORKERS);
		if (type == INCA_MSG_CONTRIB || type == INCA_MSG_RESULT) {
			m.dtype = rnd(g) % INCA_DTYPE_COUNT;
			m.op = rnd(g) % INCA_OP_COUNT;
			m.count = 1 + rnd(g) % 64;
			len = payload(b + INCA_HDR_LEN, m.dtype, m.count, (int)(rnd(g) % 5));
		} else {
			len = ctrl_body(b + INCA_HDR_LEN, 1, 1, rnd(g) & 0xf, rnd(g) & 7,
					rnd(g) % 300, rnd(g) % 33, 8, rnd(g) % 9,
					rnd(g) & INCA_CAP_MASK, 100, 1000, 0);
			if (type == INCA_MSG_NACK)
				m.reason = 1 + rnd(g) % (INCA_NACK_MAX_ - 1);
		}
		inca_hdr_encode(&m, b);
		len += INCA_HDR_LEN;
		flips = rnd(g) % 4;
		for (k = 0; k < flips; k++) {
			unsigned int at = rnd(g) % (len < 64 ? len : 64);

			if (rnd(g) % 3 == 0)
				b[at] = (uint8_t)rnd(g);
			else
				b[at] ^= (uint8_t)(1u << rnd(g) % 8);
		}
		switch (rnd(g) % 6) {
		case 0:
			len = 1 + rnd(g) % (len - 1);
			break;
		case 1:
			len += rnd(g) % 16;
			if (len > sizeof(b))
				len = sizeof(b);
			break;
		default:
			break;
		}
		raw_frame(g, b, len, &to_agg);
	}
}

static void
print_tables(void)
{
	unsigned int v;

	printf("const\tPROTO_VERSION\t%d\n", INCA_PROTO_VERSION);
	printf("const\tUDP_PORT\t%d\n", INCA_UDP_PORT);
	printf("const\tHDR_LEN\t%d\n", INCA_HDR_LEN);
	printf("const\tCTRL_LEN\t%d\n", INCA_CTRL_LEN);
	printf("const\tMAX_WORKERS\t%d\n", INCA_MAX_WORKERS);
	printf("const\tMAX_ELEMS\t%d\n", INCA_MAX_ELEMS);
	printf("const\tMAX_PAYLOAD_BYTES\t%d\n", INCA_MAX_PAYLOAD_BYTES);
	printf("const\tROCE_PORT\t%d\n", INCA_ROCE_PORT);
#define TYPE_(n, v, d) printf("type\t%d\t%s\t%s\n", v, #n, d);
	INCA_MSG_TYPES(TYPE_)
#undef TYPE_
#define DTYPE_(n, v, s) printf("dtype\t%d\t%s\t%d\n", v, inca_dtype_name(v), s);
	INCA_DTYPES(DTYPE_)
#undef DTYPE_
#define OP_(n, v) printf("op\t%d\t%s\n", v, inca_op_name(v));
	INCA_OPS(OP_)
#undef OP_
	printf("reason\t%d\tNONE\tnot a NACK\n", INCA_NACK_NONE);
#define NACK_(n, v, d) printf("reason\t%d\t%s\t%s\n", v, #n, d);
	INCA_NACK_REASONS(NACK_)
#undef NACK_
	/* Flags and capabilities are plain macros: the test checks that these
	 * lines cover the masks, so a new bit cannot be left out here. */
	printf("flag\t%d\tSET\n", INCA_F_SET);
	printf("flag\t%d\tRETX\n", INCA_F_RETX);
	printf("flag\t%d\tLAST\n", INCA_F_LAST);
	printf("flag\t%d\tBFP\n", INCA_F_BFP);
	printf("flag\t%d\tROUTED\n", INCA_F_ROUTED);
	printf("flag\t%d\tGATHER\n", INCA_F_GATHER);
	printf("flag\t%d\tBRIEF\n", INCA_F_BRIEF);
	printf("flagmask\t%d\n", INCA_F_MASK);
	printf("cap\t%d\tNATIVE_FLOAT\n", INCA_CAP_NATIVE_FLOAT);
	printf("cap\t%d\tBFP\n", INCA_CAP_BFP);
	printf("cap\t%d\tSEQ_CHECK\n", INCA_CAP_SEQ_CHECK);
	printf("cap\t%d\tFIXED_COUNT\n", INCA_CAP_FIXED_COUNT);
	printf("cap\t%d\tROCE\n", INCA_CAP_ROCE);
	printf("cap\t%d\tROUTED\n", INCA_CAP_ROUTED);
	printf("capmask\t%d\n", INCA_CAP_MASK);
	for (v = INCA_WIRE_SHORT; v < INCA_WIRE_ERR_COUNT; v++)
		printf("wireerr\t%u\t%s\t%s\n", v, inca_wire_err_name(v), inca_wire_err_str(v));
}

int
main(int argc, char **argv)
{
	struct gen g;

	if (argc == 2 && strcmp(argv[1], "tables") == 0) {
		print_tables();
		return fflush(stdout) == 0 ? 0 : 1;
	}
	if (argc < 4 || argc > 5 || strcmp(argv[1], "pcap") != 0) {
		fprintf(stderr, "usage: %s tables | pcap CAPTURE EXPECT [SEED]\n", argv[0]);
		return 2;
	}
	memset(&g, 0, sizeof(g));
	g.rng = argc == 5 ? strtoull(argv[4], NULL, 0) : 0x1c4a2026;
	if (g.rng == 0)
		g.rng = 1;
	g.pcap = fopen(argv[2], "wb");
	g.expect = fopen(argv[3], "w");
	if (g.pcap == NULL || g.expect == NULL)
		die("open: %s", strerror(errno));
	pcap_header(g.pcap);
	gen_control(&g);
	gen_data(&g);
	gen_malformed(&g);
	gen_ports(&g);
	gen_roce_ext(&g);
	gen_roce(&g);
	gen_fuzz(&g);
	if (fclose(g.pcap) != 0 || fclose(g.expect) != 0)
		die("close: %s", strerror(errno));
	return 0;
}

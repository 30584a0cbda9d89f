/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * Communicator life cycle: options, creation, the HELLO / JOIN handshake,
 * LEAVE, statistics, errors, version and logging.
 */

#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <arpa/inet.h>

#include "inca_int.h"

#define STR_(x) #x
#define STR(x) STR_(x)

/* ---- version, errors, logging ------------------------------------------ */

const char *
inca_version_string(void)
{
	return STR(INCA_VERSION_MAJOR) "." STR(INCA_VERSION_MINOR) "." STR(INCA_VERSION_PATCH);
}

const char *
inca_strerror(int err)
{
	switch (err) {
#define INCA_X_(n, v, d) case v: return d;
	INCA_ERRORS(INCA_X_)
#undef INCA_X_
	default:
		return "unknown error";
	}
}

static const char *const stats_names[] = {
#define INCA_X_(n, d) #n,
	INCA_STATS_FIELDS(INCA_X_)
#undef INCA_X_
};

const char *
inca_stats_name(unsigned i)
{
	return i < sizeof(stats_names) / sizeof(stats_names[0]) ? stats_names[i] : NULL;
}

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static inca_log_fn *log_fn;
static void *log_ctx;
static int log_level = INCA_LOG_INFO;

void
inca_set_log_fn(inca_log_fn *fn, void *ctx, int max_level)
{
	pthread_mutex_lock(&log_lock);
	log_fn = fn;
	log_ctx = ctx;
	log_level = max_level;
	pthread_mutex_unlock(&log_lock);
}

void
li_log(int level, const char *fmt, ...)
{
	inca_log_fn *fn;
	void *ctx;
	char line[256];
	va_list ap;

	pthread_mutex_lock(&log_lock);
	fn = log_fn;
	ctx = log_ctx;
	if (level > log_level)
		fn = NULL;
	pthread_mutex_unlock(&log_lock);
	if (fn == NULL)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fn(ctx, level, line);
}

uint64_t
li_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- options ---------------------------------------------------------- */

void
inca_comm_opts_init_sized(struct inca_comm_opts *o, size_t size)
{
	if (o == NULL || size < sizeof(o->struct_size))
		return;
	if (size > sizeof(*o))
		size = sizeof(*o);
	memset(o, 0, size);
	o->struct_size = (uint32_t)size;
	/* float_mode is 0 (INCA_FLOAT_AUTO) by the memset. */
}

/*
 * The caller's options as this library knows them: the first struct_size
 * bytes, the rest (fields newer than the caller) zero, i.e. defaults.
 */
static int
opts_import(const struct inca_comm_opts *in, struct inca_comm_opts *o)
{
	size_t n;

	if (in == NULL)
		return INCA_EINVAL;
	n = in->struct_size;
	if (n < offsetof(struct inca_comm_opts, op_timeout_ms)) {
		li_log(INCA_LOG_ERR, "inca_comm_opts.struct_size %zu: initialise the options "
		       "with inca_comm_opts_init()", n);
		return INCA_EINVAL;
	}
	if (n > sizeof(*o))
		n = sizeof(*o);
	memset(o, 0, sizeof(*o));
	memcpy(o, in, n);
	o->struct_size = sizeof(*o);
	return INCA_OK;
}

/* Parse an unsigned integer in [0, max] (decimal or 0x hex). */
static int
parse_uint(const char *s, unsigned long long max, unsigned long long *v)
{
	char *end;

	if (s == NULL || *s == '\0' || *s == '-')
		return -1;
	errno = 0;
	*v = strtoull(s, &end, 0);
	if (errno != 0 || *end != '\0' || *v > max)
		return -1;
	return 0;
}

static int
env_uint(const char *name, unsigned long long max, unsigned long long *v, bool *set)
{
	const char *s = getenv(name);

	*set = false;
	if (s == NULL || *s == '\0')
		return 0;
	if (parse_uint(s, max, v) < 0) {
		li_log(INCA_LOG_ERR, "%s=%s: not an integer in 0..%llu", name, s, max);
		return INCA_EINVAL;
	}
	*set = true;
	return 0;
}

int
inca_comm_opts_from_env(struct inca_comm_opts *o)
{
	static const char *const rank_vars[] = {"INCA_RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK"};
	static const char *const size_vars[] = {"INCA_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE"};
	unsigned long long v;
	const char *s;
	bool set;
	unsigned i;

	if (o == NULL || o->struct_size < offsetof(struct inca_comm_opts, op_timeout_ms))
		return INCA_EINVAL;
	s = getenv("INCA_AGGREGATOR");
	if (s != NULL && *s != '\0')
		o->aggregator = s;
	s = getenv("INCA_BIND");
	if (s != NULL && *s != '\0')
		o->bind = s;

#define ENV_FIELD(name, field, max) \
	do { \
		if (env_uint(name, max, &v, &set) < 0) \
			return INCA_EINVAL; \
		if (set) \
			o->field = v; \
	} while (0)

	ENV_FIELD("INCA_JOB", job, UINT16_MAX);
	ENV_FIELD("INCA_TOKEN", token, UINT32_MAX);
	ENV_FIELD("INCA_WINDOW", window, UINT16_MAX);
	ENV_FIELD("INCA_POOL_SIZE", pool_size, UINT16_MAX);
	ENV_FIELD("INCA_MAX_ELEMS", max_elems, INCA_MAX_ELEMS);
	ENV_FIELD("INCA_MTU", mtu, UINT16_MAX);
	ENV_FIELD("INCA_TIMEOUT_MS", timeout_ms, UINT32_MAX);
	ENV_FIELD("INCA_GIVE_UP_MS", give_up_ms, UINT32_MAX);
	ENV_FIELD("INCA_PROBE_EVERY", probe_every, UINT32_MAX);
	/* Fields newer than the caller's structure are not written. */
	if (o->struct_size >= offsetof(struct inca_comm_opts, op_timeout_ms) + sizeof(uint32_t))
		ENV_FIELD("INCA_OP_TIMEOUT_MS", op_timeout_ms, UINT32_MAX);
#undef ENV_FIELD

	/* The first of these that is set wins, so that launchers' own
	 * variables work without INCA_RANK / INCA_SIZE. */
	for (i = 0; i < 3; i++) {
		if (env_uint(rank_vars[i], INCA_MAX_WORKERS - 1, &v, &set) < 0)
			return INCA_EINVAL;
		if (set) {
			o->rank = v;
			break;
		}
	}
	for (i = 0; i < 3; i++) {
		if (env_uint(size_vars[i], INCA_MAX_WORKERS, &v, &set) < 0)
			return INCA_EINVAL;
		if (set) {
			o->size = v;
			break;
		}
	}

	s = getenv("INCA_FLOAT_MODE");
	if (s != NULL && *s != '\0') {
		if (strcmp(s, "auto") == 0)
			o->float_mode = INCA_FLOAT_AUTO;
		else if (strcmp(s, "native") == 0)
			o->float_mode = INCA_FLOAT_NATIVE;
		else if (strcmp(s, "bfp") == 0)
			o->float_mode = INCA_FLOAT_BFP;
		else {
			li_log(INCA_LOG_ERR, "INCA_FLOAT_MODE=%s: want auto, native or bfp", s);
			return INCA_EINVAL;
		}
	}
	return INCA_OK;
}

/*
 * "host[:port]" to an IPv4 address. An empty host means any address (for
 * bind). Returns INCA_EINVAL for a malformed string, INCA_EUNREACH when the
 * host does not resolve.
 */
static int
parse_addr(const char *s, uint16_t def_port, struct sockaddr_in *sa)
{
	char host[256];
	const char *colon;
	unsigned long long port = def_port;
	struct addrinfo hints, *res;
	size_t hl;

	if (s == NULL)
		return INCA_EINVAL;
	colon = strrchr(s, ':');
	hl = colon ? (size_t)(colon - s) : strlen(s);
	if (hl >= sizeof(host))
		return INCA_EINVAL;
	memcpy(host, s, hl);
	host[hl] = '\0';
	if (colon != NULL && parse_uint(colon + 1, UINT16_MAX, &port) < 0)
		return INCA_EINVAL;
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_port = htons((uint16_t)port);
	if (host[0] == '\0') {
		sa->sin_addr.s_addr = htonl(INADDR_ANY);
		return INCA_OK;
	}
	if (inet_pton(AF_INET, host, &sa->sin_addr) == 1)
		return INCA_OK;
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_INET;
	hints.ai_socktype = SOCK_DGRAM;
	if (getaddrinfo(host, NULL, &hints, &res) != 0 || res == NULL) {
		li_log(INCA_LOG_ERR, "cannot resolve '%s'", host);
		return INCA_EUNREACH;
	}
	sa->sin_addr = ((struct sockaddr_in *)res->ai_addr)->sin_addr;
	freeaddrinfo(res);
	return INCA_OK;
}

/* ---- control exchanges ------------------------------------------------ */

static void
hdr_init(struct inca_comm *c, struct inca_msg *m, unsigned type)
{
	memset(m, 0, sizeof(*m));
	m->version = INCA_PROTO_VERSION;
	m->type = type;
	m->job = type == INCA_MSG_HELLO ? 0 : c->o.job;
	m->rank = c->o.rank;
	/* Only HELLO and JOIN prove knowledge of the job token; everything
	 * after JOIN_ACK names the incarnation it belongs to. */
	m->token = type == INCA_MSG_HELLO || type == INCA_MSG_JOIN ? c->o.token : li_session(c);
}

/* Bytes the payload of one chunk of @dtype may take inside the MTU. */
static unsigned
payload_room(const struct inca_comm *c)
{
	unsigned room = c->o.mtu - LI_IP_UDP_LEN - INCA_HDR_LEN;

	return room > INCA_MAX_PAYLOAD_BYTES ? INCA_MAX_PAYLOAD_BYTES : room;
}

/* The control body the worker sends in HELLO and JOIN. */
static void
ctrl_request(const struct inca_comm *c, struct inca_ctrl_info *ci, bool join)
{
	memset(ci, 0, sizeof(*ci));
	ci->ver_min = INCA_PROTO_VERSION;
	ci->ver_max = INCA_PROTO_VERSION;
	ci->max_elems = c->o.max_elems;
	if (!join) {
		ci->dtypes = (1u << INCA_DTYPE_COUNT) - 1;
		ci->ops = (1u << INCA_OP_COUNT) - 1;
		return;
	}
	/* Ask only for what the aggregator said it has: floats need native
	 * support unless they travel as int32 anyway. */
	ci->dtypes = 1u << INCA_DTYPE_INT32;
	if (c->float_native)
		ci->dtypes = c->agg_dtypes;
	ci->ops = c->agg_ops & ((1u << INCA_OP_COUNT) - 1);
	ci->nworkers = c->o.size;
	ci->pool_size = c->o.pool_size;
	ci->window = c->o.window;
	if (ci->pool_size != 0 && ci->window > ci->pool_size)
		ci->window = ci->pool_size;
}

int
li_send_ctrl(struct inca_comm *c, unsigned type)
{
	uint8_t buf[INCA_HDR_LEN + INCA_CTRL_LEN];
	struct inca_ctrl_info ci;
	struct inca_msg m;
	struct li_pkt p = {.buf = buf, .len = sizeof(buf)};
	int ret;

	hdr_init(c, &m, type);
	inca_hdr_encode(&m, buf);
	ctrl_request(c, &ci, type == INCA_MSG_JOIN);
	if (type == INCA_MSG_HELLO || type == INCA_MSG_JOIN)
		inca_ctrl_encode(&ci, buf + INCA_HDR_LEN);
	else
		p.len = INCA_HDR_LEN; /* LEAVE, HEARTBEAT carry no body */
	ret = c->tops->send_batch(c->tp, &p, 1);
	if (ret < 0)
		return ret;
	if (ret == 0) {
		c->st.send_errors++;
		return INCA_OK;
	}
	c->st.tx_pkts++;
	c->st.tx_bytes += p.len;
	li_set_last_tx(c, li_now_ns());
	if (type == INCA_MSG_HEARTBEAT) {
		c->st.heartbeats++;
		c->last_hb_ns = c->last_tx_ns;
	}
	return INCA_OK;
}

/*
 * Send a control message and wait for the answer of type @want for this
 * member, retransmitting with exponential backoff, until @give_up_ms.
 * Messages that are not the answer go through the normal handler (a late
 * RESULT must still be counted). Returns INCA_OK and the answer's control
 * body, INCA_EREFUSED on a NACK (reason in c->nack_reason),
 * INCA_ETIMEDOUT, or a transport error.
 */
static int
exchange(struct inca_comm *c, unsigned type, unsigned want, uint32_t give_up_ms,
	 struct inca_ctrl_info *answer)
{
	uint64_t start = li_now_ns(), next = start;
	uint64_t rto = (uint64_t)c->o.timeout_ms * 1000000ull;
	uint64_t end = start + (uint64_t)give_up_ms * 1000000ull;
	struct li_pkt pkts[LI_BATCH];
	size_t slot = c->o.mtu;
	unsigned tries = 0;
	int n, i, ret;

	for (;;) {
		uint64_t now = li_now_ns();
		struct pollfd pfd;
		int wait_ms;

		if (now >= end)
			return INCA_ETIMEDOUT;
		if (li_aborted(c))
			return INCA_ECANCELED;
		if (now >= next) {
			ret = li_send_ctrl(c, type);
			if (ret < 0)
				return ret;
			next = now + (rto << (tries < LI_MAX_BACKOFF_SHIFT ? tries :
								 LI_MAX_BACKOFF_SHIFT));
			tries++;
		}
		wait_ms = (int)(((next < end ? next : end) - now + 999999) / 1000000);
		if (wait_ms > LI_WAIT_SLICE_MS)
			wait_ms = LI_WAIT_SLICE_MS;
		pfd.fd = c->tops->fd(c->tp);
		pfd.events = POLLIN;
		if (poll(&pfd, 1, wait_ms) <= 0)
			continue;
		for (i = 0; i < LI_BATCH; i++) {
			pkts[i].buf = c->rx_mem + (size_t)i * slot;
			pkts[i].len = slot;
		}
		n = c->tops->recv_batch(c->tp, pkts, LI_BATCH);
		if (n < 0)
			return n;
		for (i = 0; i < n; i++) {
			struct inca_msg m;

			c->st.rx_pkts++;
			c->st.rx_bytes += pkts[i].len;
			if (inca_msg_decode(pkts[i].buf, pkts[i].len, 0, &m) != INCA_WIRE_OK) {
				c->st.rx_invalid++;
				continue;
			}
			if (m.type == want &&
			    (want == INCA_MSG_CAPS ||
			     (m.job == c->o.job && m.rank == c->o.rank))) {
				if (m.body_len == INCA_CTRL_LEN)
					inca_ctrl_decode(m.body, answer);
				else
					memset(answer, 0, sizeof(*answer));
				c->alive_ns = li_now_ns();
				return INCA_OK;
			}
			/* A NACK echoes the refused message's job and rank: a
			 * HELLO's has job 0, so a late NACK of our job's data
			 * cannot pass for a refused HELLO. */
			if (m.type == INCA_MSG_NACK &&
			    (type == INCA_MSG_HELLO ? m.job == 0 :
						      m.job == c->o.job && m.rank == c->o.rank)) {
				if (m.reason < INCA_NACK_MAX_)
					c->st.nack_reasons[m.reason]++;
				c->st.nacks++;
				c->alive_ns = li_now_ns();
				/* Rate limiting is a request to come back later. */
				if (m.reason == INCA_NACK_RATE_LIMITED)
					continue;
				c->nack_reason = m.reason;
				li_log(INCA_LOG_WARN, "job %u rank %u: %s refused: %s",
				       c->o.job, c->o.rank, inca_msg_type_name(type),
				       inca_nack_str(m.reason));
				return INCA_EREFUSED;
			}
			/* Anything else (late results, heartbeat answers) is
			 * counted as seen and dropped. */
			c->st.dup_results += m.type == INCA_MSG_RESULT;
		}
	}
}

int
li_hello(struct inca_comm *c, uint32_t wait_ms)
{
	struct inca_ctrl_info caps;
	int ret;

	ret = exchange(c, INCA_MSG_HELLO, INCA_MSG_CAPS, wait_ms, &caps);
	if (ret < 0)
		return ret;
	if (caps.ver_min > INCA_PROTO_VERSION || caps.ver_max < INCA_PROTO_VERSION) {
		li_log(INCA_LOG_ERR, "aggregator speaks protocol %u..%u, we speak %u",
		       caps.ver_min, caps.ver_max, INCA_PROTO_VERSION);
		return INCA_EREFUSED;
	}
	c->caps = caps.caps;
	c->agg_dtypes = caps.dtypes;
	c->agg_ops = caps.ops;
	switch (c->o.float_mode) {
	case INCA_FLOAT_BFP:
		c->float_native = false;
		break;
	default:
		c->float_native = (caps.caps & INCA_CAP_NATIVE_FLOAT) != 0;
		break;
	}
	return INCA_OK;
}

/* Allocate the chunk ring for the granted window (2 x window entries). */
static int
ring_alloc(struct inca_comm *c)
{
	uint32_t n = 2u * c->window;
	size_t bytes = (size_t)n * c->max_payload;

	if (c->ring != NULL && c->ring_n == n && c->ring_pay == c->max_payload)
		return INCA_OK;
	free(c->ring);
	free(c->ring_mem);
	c->footprint -= (size_t)c->ring_n * (sizeof(*c->ring) + c->ring_pay);
	c->ring_n = 0;
	c->ring = calloc(n, sizeof(*c->ring));
	c->ring_mem = malloc(bytes);
	if (c->ring == NULL || c->ring_mem == NULL) {
		free(c->ring);
		free(c->ring_mem);
		c->ring = NULL;
		c->ring_mem = NULL;
		return INCA_ENOMEM;
	}
	c->ring_n = n;
	c->ring_pay = c->max_payload;
	c->footprint += (size_t)n * (sizeof(*c->ring) + c->max_payload);
	return INCA_OK;
}

void
li_stream_reset(struct inca_comm *c)
{
	uint32_t i;

	c->next_seq = 0;
	c->base = 0;
	c->next_send = 0;
	c->rtt_min_ns = 0;
	c->rtt_min_cur = 0;
	c->rtt_samples = 0;
	c->srtt_ns = 0;
	for (i = 0; i < c->ring_n; i++) {
		memset(&c->ring[i], 0, sizeof(c->ring[i]));
		c->ring[i].payload = c->ring_mem + (size_t)i * c->max_payload;
	}
	c->nack_err = 0;
}

int
li_join(struct inca_comm *c, uint32_t give_up_ms)
{
	uint64_t start = li_now_ns();
	struct inca_ctrl_info ack;
	unsigned room, want;
	uint32_t spent;
	int ret;

	ret = li_hello(c, give_up_ms);
	if (ret < 0)
		return ret;
	if (c->o.float_mode == INCA_FLOAT_NATIVE && !(c->caps & INCA_CAP_NATIVE_FLOAT)) {
		li_log(INCA_LOG_ERR, "float_mode native, but the aggregator has no native floats");
		return INCA_ENOTSUP;
	}
	spent = (uint32_t)((li_now_ns() - start) / 1000000ull);
	ret = exchange(c, INCA_MSG_JOIN, INCA_MSG_JOIN_ACK,
		       give_up_ms > spent ? give_up_ms - spent : 1, &ack);
	if (ret < 0)
		return ret;
	if (ack.nworkers != 0 && ack.nworkers != c->o.size) {
		li_log(INCA_LOG_ERR, "JOIN_ACK for %u workers, we are %u", ack.nworkers,
		       c->o.size);
		li_leave(c, 0);
		return INCA_EPROTO;
	}
	if (ack.pool_size == 0 || ack.max_elems == 0 || ack.session == 0) {
		li_log(INCA_LOG_ERR, "JOIN_ACK grants no slots, no elements or no session");
		li_leave(c, 0);
		return INCA_EPROTO;
	}
	__atomic_store_n(&c->session, ack.session, __ATOMIC_RELEASE);
	if (ack.caps != 0)
		c->caps = ack.caps;
	c->pool = ack.pool_size;
	/*
	 * The grants are the job's, the same for every member: the window
	 * and the chunk geometry are used exactly as granted, never cut to a
	 * local wish, or the members' streams would diverge. What this host
	 * cannot carry is an error, not a silent change.
	 */
	want = ack.window ? ack.window : ack.pool_size;
	room = payload_room(c);
	if (want > ack.pool_size || want > LI_MAX_WINDOW) {
		li_log(INCA_LOG_ERR, "JOIN_ACK grants window %u over pool %u (at most %u here)",
		       want, ack.pool_size, LI_MAX_WINDOW);
		li_leave(c, 0);
		return INCA_EPROTO;
	}
	if ((unsigned)ack.max_elems * 4 > room) {
		li_log(INCA_LOG_ERR,
		       "the job's max_elems %u needs %u payload bytes per packet; mtu %u gives %u",
		       ack.max_elems, ack.max_elems * 4u, c->o.mtu, room);
		li_leave(c, 0);
		return INCA_EPROTO;
	}
	c->window = want;
	c->max_elems = ack.max_elems;
	c->hb_ms = ack.hb_ms;
	c->evict_ms = ack.evict_ms;
	c->max_payload = (uint16_t)(c->max_elems * 4u);
	ret = ring_alloc(c);
	if (ret < 0) {
		li_leave(c, 0);
		return ret;
	}
	li_stream_reset(c);
	c->joined = true;
	c->alive_ns = li_now_ns();
	li_ka_allow(c, 1);
	li_log(INCA_LOG_INFO,
	       "job %u rank %u/%u joined: pool %u window %u max_elems %u caps 0x%x floats %s",
	       c->o.job, c->o.rank, c->o.size, c->pool, c->window, c->max_elems, c->caps,
	       c->float_native ? "native" : "bfp");
	return INCA_OK;
}

void
li_leave(struct inca_comm *c, uint32_t wait_ms)
{
	struct inca_ctrl_info ack;

	li_ka_allow(c, 0);
	if (wait_ms == 0)
		(void)li_send_ctrl(c, INCA_MSG_LEAVE);
	else
		(void)exchange(c, INCA_MSG_LEAVE, INCA_MSG_LEAVE_ACK, wait_ms, &ack);
	c->joined = false;
}

/* ---- create / destroy -------------------------------------------------- */

static int
opts_check(const struct inca_comm_opts *o)
{
	if (o == NULL || o->aggregator == NULL)
		return INCA_EINVAL;
	if (o->job == 0 || o->size == 0 || o->size > INCA_MAX_WORKERS || o->rank >= o->size)
		return INCA_EINVAL;
	if (o->max_elems > INCA_MAX_ELEMS)
		return INCA_EINVAL;
	if (o->mtu != 0 && o->mtu < LI_IP_UDP_LEN + INCA_HDR_LEN + 64)
		return INCA_EINVAL;
	if (o->float_mode < INCA_FLOAT_AUTO || o->float_mode > INCA_FLOAT_BFP)
		return INCA_EINVAL;
	return INCA_OK;
}

static void
comm_free(struct inca_comm *c)
{
	struct li_req *r, *next;

	li_keepalive_stop(c);
	for (r = c->head; r != NULL; r = next) {
		next = r->next;
		free(r);
	}
	for (r = c->free_reqs; r != NULL; r = next) {
		next = r->next;
		free(r);
	}
	if (c->tp != NULL)
		c->tops->close(c->tp);
	free(c->ring);
	free(c->ring_mem);
	free(c->tx_mem);
	free(c->rx_mem);
	free(c->agg_str);
	free(c->bind_str);
	free(c);
}

int
inca_comm_create(const struct inca_comm_opts *in, struct inca_comm **out)
{
	struct inca_comm_opts opts, *o = &opts;
	struct inca_comm *c;
	int ret;

	if (out == NULL)
		return INCA_EINVAL;
	*out = NULL;
	ret = opts_import(in, o);
	if (ret < 0)
		return ret;
	ret = opts_check(o);
	if (ret < 0)
		return ret;
	c = calloc(1, sizeof(*c));
	if (c == NULL)
		return INCA_ENOMEM;
	c->o = *o;
	if (c->o.mtu == 0)
		c->o.mtu = LI_DEF_MTU;
	/* Ask for no more elements than one packet carries: the job's grant
	 * is used exactly (li_join()). */
	if (c->o.max_elems == 0 || c->o.max_elems > payload_room(c) / 4)
		c->o.max_elems = (uint16_t)(payload_room(c) / 4);
	if (c->o.window == 0) {
		unsigned w = (LI_DEF_INFLIGHT + c->o.max_elems * 4 - 1) / (c->o.max_elems * 4);

		c->o.window = w < LI_DEF_WINDOW_MIN ? LI_DEF_WINDOW_MIN :
			      w > LI_DEF_WINDOW_MAX ? LI_DEF_WINDOW_MAX : w;
	}
	if (c->o.timeout_ms == 0)
		c->o.timeout_ms = LI_DEF_TIMEOUT_MS;
	if (c->o.give_up_ms == 0)
		c->o.give_up_ms = LI_DEF_GIVE_UP_MS;
	if (c->o.probe_every == 0)
		c->o.probe_every = LI_DEF_PROBE_EVERY;
	if (c->o.op_timeout_ms == 0)
		c->o.op_timeout_ms = LI_DEF_OP_TIMEOUT_MS;
	c->fb_fn = o->fallback;
	c->fb_ctx = o->fallback_ctx;
	c->tops = &li_udp_ops;
	c->footprint = sizeof(*c);

	c->agg_str = strdup(o->aggregator);
	c->bind_str = o->bind ? strdup(o->bind) : NULL;
	c->o.aggregator = c->agg_str;
	c->o.bind = c->bind_str;
	/* tx and rx slots hold one datagram of at most one MTU. */
	c->tx_mem = malloc((size_t)LI_BATCH * c->o.mtu);
	c->rx_mem = malloc((size_t)LI_BATCH * c->o.mtu);
	if (c->agg_str == NULL || (o->bind && c->bind_str == NULL) || c->tx_mem == NULL ||
	    c->rx_mem == NULL) {
		ret = INCA_ENOMEM;
		goto fail;
	}
	c->footprint += 2 * (size_t)LI_BATCH * c->o.mtu;

	/*
	 * From here on every outcome goes into the agreement, so that no rank
	 * is left waiting in it: an unresolvable address is this rank's
	 * error like a refused JOIN.
	 */
	ret = parse_addr(c->agg_str, INCA_UDP_PORT, &c->agg_addr);
	if (ret == INCA_OK && c->bind_str != NULL)
		ret = parse_addr(c->bind_str, 0, &c->bind_addr);
	if (ret == INCA_OK)
		ret = c->tops->open(&c->tp, &c->agg_addr, c->bind_str ? &c->bind_addr : NULL,
				    (size_t)4 * c->o.window * c->o.mtu + 65536);
	if (ret == INCA_OK)
		ret = li_join(c, c->o.give_up_ms);
	if (li_can_agree(c)) {
		int agreed = li_agree_membership(c, ret);

		if (agreed < 0 && c->joined)
			li_leave(c, 0);
		ret = agreed;
	}
	if (ret < 0) {
		if (c->fb_fn == NULL || ret == INCA_ENOMEM)
			goto fail;
		li_log(INCA_LOG_WARN, "job %u rank %u: not on the aggregator (%s), starting in "
		       "fallback", c->o.job, c->o.rank, inca_strerror(ret));
		c->in_fallback = true;
		/* Agreed: every rank starts in the fallback at seq 0. Without an
		 * agreement the others may have joined, so this rank agrees
		 * with them at its first collective. */
		c->need_recovery = !li_can_agree(c);
	}
	*out = c;
	return INCA_OK;

fail:
	comm_free(c);
	return ret;
}

int
inca_comm_create_env(const struct inca_comm_opts *base, struct inca_comm **out)
{
	struct inca_comm_opts o;
	int ret;

	if (base != NULL) {
		ret = opts_import(base, &o);
		if (ret < 0)
			return ret;
	} else {
		inca_comm_opts_init(&o);
	}
	ret = inca_comm_opts_from_env(&o);
	if (ret < 0)
		return ret;
	return inca_comm_create(&o, out);
}

void
inca_comm_destroy(struct inca_comm *c)
{
	if (c == NULL)
		return;
	li_keepalive_stop(c);
	if (c->joined && c->tp != NULL)
		li_close_stream(c);
	/* With a fallback, a peer may still recover its last collective
	 * through it: every rank answers before it goes (li_teardown()).
	 * A failed communicator's peers are in an unknown state: no round. */
	if (c->fb_fn != NULL && !c->failed && !li_aborted(c))
		(void)li_teardown(c);
	if (c->joined && c->tp != NULL) {
		uint32_t wait = 4 * c->o.timeout_ms;

		li_leave(c, wait < c->o.give_up_ms ? wait : c->o.give_up_ms);
	}
	comm_free(c);
}

void
inca_comm_abort(struct inca_comm *c)
{
	if (c != NULL)
		__atomic_store_n(&c->aborted, 1, __ATOMIC_RELEASE);
}

int
inca_comm_error(const struct inca_comm *c)
{
	if (c == NULL)
		return INCA_EINVAL;
	return __atomic_load_n(&c->failed, __ATOMIC_ACQUIRE);
}

void
inca_comm_set_fallback(struct inca_comm *c, inca_fallback_fn *fn, void *ctx)
{
	if (c == NULL)
		return;
	c->fb_fn = fn;
	c->fb_ctx = ctx;
}

void
inca_comm_stats_sized(const struct inca_comm *c, struct inca_stats *st, size_t size)
{
	struct inca_stats s;

	if (c == NULL || st == NULL)
		return;
	s = c->st;
	s.heartbeats += __atomic_load_n(&c->ka_sent, __ATOMIC_RELAXED);
	memcpy(st, &s, size < sizeof(s) ? size : sizeof(s));
}

void
inca_comm_info_sized(const struct inca_comm *c, struct inca_comm_info *info, size_t size)
{
	struct inca_comm_info i;

	if (c == NULL || info == NULL)
		return;
	memset(&i, 0, sizeof(i));
	i.in_fallback = c->in_fallback;
	i.float_native = c->float_native;
	i.window = c->window;
	i.pool_size = c->pool;
	i.max_elems = c->max_elems;
	i.caps = c->caps;
	i.hb_ms = c->hb_ms;
	i.evict_ms = c->evict_ms;
	i.footprint = c->footprint;
	i.session = li_session(c);
	memcpy(info, &i, size < sizeof(i) ? size : sizeof(i));
}

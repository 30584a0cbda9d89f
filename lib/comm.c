/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * The public API's communicator life cycle: options, creation (join, then
 * the all-or-none agreement), destruction (closing round, teardown round,
 * LEAVE), abort, error, statistics and info.
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

#include "li_recover.h"

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
		if (env_uint(rank_vars[i], UINT16_MAX - 1, &v, &set) < 0)
			return INCA_EINVAL;
		if (set) {
			o->rank = v;
			break;
		}
	}
	for (i = 0; i < 3; i++) {
		if (env_uint(size_vars[i], UINT16_MAX, &v, &set) < 0)
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
	s = getenv("INCA_TRANSPORT");
	if (s != NULL && *s != '\0' &&
	    o->struct_size >= offsetof(struct inca_comm_opts, transport) + sizeof(int)) {
		int kind = li_transport_parse(s);

		if (kind < 0) {
			li_log(INCA_LOG_ERR, "INCA_TRANSPORT=%s: want udp, verbs or xdp", s);
			return INCA_EINVAL;
		}
		o->transport = kind;
	}
	return INCA_OK;
}

/*
 * The transport of a communicator: the option, or with DEFAULT this
 * process's INCA_TRANSPORT, read here so that launchers and bindings that
 * fill the options themselves (the MPI interposer's ranks, older callers)
 * still honour it per host. A bad value here is not the caller's error:
 * udp, with a warning.
 */
static int
transport_resolve(int opt)
{
	const char *s;
	int kind;

	if (opt != INCA_TRANSPORT_DEFAULT)
		return opt;
	s = getenv("INCA_TRANSPORT");
	if (s == NULL || *s == '\0')
		return INCA_TRANSPORT_UDP;
	kind = li_transport_parse(s);
	if (kind < 0) {
		li_log(INCA_LOG_WARN, "INCA_TRANSPORT=%s: want udp, verbs or xdp; using udp", s);
		return INCA_TRANSPORT_UDP;
	}
	return kind;
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

/* ---- create / destroy -------------------------------------------------- */

/*
 * Where this rank aggregates: opts.aggregator is one address, or a comma
 * separated list of K leaf aggregators of a tree, each serving a block of
 * B = ceil(size / K) consecutive ranks: rank r joins aggregator r / B as
 * its rank r mod B, in a job of min(B, size - (r / B) * B) ranks
 * (docs/libinca.md, "Trees"). Every aggregator sees at most 32 of them.
 */
static int
li_place(struct inca_comm *c)
{
	unsigned k = 1, i, b, leaf;
	char *p, *end;

	for (p = c->agg_str; *p != '\0'; p++)
		k += *p == ',';
	b = (c->o.size + k - 1) / k;
	leaf = c->o.rank / b;
	if (b > INCA_MAX_WORKERS || leaf >= k) {
		li_log(INCA_LOG_ERR, "%u ranks over %u aggregator(s): %u per aggregator (at most "
		       "%u), or aggregators without ranks", c->o.size, k, b, INCA_MAX_WORKERS);
		return INCA_EINVAL;
	}
	p = c->agg_str;
	for (i = 0; i < leaf; i++)
		p = strchr(p, ',') + 1;
	end = strchr(p, ',');
	if (end != NULL)
		*end = '\0';
	c->agg_one = p;
	c->agg_index = leaf;
	c->wrank = (uint16_t)(c->o.rank - leaf * b);
	c->wsize = (uint16_t)(c->o.size - leaf * b < b ? c->o.size - leaf * b : b);
	if (*p == '\0') {
		li_log(INCA_LOG_ERR, "empty aggregator address in '%s'", c->o.aggregator);
		return INCA_EINVAL;
	}
	return INCA_OK;
}

static int
opts_check(const struct inca_comm_opts *o)
{
	if (o == NULL || o->aggregator == NULL)
		return INCA_EINVAL;
	if (o->job == 0 || o->size == 0 || o->rank >= o->size)
		return INCA_EINVAL;
	if (o->max_elems > INCA_MAX_ELEMS)
		return INCA_EINVAL;
	if (o->mtu != 0 && o->mtu < LI_IP_UDP_LEN + INCA_HDR_LEN + 64)
		return INCA_EINVAL;
	if (o->float_mode < INCA_FLOAT_AUTO || o->float_mode > INCA_FLOAT_BFP)
		return INCA_EINVAL;
	if (o->transport < INCA_TRANSPORT_DEFAULT || o->transport > INCA_TRANSPORT_XDP)
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

/*
 * A striped communicator: opts.aggregator "A+B" (stripes joined by '+',
 * within each of a tree's leaves when there are several: "A1+B1,A2+B2").
 * Stripe s is a communicator of its own on the s-th aggregator of each
 * leaf, job o->job + s, bound to the local port + s when a port is given;
 * they are created in stripe order, each with its own all-or-none
 * agreement, so every rank stops at the same stripe when one fails.
 */
static int
stripes_create(const struct inca_comm_opts *o, struct inca_comm **out)
{
	char agg[LI_MAX_STRIPES][1024], bind[64] = "";
	struct inca_comm *c;
	const char *p = o->aggregator, *colon = NULL;
	unsigned k = 0, s = 0, leaf = 0;
	int ret = INCA_OK;

	memset(agg, 0, sizeof(agg));
	/* Every leaf entry must name the same number of stripes. */
	for (;;) {
		size_t n = strcspn(p, "+,");

		if (n == 0 || s >= LI_MAX_STRIPES ||
		    strlen(agg[s]) + n + 2 > sizeof(agg[s])) {
			li_log(INCA_LOG_ERR, "aggregator '%s': empty entry, or more than %u "
			       "stripes", o->aggregator, LI_MAX_STRIPES);
			return INCA_EINVAL;
		}
		if (leaf > 0)
			strcat(agg[s], ",");
		strncat(agg[s], p, n);
		p += n;
		s++;
		if (*p == '+') {
			p++;
			continue;
		}
		if (leaf == 0)
			k = s;
		if (s != k) {
			li_log(INCA_LOG_ERR, "aggregator '%s': every leaf needs %u stripes",
			       o->aggregator, k);
			return INCA_EINVAL;
		}
		if (*p == '\0')
			break;
		p++;
		leaf++;
		s = 0;
	}
	if ((unsigned)o->job + k - 1 > UINT16_MAX)
		return INCA_EINVAL;
	if (o->bind != NULL) {
		if (strlen(o->bind) >= sizeof(bind))
			return INCA_EINVAL;
		strcpy(bind, o->bind);
		colon = strchr(o->bind, ':');
	}
	c = calloc(1, sizeof(*c));
	if (c == NULL)
		return INCA_ENOMEM;
	c->o = *o;
	c->agg_str = strdup(o->aggregator);
	c->o.aggregator = c->agg_str;
	c->o.bind = NULL;
	c->fb_fn = o->fallback;
	c->fb_ctx = o->fallback_ctx;
	c->footprint = sizeof(*c);
	if (c->o.op_timeout_ms == 0)
		c->o.op_timeout_ms = LI_DEF_OP_TIMEOUT_MS;
	if (c->o.probe_every == 0)
		c->o.probe_every = LI_DEF_PROBE_EVERY;
	if (c->agg_str == NULL) {
		free(c);
		return INCA_ENOMEM;
	}
	for (s = 0; s < k && ret == INCA_OK; s++) {
		struct inca_comm_opts so = c->o;

		so.aggregator = agg[s];
		so.job = (uint16_t)(o->job + s);
		/* The stripes go back to their aggregators together or not at
		 * all (collective.c, "Stripes"): never one by one. */
		so.probe_every = UINT32_MAX;
		so.bind = o->bind;
		if (colon != NULL && atoi(colon + 1) != 0) {
			snprintf(bind, sizeof(bind), "%.*s:%d", (int)(colon - o->bind), o->bind,
				 atoi(colon + 1) + (int)s);
			so.bind = bind;
		}
		ret = inca_comm_create(&so, &c->stripe[s]);
		if (ret == INCA_OK) {
			c->nstripes++;
			c->footprint += c->stripe[s]->footprint;
		}
	}
	if (ret < 0) {
		inca_comm_destroy(c);
		return ret;
	}
	/* Every rank saw the same outcome of each stripe's agreement: if one
	 * starts in the fallback, all do. */
	li_stripes_settle(c);
	*out = c;
	return INCA_OK;
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
	if (strchr(o->aggregator, '+') != NULL)
		return stripes_create(o, out);
	c = calloc(1, sizeof(*c));
	if (c == NULL)
		return INCA_ENOMEM;
	c->o = *o;
	if (c->o.mtu == 0)
		c->o.mtu = LI_DEF_MTU;
	/* Ask for no more elements than one packet carries: the job's grant
	 * is used exactly (li_join()). */
	if (c->o.max_elems == 0 || c->o.max_elems > li_payload_room(c) / 4)
		c->o.max_elems = (uint16_t)(li_payload_room(c) / 4);
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
	c->o.transport = transport_resolve(o->transport);
	c->tops = &li_udp_ops;
	c->footprint = sizeof(*c);

	c->agg_str = strdup(o->aggregator);
	c->bind_str = o->bind ? strdup(o->bind) : NULL;
	c->o.aggregator = c->agg_str;
	c->o.bind = c->bind_str;
	if (c->agg_str != NULL && li_place(c) != INCA_OK) {
		ret = INCA_EINVAL;
		goto fail;
	}
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
	ret = parse_addr(c->agg_one, INCA_UDP_PORT, &c->agg_addr);
	if (ret == INCA_OK && c->bind_str != NULL)
		ret = parse_addr(c->bind_str, 0, &c->bind_addr);
	if (ret == INCA_OK)
		ret = li_transport_open(c->o.transport, &c->tops, &c->tp, &c->agg_addr,
					c->bind_str ? &c->bind_addr : NULL,
					(size_t)4 * c->o.window * c->o.mtu + 65536, c->o.window);
	if (ret == INCA_OK)
		ret = li_join_stream(c);
	if (li_can_agree(c)) {
		int agreed;
		/*
		 * The agreement waits for the slowest rank's creation, which a
		 * slow launcher can make longer than the aggregator's evict_ms:
		 * heartbeat meanwhile, or the early ranks are evicted before
		 * the job starts.
		 */
		bool ka = c->joined && inca_comm_keepalive(c, 1) == INCA_OK;

		agreed = li_agree_membership(c, ret);
		if (ka)
			li_keepalive_stop(c);
		if (agreed < 0 && c->joined)
			li_leave(c, 0);
		ret = agreed;
	}
	if (ret < 0) {
		if (c->fb_fn == NULL || ret == INCA_ENOMEM)
			goto fail;
		li_log(INCA_LOG_WARN, "job %u rank %u: not on the aggregator (%s), starting in "
		       "fallback", c->o.job, c->o.rank, inca_strerror(ret));
		/* A fallback is also a channel for the agreement, so every
		 * rank agreed: all start in the fallback at seq 0. */
		c->in_fallback = true;
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
	unsigned s;

	if (c == NULL)
		return;
	/* A striped one: its stripes in order (each teardown is a round of
	 * every rank's), its own requests' parts belong to them. */
	for (s = 0; s < c->nstripes; s++)
		inca_comm_destroy(c->stripe[s]);
	if (c->nstripes > 0) {
		comm_free(c);
		return;
	}
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
	unsigned s;

	if (c == NULL)
		return;
	__atomic_store_n(&c->aborted, 1, __ATOMIC_RELEASE);
	for (s = 0; s < c->nstripes; s++)
		inca_comm_abort(c->stripe[s]);
}

int
inca_comm_error(const struct inca_comm *c)
{
	unsigned s;
	int err;

	if (c == NULL)
		return INCA_EINVAL;
	err = __atomic_load_n(&c->failed, __ATOMIC_ACQUIRE);
	for (s = 0; s < c->nstripes && err == 0; s++)
		err = inca_comm_error(c->stripe[s]);
	return err;
}

void
inca_comm_set_fallback(struct inca_comm *c, inca_fallback_fn *fn, void *ctx)
{
	unsigned s;

	if (c == NULL)
		return;
	c->fb_fn = fn;
	c->fb_ctx = ctx;
	for (s = 0; s < c->nstripes; s++)
		inca_comm_set_fallback(c->stripe[s], fn, ctx);
}

void
inca_comm_stats_sized(const struct inca_comm *c, struct inca_stats *st, size_t size)
{
	struct inca_stats s;

	unsigned k;

	if (c == NULL || st == NULL)
		return;
	s = c->st;
	s.heartbeats += __atomic_load_n(&c->ka_sent, __ATOMIC_RELAXED);
	/* A striped communicator's counters are its stripes' sums. */
	for (k = 0; k < c->nstripes; k++) {
		struct inca_stats t;
		uint64_t *a = (uint64_t *)&s;
		const uint64_t *b = (const uint64_t *)&t;
		size_t i;

		inca_comm_stats_sized(c->stripe[k], &t, sizeof(t));
		for (i = 0; i < sizeof(s) / sizeof(uint64_t); i++)
			a[i] += b[i];
	}
	memcpy(st, &s, size < sizeof(s) ? size : sizeof(s));
}

void
inca_comm_info_sized(const struct inca_comm *c, struct inca_comm_info *info, size_t size)
{
	struct inca_comm_info i;

	unsigned s;

	if (c == NULL || info == NULL)
		return;
	/* A striped communicator: its first stripe's, in fallback when any
	 * stripe is, and the footprint of all. */
	if (c->nstripes > 0) {
		inca_comm_info_sized(c->stripe[0], &i, sizeof(i));
		for (s = 1; s < c->nstripes; s++) {
			struct inca_comm_info o;

			inca_comm_info_sized(c->stripe[s], &o, sizeof(o));
			i.in_fallback |= o.in_fallback;
			i.gso_sends += o.gso_sends;
			i.gro_pkts += o.gro_pkts;
			i.xdp_tx_pkts += o.xdp_tx_pkts;
			i.xdp_rx_pkts += o.xdp_rx_pkts;
		}
		i.footprint = c->footprint;
		memcpy(info, &i, size < sizeof(i) ? size : sizeof(i));
		return;
	}
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
	i.dtypes = c->agg_dtypes;
	i.ops = c->agg_ops;
	if (c->tp != NULL) {
		i.transport = c->tops == &li_udp_ops ? INCA_TRANSPORT_UDP : c->o.transport;
		if (c->tops->info != NULL)
			c->tops->info(c->tp, &i);
	}
	memcpy(info, &i, size < sizeof(i) ? size : sizeof(i));
}

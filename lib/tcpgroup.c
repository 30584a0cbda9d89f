/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * A TCP rendezvous group: the ready-made out-of-band allgather (and a
 * slow but exact host allreduce) for jobs that have neither MPI nor torch.
 *
 * Star through rank 0: rank 0 listens, every other rank connects and says
 * who it is. An allgather is one exchange: every rank sends its block to
 * rank 0 (with a sequence number and the length), rank 0 sends the
 * concatenation back to every rank. Every read and write waits with
 * poll() until the group's deadline; a closed or reset connection (a peer
 * died) fails the exchange at once, and rank 0 then closes every
 * connection so the others fail at once too. A failed group stays failed.
 */

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include "li_util.h"

#define TG_MAGIC 0x494e4347u /* "INCG" */
#define TG_DEF_TIMEOUT_MS 30000u

struct tg_hdr {
	uint32_t magic;
	uint32_t a;   /* hello: rank; exchange: sequence number */
	uint64_t b;   /* hello: size; exchange: bytes */
};

struct inca_tcp_group {
	unsigned rank, size;
	uint32_t timeout_ms;
	uint32_t seq;
	bool broken;
	int *fd;      /* rank 0: one per rank (fd[0] unused); others: fd[0] */
	uint8_t *tmp; /* reduction scratch */
	size_t tmp_len;
};

static uint64_t
deadline_ns(uint32_t ms)
{
	return li_now_ns() + (uint64_t)ms * 1000000ull;
}

static int
wait_fd(int fd, short ev, uint64_t end)
{
	struct pollfd p = {.fd = fd, .events = ev};
	uint64_t now;
	int r;

	for (;;) {
		now = li_now_ns();
		if (now >= end)
			return INCA_ETIMEDOUT;
		r = poll(&p, 1, (int)((end - now + 999999) / 1000000));
		if (r > 0)
			return INCA_OK;
		if (r < 0 && errno != EINTR)
			return INCA_EIO;
	}
}

static int
xfer(int fd, void *buf, size_t len, bool out, uint64_t end)
{
	uint8_t *p = buf;
	ssize_t n;
	int ret;

	while (len > 0) {
		ret = wait_fd(fd, out ? POLLOUT : POLLIN, end);
		if (ret < 0)
			return ret;
		n = out ? send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT) :
			  recv(fd, p, len, MSG_DONTWAIT);
		if (n == 0)
			return INCA_EIO; /* the peer closed */
		if (n < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
				continue;
			return INCA_EIO;
		}
		p += n;
		len -= (size_t)n;
	}
	return INCA_OK;
}

static int
parse_v4(const char *s, struct sockaddr_in *sa)
{
	char host[64];
	const char *colon = strrchr(s, ':');
	char *end;
	unsigned long port;
	size_t n;

	if (colon == NULL || (n = (size_t)(colon - s)) == 0 || n >= sizeof(host))
		return INCA_EINVAL;
	memcpy(host, s, n);
	host[n] = '\0';
	errno = 0;
	port = strtoul(colon + 1, &end, 10);
	if (errno != 0 || *end != '\0' || port == 0 || port > 65535)
		return INCA_EINVAL;
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_port = htons((uint16_t)port);
	if (inet_pton(AF_INET, host, &sa->sin_addr) != 1)
		return INCA_EINVAL;
	return INCA_OK;
}

static void
tune(int fd)
{
	int one = 1;

	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	(void)fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

static int
accept_all(struct inca_tcp_group *g, const struct sockaddr_in *sa, uint64_t end)
{
	int one = 1, lfd, fd, ret;
	unsigned have = 0;
	struct tg_hdr h;

	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (lfd < 0)
		return INCA_EIO;
	(void)setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(lfd, (const struct sockaddr *)sa, sizeof(*sa)) < 0 || listen(lfd, 64) < 0) {
		li_log(INCA_LOG_ERR, "tcp group: cannot listen on port %u: %s",
		       ntohs(sa->sin_port), strerror(errno));
		close(lfd);
		return INCA_EUNREACH;
	}
	ret = INCA_OK;
	while (have < g->size - 1) {
		ret = wait_fd(lfd, POLLIN, end);
		if (ret < 0)
			break;
		fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		tune(fd);
		/* A connection that says nothing sensible is closed; its rank
		 * can try again. */
		if (xfer(fd, &h, sizeof(h), false, end) < 0 || h.magic != TG_MAGIC ||
		    h.a == 0 || h.a >= g->size || h.b != g->size || g->fd[h.a] >= 0) {
			li_log(INCA_LOG_WARN, "tcp group: refused a connection (rank %u size %llu)",
			       h.a, (unsigned long long)h.b);
			close(fd);
			continue;
		}
		g->fd[h.a] = fd;
		have++;
	}
	close(lfd);
	if (ret < 0)
		li_log(INCA_LOG_ERR, "tcp group: %u of %u ranks came before the timeout", have + 1,
		       g->size);
	return ret;
}

static int
connect_root(struct inca_tcp_group *g, const struct sockaddr_in *sa, uint64_t end)
{
	struct tg_hdr h = {.magic = TG_MAGIC, .a = g->rank, .b = g->size};
	int fd, ret, err;
	socklen_t len;

	/* Rank 0 may not listen yet: retry until the deadline. */
	for (;;) {
		fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (fd < 0)
			return INCA_EIO;
		if (connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) < 0 &&
		    errno != EINPROGRESS) {
			close(fd);
			fd = -1;
		} else if (wait_fd(fd, POLLOUT, end) == INCA_OK) {
			len = sizeof(err);
			if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0 || err != 0) {
				close(fd);
				fd = -1;
			}
		} else {
			close(fd);
			return INCA_ETIMEDOUT;
		}
		if (fd >= 0)
			break;
		if (li_now_ns() >= end)
			return INCA_ETIMEDOUT;
		(void)poll(NULL, 0, 20);
	}
	tune(fd);
	ret = xfer(fd, &h, sizeof(h), true, end);
	if (ret < 0) {
		close(fd);
		return ret;
	}
	g->fd[0] = fd;
	return INCA_OK;
}

void
inca_tcp_group_destroy(struct inca_tcp_group *g)
{
	unsigned i;

	if (g == NULL)
		return;
	for (i = 0; i < g->size; i++)
		if (g->fd[i] >= 0)
			close(g->fd[i]);
	free(g->fd);
	free(g->tmp);
	free(g);
}

int
inca_tcp_group_create(const char *addr, unsigned rank, unsigned size, uint32_t timeout_ms,
		      struct inca_tcp_group **out)
{
	struct inca_tcp_group *g;
	struct sockaddr_in sa;
	uint64_t end;
	unsigned i;
	int ret;

	if (out == NULL)
		return INCA_EINVAL;
	*out = NULL;
	if (addr == NULL || size == 0 || size > 65536 || rank >= size ||
	    parse_v4(addr, &sa) < 0)
		return INCA_EINVAL;
	g = calloc(1, sizeof(*g));
	if (g == NULL)
		return INCA_ENOMEM;
	g->fd = malloc(size * sizeof(*g->fd));
	if (g->fd == NULL) {
		free(g);
		return INCA_ENOMEM;
	}
	for (i = 0; i < size; i++)
		g->fd[i] = -1;
	g->rank = rank;
	g->size = size;
	g->timeout_ms = timeout_ms ? timeout_ms : TG_DEF_TIMEOUT_MS;
	end = deadline_ns(g->timeout_ms);
	ret = size == 1 ? INCA_OK : rank == 0 ? accept_all(g, &sa, end) : connect_root(g, &sa, end);
	if (ret < 0) {
		inca_tcp_group_destroy(g);
		return ret;
	}
	*out = g;
	return INCA_OK;
}

static void
fail_group(struct inca_tcp_group *g)
{
	unsigned i;

	g->broken = true;
	/* The others see their connection close and fail at once. */
	for (i = 0; i < g->size; i++) {
		if (g->fd[i] >= 0) {
			close(g->fd[i]);
			g->fd[i] = -1;
		}
	}
}

int
inca_tcp_group_allgather(void *ctx, const void *sendbuf, void *recvbuf, size_t bytes)
{
	struct inca_tcp_group *g = ctx;
	struct tg_hdr h;
	uint64_t end;
	unsigned i;
	int ret = INCA_OK;

	if (g == NULL || (bytes > 0 && (sendbuf == NULL || recvbuf == NULL)))
		return INCA_EINVAL;
	if (g->broken)
		return INCA_EIO;
	end = deadline_ns(g->timeout_ms);
	g->seq++;
	if (sendbuf != (uint8_t *)recvbuf + (size_t)g->rank * bytes)
		memmove((uint8_t *)recvbuf + (size_t)g->rank * bytes, sendbuf, bytes);
	if (g->size == 1)
		return INCA_OK;
	if (g->rank == 0) {
		for (i = 1; i < g->size && ret == INCA_OK; i++) {
			ret = xfer(g->fd[i], &h, sizeof(h), false, end);
			if (ret == INCA_OK && (h.magic != TG_MAGIC || h.a != g->seq || h.b != bytes)) {
				li_log(INCA_LOG_ERR, "tcp group: rank %u sent exchange %u of %llu bytes, "
				       "expected %u of %zu", i, h.a, (unsigned long long)h.b, g->seq,
				       bytes);
				ret = INCA_EPROTO;
			}
			if (ret == INCA_OK)
				ret = xfer(g->fd[i], (uint8_t *)recvbuf + (size_t)i * bytes, bytes,
					   false, end);
		}
		h.magic = TG_MAGIC;
		h.a = g->seq;
		h.b = bytes;
		for (i = 1; i < g->size && ret == INCA_OK; i++) {
			ret = xfer(g->fd[i], &h, sizeof(h), true, end);
			if (ret == INCA_OK)
				ret = xfer(g->fd[i], recvbuf, (size_t)g->size * bytes, true, end);
		}
	} else {
		h.magic = TG_MAGIC;
		h.a = g->seq;
		h.b = bytes;
		ret = xfer(g->fd[0], &h, sizeof(h), true, end);
		if (ret == INCA_OK)
			ret = xfer(g->fd[0], (void *)(uintptr_t)sendbuf, bytes, true, end);
		if (ret == INCA_OK)
			ret = xfer(g->fd[0], &h, sizeof(h), false, end);
		if (ret == INCA_OK && (h.magic != TG_MAGIC || h.a != g->seq || h.b != bytes))
			ret = INCA_EPROTO;
		if (ret == INCA_OK)
			ret = xfer(g->fd[0], recvbuf, (size_t)g->size * bytes, false, end);
	}
	if (ret < 0) {
		li_log(INCA_LOG_ERR, "tcp group: rank %u: exchange %u failed: %s", g->rank, g->seq,
		       inca_strerror(ret));
		fail_group(g);
	}
	return ret;
}

/* Element i of @p as fp32 (the accumulator of every float type). */
static float
ld(const uint8_t *p, unsigned dtype, size_t i)
{
	uint16_t h;
	float f;

	switch (dtype) {
	case INCA_DTYPE_FP16:
		memcpy(&h, p + 2 * i, 2);
		return inca_fp16_to_fp32(h);
	case INCA_DTYPE_BF16:
		memcpy(&h, p + 2 * i, 2);
		return inca_bf16_to_fp32(h);
	default:
		memcpy(&f, p + 4 * i, 4);
		return f;
	}
}

static float
fop(float a, float b, unsigned op)
{
	switch (op) {
	case INCA_OP_MIN:
		return b < a ? b : a;
	case INCA_OP_MAX:
		return b > a ? b : a;
	default:
		return a + b;
	}
}

static int32_t
iop(int32_t a, int32_t b, unsigned op)
{
	switch (op) {
	case INCA_OP_MIN:
		return b < a ? b : a;
	case INCA_OP_MAX:
		return b > a ? b : a;
	default:
		return (int32_t)((uint32_t)a + (uint32_t)b);
	}
}

static int64_t
lop(int64_t a, int64_t b, unsigned op)
{
	switch (op) {
	case INCA_OP_MIN:
		return b < a ? b : a;
	case INCA_OP_MAX:
		return b > a ? b : a;
	default:
		return (int64_t)((uint64_t)a + (uint64_t)b);
	}
}

/* binary64 bits as int64 in the total order (-0 below +0); its own inverse. */
static inline int64_t
dkey(int64_t s)
{
	return s ^ (int64_t)((uint64_t)(s >> 63) >> 1);
}

/*
 * The aggregator's FP64 rules (docs/protocol.md, "Semantics"): NaN wins
 * and is the canonical one, min/max order -0 below +0, sums round once
 * per addition. In rank order, so one order of the aggregator's.
 */
static uint64_t
dop(uint64_t a, uint64_t b, unsigned op)
{
	const uint64_t nan = UINT64_C(0x7ff8000000000000);
	int64_t ka, kb;
	double x, y;

	if ((a & INT64_MAX) > UINT64_C(0x7ff0000000000000) ||
	    (b & INT64_MAX) > UINT64_C(0x7ff0000000000000))
		return nan;
	if (op == INCA_OP_SUM) {
		memcpy(&x, &a, 8);
		memcpy(&y, &b, 8);
		x += y;
		memcpy(&a, &x, 8);
		return (a & INT64_MAX) > UINT64_C(0x7ff0000000000000) ? nan : a;
	}
	ka = dkey((int64_t)a);
	kb = dkey((int64_t)b);
	if (op == INCA_OP_MIN)
		return (uint64_t)dkey(kb < ka ? kb : ka);
	return (uint64_t)dkey(kb > ka ? kb : ka);
}

int
inca_tcp_group_allreduce(void *ctx, const struct inca_fallback_args *a)
{
	struct inca_tcp_group *g = ctx;
	size_t es, bytes, need, i;
	unsigned r;
	uint8_t *all;
	int ret;

	if (g == NULL || a == NULL || a->dtype >= INCA_DTYPE_COUNT || a->op >= INCA_OP_COUNT)
		return INCA_EINVAL;
	es = inca_dtype_size(a->dtype);
	bytes = a->count * es;
	need = bytes * g->size;
	if (need > g->tmp_len) {
		uint8_t *t = realloc(g->tmp, need);

		if (t == NULL)
			return INCA_ENOMEM;
		g->tmp = t;
		g->tmp_len = need;
	}
	all = g->tmp;
	ret = inca_tcp_group_allgather(g, a->sendbuf, all, bytes);
	if (ret < 0)
		return ret;
	/* In rank order on every rank: bit-identical results everywhere. */
	for (i = 0; i < a->count; i++) {
		if (a->dtype == INCA_DTYPE_INT64 || a->dtype == INCA_DTYPE_FP64) {
			uint64_t acc, x;

			memcpy(&acc, all + 8 * i, 8);
			for (r = 1; r < g->size; r++) {
				memcpy(&x, all + (size_t)r * bytes + 8 * i, 8);
				acc = a->dtype == INCA_DTYPE_INT64 ?
				      (uint64_t)lop((int64_t)acc, (int64_t)x, a->op) :
				      dop(acc, x, a->op);
			}
			if (a->dtype == INCA_DTYPE_FP64 && g->size == 1)
				acc = dop(acc, acc, INCA_OP_MIN); /* canonical NaN */
			memcpy((uint8_t *)a->recvbuf + 8 * i, &acc, 8);
		} else if (a->dtype == INCA_DTYPE_INT32) {
			int32_t acc, x;

			memcpy(&acc, all + 4 * i, 4);
			for (r = 1; r < g->size; r++) {
				memcpy(&x, all + (size_t)r * bytes + 4 * i, 4);
				acc = iop(acc, x, a->op);
			}
			memcpy((uint8_t *)a->recvbuf + 4 * i, &acc, 4);
		} else {
			float acc = ld(all, a->dtype, i);
			uint16_t h;

			for (r = 1; r < g->size; r++)
				acc = fop(acc, ld(all + (size_t)r * bytes, a->dtype, i), a->op);
			if (a->dtype == INCA_DTYPE_FP32) {
				memcpy((uint8_t *)a->recvbuf + 4 * i, &acc, 4);
			} else {
				h = a->dtype == INCA_DTYPE_FP16 ? inca_fp32_to_fp16(acc) :
								  inca_fp32_to_bf16(acc);
				memcpy((uint8_t *)a->recvbuf + 2 * i, &h, 2);
			}
		}
	}
	return INCA_OK;
}

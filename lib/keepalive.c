/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * The optional keepalive thread. The aggregator evicts a member that says
 * nothing for evict_ms, and libinca only sends from inside its calls, so a
 * worker that computes longer than that between collectives would lose its
 * membership. This thread sends a HEARTBEAT when nothing went out for half
 * the aggregator's heartbeat interval.
 *
 * It shares only the socket (a send() on a UDP socket is atomic with
 * respect to the owner thread's sends) and three atomic fields: the time of
 * the last packet, whether heartbeats make sense now (joined, not in the
 * fallback, not failed), and its own count. HEARTBEAT_ACKs are read, and
 * dropped, by the owner thread's next call.
 */

#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/socket.h>

#include "li_member.h"

struct li_keepalive {
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool stop;
};

static void *
ka_main(void *arg)
{
	struct inca_comm *c = arg;
	struct li_keepalive *ka = c->ka;
	uint8_t buf[INCA_HDR_LEN];
	struct inca_msg m;
	uint64_t period;
	/* The UDP socket itself: a transport's fd() may be an epoll set. */
	int fd = c->tops->ctrl_fd != NULL ? c->tops->ctrl_fd(c->tp) : c->tops->fd(c->tp);

	memset(&m, 0, sizeof(m));
	m.version = INCA_PROTO_VERSION;
	m.type = INCA_MSG_HEARTBEAT;
	m.job = c->o.job;
	m.rank = c->wrank;
	m.token = li_session(c);
	m.bitmap = li_secret(c);
	inca_hdr_encode(&m, buf);
	/* hb_ms is fixed by JOIN_ACK before the thread starts. */
	period = (uint64_t)(c->hb_ms ? c->hb_ms : 1000) * 1000000ull / 2;

	pthread_mutex_lock(&ka->mu);
	while (!ka->stop) {
		struct timespec ts;
		uint64_t now, last;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_sec += period / 1000000000ull;
		ts.tv_nsec += period % 1000000000ull;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		if (pthread_cond_timedwait(&ka->cv, &ka->mu, &ts) != ETIMEDOUT || ka->stop)
			continue;
		now = li_now_ns();
		last = __atomic_load_n(&c->last_tx_ns, __ATOMIC_RELAXED);
		if (!__atomic_load_n(&c->ka_allowed, __ATOMIC_ACQUIRE) || now - last < period)
			continue;
		/* A rejoin (a probe back from the fallback) changes the session. */
		m.token = li_session(c);
		m.bitmap = li_secret(c);
		inca_hdr_encode(&m, buf);
		if (send(fd, buf, sizeof(buf), MSG_DONTWAIT) == (ssize_t)sizeof(buf)) {
			__atomic_store_n(&c->last_tx_ns, now, __ATOMIC_RELAXED);
			__atomic_fetch_add(&c->ka_sent, 1, __ATOMIC_RELAXED);
		}
	}
	pthread_mutex_unlock(&ka->mu);
	return NULL;
}

void
li_keepalive_stop(struct inca_comm *c)
{
	struct li_keepalive *ka = c->ka;

	if (ka == NULL)
		return;
	pthread_mutex_lock(&ka->mu);
	ka->stop = true;
	pthread_cond_signal(&ka->cv);
	pthread_mutex_unlock(&ka->mu);
	pthread_join(ka->th, NULL);
	pthread_cond_destroy(&ka->cv);
	pthread_mutex_destroy(&ka->mu);
	free(ka);
	c->ka = NULL;
}

int
inca_comm_keepalive(struct inca_comm *c, int on)
{
	struct li_keepalive *ka;
	pthread_condattr_t ca;

	unsigned s;
	int ret;

	if (c == NULL)
		return INCA_EINVAL;
	for (s = 0; s < c->nstripes; s++) {
		ret = inca_comm_keepalive(c->stripe[s], on);
		if (ret < 0)
			return ret;
	}
	if (!on) {
		li_keepalive_stop(c);
		return INCA_OK;
	}
	if (c->ka != NULL)
		return INCA_OK;
	if (c->tp == NULL || !c->joined)
		return INCA_OK; /* nothing to keep alive: in the fallback from the start */
	ka = calloc(1, sizeof(*ka));
	if (ka == NULL)
		return INCA_ENOMEM;
	pthread_mutex_init(&ka->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&ka->cv, &ca);
	pthread_condattr_destroy(&ca);
	c->ka = ka;
	if (pthread_create(&ka->th, NULL, ka_main, c) != 0) {
		pthread_cond_destroy(&ka->cv);
		pthread_mutex_destroy(&ka->mu);
		free(ka);
		c->ka = NULL;
		return INCA_ENOMEM;
	}
	return INCA_OK;
}

/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * Kernel UDP transport: one non-blocking socket connect()ed to the
 * aggregator, so the kernel drops datagrams from any other source before
 * they reach the library, and batches of datagrams per system call with
 * sendmmsg / recvmmsg.
 *
 * UDP GSO does not help here: the aggregator needs one INCA message per
 * datagram and our datagrams are already at most one MTU, so segmentation
 * offload would only save the per-call cost that sendmmsg already saves.
 */

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "li_transport.h"

struct li_transport {
	int fd;
	struct mmsghdr msgs[LI_BATCH];
	struct iovec iov[LI_BATCH];
};

static int
udp_open(struct li_transport **out, const struct sockaddr_in *agg,
	 const struct sockaddr_in *bind_addr, size_t rcvbuf, unsigned window)
{
	struct li_transport *t;
	int fd, v, ret;

	(void)window; /* rcvbuf already sizes the socket for it */
	t = calloc(1, sizeof(*t));
	if (t == NULL)
		return INCA_ENOMEM;
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		ret = INCA_EIO;
		goto fail_socket;
	}
	/* Room for a whole window of results arriving back to back; the
	 * kernel caps it at rmem_max, which is fine: losses are retransmitted. */
	v = (int)rcvbuf;
	(void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof(v));
	(void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof(v));
	if (bind_addr != NULL && bind(fd, (const struct sockaddr *)bind_addr,
				      sizeof(*bind_addr)) < 0) {
		li_log(INCA_LOG_ERR, "bind: %s", strerror(errno));
		ret = INCA_EIO;
		goto fail_connect;
	}
	if (connect(fd, (const struct sockaddr *)agg, sizeof(*agg)) < 0) {
		li_log(INCA_LOG_ERR, "connect to the aggregator: %s", strerror(errno));
		ret = errno == ENETUNREACH || errno == EHOSTUNREACH ? INCA_EUNREACH : INCA_EIO;
		goto fail_connect;
	}
	t->fd = fd;
	*out = t;
	return INCA_OK;

fail_connect:
	close(fd);
fail_socket:
	free(t);
	return ret;
}

/* Errors that mean "the aggregator is not there right now" (an ICMP
 * answer to an earlier datagram, a route flapping) rather than a broken
 * socket: the protocol's timeouts deal with them. */
static bool
transient(int e)
{
	return e == ECONNREFUSED || e == EHOSTUNREACH || e == ENETUNREACH ||
	       e == EAGAIN || e == EWOULDBLOCK || e == EINTR || e == ENOBUFS ||
	       e == EPERM; /* a firewall rule rejecting the packet */
}

static int
udp_send_batch(struct li_transport *t, const struct li_pkt *pkts, unsigned n)
{
	unsigned i;
	int ret;

	if (n > LI_BATCH)
		n = LI_BATCH;
	for (i = 0; i < n; i++) {
		t->iov[i].iov_base = pkts[i].buf;
		t->iov[i].iov_len = pkts[i].len;
		memset(&t->msgs[i].msg_hdr, 0, sizeof(t->msgs[i].msg_hdr));
		t->msgs[i].msg_hdr.msg_iov = &t->iov[i];
		t->msgs[i].msg_hdr.msg_iovlen = 1;
	}
	ret = sendmmsg(t->fd, t->msgs, n, MSG_DONTWAIT);
	if (ret < 0)
		return transient(errno) ? 0 : INCA_EIO;
	return ret;
}

static int
udp_recv_batch(struct li_transport *t, struct li_pkt *pkts, unsigned n)
{
	unsigned i;
	int ret;

	if (n > LI_BATCH)
		n = LI_BATCH;
	for (i = 0; i < n; i++) {
		t->iov[i].iov_base = pkts[i].buf;
		t->iov[i].iov_len = pkts[i].len;
		memset(&t->msgs[i].msg_hdr, 0, sizeof(t->msgs[i].msg_hdr));
		t->msgs[i].msg_hdr.msg_iov = &t->iov[i];
		t->msgs[i].msg_hdr.msg_iovlen = 1;
	}
	ret = recvmmsg(t->fd, t->msgs, n, MSG_DONTWAIT, NULL);
	if (ret < 0)
		return transient(errno) ? 0 : INCA_EIO;
	for (i = 0; i < (unsigned)ret; i++) {
		/* A datagram larger than our buffer is not an INCA message we
		 * could use; report it short so that decoding rejects it. */
		if (t->msgs[i].msg_hdr.msg_flags & MSG_TRUNC)
			pkts[i].len = 0;
		else
			pkts[i].len = t->msgs[i].msg_len;
	}
	return ret;
}

static void
udp_close(struct li_transport *t)
{
	if (t == NULL)
		return;
	close(t->fd);
	free(t);
}

static int
udp_fd(const struct li_transport *t)
{
	return t->fd;
}

const struct li_transport_ops li_udp_ops = {
	.name = "udp",
	.open = udp_open,
	.send_batch = udp_send_batch,
	.recv_batch = udp_recv_batch,
	.close = udp_close,
	.fd = udp_fd,
};

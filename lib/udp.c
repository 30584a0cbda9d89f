/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * Kernel UDP transport: one non-blocking socket connect()ed to the
 * aggregator, so the kernel drops datagrams from any other source before
 * they reach the library, and batches of datagrams per system call with
 * sendmmsg / recvmmsg.
 *
 * Where the kernel takes them (Linux 4.18 / 5.0 and later), two offloads
 * make the batches cheaper, INCA_UDP_GSO=0 turns both off:
 *
 * - UDP GSO on send: a run of equal-sized datagrams (and one shorter
 *   last one) goes down the stack as one buffer with a UDP_SEGMENT
 *   control message; the kernel cuts it into the same datagrams just
 *   before the device (or the NIC does), so the socket, IP and
 *   netfilter layers run once per run instead of once per datagram. The
 *   aggregator still sees one INCA message per datagram.
 * - UDP GRO on receive: with UDP_GRO set, a device doing GRO hands the
 *   socket a train of results from the aggregator as one buffer with the
 *   segment size in a control message; we cut it back into datagrams.
 *   Such a buffer can hold 64 KiB, so with GRO on the datagrams land in
 *   our own slots and are copied into the caller's buffers.
 *
 * Whether a kernel accepts GSO is only known at the first send (an old
 * one rejects the control message, one routing through xfrm cannot
 * segment): the first failure with EINVAL, EIO or EOPNOTSUPP turns GSO off
 * for the socket and the batch goes again without it.
 */

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "li_transport.h"

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#ifndef UDP_GRO
#define UDP_GRO 104
#endif

/* Most segments the kernel takes in one GSO send (UDP_MAX_SEGMENTS, 64 before Linux 6.5). */
#define UDP_GSO_MAX_SEGS 64
/* Largest UDP payload of one IPv4 datagram: a GSO buffer and a GRO train are at most that. */
#define UDP_MAX_PAYLOAD (65535 - LI_IP_UDP_LEN)

struct li_transport {
	int fd;
	bool gso;             /* sends group runs of equal datagrams */
	bool gro;             /* the socket has UDP_GRO; receives go through rx_slot */
	struct mmsghdr msgs[LI_BATCH];
	struct iovec iov[LI_BATCH];
	unsigned nseg[LI_BATCH];  /* datagrams of each GSO message */
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} cmsg[LI_BATCH];
	/* GRO receive: LI_BATCH slots of UDP_MAX_PAYLOAD, and what of them
	 * the last recvmmsg left for the next call. */
	uint8_t *rx_slot;
	size_t rx_len[LI_BATCH];
	size_t rx_seg[LI_BATCH];
	unsigned rx_next, rx_count;
	size_t rx_off;
	uint64_t gso_sends, gro_pkts;
};

static bool
offload_wanted(void)
{
	const char *s = getenv("INCA_UDP_GSO");

	return s == NULL || strcmp(s, "0") != 0;
}

/* UDP_GRO and the slots it needs; without either, receives stay direct. */
static void
gro_enable(struct li_transport *t)
{
	int one = 1;

	t->rx_slot = malloc((size_t)LI_BATCH * UDP_MAX_PAYLOAD);
	if (t->rx_slot == NULL)
		return;
	if (setsockopt(t->fd, IPPROTO_UDP, UDP_GRO, &one, sizeof(one)) < 0) {
		free(t->rx_slot);
		t->rx_slot = NULL;
		return;
	}
	t->gro = true;
}

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
	if (offload_wanted()) {
		t->gso = true;
		gro_enable(t);
	}
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

/*
 * How many of @pkts[0..n) one GSO buffer can carry: a run of datagrams of
 * the first one's length, then at most one shorter (the kernel cuts every
 * segment but the last at the same size), within the kernel's limits.
 */
static unsigned
gso_run(const struct li_pkt *pkts, unsigned n)
{
	size_t seg = pkts[0].len, total = seg;
	unsigned k = 1;

	while (k < n && k < UDP_GSO_MAX_SEGS && pkts[k].len <= seg &&
	       total + pkts[k].len <= UDP_MAX_PAYLOAD) {
		total += pkts[k].len;
		if (pkts[k++].len < seg)
			break;
	}
	return k;
}

static int
udp_send_batch(struct li_transport *t, const struct li_pkt *pkts, unsigned n)
{
	unsigned i, m = 0, k;
	int ret, sent;

	if (n > LI_BATCH)
		n = LI_BATCH;
	for (i = 0; i < n; i++) {
		t->iov[i].iov_base = pkts[i].buf;
		t->iov[i].iov_len = pkts[i].len;
	}
	for (i = 0; i < n; i += t->nseg[m++]) {
		struct msghdr *h = &t->msgs[m].msg_hdr;

		memset(h, 0, sizeof(*h));
		h->msg_iov = &t->iov[i];
		t->nseg[m] = t->gso && pkts[i].len > 0 ? gso_run(pkts + i, n - i) : 1;
		h->msg_iovlen = t->nseg[m];
		if (t->nseg[m] > 1) {
			struct cmsghdr *cm;
			uint16_t seg = (uint16_t)pkts[i].len;

			h->msg_control = t->cmsg[m].buf;
			h->msg_controllen = CMSG_SPACE(sizeof(seg));
			cm = CMSG_FIRSTHDR(h);
			cm->cmsg_level = IPPROTO_UDP;
			cm->cmsg_type = UDP_SEGMENT;
			cm->cmsg_len = CMSG_LEN(sizeof(seg));
			memcpy(CMSG_DATA(cm), &seg, sizeof(seg));
		}
	}
	ret = sendmmsg(t->fd, t->msgs, m, MSG_DONTWAIT);
	if (ret < 0) {
		if (t->gso && m < n && (errno == EINVAL || errno == EIO || errno == EOPNOTSUPP)) {
			/* This kernel or route cannot segment: never again. */
			t->gso = false;
			li_log(INCA_LOG_DEBUG, "UDP GSO refused (%s): sending datagram by "
			       "datagram", strerror(errno));
			return udp_send_batch(t, pkts, n);
		}
		return transient(errno) ? 0 : INCA_EIO;
	}
	for (k = 0, sent = 0; k < (unsigned)ret; k++) {
		sent += (int)t->nseg[k];
		t->gso_sends += t->nseg[k] > 1;
	}
	return sent;
}

unsigned
li_udp_gro_split(const uint8_t *buf, size_t len, size_t seg, size_t *off, struct li_pkt *pkts,
		 unsigned n)
{
	unsigned k;

	if (seg == 0)
		seg = len; /* not coalesced: one datagram */
	for (k = 0; k < n && *off < len; k++) {
		size_t l = len - *off < seg ? len - *off : seg;

		/* As for a truncated datagram: report it empty, decoding rejects it. */
		if (l > pkts[k].len) {
			pkts[k].len = 0;
		} else {
			memcpy(pkts[k].buf, buf + *off, l);
			pkts[k].len = l;
		}
		*off += l;
	}
	return k;
}

/* Receive into the caller's buffers, one datagram each. */
static int
recv_direct(struct li_transport *t, struct li_pkt *pkts, unsigned n)
{
	unsigned i;
	int ret;

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

/* The segment size of a GRO train (0: a single datagram). */
static size_t
gro_seg(struct msghdr *h)
{
	struct cmsghdr *cm;
	int v;

	for (cm = CMSG_FIRSTHDR(h); cm != NULL; cm = CMSG_NXTHDR(h, cm)) {
		if (cm->cmsg_level == IPPROTO_UDP && cm->cmsg_type == UDP_GRO) {
			memcpy(&v, CMSG_DATA(cm), sizeof(v));
			return v > 0 ? (size_t)v : 0;
		}
	}
	return 0;
}

/* Hand out what the slots hold; returns the datagrams written to @pkts. */
static unsigned
gro_drain(struct li_transport *t, struct li_pkt *pkts, unsigned n)
{
	unsigned done = 0;

	while (done < n && t->rx_next < t->rx_count) {
		unsigned i = t->rx_next, k;

		k = li_udp_gro_split(t->rx_slot + (size_t)i * UDP_MAX_PAYLOAD, t->rx_len[i],
				     t->rx_seg[i], &t->rx_off, pkts + done, n - done);
		if (t->rx_seg[i] != 0)
			t->gro_pkts += k;
		done += k;
		if (t->rx_off >= t->rx_len[i]) {
			t->rx_next++;
			t->rx_off = 0;
		}
	}
	return done;
}

static int
recv_gro(struct li_transport *t, struct li_pkt *pkts, unsigned n)
{
	unsigned i, done;
	int ret;

	done = gro_drain(t, pkts, n);
	if (done == n)
		return (int)done;
	/* As many slots as datagrams wanted: a train fills the caller's
	 * buffers, the rest waits in its slot for the next call. */
	for (i = 0; i < n - done; i++) {
		struct msghdr *h = &t->msgs[i].msg_hdr;

		t->iov[i].iov_base = t->rx_slot + (size_t)i * UDP_MAX_PAYLOAD;
		t->iov[i].iov_len = UDP_MAX_PAYLOAD;
		memset(h, 0, sizeof(*h));
		h->msg_iov = &t->iov[i];
		h->msg_iovlen = 1;
		h->msg_control = t->cmsg[i].buf;
		h->msg_controllen = sizeof(t->cmsg[i].buf);
	}
	ret = recvmmsg(t->fd, t->msgs, n - done, MSG_DONTWAIT, NULL);
	if (ret < 0)
		return done > 0 ? (int)done : transient(errno) ? 0 : INCA_EIO;
	for (i = 0; i < (unsigned)ret; i++) {
		struct msghdr *h = &t->msgs[i].msg_hdr;

		t->rx_len[i] = h->msg_flags & MSG_TRUNC ? 0 : t->msgs[i].msg_len;
		t->rx_seg[i] = gro_seg(h);
	}
	t->rx_next = 0;
	t->rx_count = (unsigned)ret;
	t->rx_off = 0;
	return (int)(done + gro_drain(t, pkts + done, n - done));
}

static int
udp_recv_batch(struct li_transport *t, struct li_pkt *pkts, unsigned n)
{
	if (n > LI_BATCH)
		n = LI_BATCH;
	return t->gro ? recv_gro(t, pkts, n) : recv_direct(t, pkts, n);
}

static void
udp_close(struct li_transport *t)
{
	if (t == NULL)
		return;
	close(t->fd);
	free(t->rx_slot);
	free(t);
}

static int
udp_fd(const struct li_transport *t)
{
	return t->fd;
}

static void
udp_info(const struct li_transport *t, struct inca_comm_info *info)
{
	info->udp_gso = t->gso;
	info->udp_gro = t->gro;
	info->gso_sends += t->gso_sends;
	info->gro_pkts += t->gro_pkts;
}

const struct li_transport_ops li_udp_ops = {
	.name = "udp",
	.open = udp_open,
	.send_batch = udp_send_batch,
	.recv_batch = udp_recv_batch,
	.close = udp_close,
	.fd = udp_fd,
	.info = udp_info,
};

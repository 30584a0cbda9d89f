/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * RoCEv2 transport (docs/protocol.md, "RoCEv2 transport"): a UDP socket,
 * exactly udp's, for the control messages, and one Unreliable Datagram
 * queue pair for the data path. Once the JOIN_ACK has bound it, CONTRIBs go
 * out as UD SENDs to the aggregator's queue pair and its RESULTs and data
 * NACKs come back as receive completions; until then, and with an
 * aggregator without INCA_CAP_ROCE, everything is UDP.
 *
 * The library polls one descriptor: an epoll set of the UDP socket, the
 * receive CQ's completion channel and an eventfd. The CQ is re-armed each
 * time recv_batch drains it (then polled once more, for a completion that
 * came between the last poll and the arming); its events are taken from
 * the channel and acknowledged in the same call, so their number stays
 * bounded. When a call leaves completions in the CQ (it was asked for fewer
 * than there are), no event would wake a poll() for them: the eventfd is
 * set then and cleared when the CQ is drained, so poll() never sleeps on
 * received data. It is written on those transitions only.
 *
 * Nothing here is exercised on a machine without an RDMA device; the
 * decisions it takes are in verbs_logic.c and tested there.
 */

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/socket.h>

#include "li_verbs.h"

/* Devices looked at, GID entries per port read. */
#define VB_MAX_DEVS 16
#define VB_MAX_GIDS 256
/* Inline data asked for: a small CONTRIB needs no copy then. */
#define VB_INLINE_WANT 256
/* How long joined() waits for sends still in flight before changing the AH. */
#define VB_DRAIN_NS 100000000ull

struct li_transport {
	struct li_transport *udp; /* control messages; data until bound */
	int epfd;
	int more_fd;              /* eventfd: completions left in the receive CQ */
	bool more;
	uint32_t agg_ip;          /* network byte order */

	struct ibv_context *ctx;
	char dev[LI_VB_NAME_MAX];
	uint8_t port;
	uint8_t gid_index;
	unsigned mtu;             /* the port's active MTU, bytes */
	struct ibv_pd *pd;
	struct ibv_comp_channel *ch;
	struct ibv_cq *rcq;
	struct ibv_cq *scq;
	struct ibv_qp *qp;
	uint32_t qkey;
	uint32_t max_inline;
	uint8_t *mem;             /* receive slots, then send slots */
	struct ibv_mr *mr;
	unsigned nrx;
	size_t rx_slot;           /* LI_VB_GRH_LEN + mtu */
	uint8_t *tx_mem;          /* LI_VB_SQ_DEPTH slots of mtu bytes */

	bool off;                 /* a binding failed: offer none again */
	bool bound;
	struct ibv_ah *ah;
	uint32_t peer_qpn;
	uint32_t peer_qkey;

	uint64_t posted;          /* send requests posted ... */
	uint64_t completed;       /* ... and known complete */
	bool broken;
	bool cq_first;            /* which source recv_batch reads first */

	struct ibv_send_wr swr[LI_BATCH];
	struct ibv_sge ssge[LI_BATCH];
	struct ibv_recv_wr rwr[LI_BATCH];
	struct ibv_sge rsge[LI_BATCH];
	struct ibv_wc wc[LI_BATCH];
};

/* ---- set-up ------------------------------------------------------------- */

static uint32_t
random32(void)
{
	uint32_t v;

	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != (ssize_t)sizeof(v))
		v = (uint32_t)(li_now_ns() ^ ((uint64_t)getpid() << 16));
	return v;
}

/*
 * Find the device, port and GID index to send from (li_vb_choose()) and
 * keep that device open in t->ctx. Returns 0, or -1 with @why filled.
 */
static int
pick_device(struct li_transport *t, uint32_t local_ip, char *why, size_t wl)
{
	struct ibv_context *ctxs[VB_MAX_DEVS] = {NULL};
	struct li_vb_dev_spec spec, *sp = NULL;
	struct ibv_device **list;
	struct li_vb_gid *tab = NULL;
	unsigned *mtus = NULL, n = 0, cap = 0, d, i;
	const char *env = getenv("INCA_ROCE_DEV"), *reason = NULL;
	int ndev = 0, pick = -1;
	char ip[INET_ADDRSTRLEN];

	if (env != NULL && *env != '\0') {
		if (li_vb_parse_dev(env, &spec) < 0) {
			snprintf(why, wl, "INCA_ROCE_DEV=%s: want device[:port]", env);
			return -1;
		}
		sp = &spec;
	}
	list = ibv_get_device_list(&ndev);
	if (list == NULL || ndev == 0) {
		snprintf(why, wl, "no RDMA device (%s)",
			 list == NULL && errno == ENOSYS ? "the kernel has no RDMA support" :
			 list == NULL ? strerror(errno) : "ibv_get_device_list found none");
		if (list != NULL)
			ibv_free_device_list(list);
		return -1;
	}
	for (d = 0; d < (unsigned)ndev && d < VB_MAX_DEVS; d++) {
		const char *name = ibv_get_device_name(list[d]);
		struct ibv_device_attr da;
		uint8_t p;

		if (sp != NULL && strcmp(name, sp->name) != 0)
			continue;
		ctxs[d] = ibv_open_device(list[d]);
		if (ctxs[d] == NULL || ibv_query_device(ctxs[d], &da) != 0)
			continue;
		for (p = 1; p <= da.phys_port_cnt; p++) {
			struct ibv_port_attr pa;
			int g;

			if (ibv_query_port(ctxs[d], p, &pa) != 0 ||
			    pa.link_layer != IBV_LINK_LAYER_ETHERNET)
				continue;
			for (g = 0; g < pa.gid_tbl_len && g < VB_MAX_GIDS; g++) {
				struct ibv_gid_entry ge;

				if (ibv_query_gid_ex(ctxs[d], p, (uint32_t)g, &ge, 0) != 0)
					continue; /* an empty entry */
				if (n == cap) {
					void *nt, *nm;

					cap = cap ? 2 * cap : 64;
					nt = realloc(tab, cap * sizeof(*tab));
					if (nt != NULL)
						tab = nt;
					nm = realloc(mtus, cap * sizeof(*mtus));
					if (nm != NULL)
						mtus = nm;
					if (nt == NULL || nm == NULL) {
						snprintf(why, wl, "out of memory");
						goto out;
					}
				}
				tab[n].dev = name;
				tab[n].port = p;
				tab[n].index = (unsigned)g;
				memcpy(tab[n].gid, ge.gid.raw, 16);
				tab[n].roce_v2 = ge.gid_type == IBV_GID_TYPE_ROCE_V2;
				tab[n].port_active = pa.state == IBV_PORT_ACTIVE;
				mtus[n] = li_vb_mtu_bytes(pa.active_mtu);
				n++;
			}
		}
	}
	pick = li_vb_choose(tab, n, sp, local_ip, &reason);
	if (pick < 0) {
		inet_ntop(AF_INET, &local_ip, ip, sizeof(ip));
		snprintf(why, wl, "%s (local address %s)", reason, ip);
		goto out;
	}
	for (d = 0; d < (unsigned)ndev && d < VB_MAX_DEVS; d++)
		if (ctxs[d] != NULL && strcmp(ibv_get_device_name(list[d]), tab[pick].dev) == 0)
			break;
	t->ctx = ctxs[d];
	ctxs[d] = NULL;
	snprintf(t->dev, sizeof(t->dev), "%s", tab[pick].dev);
	t->port = (uint8_t)tab[pick].port;
	t->gid_index = (uint8_t)tab[pick].index;
	t->mtu = mtus[pick];
	if (!tab[pick].port_active)
		li_log(INCA_LOG_WARN, "verbs: %s port %u is not active", t->dev, t->port);
	if (t->mtu == 0) {
		snprintf(why, wl, "%s port %u reports no active MTU", t->dev, t->port);
		pick = -1;
	}
out:
	for (i = 0; i < VB_MAX_DEVS; i++)
		if (ctxs[i] != NULL)
			ibv_close_device(ctxs[i]);
	free(tab);
	free(mtus);
	ibv_free_device_list(list);
	return pick < 0 ? -1 : 0;
}

static int
post_recvs(struct li_transport *t, const uint32_t *slots, unsigned n)
{
	struct ibv_recv_wr *bad;
	unsigned i;

	if (n == 0)
		return 0;
	for (i = 0; i < n; i++) {
		t->rsge[i].addr = (uintptr_t)(t->mem + (size_t)slots[i] * t->rx_slot);
		t->rsge[i].length = (uint32_t)t->rx_slot;
		t->rsge[i].lkey = t->mr->lkey;
		t->rwr[i].wr_id = slots[i];
		t->rwr[i].sg_list = &t->rsge[i];
		t->rwr[i].num_sge = 1;
		t->rwr[i].next = i + 1 < n ? &t->rwr[i + 1] : NULL;
	}
	return ibv_post_recv(t->qp, t->rwr, &bad);
}

/* INIT (port, Q_Key), RTR, RTS: a UD queue pair needs nothing more. */
static int
qp_ready(struct li_transport *t)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = t->port;
	a.qkey = t->qkey;
	if (ibv_modify_qp(t->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			  IBV_QP_QKEY) != 0)
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(t->qp, &a, IBV_QP_STATE) != 0)
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = random32() & 0xffffff;
	return ibv_modify_qp(t->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
}

static int
epoll_add(int epfd, int fd)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd};

	return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev);
}

/* Everything after the UDP socket; -1 with @why on failure (the caller closes). */
static int
rdma_setup(struct li_transport *t, unsigned window, char *why, size_t wl)
{
	struct ibv_qp_init_attr qa;
	struct ibv_device_attr da;
	struct sockaddr_in local;
	socklen_t sl = sizeof(local);
	int ufd = li_udp_ops.fd(t->udp);
	uint32_t slots[LI_BATCH];
	size_t len;
	unsigned i, k;

	if (getsockname(ufd, (struct sockaddr *)&local, &sl) != 0) {
		snprintf(why, wl, "getsockname: %s", strerror(errno));
		return -1;
	}
	if (pick_device(t, local.sin_addr.s_addr, why, wl) < 0)
		return -1;
#define VB_FAIL(what) \
	do { \
		snprintf(why, wl, "%s on %s port %u: %s", what, t->dev, t->port, \
			 strerror(errno ? errno : EIO)); \
		return -1; \
	} while (0)
	errno = 0;
	if (ibv_query_device(t->ctx, &da) != 0)
		VB_FAIL("ibv_query_device");
	/* A window of RESULTs back to back, their replays, and NACKs. */
	t->nrx = 2 * window + LI_VB_RX_MARGIN;
	if (t->nrx > (unsigned)da.max_qp_wr)
		t->nrx = (unsigned)da.max_qp_wr;
	if (t->nrx > (unsigned)da.max_cqe)
		t->nrx = (unsigned)da.max_cqe;
	if (t->nrx < window)
		li_log(INCA_LOG_WARN, "verbs: %s posts at most %u receives, below window %u",
		       t->dev, t->nrx, window);
	t->rx_slot = LI_VB_GRH_LEN + t->mtu;
	t->pd = ibv_alloc_pd(t->ctx);
	if (t->pd == NULL)
		VB_FAIL("ibv_alloc_pd");
	t->ch = ibv_create_comp_channel(t->ctx);
	if (t->ch == NULL)
		VB_FAIL("ibv_create_comp_channel");
	if (fcntl(t->ch->fd, F_SETFL, fcntl(t->ch->fd, F_GETFL) | O_NONBLOCK) != 0)
		VB_FAIL("fcntl");
	t->rcq = ibv_create_cq(t->ctx, (int)t->nrx, NULL, t->ch, 0);
	if (t->rcq == NULL)
		VB_FAIL("ibv_create_cq (receive)");
	t->scq = ibv_create_cq(t->ctx, LI_VB_SQ_DEPTH, NULL, NULL, 0);
	if (t->scq == NULL)
		VB_FAIL("ibv_create_cq (send)");
	memset(&qa, 0, sizeof(qa));
	qa.send_cq = t->scq;
	qa.recv_cq = t->rcq;
	qa.qp_type = IBV_QPT_UD;
	qa.cap.max_send_wr = LI_VB_SQ_DEPTH;
	qa.cap.max_recv_wr = t->nrx;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	qa.cap.max_inline_data = VB_INLINE_WANT;
	t->qp = ibv_create_qp(t->pd, &qa);
	if (t->qp == NULL) {
		/* Some devices take no inline data on UD: copy everything. */
		qa.cap.max_inline_data = 0;
		t->qp = ibv_create_qp(t->pd, &qa);
	}
	if (t->qp == NULL)
		VB_FAIL("ibv_create_qp (UD)");
	t->max_inline = qa.cap.max_inline_data;
	t->qkey = random32() & 0x7fffffff;
	if (t->qkey == 0)
		t->qkey = 1;
	if (qp_ready(t) != 0)
		VB_FAIL("ibv_modify_qp (INIT, RTR, RTS)");
	len = t->nrx * t->rx_slot + (size_t)LI_VB_SQ_DEPTH * t->mtu;
	if (posix_memalign((void **)&t->mem, (size_t)sysconf(_SC_PAGESIZE), len) != 0) {
		t->mem = NULL;
		VB_FAIL("posix_memalign");
	}
	t->tx_mem = t->mem + t->nrx * t->rx_slot;
	t->mr = ibv_reg_mr(t->pd, t->mem, len, IBV_ACCESS_LOCAL_WRITE);
	if (t->mr == NULL)
		VB_FAIL("ibv_reg_mr");
	for (i = 0; i < t->nrx; i += k) {
		for (k = 0; k < LI_BATCH && i + k < t->nrx; k++)
			slots[k] = i + k;
		if ((errno = post_recvs(t, slots, k)) != 0)
			VB_FAIL("ibv_post_recv");
	}
	if ((errno = ibv_req_notify_cq(t->rcq, 0)) != 0)
		VB_FAIL("ibv_req_notify_cq");
	t->more_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (t->more_fd < 0)
		VB_FAIL("eventfd");
	t->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (t->epfd < 0 || epoll_add(t->epfd, ufd) != 0 || epoll_add(t->epfd, t->ch->fd) != 0 ||
	    epoll_add(t->epfd, t->more_fd) != 0)
		VB_FAIL("epoll");
#undef VB_FAIL
	return 0;
}

static void
verbs_close(struct li_transport *t)
{
	if (t == NULL)
		return;
	if (t->epfd >= 0)
		close(t->epfd);
	if (t->more_fd >= 0)
		close(t->more_fd);
	if (t->ah != NULL)
		ibv_destroy_ah(t->ah);
	if (t->qp != NULL)
		ibv_destroy_qp(t->qp);
	if (t->mr != NULL)
		ibv_dereg_mr(t->mr);
	free(t->mem);
	if (t->scq != NULL)
		ibv_destroy_cq(t->scq);
	if (t->rcq != NULL) {
		if (t->ch != NULL) {
			struct ibv_cq *cq;
			void *cq_ctx;
			unsigned n = 0;

			/* Every event taken must be acknowledged before the
			 * CQ goes. */
			while (ibv_get_cq_event(t->ch, &cq, &cq_ctx) == 0)
				n++;
			if (n > 0)
				ibv_ack_cq_events(t->rcq, n);
		}
		ibv_destroy_cq(t->rcq);
	}
	if (t->ch != NULL)
		ibv_destroy_comp_channel(t->ch);
	if (t->pd != NULL)
		ibv_dealloc_pd(t->pd);
	if (t->ctx != NULL)
		ibv_close_device(t->ctx);
	li_udp_ops.close(t->udp);
	free(t);
}

static int
verbs_open(struct li_transport **out, const struct sockaddr_in *agg,
	   const struct sockaddr_in *bind_addr, size_t rcvbuf, unsigned window)
{
	struct li_transport *t;
	char why[256], ip[INET_ADDRSTRLEN];
	int ret;

	t = calloc(1, sizeof(*t));
	if (t == NULL)
		return INCA_ENOMEM;
	t->epfd = -1;
	t->more_fd = -1;
	t->agg_ip = agg->sin_addr.s_addr;
	ret = li_udp_ops.open(&t->udp, agg, bind_addr, rcvbuf, window);
	if (ret < 0) {
		free(t);
		return ret;
	}
	if (rdma_setup(t, window, why, sizeof(why)) < 0) {
		li_log(INCA_LOG_WARN, "INCA_TRANSPORT=verbs: %s; using udp", why);
		verbs_close(t);
		return INCA_ENOTSUP;
	}
	inet_ntop(AF_INET, &t->agg_ip, ip, sizeof(ip));
	li_log(INCA_LOG_INFO, "verbs: %s port %u GID index %u, RoCE MTU %u, UD QPN 0x%x, "
	       "%u receives posted, inline up to %u bytes; aggregator %s", t->dev, t->port,
	       t->gid_index, t->mtu, t->qp->qp_num, t->nrx, t->max_inline, ip);
	*out = t;
	return INCA_OK;
}

/* ---- send --------------------------------------------------------------- */

/* Take send completions: each signalled one frees its request's slot and
 * every slot before it (a send queue completes in order). */
static int
reap(struct li_transport *t)
{
	int n, i;

	n = ibv_poll_cq(t->scq, LI_BATCH, t->wc);
	if (n < 0)
		return INCA_EIO;
	for (i = 0; i < n; i++) {
		if (t->wc[i].status != IBV_WC_SUCCESS && !t->broken) {
			/* The queue pair is in error now: every later send
			 * fails, and the stream's recovery takes over. */
			li_log(INCA_LOG_ERR, "verbs: send completion: %s",
			       ibv_wc_status_str(t->wc[i].status));
			t->broken = true;
		}
		if (t->wc[i].wr_id + 1 > t->completed)
			t->completed = t->wc[i].wr_id + 1;
	}
	return t->broken ? INCA_EIO : INCA_OK;
}

static int
qp_send(struct li_transport *t, const struct li_pkt *pkts, unsigned n)
{
	struct ibv_send_wr *bad = NULL;
	unsigned i, room;
	int ret;

	ret = reap(t);
	if (ret < 0)
		return ret;
	room = LI_VB_SQ_DEPTH - (unsigned)(t->posted - t->completed);
	if (n > room)
		n = room;
	/* max_elems was asked for within the MTU (verbs_max_elems): a longer
	 * message is the library's bug, not the network's. */
	for (i = 0; i < n && pkts[i].len <= t->mtu; i++)
		;
	if (i == 0 && n > 0)
		return INCA_EPROTO;
	n = i;
	for (i = 0; i < n; i++) {
		uint64_t seq = t->posted + i;

		li_vb_fill_send(&t->swr[i], &t->ssge[i], pkts[i].buf, pkts[i].len,
				t->tx_mem + (seq % LI_VB_SQ_DEPTH) * t->mtu, t->mr->lkey,
				t->max_inline, t->ah, t->peer_qpn, t->peer_qkey, seq,
				li_vb_signaled(seq, i, n));
		t->swr[i].next = i + 1 < n ? &t->swr[i + 1] : NULL;
	}
	if (n == 0)
		return 0;
	ret = ibv_post_send(t->qp, t->swr, &bad);
	if (ret != 0) {
		/* The requests before @bad went out. A full queue is a
		 * "try later"; anything else breaks the path. */
		n = bad != NULL ? (unsigned)(bad - t->swr) : 0;
		if (ret != ENOMEM && n == 0)
			return INCA_EIO;
	}
	t->posted += n;
	return (int)n;
}

static int
verbs_send_batch(struct li_transport *t, const struct li_pkt *pkts, unsigned n)
{
	unsigned done = 0, j;
	int ret;

	if (n > LI_BATCH)
		n = LI_BATCH;
	while (done < n) {
		enum li_vb_route r = li_vb_route(pkts[done].buf, pkts[done].len, t->bound);

		for (j = done + 1; j < n; j++)
			if (li_vb_route(pkts[j].buf, pkts[j].len, t->bound) != r)
				break;
		if (r == LI_VB_QP)
			ret = qp_send(t, pkts + done, j - done);
		else
			ret = li_udp_ops.send_batch(t->udp, pkts + done, j - done);
		if (ret < 0)
			return done > 0 ? (int)done : ret;
		done += (unsigned)ret;
		if (done < j)
			break;
	}
	return (int)done;
}

/* ---- receive ------------------------------------------------------------ */

static void
set_more(struct li_transport *t, bool more)
{
	uint64_t v = 1;

	if (more == t->more)
		return;
	if (more)
		(void)!write(t->more_fd, &v, sizeof(v));
	else
		(void)!read(t->more_fd, &v, sizeof(v));
	t->more = more;
}

/* Up to @n messages from the receive CQ; every slot is posted again. */
static int
cq_recv(struct li_transport *t, struct li_pkt *pkts, unsigned n)
{
	uint32_t slots[LI_BATCH];
	struct ibv_cq *ev_cq;
	void *ev_ctx;
	unsigned events = 0, k = 0, i;
	int m, m2;

	while (ibv_get_cq_event(t->ch, &ev_cq, &ev_ctx) == 0)
		events++;
	if (events > 0)
		ibv_ack_cq_events(t->rcq, events);
	m = ibv_poll_cq(t->rcq, (int)n, t->wc);
	if (m < 0)
		return INCA_EIO;
	if ((unsigned)m < n) {
		/* Drained: arm, then look once more for a completion that came
		 * in between, which would raise no event. */
		if (ibv_req_notify_cq(t->rcq, 0) != 0)
			return INCA_EIO;
		m2 = ibv_poll_cq(t->rcq, (int)n - m, t->wc + m);
		if (m2 < 0)
			return INCA_EIO;
		m += m2;
	}
	set_more(t, (unsigned)m == n);
	for (i = 0; i < (unsigned)m; i++) {
		const struct ibv_wc *wc = &t->wc[i];
		const uint8_t *buf = t->mem + (size_t)wc->wr_id * t->rx_slot;
		size_t len;

		slots[i] = (uint32_t)wc->wr_id;
		/* A failed receive, or one from anyone but the bound
		 * aggregator's queue pair: dropped, as the connected UDP
		 * socket drops datagrams from other sources. */
		if (wc->status != IBV_WC_SUCCESS || !t->bound || !(wc->wc_flags & IBV_WC_GRH) ||
		    !li_vb_rx_from(buf, wc->src_qp, t->agg_ip, t->peer_qpn))
			continue;
		len = li_vb_rx_len(wc->byte_len, pkts[k].len);
		if (len > 0)
			memcpy(pkts[k].buf, buf + LI_VB_GRH_LEN, len);
		pkts[k].len = len;
		k++;
	}
	if (post_recvs(t, slots, (unsigned)m) != 0)
		return INCA_EIO;
	return (int)k;
}

static int
verbs_recv_batch(struct li_transport *t, struct li_pkt *pkts, unsigned n)
{
	return li_recv_both(t, cq_recv, t->udp, &t->cq_first, pkts, n);
}

static int
verbs_fd(const struct li_transport *t)
{
	return t->epfd;
}

static int
verbs_ctrl_fd(const struct li_transport *t)
{
	return li_udp_ops.fd(t->udp);
}

/* ---- binding ------------------------------------------------------------ */

static size_t
verbs_join_ext(struct li_transport *t, void *buf)
{
	struct inca_roce_ext x;

	if (t->off)
		return 0;
	if (buf != NULL) {
		memset(&x, 0, sizeof(x));
		x.qpn = t->qp->qp_num;
		x.qkey = t->qkey;
		inca_roce_ext_encode(&x, buf);
	}
	return INCA_ROCE_EXT_LEN;
}

static int
verbs_joined(struct li_transport *t, const struct inca_roce_ext *peer, unsigned max_elems)
{
	struct ibv_ah_attr aa;
	uint64_t until = li_now_ns() + VB_DRAIN_NS;
	char ip[INET_ADDRSTRLEN];

	/* Sends still in flight use the address handle: let them finish
	 * (bounded; a join has no data in flight in the normal course). */
	while (t->completed < t->posted && li_now_ns() < until)
		if (reap(t) < 0)
			break;
	t->bound = false;
	if (t->ah != NULL && t->completed >= t->posted) {
		ibv_destroy_ah(t->ah);
		t->ah = NULL;
	}
	if (peer == NULL)
		return INCA_OK;
	if (max_elems > li_vb_max_elems(t->mtu, 4)) {
		/* The aggregator granted more than we asked for. */
		li_log(INCA_LOG_WARN, "verbs: max_elems %u does not fit RoCE MTU %u; data "
		       "stays on udp", max_elems, t->mtu);
		t->off = true;
		return INCA_EPROTO;
	}
	if (t->ah != NULL || t->broken) {
		li_log(INCA_LOG_WARN, "verbs: sends did not complete; data stays on udp");
		t->off = true;
		return INCA_EIO;
	}
	memset(&aa, 0, sizeof(aa));
	aa.is_global = 1;
	aa.port_num = t->port;
	aa.grh.sgid_index = t->gid_index;
	aa.grh.hop_limit = LI_VB_HOP_LIMIT;
	li_vb_gid_from_ipv4(aa.grh.dgid.raw, t->agg_ip);
	t->ah = ibv_create_ah(t->pd, &aa);
	if (t->ah == NULL) {
		inet_ntop(AF_INET, &t->agg_ip, ip, sizeof(ip));
		li_log(INCA_LOG_WARN, "verbs: no address handle to %s from %s port %u (%s); "
		       "data stays on udp", ip, t->dev, t->port, strerror(errno));
		t->off = true;
		return INCA_EIO;
	}
	t->peer_qpn = peer->qpn;
	t->peer_qkey = peer->qkey;
	t->bound = true;
	return INCA_OK;
}

static unsigned
verbs_max_elems(const struct li_transport *t)
{
	/* The library sizes chunks in 32-bit lanes whatever the dtype. */
	return li_vb_max_elems(t->mtu, 4);
}

/* The UDP socket's offloads: control messages, and data until bound. */
static void
verbs_info(const struct li_transport *t, struct inca_comm_info *info)
{
	li_udp_ops.info(t->udp, info);
}

const struct li_transport_ops li_verbs_ops = {
	.name = "verbs",
	.open = verbs_open,
	.send_batch = verbs_send_batch,
	.recv_batch = verbs_recv_batch,
	.close = verbs_close,
	.fd = verbs_fd,
	.join_ext = verbs_join_ext,
	.joined = verbs_joined,
	.max_elems = verbs_max_elems,
	.ctrl_fd = verbs_ctrl_fd,
	.info = verbs_info,
};

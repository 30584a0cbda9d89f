/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * AF_XDP transport: CONTRIBs leave and RESULTs arrive through an AF_XDP
 * socket on the worker's interface, past the kernel's UDP and IP layers;
 * control messages (HELLO, JOIN, LEAVE, HEARTBEAT) go out on the udp
 * transport's socket, as verbs.c does.
 *
 * An XDP program of our own (a few instructions, loaded without a
 * compiler) sends to the socket only UDP datagrams from the aggregator's
 * address and port to ours, unfragmented and short enough for one UMEM
 * frame; everything else (ARP, ICMP, other traffic, jumbo frames) goes on
 * to the kernel, so the udp socket still receives what the filter left.
 * Frames are built here: Ethernet (the interface's MAC, the aggregator's
 * from the kernel's neighbour table, resolved by the udp socket's first
 * datagrams), IPv4 and UDP with their checksums. Until the neighbour entry
 * exists, and for datagrams longer than a frame holds, data goes on udp.
 *
 * Copy mode with generic (skb) XDP: it runs on any interface, veths
 * included, at the price of one copy each way in the kernel. One
 * communicator per interface: the program is attached only if the
 * interface has none (a second communicator there falls back to udp with
 * a warning).
 */

#define _GNU_SOURCE
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <net/if_arp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/if_link.h>
#include <linux/if_xdp.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <xdp/xsk.h>

#include "li_transport.h"

#define XF_SIZE 4096u              /* UMEM frame */
#define XF_RX 512u                 /* frames for the fill / rx rings */
#define XF_TX 512u                 /* frames for the tx / completion rings */
#define XF_HEADROOM 256u           /* XDP_PACKET_HEADROOM: copy mode writes after it */
#define XF_MAX_FRAME (XF_SIZE - XF_HEADROOM)
#define XF_HDRS (ETH_HLEN + LI_IP_UDP_LEN)
#define XF_NEIGH_RETRY_NS 100000000ull /* neighbour table lookups while unresolved */

struct li_transport {
	struct li_transport *udp;  /* control; data until the path is ready */
	int ifindex, queue, epfd, prog_fd, map_fd, link_fd;
	char ifname[IF_NAMESIZE];
	void *area;
	struct xsk_umem *umem;
	struct xsk_socket *xsk;
	struct xsk_ring_prod fq, tx;
	struct xsk_ring_cons cq, rx;
	uint64_t free_tx[XF_TX];   /* tx frames not in flight */
	unsigned nfree;
	uint64_t refill[XF_RX];    /* rx frames read, not yet back on the fill ring */
	unsigned nrefill;
	uint8_t src_mac[ETH_ALEN], dst_mac[ETH_ALEN];
	bool have_dst;
	uint64_t neigh_next_ns;
	struct sockaddr_in local, agg;
	uint16_t ip_id;
	bool xsk_first;
	uint64_t tx_pkts, rx_pkts;
};

/* ---- the XDP program ------------------------------------------------- */

#define INSN(c, d, s, o, i) \
	((struct bpf_insn){.code = (c), .dst_reg = (d), .src_reg = (s), .off = (o), .imm = (i)})
#define LDX(sz, d, s, o) INSN(BPF_LDX | BPF_MEM | (sz), d, s, o, 0)
#define MOV_REG(d, s) INSN(BPF_ALU64 | BPF_MOV | BPF_X, d, s, 0, 0)
#define MOV_IMM(d, i) INSN(BPF_ALU64 | BPF_MOV | BPF_K, d, 0, 0, i)
#define ALU_IMM(op, d, i) INSN(BPF_ALU64 | (op) | BPF_K, d, 0, 0, i)
#define PASS_IF_REG(op, d, s) INSN(BPF_JMP | (op) | BPF_X, d, s, -1, 0)
#define PASS_IF_NE32(d, i) INSN(BPF_JMP32 | BPF_JNE | BPF_K, d, 0, -1, (int32_t)(i))

/*
 * The filter, with this communicator's addresses as constants: r2 = data,
 * r3 = data_end; anything that is not IPv4 without options / UDP /
 * unfragmented / from agg:port to our port / at most one frame long is
 * XDP_PASS; the rest is redirected to the socket of its receive queue
 * (XDP_PASS too if there is none).
 */
static int
prog_load(struct li_transport *t, char *why, size_t wl)
{
	struct bpf_insn p[40];
	char vlog[4096] = "";
	LIBBPF_OPTS(bpf_prog_load_opts, o, .log_buf = vlog, .log_size = sizeof(vlog),
		    .log_level = 0);
	int n = 0, pass, k, fd;

	p[n++] = MOV_REG(BPF_REG_6, BPF_REG_1);
	p[n++] = LDX(BPF_W, BPF_REG_2, BPF_REG_1, offsetof(struct xdp_md, data));
	p[n++] = LDX(BPF_W, BPF_REG_3, BPF_REG_1, offsetof(struct xdp_md, data_end));
	/* Longer than a frame holds: the kernel takes it. */
	p[n++] = MOV_REG(BPF_REG_4, BPF_REG_2);
	p[n++] = ALU_IMM(BPF_ADD, BPF_REG_4, XF_MAX_FRAME + 1);
	p[n++] = PASS_IF_REG(BPF_JLE, BPF_REG_4, BPF_REG_3);
	p[n++] = MOV_REG(BPF_REG_4, BPF_REG_2);
	p[n++] = ALU_IMM(BPF_ADD, BPF_REG_4, XF_HDRS);
	p[n++] = PASS_IF_REG(BPF_JGT, BPF_REG_4, BPF_REG_3);
	p[n++] = LDX(BPF_H, BPF_REG_5, BPF_REG_2, 12);
	p[n++] = PASS_IF_NE32(BPF_REG_5, htons(ETH_P_IP));
	p[n++] = LDX(BPF_B, BPF_REG_5, BPF_REG_2, ETH_HLEN);
	p[n++] = PASS_IF_NE32(BPF_REG_5, 0x45);
	p[n++] = LDX(BPF_B, BPF_REG_5, BPF_REG_2, ETH_HLEN + 9);
	p[n++] = PASS_IF_NE32(BPF_REG_5, IPPROTO_UDP);
	p[n++] = LDX(BPF_H, BPF_REG_5, BPF_REG_2, ETH_HLEN + 6);
	p[n++] = ALU_IMM(BPF_AND, BPF_REG_5, htons(0x3fff)); /* MF or an offset */
	p[n++] = PASS_IF_NE32(BPF_REG_5, 0);
	p[n++] = LDX(BPF_W, BPF_REG_5, BPF_REG_2, ETH_HLEN + 12);
	p[n++] = PASS_IF_NE32(BPF_REG_5, t->agg.sin_addr.s_addr);
	p[n++] = LDX(BPF_H, BPF_REG_5, BPF_REG_2, ETH_HLEN + 20);
	p[n++] = PASS_IF_NE32(BPF_REG_5, t->agg.sin_port);
	p[n++] = LDX(BPF_H, BPF_REG_5, BPF_REG_2, ETH_HLEN + 22);
	p[n++] = PASS_IF_NE32(BPF_REG_5, t->local.sin_port);
	p[n++] = LDX(BPF_W, BPF_REG_2, BPF_REG_6, offsetof(struct xdp_md, rx_queue_index));
	p[n++] = INSN(BPF_LD | BPF_DW | BPF_IMM, BPF_REG_1, BPF_PSEUDO_MAP_FD, 0, t->map_fd);
	p[n++] = INSN(0, 0, 0, 0, 0);
	p[n++] = MOV_IMM(BPF_REG_3, XDP_PASS); /* the action when the queue has no socket */
	p[n++] = INSN(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_redirect_map);
	p[n++] = INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
	pass = n;
	p[n++] = MOV_IMM(BPF_REG_0, XDP_PASS);
	p[n++] = INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
	for (k = 0; k < pass; k++)
		if (p[k].off == -1 &&
		    (BPF_CLASS(p[k].code) == BPF_JMP || BPF_CLASS(p[k].code) == BPF_JMP32))
			p[k].off = (int16_t)(pass - k - 1);
	fd = bpf_prog_load(BPF_PROG_TYPE_XDP, "inca_xdp", "Dual BSD/GPL", p, (size_t)n, &o);
	if (fd < 0) {
		snprintf(why, wl, "loading the XDP program: %s%s%.200s", strerror(errno),
			 vlog[0] ? ": " : "", vlog);
		return -1;
	}
	t->prog_fd = fd;
	return 0;
}

/* ---- set-up ----------------------------------------------------------- */

/* The interface that carries @addr, and its MAC. */
static int
find_interface(struct li_transport *t, char *why, size_t wl)
{
	struct ifaddrs *ifa, *i;
	struct ifreq ifr;
	int fd, ret = -1;

	if (getifaddrs(&ifa) != 0) {
		snprintf(why, wl, "getifaddrs: %s", strerror(errno));
		return -1;
	}
	for (i = ifa; i != NULL; i = i->ifa_next) {
		if (i->ifa_addr == NULL || i->ifa_addr->sa_family != AF_INET)
			continue;
		if (((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr ==
		    t->local.sin_addr.s_addr) {
			snprintf(t->ifname, sizeof(t->ifname), "%s", i->ifa_name);
			ret = 0;
			break;
		}
	}
	freeifaddrs(ifa);
	if (ret < 0) {
		snprintf(why, wl, "no interface has the local address %s",
			 inet_ntoa(t->local.sin_addr));
		return -1;
	}
	t->ifindex = (int)if_nametoindex(t->ifname);
	fd = li_udp_ops.fd(t->udp);
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", t->ifname);
	if (t->ifindex == 0 || ioctl(fd, SIOCGIFHWADDR, &ifr) != 0 ||
	    ifr.ifr_hwaddr.sa_family != ARPHRD_ETHER) {
		snprintf(why, wl, "%s is not an Ethernet interface", t->ifname);
		return -1;
	}
	memcpy(t->src_mac, ifr.ifr_hwaddr.sa_data, ETH_ALEN);
	return 0;
}

/*
 * The aggregator's MAC from the kernel's neighbour table: complete once
 * the udp socket's datagrams (HELLO, JOIN) made the kernel resolve it. An
 * aggregator behind a router has no entry; its data stays on udp.
 */
static bool
neigh_resolve(struct li_transport *t)
{
	struct arpreq r;
	uint64_t now = li_now_ns();

	if (t->have_dst || now < t->neigh_next_ns)
		return t->have_dst;
	t->neigh_next_ns = now + XF_NEIGH_RETRY_NS;
	memset(&r, 0, sizeof(r));
	memcpy(&r.arp_pa, &t->agg, sizeof(t->agg));
	snprintf(r.arp_dev, sizeof(r.arp_dev), "%s", t->ifname);
	if (ioctl(li_udp_ops.fd(t->udp), SIOCGARP, &r) == 0 && (r.arp_flags & ATF_COM)) {
		memcpy(t->dst_mac, r.arp_ha.sa_data, ETH_ALEN);
		t->have_dst = true;
		li_log(INCA_LOG_DEBUG, "xdp: data path on %s queue %d", t->ifname, t->queue);
	}
	return t->have_dst;
}

static int
epoll_add(int epfd, int fd)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd};

	return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev);
}

/* Everything after the udp socket; -1 with @why on failure (the caller closes). */
static int
xsk_setup(struct li_transport *t, char *why, size_t wl)
{
	/* The kernel publishes its fill-ring reads lazily: twice the frames
	 * keeps room for every frame we hand back. */
	struct xsk_umem_config uc = {.fill_size = 2 * XF_RX, .comp_size = XF_TX,
				     .frame_size = XF_SIZE, .frame_headroom = 0};
	struct xsk_socket_config sc = {.rx_size = XF_RX, .tx_size = XF_TX,
				       .libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD,
				       .xdp_flags = XDP_FLAGS_SKB_MODE, .bind_flags = XDP_COPY};
	LIBBPF_OPTS(bpf_link_create_opts, lo, .flags = XDP_FLAGS_SKB_MODE);
	socklen_t sl = sizeof(t->local);
	const char *q = getenv("INCA_XDP_QUEUE");
	uint32_t idx;
	unsigned i;
	int ret;

#define XF_FAIL(what, err) \
	do { \
		snprintf(why, wl, "%s on %s: %s", what, t->ifname, strerror(err)); \
		return -1; \
	} while (0)
	if (getsockname(li_udp_ops.fd(t->udp), (struct sockaddr *)&t->local, &sl) != 0) {
		snprintf(why, wl, "getsockname: %s", strerror(errno));
		return -1;
	}
	if (find_interface(t, why, wl) < 0)
		return -1;
	t->queue = q != NULL ? atoi(q) : 0;
	t->area = mmap(NULL, (size_t)(XF_RX + XF_TX) * XF_SIZE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (t->area == MAP_FAILED) {
		t->area = NULL;
		XF_FAIL("mmap", errno);
	}
	ret = xsk_umem__create(&t->umem, t->area, (uint64_t)(XF_RX + XF_TX) * XF_SIZE, &t->fq,
			       &t->cq, &uc);
	if (ret != 0)
		XF_FAIL("xsk_umem__create", -ret);
	ret = xsk_socket__create(&t->xsk, t->ifname, (uint32_t)t->queue, t->umem, &t->rx,
				 &t->tx, &sc);
	if (ret != 0)
		XF_FAIL("xsk_socket__create", -ret);
	/* Every rx frame to the kernel, every tx frame free. */
	if (xsk_ring_prod__reserve(&t->fq, XF_RX, &idx) != XF_RX)
		XF_FAIL("filling the fill ring", ENOSPC);
	for (i = 0; i < XF_RX; i++)
		*xsk_ring_prod__fill_addr(&t->fq, idx + i) = (uint64_t)i * XF_SIZE;
	xsk_ring_prod__submit(&t->fq, XF_RX);
	for (i = 0; i < XF_TX; i++)
		t->free_tx[i] = (uint64_t)(XF_RX + i) * XF_SIZE;
	t->nfree = XF_TX;

	t->map_fd = bpf_map_create(BPF_MAP_TYPE_XSKMAP, "inca_xsks", sizeof(int), sizeof(int),
				   64, NULL);
	if (t->map_fd < 0)
		XF_FAIL("creating the XSKMAP", errno);
	ret = xsk_socket__update_xskmap(t->xsk, t->map_fd);
	if (ret != 0)
		XF_FAIL("xsk_socket__update_xskmap", -ret);
	if (prog_load(t, why, wl) < 0)
		return -1;
	/* A link, not a netlink attachment: the kernel detaches the program
	 * when the process ends, even killed. It fails if the interface has a
	 * program already. */
	t->link_fd = bpf_link_create(t->prog_fd, t->ifindex, BPF_XDP, &lo);
	if (t->link_fd < 0)
		XF_FAIL("attaching the XDP program (another one there?)", errno);
	t->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (t->epfd < 0 || epoll_add(t->epfd, li_udp_ops.fd(t->udp)) != 0 ||
	    epoll_add(t->epfd, xsk_socket__fd(t->xsk)) != 0)
		XF_FAIL("epoll", errno);
#undef XF_FAIL
	return 0;
}

static void
xdp_close(struct li_transport *t)
{
	if (t == NULL)
		return;
	if (t->link_fd >= 0)
		close(t->link_fd); /* detaches the program */
	if (t->prog_fd >= 0)
		close(t->prog_fd);
	if (t->epfd >= 0)
		close(t->epfd);
	xsk_socket__delete(t->xsk);
	if (t->map_fd >= 0)
		close(t->map_fd);
	if (t->umem != NULL)
		xsk_umem__delete(t->umem);
	if (t->area != NULL)
		munmap(t->area, (size_t)(XF_RX + XF_TX) * XF_SIZE);
	li_udp_ops.close(t->udp);
	free(t);
}

static int
xdp_open(struct li_transport **out, const struct sockaddr_in *agg,
	 const struct sockaddr_in *bind_addr, size_t rcvbuf, unsigned window)
{
	struct li_transport *t;
	char why[512];
	int ret;

	t = calloc(1, sizeof(*t));
	if (t == NULL)
		return INCA_ENOMEM;
	t->epfd = t->prog_fd = t->map_fd = t->link_fd = -1;
	t->agg = *agg;
	ret = li_udp_ops.open(&t->udp, agg, bind_addr, rcvbuf, window);
	if (ret != INCA_OK) {
		free(t);
		return ret;
	}
	if (xsk_setup(t, why, sizeof(why)) < 0) {
		li_log(INCA_LOG_WARN, "INCA_TRANSPORT=xdp: %s; using udp", why);
		xdp_close(t);
		return INCA_ENOTSUP;
	}
	*out = t;
	return INCA_OK;
}

/* ---- data path -------------------------------------------------------- */

static uint32_t
csum_add(uint32_t s, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	for (; len > 1; p += 2, len -= 2)
		s += (uint32_t)(p[0] << 8 | p[1]);
	if (len)
		s += (uint32_t)p[0] << 8;
	return s;
}

static uint16_t
csum_fold(uint32_t s)
{
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

/* Ethernet, IPv4 and UDP in front of @len bytes of payload at @f + XF_HDRS. */
static void
frame_headers(struct li_transport *t, uint8_t *f, size_t len)
{
	uint8_t *ip = f + ETH_HLEN, *udp = ip + 20;
	uint16_t tot = (uint16_t)(20 + 8 + len), ulen = (uint16_t)(8 + len), c;
	uint32_t s;

	memcpy(f, t->dst_mac, ETH_ALEN);
	memcpy(f + ETH_ALEN, t->src_mac, ETH_ALEN);
	f[12] = ETH_P_IP >> 8;
	f[13] = ETH_P_IP & 0xff;
	ip[0] = 0x45;
	ip[1] = 0;
	ip[2] = tot >> 8;
	ip[3] = tot & 0xff;
	ip[4] = t->ip_id >> 8;
	ip[5] = t->ip_id & 0xff;
	t->ip_id++;
	ip[6] = 0x40; /* DF */
	ip[7] = 0;
	ip[8] = 64;
	ip[9] = IPPROTO_UDP;
	ip[10] = ip[11] = 0;
	memcpy(ip + 12, &t->local.sin_addr, 4);
	memcpy(ip + 16, &t->agg.sin_addr, 4);
	c = csum_fold(csum_add(0, ip, 20));
	ip[10] = c >> 8;
	ip[11] = c & 0xff;
	memcpy(udp, &t->local.sin_port, 2);
	memcpy(udp + 2, &t->agg.sin_port, 2);
	udp[4] = ulen >> 8;
	udp[5] = ulen & 0xff;
	udp[6] = udp[7] = 0;
	/* Pseudo-header, then the UDP header and payload. */
	s = csum_add(0, ip + 12, 8) + IPPROTO_UDP + ulen;
	c = csum_fold(csum_add(s, udp, ulen));
	if (c == 0)
		c = 0xffff;
	udp[6] = c >> 8;
	udp[7] = c & 0xff;
}

/* Sent frames back to the free list. */
static void
reclaim(struct li_transport *t)
{
	uint32_t idx, n, i;

	n = xsk_ring_cons__peek(&t->cq, XF_TX, &idx);
	for (i = 0; i < n; i++)
		t->free_tx[t->nfree++] = *xsk_ring_cons__comp_addr(&t->cq, idx + i);
	xsk_ring_cons__release(&t->cq, n);
}

static int
xdp_send_batch(struct li_transport *t, const struct li_pkt *pkts, unsigned n)
{
	uint32_t idx;
	unsigned k, m;

	if (n > LI_BATCH)
		n = LI_BATCH;
	if (!neigh_resolve(t))
		return li_udp_ops.send_batch(t->udp, pkts, n);
	reclaim(t);
	/* The longest prefix that fits a frame each; a longer datagram goes
	 * on udp (the filter passes its answer to the kernel too). */
	for (m = 0; m < n && m < t->nfree && pkts[m].len <= XF_MAX_FRAME - XF_HDRS; m++)
		;
	if (m == 0 && t->nfree > 0) {
		/* A run of datagrams too long for a frame: one udp batch. */
		while (m < n && pkts[m].len > XF_MAX_FRAME - XF_HDRS)
			m++;
		return li_udp_ops.send_batch(t->udp, pkts, m);
	}
	m = xsk_ring_prod__reserve(&t->tx, m, &idx);
	for (k = 0; k < m; k++) {
		struct xdp_desc *d = xsk_ring_prod__tx_desc(&t->tx, idx + k);
		uint64_t a = t->free_tx[--t->nfree];
		uint8_t *f = xsk_umem__get_data(t->area, a);

		memcpy(f + XF_HDRS, pkts[k].buf, pkts[k].len);
		frame_headers(t, f, pkts[k].len);
		d->addr = a;
		d->len = (uint32_t)(XF_HDRS + pkts[k].len);
	}
	xsk_ring_prod__submit(&t->tx, m);
	t->tx_pkts += m;
	/* Copy mode sends in this call, also what an earlier one left. */
	if (sendto(xsk_socket__fd(t->xsk), NULL, 0, MSG_DONTWAIT, NULL, 0) < 0 &&
	    errno != EAGAIN && errno != EBUSY && errno != ENOBUFS && errno != EINTR) {
		li_log(INCA_LOG_ERR, "xdp: sending on %s: %s", t->ifname, strerror(errno));
		return INCA_EIO;
	}
	return (int)m;
}

/* The INCA message in a received frame, or NULL (not one for us). */
static const uint8_t *
frame_payload(const struct li_transport *t, const uint8_t *f, uint32_t flen, size_t *len)
{
	const uint8_t *ip = f + ETH_HLEN, *udp = ip + 20;
	size_t tot, ulen;

	if (flen < XF_HDRS || f[12] != ETH_P_IP >> 8 || f[13] != (ETH_P_IP & 0xff) ||
	    ip[0] != 0x45 || ip[9] != IPPROTO_UDP ||
	    memcmp(ip + 12, &t->agg.sin_addr, 4) != 0 || memcmp(udp, &t->agg.sin_port, 2) != 0)
		return NULL;
	tot = (size_t)ip[2] << 8 | ip[3];
	ulen = (size_t)udp[4] << 8 | udp[5];
	if (tot > flen - ETH_HLEN || ulen < 8 || ulen > tot - 20)
		return NULL;
	*len = ulen - 8;
	return udp + 8;
}

/* Read frames back to the kernel; what does not fit waits for the next call. */
static void
refill(struct li_transport *t)
{
	uint32_t idx, i;

	if (t->nrefill == 0 || xsk_ring_prod__reserve(&t->fq, t->nrefill, &idx) != t->nrefill)
		return;
	for (i = 0; i < t->nrefill; i++)
		*xsk_ring_prod__fill_addr(&t->fq, idx + i) = t->refill[i];
	xsk_ring_prod__submit(&t->fq, t->nrefill);
	t->nrefill = 0;
}

static int
xsk_recv(struct li_transport *t, struct li_pkt *pkts, unsigned n)
{
	uint32_t idx, got, i;
	unsigned k = 0;

	got = xsk_ring_cons__peek(&t->rx, n, &idx);
	for (i = 0; i < got; i++) {
		const struct xdp_desc *d = xsk_ring_cons__rx_desc(&t->rx, idx + i);
		const uint8_t *f = xsk_umem__get_data(t->area, d->addr), *p;
		size_t len;

		p = frame_payload(t, f, d->len, &len);
		if (p != NULL) {
			/* Too long for the buffer: reported empty, decoding rejects it. */
			if (len > pkts[k].len) {
				pkts[k].len = 0;
			} else {
				memcpy(pkts[k].buf, p, len);
				pkts[k].len = len;
			}
			k++;
		}
		t->refill[t->nrefill++] = xsk_umem__extract_addr(d->addr);
	}
	xsk_ring_cons__release(&t->rx, got);
	refill(t);
	t->rx_pkts += k;
	return (int)k;
}

static int
xdp_recv_batch(struct li_transport *t, struct li_pkt *pkts, unsigned n)
{
	return li_recv_both(t, xsk_recv, t->udp, &t->xsk_first, pkts, n);
}

static int
xdp_fd(const struct li_transport *t)
{
	return t->epfd;
}

static int
xdp_ctrl_fd(const struct li_transport *t)
{
	return li_udp_ops.fd(t->udp);
}

static void
xdp_info(const struct li_transport *t, struct inca_comm_info *info)
{
	li_udp_ops.info(t->udp, info);
	info->xdp_tx_pkts += t->tx_pkts;
	info->xdp_rx_pkts += t->rx_pkts;
}

const struct li_transport_ops li_xdp_ops = {
	.name = "xdp",
	.open = xdp_open,
	.send_batch = xdp_send_batch,
	.recv_batch = xdp_recv_batch,
	.close = xdp_close,
	.fd = xdp_fd,
	.ctrl_fd = xdp_ctrl_fd,
	.info = xdp_info,
};

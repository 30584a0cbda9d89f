/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * The transmit path every module shares, and the frames it builds: a leaf
 * (it calls nothing of incad's but the checksums). The I/O lcore buffers
 * frames per port; the other lcores pass theirs through their tx ring.
 */
#include <string.h>

#include <rte_byteorder.h>
#include <rte_ethdev.h>
#include <rte_ip.h>
#include <rte_net_crc.h>
#include <rte_udp.h>

#include "csum.h"
#include "tx.h"

#define TX_BURST 64

/* Transmit buffers of the I/O lcore; only it touches them. */
static struct {
	struct rte_mbuf *b[TX_BURST];
	unsigned int n;
} io_txb[INCAD_MAX_PORTS];

static void
io_flush_port(struct incad_lcore *lc, uint16_t p)
{
	unsigned int n = io_txb[p].n, sent;

	if (n == 0)
		return;
	sent = rte_eth_tx_burst(incad.ports[p].port_id, 0, io_txb[p].b, n);
	/* One retry: a software queue that is full now may drain at once. */
	if (sent < n)
		sent += rte_eth_tx_burst(incad.ports[p].port_id, 0, io_txb[p].b + sent,
					 n - sent);
	lc->st.cnt[INCAD_CNT_TX] += sent;
	lc->st.port_tx[p] += sent;
	if (sent < n) {
		lc->st.drop[INCAD_DROP_TX_FULL] += n - sent;
		rte_pktmbuf_free_bulk(io_txb[p].b + sent, n - sent);
	}
	io_txb[p].n = 0;
}

void
incad_tx_flush_io(struct incad_lcore *lc)
{
	unsigned int p;

	for (p = 0; p < incad.nports; p++)
		io_flush_port(lc, p);
}

void
incad_tx_flush_lcore(struct incad_lcore *lc)
{
	unsigned int n;

	if (lc->ntx == 0)
		return;
	n = rte_ring_sp_enqueue_burst(lc->tx_ring, (void **)lc->tx, lc->ntx, NULL);
	if (n < lc->ntx) {
		lc->st.drop[INCAD_DROP_TX_RING_FULL] += lc->ntx - n;
		rte_pktmbuf_free_bulk(lc->tx + n, lc->ntx - n);
	}
	lc->ntx = 0;
}

void
incad_tx(struct incad_lcore *lc, struct rte_mbuf *m, uint16_t port)
{
	if (lc->idx == 0) {
		io_txb[port].b[io_txb[port].n++] = m;
		if (io_txb[port].n == TX_BURST)
			io_flush_port(lc, port);
		return;
	}
	m->port = port;
	lc->tx[lc->ntx++] = m;
	if (lc->ntx == RTE_DIM(lc->tx))
		incad_tx_flush_lcore(lc);
}

/*
 * Ethernet, IPv4 (DF, TTL 64) and UDP headers in front of an INCA message
 * of @msg_len bytes already at @p + INCA_ENCAP_LEN; what inca_frame_build()
 * writes, with the checksum of csum.h, several times faster than the
 * codec's portable one on the result path.
 */
void
incad_frame_headers(uint8_t *p, const uint8_t dst_mac[6], const struct rte_ether_addr *src_mac,
	      uint32_t src_ip, uint32_t dst_ip, uint16_t dst_port, size_t msg_len)
{
	struct rte_ether_hdr *eth = (struct rte_ether_hdr *)p;
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(eth + 1);
	struct rte_udp_hdr *udp = (struct rte_udp_hdr *)(ip + 1);

	memcpy(eth->dst_addr.addr_bytes, dst_mac, 6);
	rte_ether_addr_copy(src_mac, &eth->src_addr);
	eth->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
	ip->version_ihl = RTE_IPV4_VHL_DEF;
	ip->type_of_service = 0;
	ip->total_length = rte_cpu_to_be_16(sizeof(*ip) + sizeof(*udp) + msg_len);
	ip->packet_id = 0;
	ip->fragment_offset = rte_cpu_to_be_16(RTE_IPV4_HDR_DF_FLAG);
	ip->time_to_live = 64;
	ip->next_proto_id = IPPROTO_UDP;
	ip->hdr_checksum = 0;
	ip->src_addr = rte_cpu_to_be_32(src_ip);
	ip->dst_addr = rte_cpu_to_be_32(dst_ip);
	ip->hdr_checksum = (uint16_t)~incad_ipv4_sum20(ip);
	udp->src_port = rte_cpu_to_be_16(incad.cfg.inca_port);
	udp->dst_port = rte_cpu_to_be_16(dst_port);
	udp->dgram_len = rte_cpu_to_be_16(sizeof(*udp) + msg_len);
	udp->dgram_cksum = 0;
	udp->dgram_cksum = (uint16_t)~incad_udp_sum20(ip, sizeof(*udp) + msg_len);
	/* 0 means "no checksum" in UDP: a computed 0 goes out as its twin. */
	if (udp->dgram_cksum == 0)
		udp->dgram_cksum = 0xffff;
}

void
incad_dest_of(const struct incad_meta *meta, struct incad_dest *d)
{
	d->port = meta->in_port;
	memcpy(d->mac, meta->src_mac, 6);
	d->ip = meta->src_ip;
	d->local_ip = meta->dst_ip;
	d->udp_port = meta->src_port;
	d->vlan = meta->vlan;
	/* A RoCE sender's Q_Key is the member's to know: the caller sets it. */
	d->qpn = meta->roce ? meta->qpn : 0;
	d->qkey = 0;
}

/*
 * The ICRC of the RoCEv2 packet whose IPv4 header is at @ip (its total
 * length covers the ICRC itself, the last 4 bytes). The CRC runs over the
 * bytes as they lie, with the variant fields masked to ones in place and
 * restored afterwards; the 8 bytes in front of the IPv4 header (the end of
 * the Ethernet header) stand in for the 8 bytes of ones that precede it
 * (docs/protocol.md, "Packet layout"). DPDK's CRC is the Ethernet one.
 */
static uint32_t
roce_icrc(uint8_t *ip)
{
	struct rte_ipv4_hdr *h = (struct rte_ipv4_hdr *)ip;
	size_t ihl = (size_t)(h->version_ihl & 0xf) * 4;
	struct rte_udp_hdr *u = (struct rte_udp_hdr *)(ip + ihl);
	uint8_t *bth = (uint8_t *)(u + 1);
	uint8_t lrh[8], tos = h->type_of_service, ttl = h->time_to_live, b4 = bth[4];
	uint16_t hc = h->hdr_checksum, uc = u->dgram_cksum;
	uint32_t crc;

	memcpy(lrh, ip - 8, 8);
	memset(ip - 8, 0xff, 8);
	h->type_of_service = 0xff;
	h->time_to_live = 0xff;
	h->hdr_checksum = 0xffff;
	u->dgram_cksum = 0xffff;
	bth[4] = 0xff;
	crc = rte_net_crc_calc(ip - 8, 8 + rte_be_to_cpu_16(h->total_length) - INCA_ICRC_LEN,
			       RTE_NET_CRC32_ETH);
	memcpy(ip - 8, lrh, 8);
	h->type_of_service = tos;
	h->time_to_live = ttl;
	h->hdr_checksum = hc;
	u->dgram_cksum = uc;
	bth[4] = b4;
	return crc;
}

bool
incad_roce_icrc_ok(uint8_t *ip)
{
	const struct rte_ipv4_hdr *h = (const struct rte_ipv4_hdr *)ip;
	const uint8_t *icrc = ip + rte_be_to_cpu_16(h->total_length) - INCA_ICRC_LEN;
	uint32_t crc = roce_icrc(ip);

	/* Least significant byte first, as the Ethernet FCS. */
	return icrc[0] == (uint8_t)crc && icrc[1] == (uint8_t)(crc >> 8) &&
	       icrc[2] == (uint8_t)(crc >> 16) && icrc[3] == (uint8_t)(crc >> 24);
}

struct rte_mbuf *
incad_roce_wrap(struct incad_lcore *lc, struct rte_mbuf *m, uint32_t qpn, uint32_t qkey)
{
	size_t msg_len = rte_pktmbuf_data_len(m) - INCA_ENCAP_LEN, ulen;
	unsigned int pad = (unsigned int)(-msg_len & 3);
	struct inca_roce_info r = {
		.opcode = INCA_ROCE_OP_UD_SEND_ONLY,
		.pkey = INCA_ROCE_PKEY,
		.dqpn = qpn,
		.qkey = qkey,
		.sqpn = incad.cfg.roce_qpn,
	};
	struct rte_ipv4_hdr *ip;
	struct rte_udp_hdr *udp;
	const uint8_t *msg;
	uint8_t *p, *icrc;
	uint32_t crc;

	p = (uint8_t *)rte_pktmbuf_prepend(m, INCA_ROCE_HDR_LEN);
	if (p == NULL || rte_pktmbuf_append(m, pad + INCA_ICRC_LEN) == NULL) {
		incad_drop_mbuf(lc, m, INCAD_DROP_NO_MBUF);
		return NULL;
	}
	/* The headers move to the front; the message stays where it is. */
	memmove(p, p + INCA_ROCE_HDR_LEN, INCA_ENCAP_LEN);
	msg = p + INCA_ENCAP_LEN + INCA_ROCE_HDR_LEN;
	if (msg[1] == INCA_MSG_CONTRIB || msg[1] == INCA_MSG_RESULT)
		r.psn = ((uint32_t)msg[17] << 16) | ((uint32_t)msg[18] << 8) | msg[19];
	ulen = inca_roce_encap(p + INCA_ENCAP_LEN, &r, msg_len);

	ip = (struct rte_ipv4_hdr *)(p + RTE_ETHER_HDR_LEN);
	udp = (struct rte_udp_hdr *)(ip + 1);
	ip->total_length = rte_cpu_to_be_16(sizeof(*ip) + sizeof(*udp) + ulen);
	ip->hdr_checksum = 0;
	ip->hdr_checksum = (uint16_t)~incad_ipv4_sum20(ip);
	/* Constant per pair of queue pairs: one member's packets keep one path. */
	udp->src_port = rte_cpu_to_be_16(0xc000 | ((incad.cfg.roce_qpn ^ qpn) & 0x3fff));
	udp->dst_port = rte_cpu_to_be_16(INCA_ROCE_PORT);
	udp->dgram_len = rte_cpu_to_be_16(sizeof(*udp) + ulen);
	udp->dgram_cksum = 0;
	crc = roce_icrc((uint8_t *)ip);
	icrc = p + INCA_ENCAP_LEN + ulen - INCA_ICRC_LEN;
	icrc[0] = (uint8_t)crc;
	icrc[1] = (uint8_t)(crc >> 8);
	icrc[2] = (uint8_t)(crc >> 16);
	icrc[3] = (uint8_t)(crc >> 24);
	lc->st.cnt[INCAD_CNT_ROCE_TX]++;
	return m;
}

struct rte_mbuf *
incad_vlan_tag(struct incad_lcore *lc, struct rte_mbuf *m, uint16_t vlan)
{
	struct rte_vlan_hdr *vh;
	uint8_t *p;

	if (vlan == 0)
		return m;
	/*
	 * In software, whatever the PMD offers: every port type tags alike.
	 * By hand rather than rte_vlan_insert(), which refuses an mbuf whose
	 * buffer is shared: a RESULT template is, with its members' chained
	 * copies, but they only read its payload, never these first bytes.
	 */
	p = (uint8_t *)rte_pktmbuf_prepend(m, sizeof(*vh));
	if (p == NULL) {
		incad_drop_mbuf(lc, m, INCAD_DROP_NO_MBUF);
		return NULL;
	}
	memmove(p, p + sizeof(*vh), 2 * RTE_ETHER_ADDR_LEN);
	/* The old EtherType stays in place as the tag's inner one. */
	p[12] = 0x81;
	p[13] = 0x00;
	vh = (struct rte_vlan_hdr *)(p + RTE_ETHER_HDR_LEN);
	vh->vlan_tci = rte_cpu_to_be_16(vlan);
	/* A stripped tag's flag must not make a PMD insert it twice. */
	m->ol_flags &= ~(RTE_MBUF_F_RX_VLAN_STRIPPED | RTE_MBUF_F_TX_VLAN);
	return m;
}

struct rte_mbuf *
incad_build_msg(struct incad_lcore *lc, const struct incad_dest *d, const struct inca_msg *hdr,
		const void *body, size_t body_len)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(incad.pool);
	uint8_t *p;

	if (m == NULL) {
		incad_drop(lc, INCAD_DROP_NO_MBUF);
		return NULL;
	}
	p = (uint8_t *)rte_pktmbuf_append(m, INCA_ENCAP_LEN + INCA_HDR_LEN + body_len);
	if (p == NULL) {
		rte_pktmbuf_free(m);
		incad_drop(lc, INCAD_DROP_NO_MBUF);
		return NULL;
	}
	inca_hdr_encode(hdr, p + INCA_ENCAP_LEN);
	if (body_len > 0)
		memcpy(p + INCA_ENCAP_LEN + INCA_HDR_LEN, body, body_len);
	incad_frame_headers(p, d->mac, &incad.ports[d->port].mac, d->local_ip, d->ip, d->udp_port,
		      INCA_HDR_LEN + body_len);
	if (d->qpn != 0) {
		m = incad_roce_wrap(lc, m, d->qpn, d->qkey);
		if (m == NULL)
			return NULL;
	}
	return incad_vlan_tag(lc, m, d->vlan);
}

void
incad_reply_hdr(const struct inca_msg *req, uint8_t type, uint16_t reason,
		struct inca_msg *out)
{
	memset(out, 0, sizeof(*out));
	out->version = INCA_PROTO_VERSION;
	out->type = type;
	/* A NACK names the refused message, not what it carried. */
	out->dtype = type == INCA_MSG_NACK ? 0 : req->dtype;
	out->op = type == INCA_MSG_NACK ? 0 : req->op;
	out->job = req->job;
	out->rank = req->rank;
	out->token = req->token;
	out->slot = req->slot;
	out->flags = req->flags;
	out->seq = req->seq;
	out->offset = req->offset;
	out->reason = reason;
}


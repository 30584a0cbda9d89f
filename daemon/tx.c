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
}

struct rte_mbuf *
incad_vlan_tag(struct incad_lcore *lc, struct rte_mbuf *m, uint16_t vlan)
{
	if (vlan == 0)
		return m;
	/* In software, whatever the PMD offers: every port type tags alike. */
	m->vlan_tci = vlan;
	if (rte_vlan_insert(&m) != 0) {
		rte_pktmbuf_free(m);
		incad_drop(lc, INCAD_DROP_NO_MBUF);
		return NULL;
	}
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


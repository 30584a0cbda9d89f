/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * What makes incad a host and a switch besides an aggregator: ARP and ICMP
 * echo for its own addresses, and in switch mode a learning bridge between
 * its ports, so that the workers it stands in front of still reach each
 * other with ordinary traffic. Everything here runs on the I/O lcore only,
 * which is why the tables need no locks; telemetry only reads their sizes.
 */
#include <errno.h>
#include <stdlib.h>

#include <rte_arp.h>
#include <rte_byteorder.h>
#include <rte_errno.h>
#include <rte_hash.h>
#include <rte_hash_crc.h>
#include <rte_icmp.h>
#include <rte_ip.h>
#include <rte_malloc.h>

#include "l2.h"

/* How many entries a full table compares to pick the one it replaces. */
#define EVICT_SAMPLE 8
#define NEIGH_SIZE 256

/*
 * The MAC table (48-bit addresses) and the neighbour table (IPv4 address
 * to MAC and port, learned from ARP, read by the tree uplinks): each a
 * DPDK cuckoo hash (rte_hash) whose key positions index an array of
 * entries. Only the I/O lcore reads or changes them; telemetry reads the
 * counts.
 */
struct l2_table {
	struct rte_hash *h;
	void *entries;       /* indexed by key position; each starts with its seen */
	size_t entry_size;
	uint32_t evict_next; /* rte_hash_iterate() cursor of the eviction sample */
	unsigned int count;
	size_t bytes;
};

struct mac_entry {
	uint64_t seen;    /* timer cycles */
	uint16_t port;
};

struct neigh_entry {
	uint64_t seen;    /* timer cycles */
	uint8_t mac[6];
	uint16_t port;
};

static struct l2_table macs, neighs;
static uint64_t mac_age;

static inline uint64_t
mac_key(const struct rte_ether_addr *a)
{
	uint64_t k = 0;

	memcpy(&k, a->addr_bytes, 6);
	return k;
}

static int
table_init(struct l2_table *t, const char *name, uint32_t entries, uint32_t key_len,
	   size_t entry_size)
{
	struct rte_hash_parameters hp = {
		.name = name,
		.entries = entries,
		.key_len = key_len,
		.hash_func = rte_hash_crc,
		.socket_id = (int)rte_socket_id(),
		/* Extendable buckets: an insertion fails only when every entry
		 * is taken, so that evicting any one makes room. */
		.extra_flag = RTE_HASH_EXTRA_FLAGS_EXT_TABLE,
	};
	int32_t slots;

	t->h = rte_hash_create(&hp);
	if (t->h == NULL)
		return -rte_errno;
	slots = rte_hash_max_key_id(t->h) + 1;
	t->entries = rte_zmalloc(name, slots * entry_size, RTE_CACHE_LINE_SIZE);
	if (t->entries == NULL)
		return -ENOMEM;
	t->entry_size = entry_size;
	/* The entries, and about as much again for the hash's keys and buckets. */
	t->bytes = 2 * slots * (entry_size + key_len);
	return 0;
}

static void
table_fini(struct l2_table *t)
{
	rte_hash_free(t->h);
	rte_free(t->entries);
	memset(t, 0, sizeof(*t));
}

static inline void *
table_entry(const struct l2_table *t, int32_t pos)
{
	return (uint8_t *)t->entries + (size_t)pos * t->entry_size;
}

int
incad_l2_init(void)
{
	int ret;

	ret = table_init(&macs, "incad_mac", incad.cfg.mac_table_size, sizeof(uint64_t),
			 sizeof(struct mac_entry));
	if (ret == 0)
		ret = table_init(&neighs, "incad_neigh", NEIGH_SIZE, sizeof(uint32_t),
				 sizeof(struct neigh_entry));
	if (ret != 0) {
		incad_l2_fini();
		return ret;
	}
	mac_age = incad.hz * incad.cfg.mac_age_s;
	incad.table_bytes += macs.bytes + neighs.bytes;
	return 0;
}

void
incad_l2_fini(void)
{
	table_fini(&macs);
	table_fini(&neighs);
}

unsigned int
incad_l2_macs(void)
{
	return __atomic_load_n(&macs.count, __ATOMIC_RELAXED);
}

unsigned int
incad_l2_neighbours(void)
{
	return __atomic_load_n(&neighs.count, __ATOMIC_RELAXED);
}

/* The live entry of @key, or NULL (unknown, or not seen for mac_age_s). */
static const struct mac_entry *
mac_lookup(uint64_t key, uint64_t now)
{
	int32_t pos = rte_hash_lookup(macs.h, &key);
	const struct mac_entry *e;

	if (pos < 0)
		return NULL;
	e = table_entry(&macs, pos);
	return now - e->seen <= mac_age ? e : NULL;
}

/*
 * A full table makes room: of EVICT_SAMPLE entries, taken in table order
 * from where the last sample ended, the one seen longest ago goes. Bounded
 * work whatever the table's size, so that a flood of new source addresses
 * costs no more per frame than a known one; the tables are caches (an
 * unknown MAC is flooded, an unknown neighbour asked for again).
 */
static void
table_evict(struct l2_table *t)
{
	const void *key, *victim = NULL;
	uint64_t oldest = UINT64_MAX, seen;
	unsigned int n = 0, wraps = 0;
	void *data;
	int32_t pos;

	while (n < EVICT_SAMPLE && wraps < 2) {
		pos = rte_hash_iterate(t->h, &key, &data, &t->evict_next);
		if (pos < 0) {
			t->evict_next = 0;
			wraps++;
			continue;
		}
		n++;
		seen = *(const uint64_t *)table_entry(t, pos);
		if (victim == NULL || seen < oldest) {
			victim = key;
			oldest = seen;
		}
	}
	if (victim != NULL && rte_hash_del_key(t->h, victim) >= 0)
		__atomic_store_n(&t->count, t->count - 1, __ATOMIC_RELAXED);
}

/* The entry of @key, added (evicting another if need be) when it is new. */
static void *
table_upsert(struct l2_table *t, const void *key)
{
	int32_t pos = rte_hash_lookup(t->h, key);

	if (pos < 0) {
		pos = rte_hash_add_key(t->h, key);
		if (pos == -ENOSPC) {
			table_evict(t);
			pos = rte_hash_add_key(t->h, key);
		}
		/* Not after an eviction (with extendable buckets a freed entry
		 * is room); if it were, the key would stay unknown. */
		if (pos < 0)
			return NULL;
		__atomic_store_n(&t->count, t->count + 1, __ATOMIC_RELAXED);
	}
	return table_entry(t, pos);
}

void
incad_l2_learn(const struct rte_ether_addr *mac, uint16_t port, uint64_t now)
{
	uint64_t key = mac_key(mac);
	struct mac_entry *e;

	/* A group address is never a source; learning it would break flooding. */
	if (rte_is_multicast_ether_addr(mac) || key == 0)
		return;
	e = table_upsert(&macs, &key);
	if (e == NULL)
		return;
	e->port = port;
	e->seen = now;
}

void
incad_l2_flood(struct incad_lcore *lc, struct rte_mbuf *m, uint16_t in_port)
{
	unsigned int p, n = incad.nports - 1;

	if (n == 0) {
		incad_drop_mbuf(lc, m, INCAD_DROP_NOT_LOCAL);
		return;
	}
	/* The same mbuf goes to every port: transmission only reads it. */
	if (n > 1)
		rte_mbuf_refcnt_update(m, (int16_t)(n - 1));
	for (p = 0; p < incad.nports; p++)
		if (p != in_port)
			incad_tx(lc, m, p);
	lc->st.cnt[INCAD_CNT_L2_FLOOD]++;
}

void
incad_l2_forward(struct incad_lcore *lc, struct rte_mbuf *m, uint16_t in_port, uint64_t now)
{
	const struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
	const struct mac_entry *e;

	if (rte_is_multicast_ether_addr(&eth->dst_addr)) {
		incad_l2_flood(lc, m, in_port);
		return;
	}
	e = mac_lookup(mac_key(&eth->dst_addr), now);
	if (e == NULL) {
		incad_l2_flood(lc, m, in_port);
		return;
	}
	if (e->port == in_port) {
		incad_drop_mbuf(lc, m, INCAD_DROP_L2_SAME_PORT);
		return;
	}
	lc->st.cnt[INCAD_CNT_L2_FWD]++;
	incad_tx(lc, m, e->port);
}

static void
neigh_learn(struct incad_lcore *lc, uint32_t ip, const struct rte_ether_addr *mac,
	    uint16_t port, uint64_t now)
{
	struct neigh_entry *e;

	if (ip == 0 || rte_is_multicast_ether_addr(mac))
		return;
	e = table_upsert(&neighs, &ip);
	if (e == NULL)
		return;
	memcpy(e->mac, mac->addr_bytes, 6);
	e->port = port;
	e->seen = now;
	lc->st.cnt[INCAD_CNT_ARP_LEARN]++;
}

/* Not for incad: a switch passes it on, an aggregator drops it. */
static void
not_ours(struct incad_lcore *lc, struct rte_mbuf *m, uint16_t in_port, uint64_t now)
{
	if (incad.cfg.mode == INCAD_MODE_SWITCH)
		incad_l2_forward(lc, m, in_port, now);
	else
		incad_drop_mbuf(lc, m, INCAD_DROP_NOT_LOCAL);
}

/*
 * An answer made in place from a request whose 802.1Q tag the PMD stripped
 * (net_af_packet) goes back with that tag; a tag still in the frame stays
 * where it is. NULL when the frame had to be freed.
 */
static struct rte_mbuf *
retag(struct incad_lcore *lc, struct rte_mbuf *m)
{
	uint16_t vid;

	const struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, const struct rte_ether_hdr *);

	/* Some PMDs (net_af_packet without the strip offload) put the tag
	 * back into the frame and keep the flag: then it is in place. */
	if (!(m->ol_flags & RTE_MBUF_F_RX_VLAN_STRIPPED) ||
	    eth->ether_type == rte_cpu_to_be_16(RTE_ETHER_TYPE_VLAN))
		return m;
	vid = m->vlan_tci & 0xfff;
	m->ol_flags &= ~(RTE_MBUF_F_RX_VLAN | RTE_MBUF_F_RX_VLAN_STRIPPED);
	return incad_vlan_tag(lc, m, vid);
}

void
incad_l2_arp(struct incad_lcore *lc, struct rte_mbuf *m, uint16_t in_port, size_t l3,
	     uint64_t now)
{
	const struct incad_port *port = &incad.ports[in_port];
	struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
	struct rte_arp_hdr *arp;
	struct rte_arp_ipv4 *a;
	uint32_t tip, sip;
	uint16_t op;

	if (rte_pktmbuf_data_len(m) < l3 + sizeof(*arp)) {
		incad_drop_mbuf(lc, m, INCAD_DROP_ARP_INVALID);
		return;
	}
	arp = rte_pktmbuf_mtod_offset(m, struct rte_arp_hdr *, l3);
	a = &arp->arp_data;
	if (arp->arp_hardware != rte_cpu_to_be_16(RTE_ARP_HRD_ETHER) ||
	    arp->arp_protocol != rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4) ||
	    arp->arp_hlen != RTE_ETHER_ADDR_LEN || arp->arp_plen != 4) {
		incad_drop_mbuf(lc, m, INCAD_DROP_ARP_INVALID);
		return;
	}
	op = rte_be_to_cpu_16(arp->arp_opcode);
	tip = rte_be_to_cpu_32(a->arp_tip);
	sip = rte_be_to_cpu_32(a->arp_sip);
	if (incad_local_port(tip) < 0) {
		not_ours(lc, m, in_port, now);
		return;
	}
	if (op == RTE_ARP_OP_REPLY) {
		neigh_learn(lc, sip, &a->arp_sha, in_port, now);
		rte_pktmbuf_free(m);
		return;
	}
	if (op != RTE_ARP_OP_REQUEST) {
		incad_drop_mbuf(lc, m, INCAD_DROP_ARP_INVALID);
		return;
	}
	neigh_learn(lc, sip, &a->arp_sha, in_port, now);

	/* Answer in place, from the port the request came in on: all of
	 * incad's addresses are reachable on every port. */
	arp->arp_opcode = rte_cpu_to_be_16(RTE_ARP_OP_REPLY);
	a->arp_tha = a->arp_sha;
	a->arp_tip = a->arp_sip;
	a->arp_sha = port->mac;
	a->arp_sip = rte_cpu_to_be_32(tip);
	eth->dst_addr = a->arp_tha;
	eth->src_addr = port->mac;
	m = retag(lc, m);
	if (m == NULL)
		return;
	lc->st.cnt[INCAD_CNT_ARP_REPLY]++;
	incad_tx(lc, m, in_port);
}

void
incad_l2_icmp(struct incad_lcore *lc, struct rte_mbuf *m, uint16_t in_port, size_t l3)
{
	struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
	struct rte_ipv4_hdr *ip = rte_pktmbuf_mtod_offset(m, struct rte_ipv4_hdr *, l3);
	size_t ihl = rte_ipv4_hdr_len(ip);
	size_t tot = rte_be_to_cpu_16(ip->total_length);
	struct rte_icmp_hdr *icmp;
	rte_be32_t addr;

	/* inca_frame_parse() already checked the IPv4 header: length,
	 * checksum, no fragment. */
	if (tot < ihl + sizeof(*icmp)) {
		incad_drop_mbuf(lc, m, INCAD_DROP_ICMP_INVALID);
		return;
	}
	icmp = (struct rte_icmp_hdr *)((uint8_t *)ip + ihl);
	if (icmp->icmp_type != RTE_IP_ICMP_ECHO_REQUEST || icmp->icmp_code != 0 ||
	    rte_raw_cksum(icmp, tot - ihl) != 0xffff) {
		incad_drop_mbuf(lc, m, INCAD_DROP_ICMP_INVALID);
		return;
	}
	icmp->icmp_type = RTE_IP_ICMP_ECHO_REPLY;
	icmp->icmp_cksum = 0;
	icmp->icmp_cksum = (uint16_t)~rte_raw_cksum(icmp, tot - ihl);
	addr = ip->src_addr;
	ip->src_addr = ip->dst_addr;
	ip->dst_addr = addr;
	ip->time_to_live = 64;
	ip->hdr_checksum = 0;
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	rte_ether_addr_copy(&eth->src_addr, &eth->dst_addr);
	rte_ether_addr_copy(&incad.ports[in_port].mac, &eth->src_addr);
	m = retag(lc, m);
	if (m == NULL)
		return;
	lc->st.cnt[INCAD_CNT_ICMP_REPLY]++;
	incad_tx(lc, m, in_port);
}

bool
incad_l2_neigh_lookup(uint32_t ip, uint8_t mac[6], uint16_t *port)
{
	int32_t pos = rte_hash_lookup(neighs.h, &ip);
	const struct neigh_entry *e;

	if (pos < 0)
		return false;
	e = table_entry(&neighs, pos);
	memcpy(mac, e->mac, 6);
	*port = e->port;
	return true;
}

void
incad_l2_arp_request(struct incad_lcore *lc, uint16_t port_idx, uint32_t ip)
{
	const struct incad_port *port = &incad.ports[port_idx];
	struct rte_ether_hdr *eth;
	struct rte_arp_hdr *arp;
	struct rte_mbuf *m;

	m = rte_pktmbuf_alloc(incad.pool);
	if (m == NULL) {
		incad_drop(lc, INCAD_DROP_NO_MBUF);
		return;
	}
	eth = (struct rte_ether_hdr *)rte_pktmbuf_append(m, sizeof(*eth) + sizeof(*arp));
	if (eth == NULL) {
		incad_drop_mbuf(lc, m, INCAD_DROP_NO_MBUF);
		return;
	}
	memset(&eth->dst_addr, 0xff, sizeof(eth->dst_addr));
	eth->src_addr = port->mac;
	eth->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_ARP);
	arp = (struct rte_arp_hdr *)(eth + 1);
	arp->arp_hardware = rte_cpu_to_be_16(RTE_ARP_HRD_ETHER);
	arp->arp_protocol = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
	arp->arp_hlen = RTE_ETHER_ADDR_LEN;
	arp->arp_plen = 4;
	arp->arp_opcode = rte_cpu_to_be_16(RTE_ARP_OP_REQUEST);
	arp->arp_data.arp_sha = port->mac;
	arp->arp_data.arp_sip = port->ipv4_be;
	memset(&arp->arp_data.arp_tha, 0, sizeof(arp->arp_data.arp_tha));
	arp->arp_data.arp_tip = rte_cpu_to_be_32(ip);
	lc->st.cnt[INCAD_CNT_ARP_REQUEST]++;
	incad_tx(lc, m, port_idx);
}

void
incad_l2_neigh_forget(uint32_t ip)
{
	if (rte_hash_del_key(neighs.h, &ip) >= 0)
		__atomic_store_n(&neighs.count, neighs.count - 1, __ATOMIC_RELAXED);
}

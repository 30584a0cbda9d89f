/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * Ports: find or hot-plug each configured device, one rx and one tx queue
 * (only the I/O lcore touches a port), promiscuous so that a configured MAC
 * and switch-mode forwarding work on any NIC, and a clean stop and close
 * (net_pcap writes its tx_pcap out on close).
 */
#include <errno.h>
#include <string.h>

#include <rte_dev.h>
#include <rte_ethdev.h>
#include <rte_string_fns.h>

#include "incad.h"

bool
incad_martian_src(uint32_t ip)
{
	unsigned int i, top = ip >> 24;

	/* "This network", loopback, multicast and the reserved 240/4 (with
	 * 255.255.255.255): never a worker's source (RFC 1122 3.2.1.3). */
	if (top == 0 || top == 127 || top >= 224)
		return true;
	for (i = 0; i < incad.nports; i++)
		if (incad.ports[i].ipv4 == ip || incad.ports[i].bcast == ip)
			return true;
	return false;
}

int
incad_local_port(uint32_t ip)
{
	unsigned int i;

	for (i = 0; i < incad.nports; i++)
		if (incad.ports[i].ipv4 == ip)
			return (int)i;
	return -1;
}

/* Name of the device a devargs string creates: the part before ','. */
static void
devargs_name(const char *devargs, char *name, size_t len)
{
	size_t n = strcspn(devargs, ",");

	if (n >= len)
		n = len - 1;
	memcpy(name, devargs, n);
	name[n] = '\0';
}

static int
port_find(const struct incad_port_conf *pc, struct incad_port *p)
{
	int ret;

	if (pc->devargs[0] != '\0') {
		devargs_name(pc->devargs, p->devname, sizeof(p->devname));
		ret = rte_dev_probe(pc->devargs);
		if (ret != 0) {
			INCAD_LOG(port, ERR, "%s:%d: port '%s': cannot probe '%s': %s",
				  incad.cfg.path, pc->line, pc->name, pc->devargs, strerror(-ret));
			return ret;
		}
		p->hotplugged = true;
	} else if (pc->pci[0] != '\0') {
		rte_strscpy(p->devname, pc->pci, sizeof(p->devname));
		if (rte_eth_dev_get_port_by_name(p->devname, &p->port_id) != 0) {
			ret = rte_dev_probe(pc->pci);
			if (ret != 0) {
				INCAD_LOG(port, ERR, "%s:%d: port '%s': cannot probe PCI %s: %s",
					  incad.cfg.path, pc->line, pc->name, pc->pci,
					  strerror(-ret));
				return ret;
			}
			p->hotplugged = true;
		}
	} else {
		rte_strscpy(p->devname, pc->device, sizeof(p->devname));
	}
	ret = rte_eth_dev_get_port_by_name(p->devname, &p->port_id);
	if (ret != 0) {
		INCAD_LOG(port, ERR, "%s:%d: port '%s': no ethdev named '%s' (give it to EAL "
			  "with --vdev or -a, or use devargs)", incad.cfg.path, pc->line, pc->name,
			  p->devname);
		return -ENODEV;
	}
	return 0;
}

static int
port_setup(const struct incad_port_conf *pc, struct incad_port *p)
{
	struct rte_eth_conf conf;
	struct rte_eth_dev_info info;
	uint16_t nb_rxd = pc->rx_queue_size, nb_txd = pc->tx_queue_size;
	int ret;

	ret = rte_eth_dev_info_get(p->port_id, &info);
	if (ret != 0)
		return ret;
	memset(&conf, 0, sizeof(conf));
	if (pc->mtu != 0)
		conf.rxmode.mtu = pc->mtu;
	/* A NIC that checks UDP checksums saves incad a pass over every
	 * contribution's payload (RTE_MBUF_F_RX_L4_CKSUM_GOOD). net_tap offers
	 * the offload but does it in software, more slowly than incad. */
	if (strcmp(info.driver_name, "net_tap") != 0)
		conf.rxmode.offloads |= info.rx_offload_capa & RTE_ETH_RX_OFFLOAD_UDP_CKSUM;
	/* Chained RESULTs (a header mbuf per member in front of the set's one
	 * payload) only where the PMD sends them: others get copies. net_pcap
	 * does (it reads a chain into its bounce buffer, and the dpdk tests
	 * compare what it writes byte for byte) without announcing it. */
	if (info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_MULTI_SEGS)
		conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_MULTI_SEGS;
	p->tx_multi_seg = (info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_MULTI_SEGS) != 0 ||
			  strcmp(info.driver_name, "net_pcap") == 0;
	ret = rte_eth_dev_configure(p->port_id, 1, 1, &conf);
	if (ret != 0) {
		INCAD_LOG(port, ERR, "port '%s': configure: %s", p->name, strerror(-ret));
		return ret;
	}
	ret = rte_eth_dev_adjust_nb_rx_tx_desc(p->port_id, &nb_rxd, &nb_txd);
	if (ret != 0)
		return ret;
	ret = rte_eth_rx_queue_setup(p->port_id, 0, nb_rxd, rte_eth_dev_socket_id(p->port_id),
				     NULL, incad.pool);
	if (ret != 0) {
		INCAD_LOG(port, ERR, "port '%s': rx queue: %s", p->name, strerror(-ret));
		return ret;
	}
	ret = rte_eth_tx_queue_setup(p->port_id, 0, nb_txd, rte_eth_dev_socket_id(p->port_id),
				     NULL);
	if (ret != 0) {
		INCAD_LOG(port, ERR, "port '%s': tx queue: %s", p->name, strerror(-ret));
		return ret;
	}
	if (pc->has_mac) {
		memcpy(p->mac.addr_bytes, pc->mac, 6);
		/* Not every PMD can change its address; incad answers for the
		 * configured one regardless, the port being promiscuous. */
		ret = rte_eth_dev_default_mac_addr_set(p->port_id, &p->mac);
		if (ret != 0)
			INCAD_LOG(port, NOTICE, "port '%s': device keeps its own MAC (%s)",
				  p->name, strerror(-ret));
	} else {
		ret = rte_eth_macaddr_get(p->port_id, &p->mac);
		if (ret != 0)
			return ret;
	}
	ret = rte_eth_promiscuous_enable(p->port_id);
	if (ret != 0 && ret != -ENOTSUP)
		INCAD_LOG(port, NOTICE, "port '%s': promiscuous mode: %s", p->name,
			  strerror(-ret));
	ret = rte_eth_dev_start(p->port_id);
	if (ret != 0) {
		INCAD_LOG(port, ERR, "port '%s': start: %s", p->name, strerror(-ret));
		return ret;
	}
	p->started = true;
	INCAD_LOG(port, INFO, "port '%s' (%s): RESULTs %s", p->name, info.driver_name,
		  p->tx_multi_seg ? "replicated (multi-segment tx)" : "copied");
	return 0;
}

int
incad_ports_init(void)
{
	unsigned int i;
	char mac[RTE_ETHER_ADDR_FMT_SIZE], ip[16];
	int ret;

	for (i = 0; i < incad.cfg.nports; i++) {
		const struct incad_port_conf *pc = &incad.cfg.ports[i];
		struct incad_port *p = &incad.ports[i];

		rte_strscpy(p->name, pc->name, sizeof(p->name));
		p->ipv4 = pc->ipv4;
		p->ipv4_be = rte_cpu_to_be_32(pc->ipv4);
		/* A /31 or /32 has no broadcast address (RFC 3021). */
		p->bcast = pc->prefix_len < 31 ? pc->ipv4 | (UINT32_MAX >> pc->prefix_len) : 0;
		ret = port_find(pc, p);
		if (ret != 0)
			return ret;
		/* Counted before setup so that a failure still closes it. */
		incad.nports = i + 1;
		ret = port_setup(pc, p);
		if (ret != 0)
			return ret;
		rte_ether_format_addr(mac, sizeof(mac), &p->mac);
		INCAD_LOG(port, INFO, "port '%s' (%s, ethdev %u): %s/%u, MAC %s", p->name,
			  p->devname, p->port_id, incad_ipv4_str(p->ipv4, ip, sizeof(ip)),
			  pc->prefix_len, mac);
	}
	return 0;
}

void
incad_ports_fini(void)
{
	struct rte_eth_dev_info info;
	struct rte_device *dev;
	unsigned int i;
	int ret;

	for (i = 0; i < incad.nports; i++) {
		struct incad_port *p = &incad.ports[i];

		dev = NULL;
		if (rte_eth_dev_info_get(p->port_id, &info) == 0)
			dev = info.device;
		if (p->started) {
			ret = rte_eth_dev_stop(p->port_id);
			if (ret != 0)
				INCAD_LOG(port, NOTICE, "port '%s': stop: %s", p->name,
					  strerror(-ret));
			p->started = false;
		}
		ret = rte_eth_dev_close(p->port_id);
		if (ret != 0)
			INCAD_LOG(port, NOTICE, "port '%s': close: %s", p->name, strerror(-ret));
		if (p->hotplugged && dev != NULL)
			rte_dev_remove(dev);
	}
	incad.nports = 0;
}

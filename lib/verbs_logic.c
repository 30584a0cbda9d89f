/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * The verbs transport's device-independent decisions (li_verbs.h). Built
 * with or without libibverbs, so that they are tested everywhere; only
 * li_vb_fill_send() needs the verbs structures.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "li_verbs.h"

void
li_vb_gid_from_ipv4(uint8_t gid[16], uint32_t ipv4)
{
	memset(gid, 0, 10);
	gid[10] = 0xff;
	gid[11] = 0xff;
	memcpy(gid + 12, &ipv4, 4);
}

bool
li_vb_gid_to_ipv4(const uint8_t gid[16], uint32_t *ipv4)
{
	static const uint8_t prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

	if (memcmp(gid, prefix, sizeof(prefix)) != 0)
		return false;
	memcpy(ipv4, gid + 12, 4);
	return true;
}

int
li_vb_parse_dev(const char *s, struct li_vb_dev_spec *spec)
{
	const char *colon = strchr(s, ':');
	size_t n = colon != NULL ? (size_t)(colon - s) : strlen(s);
	size_t i;

	memset(spec, 0, sizeof(*spec));
	if (n == 0 || n >= sizeof(spec->name))
		return -1;
	/* Device names are sysfs names: no separators, no spaces. */
	for (i = 0; i < n; i++) {
		char ch = s[i];

		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= '0' && ch <= '9') || ch == '_' || ch == '-' || ch == '.'))
			return -1;
	}
	memcpy(spec->name, s, n);
	if (colon != NULL) {
		char *end;
		unsigned long port;

		/* Port numbers are 1..255 (ibv_query_port's uint8_t). */
		if (colon[1] < '0' || colon[1] > '9')
			return -1;
		port = strtoul(colon + 1, &end, 10);
		if (*end != '\0' || port == 0 || port > 255)
			return -1;
		spec->port = (unsigned)port;
	}
	return 0;
}

int
li_vb_choose(const struct li_vb_gid *tab, unsigned n, const struct li_vb_dev_spec *spec,
	     uint32_t local_ip, const char **why)
{
	uint8_t want[16];
	bool on_dev = false, v2 = false;
	int inactive = -1;
	unsigned i;

	li_vb_gid_from_ipv4(want, local_ip);
	for (i = 0; i < n; i++) {
		const struct li_vb_gid *e = &tab[i];

		if (spec != NULL && (strcmp(e->dev, spec->name) != 0 ||
				     (spec->port != 0 && e->port != spec->port)))
			continue;
		on_dev = true;
		if (!e->roce_v2)
			continue;
		v2 = true;
		if (memcmp(e->gid, want, sizeof(want)) != 0)
			continue;
		if (e->port_active)
			return (int)i;
		if (inactive < 0)
			inactive = (int)i;
	}
	if (inactive >= 0)
		return inactive;
	if (spec != NULL && !on_dev)
		*why = "INCA_ROCE_DEV names no device (or port) of this host";
	else if (!v2)
		*why = "no RoCE v2 GID (RoCE v1 or InfiniBand only)";
	else
		*why = "no RoCE v2 GID carries the local IPv4 address";
	return -1;
}

unsigned
li_vb_mtu_bytes(int ibv_mtu)
{
	return ibv_mtu >= 1 && ibv_mtu <= 5 ? 128u << ibv_mtu : 0;
}

unsigned
li_vb_max_elems(unsigned mtu, unsigned elem_size)
{
	unsigned n, bytes;

	if (elem_size == 0 || mtu <= INCA_HDR_LEN)
		return 0;
	n = (mtu - INCA_HDR_LEN) / elem_size;
	if (n > INCA_MAX_ELEMS)
		n = INCA_MAX_ELEMS;
	if (n > INCA_MAX_PAYLOAD_BYTES / elem_size)
		n = INCA_MAX_PAYLOAD_BYTES / elem_size;
	/* The payload goes out in whole 32-bit words (BTH pad count). */
	for (; n > 0; n--) {
		bytes = INCA_HDR_LEN + n * elem_size;
		if (((bytes + 3) & ~3u) <= mtu)
			break;
	}
	return n;
}

enum li_vb_route
li_vb_route(const void *msg, size_t len, bool bound)
{
	const struct inca_hdr *h = msg;

	if (!bound || len < INCA_HDR_LEN)
		return LI_VB_UDP;
	return h->type == INCA_MSG_CONTRIB ? LI_VB_QP : LI_VB_UDP;
}

bool
li_vb_signaled(uint64_t seq, unsigned i, unsigned n)
{
	return i + 1 == n || (seq + 1) % LI_VB_SIGNAL_EVERY == 0;
}

size_t
li_vb_rx_len(uint32_t byte_len, size_t cap)
{
	if (byte_len < LI_VB_GRH_LEN)
		return 0;
	if (byte_len - LI_VB_GRH_LEN > cap)
		return 0;
	return byte_len - LI_VB_GRH_LEN;
}

bool
li_vb_rx_from(const uint8_t *grh, uint32_t src_qp, uint32_t agg_ip, uint32_t agg_qpn)
{
	uint32_t src;

	/* The IPv4 header sits in the GRH's last 20 bytes: version 4, IHL 5. */
	if (grh[LI_VB_GRH_LEN - 20] != 0x45)
		return false;
	memcpy(&src, grh + LI_VB_GRH_IPV4_SRC, 4);
	return src == agg_ip && src_qp == agg_qpn;
}

#if INCA_HAVE_VERBS
void
li_vb_fill_send(struct ibv_send_wr *wr, struct ibv_sge *sge, const void *msg, size_t len,
		void *slot, uint32_t lkey, uint32_t max_inline, struct ibv_ah *ah, uint32_t qpn,
		uint32_t qkey, uint64_t wr_id, bool signaled)
{
	memset(wr, 0, sizeof(*wr));
	memset(sge, 0, sizeof(*sge));
	sge->length = (uint32_t)len;
	if (len <= max_inline) {
		/* The device copies inline data when the request is posted:
		 * the caller's buffer is not needed afterwards. */
		sge->addr = (uintptr_t)msg;
		wr->send_flags = IBV_SEND_INLINE;
	} else {
		/*
		 * Not zero copy: the library's packet buffers (comm's tx_mem)
		 * are reused as soon as send_batch returns, while the device
		 * reads a posted buffer until its completion; registering them
		 * would also pin memory the library reallocates. One copy into
		 * a registered slot that lives until the completion is cheaper
		 * than either.
		 */
		memcpy(slot, msg, len);
		sge->addr = (uintptr_t)slot;
		sge->lkey = lkey;
	}
	if (signaled)
		wr->send_flags |= IBV_SEND_SIGNALED;
	wr->wr_id = wr_id;
	wr->sg_list = sge;
	wr->num_sge = 1;
	wr->opcode = IBV_WR_SEND;
	wr->wr.ud.ah = ah;
	wr->wr.ud.remote_qpn = qpn;
	wr->wr.ud.remote_qkey = qkey;
}
#endif

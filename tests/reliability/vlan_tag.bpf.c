/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * A worker port on 802.1Q VLAN VID (tests/reliability, case vlans): this
 * kernel has no VLAN devices (no 8021q) and no tc vlan action, so tc BPF
 * programs tag everything the worker sends and accept only frames tagged
 * VID, untagged. Built by the test with clang -target bpf -DVID=n.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

SEC("tc/egress")
int push(struct __sk_buff *skb)
{
	if (bpf_skb_vlan_push(skb, bpf_htons(ETH_P_8021Q), VID) != 0)
		return TC_ACT_SHOT;
	return TC_ACT_OK;
}

SEC("tc/ingress")
int pop(struct __sk_buff *skb)
{
	if (!skb->vlan_present || (skb->vlan_tci & 0xfff) != VID)
		return TC_ACT_SHOT;
	if (bpf_skb_vlan_pop(skb) != 0)
		return TC_ACT_SHOT;
	return TC_ACT_OK;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

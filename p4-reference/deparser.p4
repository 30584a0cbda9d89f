/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * Deparsers of the Tofino program. Ingress puts the bridge header in front of
 * every frame (egress and the next recirculation pass parse it); egress drops
 * it again and recomputes the IPv4 header checksum of the RESULTs it
 * rewrote. RESULTs carry UDP checksum 0 (no checksum), which the spec allows.
 */

control IngressDeparser(packet_out pkt,
			inout inca_headers_t hdr,
			in inca_ig_md_t md,
			in ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md)
{
	apply {
		pkt.emit(hdr.bridge);
		pkt.emit(hdr.ethernet);
		pkt.emit(hdr.vlan);
		pkt.emit(hdr.ipv4);
		pkt.emit(hdr.udp);
		pkt.emit(hdr.inca);
		pkt.emit(hdr.data0);
		pkt.emit(hdr.data1);
	}
}

control EgressDeparser(packet_out pkt,
		       inout inca_headers_t hdr,
		       in inca_eg_md_t md,
		       in egress_intrinsic_metadata_for_deparser_t eg_dprsr_md)
{
	Checksum() ipv4_csum;

	apply {
		if (md.update_ipv4_csum) {
			hdr.ipv4.hdr_checksum = ipv4_csum.update({
				hdr.ipv4.version,
				hdr.ipv4.ihl,
				hdr.ipv4.tos,
				hdr.ipv4.total_len,
				hdr.ipv4.identification,
				hdr.ipv4.flags,
				hdr.ipv4.frag_offset,
				hdr.ipv4.ttl,
				hdr.ipv4.protocol,
				hdr.ipv4.src_addr,
				hdr.ipv4.dst_addr
			});
		}
		/* The bridge is not emitted: it never leaves the switch. */
		pkt.emit(hdr.ethernet);
		pkt.emit(hdr.vlan);
		pkt.emit(hdr.ipv4);
		pkt.emit(hdr.udp);
		pkt.emit(hdr.inca);
	}
}

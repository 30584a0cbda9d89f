/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * Parsers of the Tofino program.
 *
 * From a port: Ethernet / IPv4 (IHL 5, no fragment) / UDP to an INCA port /
 * INCA header, and for a CONTRIB or a RESULT (a tree leaf's parent's) of a
 * switch payload class its first group of 64 elements (the 256-element class leaves the other three groups in the
 * payload; later passes consume them, see next_step.p4). Everything else is
 * parsed as far as it matches and forwarded as ordinary traffic.
 *
 * From a recirculation port: the bridge header that the previous pass put in
 * front of the Ethernet header, then the same headers without the checks
 * of the first pass (but the IPv4 checksum, which the admission of an ENTER
 * pass tests again), and a group of elements only on passes that consume
 * one.
 */

parser IngressParser(packet_in pkt,
		     out inca_headers_t hdr,
		     out inca_ig_md_t md,
		     out ingress_intrinsic_metadata_t ig_intr_md)
{
	Checksum() ipv4_csum;
	Checksum() bridged_csum;   /* the same check on a recirculated frame */

	/* INCA ports besides INCA_UDP_PORT; the control plane may add some. */
	value_set<bit<16>>(4) inca_udp_ports;

	/* Recirculation ports of the pipes (68 in each pipe of a Tofino-1). */
	value_set<PortId_t>(4) recirc_ports;

	state start {
		pkt.extract(ig_intr_md);
		pkt.advance(PORT_METADATA_SIZE);
		transition select(ig_intr_md.ingress_port) {
			recirc_ports: parse_bridge;
			default: parse_ethernet;
		}
	}

	state parse_ethernet {
		pkt.extract(hdr.ethernet);
		transition select(hdr.ethernet.ether_type) {
			ETHERTYPE_IPV4: parse_ipv4;
			ETHERTYPE_VLAN: parse_vlan;
			default: accept;
		}
	}

	/* One 802.1Q tag; the first pass strips it once the member matched. */
	state parse_vlan {
		pkt.extract(hdr.vlan);
		md.vid = hdr.vlan.vid;
		transition select(hdr.vlan.ether_type) {
			ETHERTYPE_IPV4: parse_ipv4;
			default: accept;
		}
	}

	state parse_ipv4 {
		pkt.extract(hdr.ipv4);
		ipv4_csum.add(hdr.ipv4);
		/* verify() is true when the header checksum is right. */
		md.ipv4_csum_ok = ipv4_csum.verify();
		/*
		 * The Tofino subset takes no IPv4 options (IHL 5) and no
		 * fragments (MF clear, offset 0): such frames are not parsed
		 * as INCA and so never reach the aggregator.
		 */
		transition select(hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.flags,
				  hdr.ipv4.frag_offset, hdr.ipv4.protocol) {
			(4w4, 4w5, 3w0 &&& 3w1, 13w0, IP_PROTO_UDP): parse_udp;
			default: accept;
		}
	}

	state parse_udp {
		pkt.extract(hdr.udp);
		transition select(hdr.udp.dst_port) {
			INCA_UDP_PORT: parse_inca;
			inca_udp_ports: parse_inca;
			default: accept;
		}
	}

	state parse_inca {
		pkt.extract(hdr.inca);
		transition select(hdr.inca.type, hdr.inca.count) {
			(INCA_MSG_CONTRIB, INCA_PAYLOAD_SMALL): parse_group;
			(INCA_MSG_CONTRIB, INCA_PAYLOAD_LARGE): parse_group;
			(INCA_MSG_RESULT, INCA_PAYLOAD_SMALL): parse_group;
			(INCA_MSG_RESULT, INCA_PAYLOAD_LARGE): parse_group;
			default: accept;
		}
	}

	/* One group of 64 elements: lanes a (0..31) and lanes b (32..63). */
	state parse_group {
		pkt.extract(hdr.data0);
		pkt.extract(hdr.data1);
		transition accept;
	}

	/*
	 * A pass after the first. Set here, so that the first stage's
	 * lookups and the admission table test no field the pipe writes:
	 * which pass this is; in an ENTER pass the member check, passed in
	 * the pipe the frame came in on (whose VLAN tag is stripped now), and
	 * whether a parent's RESULT was rewritten into its leaf job.
	 */
	state parse_bridge {
		pkt.extract(hdr.bridge);
		transition select(hdr.bridge.step, hdr.bridge.from_parent) {
			(INCA_STEP_ENTER, 0): parse_enter;
			(INCA_STEP_ENTER, _): parse_enter_parent;
			default: parse_later;
		}
	}

	state parse_enter_parent {
		md.from_parent = 1;
		transition parse_enter;
	}

	state parse_enter {
		md.pass = INCA_PASS_ENTER;
		md.member_ok = 1;
		transition parse_bridged;
	}

	state parse_later {
		md.pass = INCA_PASS_LATER;
		transition parse_bridged;
	}

	state parse_bridged {
		pkt.extract(hdr.ethernet);
		pkt.extract(hdr.ipv4);
		bridged_csum.add(hdr.ipv4);
		md.ipv4_csum_ok = bridged_csum.verify();
		pkt.extract(hdr.udp);
		pkt.extract(hdr.inca);
		transition select(hdr.bridge.step) {
			INCA_STEP_ENTER: parse_group;
			INCA_STEP_CONSUME: parse_group;
			default: accept;  /* harvest passes prepend, parse nothing */
		}
	}
}

/*
 * Egress sees the bridge header of every frame. Only RESULTs and a leaf's
 * partials are rewritten,
 * and only their headers: the elements stay in the payload.
 */
parser EgressParser(packet_in pkt,
		    out inca_headers_t hdr,
		    out inca_eg_md_t md,
		    out egress_intrinsic_metadata_t eg_intr_md)
{
	state start {
		pkt.extract(eg_intr_md);
		pkt.extract(hdr.bridge);
		transition select(hdr.bridge.step) {
			INCA_STEP_RESULT: parse_result;
			INCA_STEP_REPLAY: parse_result;
			INCA_STEP_UPLINK: parse_result;
			default: accept;
		}
	}

	state parse_result {
		pkt.extract(hdr.ethernet);
		pkt.extract(hdr.ipv4);
		pkt.extract(hdr.udp);
		pkt.extract(hdr.inca);
		transition accept;
	}
}

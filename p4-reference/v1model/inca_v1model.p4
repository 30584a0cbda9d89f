/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * INCA aggregation for BMv2 simple_switch (v1model): the same Tofino subset
 * and the same slot logic as ../inca.p4 (see ../bitmap.p4 for the rules),
 * written for a software target without stage or ALU limits:
 *
 *   - all 64 or 256 elements are parsed and aggregated in one pass, so there
 *     is no recirculation and no harvest pass;
 *   - registers are plain arrays: a set's state word (seq + 1 and bitmap)
 *     and its maximum exponent are read, decided on and written back in
 *     one pass, where the Tofino needs one stateful ALU access per
 *     register;
 *   - RESULT copies: standard_metadata.mcast_grp = the job's group, one PRE
 *     node per member with RID = rank; egress rewrites each copy by
 *     egress_rid. Replays go back out of the ingress port.
 *   - a job with an uplink entry is a tree leaf (docs/protocol.md,
 *     "Aggregation trees"): a set that completes becomes PARTIAL and its
 *     lanes go to the parent as one CONTRIB, rewritten in egress by
 *     parent_addr; the parent's RESULT (the parent table: its address,
 *     job and session) completes the PARTIAL set of its seq and is
 *     multicast to the members as theirs.
 *
 * Tables and groups are set up by gen_commands.py (simple_switch_CLI).
 * Build: p4c --target bmv2 --arch v1model -o out inca_v1model.p4
 */

#include <core.p4>
#include <v1model.p4>

#include "../headers.p4"

/* Smaller than a Tofino pipe's: BMv2 allocates every register entry. */
#define V1_NUM_SLOTS 1024
#define V1_NUM_SETS 2048
#define V1_ACC_WORDS 131072  /* 2048 group entries x 64 elements */

/* One pass reads lanes a and b alike. */
const bit<8> V1_LANE_READ = 5;

struct v1_headers_t {
	ethernet_h ethernet;
	vlan_h vlan;
	ipv4_h ipv4;
	udp_h udp;
	inca_h inca;
	/* Group g of 64 elements: data[2g] = elements 0..31, data[2g+1] the rest. */
	inca_data_h[8] data;
}

struct v1_md_t {
	bit<8> reason;      /* INCA_DROP_*; not NONE ends the frame */
	bit<1> admit;
	bit<8> cls;         /* INCA_CLASS_* */
	bit<1> job_ok;
	bit<1> member_ok;
	bit<1> slot_ok;
	bit<1> set;
	bit<32> members;    /* the job's full bitmap: bits 0..N-1 */
	bit<16> mgid;
	bit<32> pool_index;
	bit<32> set_index;
	bit<32> lane_base;
	bit<32> lane_idx0;  /* group entry of group 0 */
	bit<32> rank_bit;
	bit<32> seq1;       /* the contribution's seq + 1 */
	bit<32> before;     /* what Bitmap's state access returns (../bitmap.p4) */
	bit<16> exp_in;     /* biased exponents (exp + 128) */
	bit<16> exp_acc;
	bit<8> verdict;     /* INCA_V_* */
	bit<8> lane_op;     /* INCA_LANE_NOP, _WRITE, _ADD or V1_LANE_READ */
	bit<32> acc0;       /* first accumulator word of each group */
	bit<32> acc1;
	bit<32> acc2;
	bit<32> acc3;
	bit<16> rank;       /* egress: member this copy goes to */
	bit<1> is_result;
	bit<1> is_replay;
	bit<1> is_partial;  /* a leaf's partial to its parent */
	bit<1> from_parent; /* a RESULT to the aggregator: a parent's, or dropped */
	bit<1> leaf;        /* the job is a tree leaf (uplink hit) */
	bit<1> up;          /* ... and holds a parent session: partials may go */
	bit<9> up_port;
	bit<1> partial;     /* the set's PARTIAL bit, as it ends this pass */
	bit<1> flood;
	bit<9> in_port;
	bit<12> vid;        /* ingress: the frame's VLAN; egress: the member's */
}

parser IncaParser(packet_in pkt,
		  out v1_headers_t hdr,
		  inout v1_md_t meta,
		  inout standard_metadata_t sm)
{
	/* INCA ports besides INCA_UDP_PORT (simple_switch_CLI pvs_add). */
	value_set<bit<16>>(4) inca_udp_ports;

	state start {
		transition parse_ethernet;
	}

	state parse_ethernet {
		pkt.extract(hdr.ethernet);
		transition select(hdr.ethernet.ether_type) {
			ETHERTYPE_IPV4: parse_ipv4;
			ETHERTYPE_VLAN: parse_vlan;
			default: accept;
		}
	}

	/* One 802.1Q tag (a tenant's VLAN); 802.1ad and others are not INCA. */
	state parse_vlan {
		pkt.extract(hdr.vlan);
		meta.vid = hdr.vlan.vid;
		transition select(hdr.vlan.ether_type) {
			ETHERTYPE_IPV4: parse_ipv4;
			default: accept;
		}
	}

	state parse_ipv4 {
		pkt.extract(hdr.ipv4);
		/* IHL 5 and no fragment, as on the Tofino. */
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

	/* CONTRIBs, and RESULTs, which a leaf takes from its parent. */
	state parse_inca {
		pkt.extract(hdr.inca);
		transition select(hdr.inca.type, hdr.inca.count) {
			(INCA_MSG_CONTRIB, INCA_PAYLOAD_SMALL): parse_small;
			(INCA_MSG_CONTRIB, INCA_PAYLOAD_LARGE): parse_large;
			(INCA_MSG_RESULT, INCA_PAYLOAD_SMALL): parse_small;
			(INCA_MSG_RESULT, INCA_PAYLOAD_LARGE): parse_large;
			default: accept;
		}
	}

	state parse_small {
		pkt.extract(hdr.data.next);
		pkt.extract(hdr.data.next);
		transition accept;
	}

	state parse_large {
		pkt.extract(hdr.data.next);
		pkt.extract(hdr.data.next);
		pkt.extract(hdr.data.next);
		pkt.extract(hdr.data.next);
		pkt.extract(hdr.data.next);
		pkt.extract(hdr.data.next);
		pkt.extract(hdr.data.next);
		pkt.extract(hdr.data.next);
		transition accept;
	}
}

control IncaVerifyChecksum(inout v1_headers_t hdr, inout v1_md_t meta)
{
	apply {
		/* A mismatch sets standard_metadata.checksum_error. */
		verify_checksum(hdr.ipv4.isValid(),
				{ hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.tos,
				  hdr.ipv4.total_len, hdr.ipv4.identification,
				  hdr.ipv4.flags, hdr.ipv4.frag_offset, hdr.ipv4.ttl,
				  hdr.ipv4.protocol, hdr.ipv4.src_addr,
				  hdr.ipv4.dst_addr },
				hdr.ipv4.hdr_checksum, HashAlgorithm.csum16);
	}
}

/* OP applied to the 32 lanes of data header H, accumulator words B.. */
#define LANES(OP, H, B) \
	OP(H.e00, (B) + 0); OP(H.e01, (B) + 1); OP(H.e02, (B) + 2); OP(H.e03, (B) + 3); \
	OP(H.e04, (B) + 4); OP(H.e05, (B) + 5); OP(H.e06, (B) + 6); OP(H.e07, (B) + 7); \
	OP(H.e08, (B) + 8); OP(H.e09, (B) + 9); OP(H.e10, (B) + 10); OP(H.e11, (B) + 11); \
	OP(H.e12, (B) + 12); OP(H.e13, (B) + 13); OP(H.e14, (B) + 14); OP(H.e15, (B) + 15); \
	OP(H.e16, (B) + 16); OP(H.e17, (B) + 17); OP(H.e18, (B) + 18); OP(H.e19, (B) + 19); \
	OP(H.e20, (B) + 20); OP(H.e21, (B) + 21); OP(H.e22, (B) + 22); OP(H.e23, (B) + 23); \
	OP(H.e24, (B) + 24); OP(H.e25, (B) + 25); OP(H.e26, (B) + 26); OP(H.e27, (B) + 27); \
	OP(H.e28, (B) + 28); OP(H.e29, (B) + 29); OP(H.e30, (B) + 30); OP(H.e31, (B) + 31);

/* OP applied to a 64-element group: lanes a in header A, lanes b in header B. */
#define GROUP(OP, A, B, BASE) \
	LANES(OP, hdr.data[A], BASE) \
	LANES(OP, hdr.data[B], (BASE) + 32)

/* OP applied to every element of the contribution. */
#define ALL_GROUPS(OP) \
	GROUP(OP, 0, 1, meta.acc0) \
	if (meta.cls == INCA_CLASS_LARGE) { \
		GROUP(OP, 2, 3, meta.acc1) \
		GROUP(OP, 4, 5, meta.acc2) \
		GROUP(OP, 6, 7, meta.acc3) \
	}

control IncaIngress(inout v1_headers_t hdr,
		    inout v1_md_t meta,
		    inout standard_metadata_t sm)
{
	/* Per set: the seq + 1 of its use, its bitmap, its maximum exponent. */
	register<bit<32>>(V1_NUM_SETS) set_seq;
	register<bit<32>>(V1_NUM_SETS) set_bitmap;
	register<bit<16>>(V1_NUM_SETS) max_exp;
	/* Tree leaf: every member counted, the parent's RESULT awaited. */
	register<bit<1>>(V1_NUM_SETS) set_partial;
	register<bit<32>>(V1_ACC_WORDS) acc;

	counter(INCA_DROP_REASONS, CounterType.packets) drops;

	action lane_write(inout bit<32> e, in bit<32> i) {
		acc.write(i, e);
	}

	/* int32 SUM wraps modulo 2^32. */
	action lane_add(inout bit<32> e, in bit<32> i) {
		bit<32> v;
		acc.read(v, i);
		v = v + e;
		acc.write(i, v);
		e = v;
	}

	action lane_read(inout bit<32> e, in bit<32> i) {
		acc.read(e, i);
	}

	table agg_addr {
		key = {
			hdr.ipv4.dst_addr : exact;
		}
		actions = {
			NoAction;
		}
		size = 16;
	}

	action contrib_small() {
		meta.cls = INCA_CLASS_SMALL;
	}

	action contrib_large() {
		meta.cls = INCA_CLASS_LARGE;
	}

	action bad_msg() {
		meta.cls = INCA_CLASS_NONE;
	}

	table classify {
		key = {
			hdr.inca.version : exact;
			hdr.inca.dtype : exact;
			hdr.inca.op : exact;
			hdr.inca.flags : ternary;
			hdr.inca.rank : ternary;
			hdr.inca.reason : exact;
			hdr.inca.count : exact;
			hdr.udp.length : exact;
			hdr.ipv4.total_len : exact;
		}
		actions = {
			contrib_small;
			contrib_large;
			@defaultonly bad_msg;
		}
		const entries = {
			(INCA_PROTO_VERSION, INCA_DTYPE_INT32, INCA_OP_SUM,
			 8w0 &&& 8w0xf0, 16w0 &&& 16w0xffe0, 16w0,
			 INCA_PAYLOAD_SMALL, INCA_UDP_LEN_SMALL, INCA_IP_LEN_SMALL) :
				contrib_small();
			(INCA_PROTO_VERSION, INCA_DTYPE_INT32, INCA_OP_SUM,
			 8w0 &&& 8w0xf0, 16w0 &&& 16w0xffe0, 16w0,
			 INCA_PAYLOAD_LARGE, INCA_UDP_LEN_LARGE, INCA_IP_LEN_LARGE) :
				contrib_large();
		}
		const default_action = bad_msg();
	}

	action job_ok(bit<32> members, bit<16> mgid) {
		meta.job_ok = 1;
		meta.members = members;
		meta.mgid = mgid;
	}

	table job {
		key = {
			hdr.inca.job : exact;
			hdr.inca.token : exact;
		}
		actions = {
			job_ok;
			NoAction;
		}
		default_action = NoAction();
		size = INCA_MAX_JOBS;
	}

	/* Packets per member, read by the control plane for liveness. */
	counter(INCA_MAX_MEMBERS, CounterType.packets) member_rx;

	action member_ok(bit<32> idx) {
		meta.member_ok = 1;
		member_rx.count(idx);
	}

	table member {
		key = {
			hdr.inca.job : exact;
			hdr.inca.rank : exact;
			hdr.ipv4.src_addr : exact;
			hdr.udp.src_port : exact;
			meta.vid : exact;
		}
		actions = {
			member_ok;
			NoAction;
		}
		default_action = NoAction();
		size = INCA_MAX_MEMBERS;
	}

	/*
	 * A job that is a tree leaf: its partials go out of @port to the
	 * parent (egress parent_addr writes the parent's address, job, rank
	 * and session). leaf_down: a leaf without a parent session, whose
	 * completed partials wait for its members' retransmissions.
	 */
	action leaf_up(bit<9> port) {
		meta.leaf = 1;
		meta.up = 1;
		meta.up_port = port;
	}

	action leaf_down() {
		meta.leaf = 1;
	}

	table uplink {
		key = {
			hdr.inca.job : exact;
		}
		actions = {
			leaf_up;
			leaf_down;
			NoAction;
		}
		default_action = NoAction();
		size = INCA_MAX_JOBS;
	}

	/*
	 * A leaf's parent: its RESULTs, from its address and port, in its job
	 * and session, are the leaf job's; they are rewritten into the leaf
	 * job and the leaf's own session, for its members.
	 */
	action from_parent(bit<16> leaf_job, bit<32> session, bit<32> members, bit<16> mgid) {
		meta.job_ok = 1;
		meta.member_ok = 1;
		hdr.inca.job = leaf_job;
		hdr.inca.token = session;
		meta.members = members;
		meta.mgid = mgid;
	}

	table parent {
		key = {
			hdr.ipv4.src_addr : exact;
			hdr.udp.src_port : exact;
			meta.vid : exact;
			hdr.inca.job : exact;
			hdr.inca.token : exact;
		}
		actions = {
			from_parent;
			NoAction;
		}
		default_action = NoAction();
		size = INCA_MAX_JOBS;
	}

	action slot_entry(bit<32> pool_index, bit<32> lane_base) {
		meta.slot_ok = 1;
		meta.pool_index = pool_index;
		meta.lane_base = lane_base;
	}

	table slot_map {
		key = {
			hdr.inca.job : exact;
			hdr.inca.slot : exact;
			hdr.inca.count : exact;
		}
		actions = {
			slot_entry;
			NoAction;
		}
		default_action = NoAction();
		size = V1_NUM_SLOTS;
	}

	action to_cpu(bit<9> port) {
		sm.egress_spec = port;
	}

	table cpu {
		actions = {
			to_cpu;
		}
		default_action = to_cpu(64);
	}

	action l2_forward(bit<9> port) {
		sm.egress_spec = port;
	}

	action l2_flood(bit<16> mgid) {
		sm.mcast_grp = mgid;
		meta.flood = 1;
	}

	action l2_miss() {
		meta.reason = INCA_DROP_L2_MISS;
	}

	table l2 {
		key = {
			hdr.ethernet.dst_addr : exact;
		}
		actions = {
			l2_forward;
			l2_flood;
			l2_miss;
		}
		default_action = l2_miss();
		size = 4096;
	}

	apply {
		bit<32> sq;
		bit<32> bm;
		bit<1> pt;

		meta.in_port = sm.ingress_port;
		if (sm.parser_error != error.NoError) {
			meta.reason = INCA_DROP_PARSE;
		} else if (hdr.inca.isValid()) {
			if (agg_addr.apply().hit) {
				if (sm.checksum_error == 1) {
					meta.reason = INCA_DROP_IP_CSUM;
				} else if (hdr.inca.type == INCA_MSG_CONTRIB) {
					meta.admit = 1;
				} else if (hdr.inca.type == INCA_MSG_RESULT) {
					meta.admit = 1;
					meta.from_parent = 1;
				} else {
					cpu.apply();
				}
			} else {
				l2.apply();
			}
		} else {
			l2.apply();
		}

		if (meta.admit == 1) {
			classify.apply();
			if (meta.from_parent == 1) {
				/* Rewrites the job: the lookups below are the leaf's. */
				parent.apply();
			} else {
				job.apply();
				member.apply();
			}
			uplink.apply();
			slot_map.apply();
			if (meta.cls == INCA_CLASS_NONE) {
				meta.reason = INCA_DROP_BAD_MSG;
			} else if (meta.from_parent == 1 && (meta.job_ok == 0 || meta.leaf == 0)) {
				meta.reason = INCA_DROP_PARENT_STALE;
			} else if (meta.job_ok == 0) {
				meta.reason = INCA_DROP_BAD_TOKEN;
			} else if (meta.member_ok == 0) {
				meta.reason = INCA_DROP_NOT_MEMBER;
			} else if (meta.slot_ok == 0) {
				meta.reason = INCA_DROP_BAD_SLOT;
			}
		}

		if (meta.admit == 1 && meta.reason == INCA_DROP_NONE) {
			meta.set = hdr.inca.flags[0:0];
			meta.rank_bit = 32w1 << (bit<8>)hdr.inca.rank;
			meta.set_index = (meta.pool_index << 1) | (bit<32>)meta.set;
			meta.exp_in = (bit<16>)((bit<8>)hdr.inca.exp ^ 8w0x80);

			/*
			 * The slot rules of ../bitmap.p4, one set at a time: the
			 * state access compares the seq with the set's use and
			 * returns the set's bitmap before this contribution, 0
			 * when it starts a new use, or INCA_STATE_STALE.
			 */
			meta.seq1 = hdr.inca.seq + 1;
			set_seq.read(sq, meta.set_index);
			set_bitmap.read(bm, meta.set_index);
			set_partial.read(pt, meta.set_index);
			max_exp.read(meta.exp_acc, meta.set_index);
			if (meta.from_parent == 1) {
				/*
				 * The parent's RESULT for the PARTIAL set of its seq
				 * is the final sum: written over the partial, with
				 * the parent's exp, and the set is COMPLETE. Any
				 * other (a duplicate, a replay nobody waits for, a
				 * late copy) changes nothing.
				 */
				if (sq == meta.seq1 && bm == meta.members && pt == 1) {
					meta.before = bm;
					meta.exp_acc = meta.exp_in;
					meta.lane_op = INCA_LANE_WRITE;
					meta.verdict = INCA_V_COMPLETE;
					pt = 0;
				} else {
					meta.before = INCA_STATE_STALE;
					meta.reason = INCA_DROP_PARENT_STALE;
				}
			} else if (sq == meta.seq1) {
				meta.before = bm;
				bm = bm | meta.rank_bit;
			} else if ((int<32>)(sq - meta.seq1) < 0) {
				meta.before = 0;
				sq = meta.seq1;
				bm = meta.rank_bit;
			} else {
				meta.before = INCA_STATE_STALE;
			}
			set_seq.write(meta.set_index, sq);
			set_bitmap.write(meta.set_index, bm);

			if (meta.from_parent == 1) {
				/* Decided above. */
			} else if (meta.before == INCA_STATE_STALE) {
				meta.reason = INCA_DROP_STALE;
			} else if (meta.before == 0) {
				/* First contribution of a use of this set. */
				meta.exp_acc = meta.exp_in;
				meta.lane_op = INCA_LANE_WRITE;
				pt = 0;
			} else if ((meta.before & meta.rank_bit) != 0) {
				/* Already counted: look, change nothing. */
				if (meta.before != meta.members) {
					meta.reason = INCA_DROP_DUPLICATE;
				} else if (pt == 1) {
					/* A leaf's member waits: the parent counts the
					 * partial again or replays its RESULT. */
					meta.verdict = INCA_V_RESEND;
					meta.lane_op = V1_LANE_READ;
				} else {
					meta.verdict = INCA_V_REPLAY;
					meta.lane_op = V1_LANE_READ;
				}
			} else {
				if (meta.exp_in > meta.exp_acc) {
					meta.exp_acc = meta.exp_in;
				}
				meta.lane_op = INCA_LANE_ADD;
			}
			if (meta.from_parent == 0 &&
			    (meta.lane_op == INCA_LANE_WRITE || meta.lane_op == INCA_LANE_ADD)) {
				if ((meta.before | meta.rank_bit) != meta.members) {
					meta.verdict = INCA_V_PENDING;
				} else if (meta.leaf == 1) {
					meta.verdict = INCA_V_PARTIAL;
					pt = 1;
				} else {
					meta.verdict = INCA_V_COMPLETE;
				}
			}
			set_partial.write(meta.set_index, pt);
			if (meta.reason == INCA_DROP_NONE) {
				max_exp.write(meta.set_index, meta.exp_acc);
			}

			if (meta.cls == INCA_CLASS_SMALL) {
				meta.lane_idx0 = meta.lane_base | (bit<32>)meta.set;
			} else {
				meta.lane_idx0 = meta.lane_base | ((bit<32>)meta.set << 2);
			}
			meta.acc0 = meta.lane_idx0 << 6;
			meta.acc1 = (meta.lane_idx0 | 1) << 6;
			meta.acc2 = (meta.lane_idx0 | 2) << 6;
			meta.acc3 = (meta.lane_idx0 | 3) << 6;

			if (meta.lane_op == INCA_LANE_WRITE) {
				ALL_GROUPS(lane_write)
			} else if (meta.lane_op == INCA_LANE_ADD) {
				ALL_GROUPS(lane_add)
			} else if (meta.lane_op == V1_LANE_READ) {
				ALL_GROUPS(lane_read)
			}

			if (meta.reason == INCA_DROP_NONE) {
				if (meta.verdict == INCA_V_PENDING) {
					meta.reason = INCA_DROP_CONSUMED;
				} else if (meta.verdict == INCA_V_PARTIAL ||
					   meta.verdict == INCA_V_RESEND) {
					/*
					 * The set's lanes as this leaf's CONTRIB in
					 * the parent's job: same slot, flags, seq,
					 * offset and count, exp the maximum, RETX on
					 * a resend. Without a parent session it waits
					 * for the members' next retransmission.
					 */
					if (meta.up == 0) {
						meta.reason = INCA_DROP_UPLINK_WAIT;
					} else {
						hdr.inca.bitmap = 0;
						hdr.inca.exp = (int<8>)(meta.exp_acc[7:0] ^ 8w0x80);
						if (meta.verdict == INCA_V_RESEND) {
							hdr.inca.flags[1:1] = 1w1;
						} else {
							hdr.inca.flags[1:1] = 1w0;
						}
						sm.egress_spec = meta.up_port;
						meta.is_partial = 1;
					}
				} else {
					hdr.inca.type = INCA_MSG_RESULT;
					hdr.inca.bitmap = meta.members;
					hdr.inca.exp = (int<8>)(meta.exp_acc[7:0] ^ 8w0x80);
					if (meta.verdict == INCA_V_COMPLETE) {
						hdr.inca.flags[1:1] = 1w0;
						sm.mcast_grp = meta.mgid;
						meta.is_result = 1;
					} else {
						hdr.inca.flags[1:1] = 1w1;
						sm.egress_spec = sm.ingress_port;
						meta.rank = hdr.inca.rank;
						meta.is_replay = 1;
					}
				}
			}
		}

		if (meta.reason != INCA_DROP_NONE) {
			mark_to_drop(sm);
			drops.count((bit<32>)meta.reason);
		}
	}
}

control IncaEgress(inout v1_headers_t hdr,
		   inout v1_md_t meta,
		   inout standard_metadata_t sm)
{
	counter(INCA_DROP_REASONS, CounterType.packets) egress_drops;

	action set_member(mac_addr_t mac, ipv4_addr_t ip, bit<16> udp_port, bit<12> vid) {
		meta.vid = vid;
		hdr.ethernet.dst_addr = mac;
		hdr.ipv4.dst_addr = ip;
		hdr.udp.dst_port = udp_port;
	}

	table member_addr {
		key = {
			hdr.inca.job : exact;
			meta.rank : exact;
		}
		actions = {
			set_member;
			NoAction;
		}
		default_action = NoAction();
		size = INCA_MAX_MEMBERS;
	}

	/* A leaf's parent: where its partials go, as which member, in which
	 * session (the control plane rewrites it at each parent JOIN_ACK). */
	action set_parent(mac_addr_t mac, ipv4_addr_t ip, bit<16> udp_port,
			  bit<16> parent_job, bit<16> rank, bit<32> session) {
		meta.vid = 0;
		hdr.ethernet.dst_addr = mac;
		hdr.ipv4.dst_addr = ip;
		hdr.udp.dst_port = udp_port;
		hdr.inca.job = parent_job;
		hdr.inca.rank = rank;
		hdr.inca.token = session;
	}

	table parent_addr {
		key = {
			hdr.inca.job : exact;
		}
		actions = {
			set_parent;
			NoAction;
		}
		default_action = NoAction();
		size = INCA_MAX_JOBS;
	}

	action set_source(mac_addr_t mac, ipv4_addr_t ip, bit<16> udp_port) {
		hdr.ethernet.src_addr = mac;
		hdr.ipv4.src_addr = ip;
		hdr.udp.src_port = udp_port;
	}

	table aggregator {
		actions = {
			set_source;
		}
		default_action = set_source(0, 0, INCA_UDP_PORT);
	}

	apply {
		bool addr_ok = false;

		if (meta.is_partial == 1) {
			addr_ok = parent_addr.apply().hit;
		} else if (meta.is_result == 1 || meta.is_replay == 1) {
			if (meta.is_result == 1) {
				meta.rank = sm.egress_rid;
			}
			addr_ok = member_addr.apply().hit;
			hdr.inca.rank = meta.rank;
		}
		if (meta.is_result == 1 || meta.is_replay == 1 || meta.is_partial == 1) {
			if (addr_ok) {
				aggregator.apply();
				hdr.ipv4.tos = 0;
				hdr.ipv4.identification = 0;
				hdr.ipv4.flags = 3w2;  /* DF */
				hdr.ipv4.frag_offset = 0;
				hdr.ipv4.ttl = 64;
				hdr.udp.checksum = 0;
				/* Each copy on its member's VLAN (0: untagged). */
				if (meta.vid != 0) {
					if (!hdr.vlan.isValid()) {
						hdr.vlan.setValid();
						hdr.vlan.ether_type = hdr.ethernet.ether_type;
						hdr.ethernet.ether_type = ETHERTYPE_VLAN;
					}
					hdr.vlan.pcp = 0;
					hdr.vlan.dei = 0;
					hdr.vlan.vid = meta.vid;
				} else if (hdr.vlan.isValid()) {
					hdr.ethernet.ether_type = hdr.vlan.ether_type;
					hdr.vlan.setInvalid();
				}
			} else {
				mark_to_drop(sm);
				egress_drops.count((bit<32>)INCA_DROP_NO_ROUTE);
			}
		} else if (meta.flood == 1 && sm.egress_port == meta.in_port) {
			mark_to_drop(sm);
		}
	}
}

control IncaComputeChecksum(inout v1_headers_t hdr, inout v1_md_t meta)
{
	apply {
		update_checksum(hdr.ipv4.isValid() &&
				(meta.is_result == 1 || meta.is_replay == 1 || meta.is_partial == 1),
				{ hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.tos,
				  hdr.ipv4.total_len, hdr.ipv4.identification,
				  hdr.ipv4.flags, hdr.ipv4.frag_offset, hdr.ipv4.ttl,
				  hdr.ipv4.protocol, hdr.ipv4.src_addr,
				  hdr.ipv4.dst_addr },
				hdr.ipv4.hdr_checksum, HashAlgorithm.csum16);
	}
}

control IncaDeparser(packet_out pkt, in v1_headers_t hdr)
{
	apply {
		pkt.emit(hdr);
	}
}

V1Switch(IncaParser(),
	 IncaVerifyChecksum(),
	 IncaIngress(),
	 IncaEgress(),
	 IncaComputeChecksum(),
	 IncaDeparser()) main;

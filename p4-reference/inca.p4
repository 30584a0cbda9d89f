/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * INCA aggregation for Tofino-1 (TNA): the Tofino subset of protocol v2.
 *
 *   - CONTRIB of int32 SUM (BFP allowed: exp = max of the contributions) with
 *     64 or 256 elements, IPv4 without options, to the aggregator's address
 *     and an INCA UDP port;
 *   - exactly-once by the seq of each set's use and its contributor bitmap
 *     over two shadow sets per slot (docs/protocol.md, "Tofino subset":
 *     stale chunks dropped, a newer seq starts a new use, no rule 6, no
 *     MISMATCH);
 *   - RESULT multicast to the job's members, rewritten per copy in egress
 *     (rank, addresses, UDP checksum 0), or replayed to one sender;
 *   - a job with an uplink entry is a tree leaf: a completed set is PARTIAL
 *     and goes to the parent as one CONTRIB (egress parent_addr), and the
 *     parent's RESULT (the parent table) completes it for the members;
 *   - control messages (HELLO, JOIN, ...) go to the CPU port, where the
 *     control plane answers them; ordinary frames are switched by MAC.
 *
 * Jobs, members, slots and multicast groups are set up by the control plane:
 * control/setup_job.py; the layout and the resource budget are in README.md.
 * Laid out for Tofino-1's 12 stages: every lookup in stage 0, the admission
 * and set_seq in 1, set_bitmap in 2, remaining and max_exp in 3, the 32
 * lane registers in 4..11 (bitmap.p4, verdict.p4; README.md, "How a contribution moves through the Tofino
 * pipe"). The suite p4 test tofino_compile checks that with p4c-barefoot.
 */

#include <core.p4>
#include <tna.p4>

/* Metadata starts at zero on every pass. */
@pa_auto_init_metadata

#include "headers.p4"

/* Ingress metadata: zero at the start of every pass (but what the parser sets). */
struct inca_ig_md_t {
	bit<2> pass;            /* INCA_PASS_* (parser) */
	bit<8> reason;          /* INCA_DROP_*; not NONE ends the frame */
	bit<8> cls;             /* INCA_CLASS_* of an admissible CONTRIB or RESULT */
	bit<1> to_agg;          /* to the aggregator's address (agg_addr) */
	bit<1> job_ok;          /* (job, token) known */
	bit<1> job_remote;      /* the job lives in another pipe */
	bit<1> member_ok;       /* (job, rank, source) known; 1 on ENTER (parser) */
	bit<1> slot_ok;         /* slot within the job's pool */
	bit<1> parent_hit;      /* a leaf's parent's RESULT (parent) */
	bit<1> from_parent;     /* ENTER: a parent's RESULT in its leaf job (parser) */
	bit<1> checked;         /* the admission looked at set_seq */
	bit<8> go;              /* INCA_GO_*: recirculated to be admitted */
	bool ipv4_csum_ok;
	PortId_t recirc_port;   /* recirculation port of the job's home pipe */
	bit<32> members;        /* the job's full bitmap: bits 0..N-1 */
	bit<16> mgid;           /* multicast group of the job */
	set_index_t set_index;  /* (slot, set) of the contribution (slot_map) */
	lane_index_t lane_idx;
	bit<32> rank_bit;       /* 1 << rank; a parent's RESULT: the leaf's members */
	bit<32> rank_mask;      /* rank_bit | INCA_BITMAP_OPEN */
	bit<32> seq1;           /* the contribution's seq + 1 */
	bit<32> seen;           /* the sender's bit and bit 31 in the set before */
	bit<8> cnt;             /* contributions still missing after this one */
	bit<8> nworkers_m1;     /* members of the job minus one */
	bit<8> verdict;         /* INCA_V_* */
	bit<16> exp_in;         /* biased exponents (exp + 128) */
	bit<16> exp_out;
	bit<8> lane_op;         /* INCA_LANE_* of this pass */
	bit<12> vid;            /* the frame's 802.1Q VLAN, 0 untagged (parser) */
	bit<1> leaf;            /* the job is a tree leaf (uplink hit) */
	bit<1> up;              /* ... that holds a parent session */
	PortId_t up_port;       /* its port to the parent */
	bit<16> leaf_job;       /* a parent's RESULT: the leaf job, */
	bit<32> leaf_session;   /* its session, */
	bit<32> leaf_members;   /* its members, */
	PortId_t leaf_recirc;   /* its home pipe's recirculation port */
}

struct inca_eg_md_t {
	bit<16> rank;           /* member a RESULT copy goes to */
	bit<1> addr_ok;
	bit<12> vid;            /* VLAN of the member a copy goes to, 0: none */
	bool update_ipv4_csum;
}

#include "parser.p4"
#include "bitmap.p4"
#include "verdict.p4"
#include "processor.p4"
#include "next_step.p4"
#include "deparser.p4"

control Ingress(inout inca_headers_t hdr,
		inout inca_ig_md_t md,
		in ingress_intrinsic_metadata_t ig_intr_md,
		in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
		inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
		inout ingress_intrinsic_metadata_for_tm_t ig_tm_md)
{
	Counter<bit<32>, bit<8>>(INCA_DROP_REASONS, CounterType_t.PACKETS) drops;

	Bitmap() bitmap;
	Verdict() verdict;
	NextStep() next_step;

	Processor() lane00; Processor() lane01; Processor() lane02; Processor() lane03;
	Processor() lane04; Processor() lane05; Processor() lane06; Processor() lane07;
	Processor() lane08; Processor() lane09; Processor() lane10; Processor() lane11;
	Processor() lane12; Processor() lane13; Processor() lane14; Processor() lane15;
	Processor() lane16; Processor() lane17; Processor() lane18; Processor() lane19;
	Processor() lane20; Processor() lane21; Processor() lane22; Processor() lane23;
	Processor() lane24; Processor() lane25; Processor() lane26; Processor() lane27;
	Processor() lane28; Processor() lane29; Processor() lane30; Processor() lane31;

	/* The aggregator's own IPv4 addresses. */
	action is_aggregator() {
		md.to_agg = 1;
	}

	table agg_addr {
		key = {
			hdr.ipv4.dst_addr : exact @name("ip");
		}
		actions = {
			is_aggregator;
			@defaultonly NoAction;
		}
		const default_action = NoAction();
		size = 16;
	}

	/* Which CONTRIBs (and parents' RESULTs) the Tofino subset takes; every
	 * other one is dropped. */
	action contrib_small() {
		md.cls = INCA_CLASS_SMALL;
	}

	action contrib_large() {
		md.cls = INCA_CLASS_LARGE;
	}

	action bad_msg() {
		md.cls = INCA_CLASS_NONE;
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
			/* Reserved and routed-chunk flag bits clear (no routed chunks
			 * here), rank below 32, reason 0. */
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

	/*
	 * The token check: one exact match on (job, token). A job's slots live
	 * in one pipe, its home; the entry for any other pipe sends the frame
	 * to the home pipe's recirculation port first, so a job may span pipes.
	 */
	action job_home(bit<32> members, bit<8> nworkers_m1, bit<16> mgid,
			PortId_t recirc_port) {
		md.job_ok = 1;
		md.members = members;
		md.nworkers_m1 = nworkers_m1;
		md.mgid = mgid;
		md.recirc_port = recirc_port;
	}

	action job_remote(PortId_t home_recirc_port) {
		md.job_ok = 1;
		md.job_remote = 1;
		md.recirc_port = home_recirc_port;
	}

	action job_unknown() {
		md.job_ok = 0;
	}

	table job {
		key = {
			hdr.inca.job : exact @name("job");
			hdr.inca.token : exact @name("token");
			ig_intr_md.ingress_port[8:7] : exact @name("pipe");
		}
		actions = {
			job_home;
			job_remote;
			@defaultonly job_unknown;
		}
		const default_action = job_unknown();
		size = INCA_MAX_JOBS;
	}

	/*
	 * A tree leaf's parent (docs/protocol.md, "Aggregation trees"): its
	 * RESULTs, from its address and port, in its job and session, are
	 * the leaf job's. The first pass rewrites them into that job, the
	 * leaf's own session and members and sends them to the leaf's home
	 * pipe, where they are admitted like a contribution (a second pass:
	 * slot_map must see the leaf's job, and in the first stage).
	 */
	action from_parent(bit<16> leaf_job, bit<32> session, bit<32> members,
			   PortId_t recirc_port) {
		md.parent_hit = 1;
		md.leaf_job = leaf_job;
		md.leaf_session = session;
		md.leaf_members = members;
		md.leaf_recirc = recirc_port;
	}

	action parent_unknown() {
		md.parent_hit = 0;
	}

	table parent {
		key = {
			hdr.ipv4.src_addr : exact @name("ip");
			hdr.udp.src_port : exact @name("udp_port");
			md.vid : exact @name("vlan");
			hdr.inca.job : exact @name("job");
			hdr.inca.token : exact @name("token");
			ig_intr_md.ingress_port[8:7] : exact @name("pipe");
		}
		actions = {
			from_parent;
			@defaultonly parent_unknown;
		}
		const default_action = parent_unknown();
		size = INCA_MAX_JOBS;
	}

	/*
	 * A job that is a tree leaf: its partials leave by @port (egress
	 * parent_addr addresses them). leaf_down: no parent session yet; a
	 * completed partial waits for the members' next retransmission.
	 */
	action leaf_up(PortId_t port) {
		md.leaf = 1;
		md.up = 1;
		md.up_port = port;
	}

	action leaf_down() {
		md.leaf = 1;
	}

	action not_leaf() {
		md.leaf = 0;
	}

	table uplink {
		key = {
			hdr.inca.job : exact @name("job");
		}
		actions = {
			leaf_up;
			leaf_down;
			@defaultonly not_leaf;
		}
		const default_action = not_leaf();
		size = INCA_MAX_JOBS;
	}

	/* The member check: the source must be the member's own address and port. */
	/*
	 * Packets per member: the control plane reads it for liveness (a
	 * member streaming CONTRIBs sends no HEARTBEAT, and the CONTRIBs
	 * never reach the CPU).
	 */
	Counter<bit<32>, bit<12>>(INCA_MAX_MEMBERS, CounterType_t.PACKETS) member_rx;

	action member_ok(bit<12> idx) {
		md.member_ok = 1;
		member_rx.count(idx);
	}

	/* Leaves member_ok as the parser set it (1 on an ENTER pass). */
	action member_unknown() {
	}

	table member {
		key = {
			hdr.inca.job : exact @name("job");
			hdr.inca.rank : exact @name("rank");
			hdr.ipv4.src_addr : exact @name("ip");
			hdr.udp.src_port : exact @name("udp_port");
			md.vid : exact @name("vlan");
		}
		actions = {
			member_ok;
			@defaultonly member_unknown;
		}
		const default_action = member_unknown();
		size = INCA_MAX_MEMBERS;
	}

	/*
	 * The job's pool: (slot, set) -> its entries in the set and lane
	 * registers (laid out by the control plane: 2 (pool_base + slot) + set
	 * and the lane entry of the set's group 0). The set is part of the key
	 * so that the set registers of stage 1 get their index from this first
	 * stage without an addition. The count is part of the key: a job takes
	 * exactly the payload class the switch granted it, and a job laid out
	 * for 64-element groups cannot reach into its neighbours' lanes with
	 * 256 elements.
	 */
	action slot_entry(set_index_t set_index, lane_index_t lane_idx) {
		md.slot_ok = 1;
		md.set_index = set_index;
		md.lane_idx = lane_idx;
	}

	action slot_unknown() {
		md.slot_ok = 0;
	}

	table slot_map {
		key = {
			hdr.inca.job : exact @name("job");
			hdr.inca.slot : exact @name("slot");
			hdr.inca.count : exact @name("count");
			hdr.inca.flags[0:0] : exact @name("set");
		}
		actions = {
			slot_entry;
			@defaultonly slot_unknown;
		}
		const default_action = slot_unknown();
		size = INCA_NUM_SETS;
	}

	/* Tofino shifts by constants only: the rank's bit comes from a table. */
	action set_rank_bit(bit<32> value) {
		md.rank_bit = value;
	}

	table rank_bit {
		key = {
			hdr.inca.rank : exact;
		}
		actions = {
			set_rank_bit;
			NoAction;
		}
		const entries = {
			0 : set_rank_bit(0x00000001);
			1 : set_rank_bit(0x00000002);
			2 : set_rank_bit(0x00000004);
			3 : set_rank_bit(0x00000008);
			4 : set_rank_bit(0x00000010);
			5 : set_rank_bit(0x00000020);
			6 : set_rank_bit(0x00000040);
			7 : set_rank_bit(0x00000080);
			8 : set_rank_bit(0x00000100);
			9 : set_rank_bit(0x00000200);
			10 : set_rank_bit(0x00000400);
			11 : set_rank_bit(0x00000800);
			12 : set_rank_bit(0x00001000);
			13 : set_rank_bit(0x00002000);
			14 : set_rank_bit(0x00004000);
			15 : set_rank_bit(0x00008000);
			16 : set_rank_bit(0x00010000);
			17 : set_rank_bit(0x00020000);
			18 : set_rank_bit(0x00040000);
			19 : set_rank_bit(0x00080000);
			20 : set_rank_bit(0x00100000);
			21 : set_rank_bit(0x00200000);
			22 : set_rank_bit(0x00400000);
			23 : set_rank_bit(0x00800000);
			24 : set_rank_bit(0x01000000);
			25 : set_rank_bit(0x02000000);
			26 : set_rank_bit(0x04000000);
			27 : set_rank_bit(0x08000000);
			28 : set_rank_bit(0x10000000);
			29 : set_rank_bit(0x20000000);
			30 : set_rank_bit(0x40000000);
			31 : set_rank_bit(0x80000000);
		}
		const default_action = NoAction();
	}

	/* Control messages: the control plane on the CPU port answers them. */
	action to_cpu(PortId_t port) {
		ig_tm_md.ucast_egress_port = port;
	}

	table cpu {
		actions = {
			to_cpu;
		}
		default_action = to_cpu(64);
	}

	/* Ordinary traffic: switched by destination MAC. */
	action l2_forward(PortId_t port) {
		ig_tm_md.ucast_egress_port = port;
	}

	action l2_flood(MulticastGroupId_t mgid) {
		ig_tm_md.mcast_grp_a = mgid;
		/* With the $pre.prune entry of this port: not back out of it. */
		ig_tm_md.level2_exclusion_id = ig_intr_md.ingress_port;
	}

	action l2_miss() {
		md.reason = INCA_DROP_L2_MISS;
	}

	table l2 {
		key = {
			hdr.ethernet.dst_addr : exact @name("mac");
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
		if (md.pass == INCA_PASS_LATER) {
			/* A later pass of a contribution admitted before. */
			md.recirc_port = ig_intr_md.ingress_port;
			md.lane_idx = (lane_index_t)hdr.bridge.lane_idx0 |
				      (lane_index_t)hdr.bridge.quarter;
			if (hdr.bridge.step == INCA_STEP_CONSUME) {
				md.lane_op = hdr.bridge.lane_op;
			} else if (hdr.bridge.step == INCA_STEP_HARVEST_A) {
				hdr.data0.setValid();
				md.lane_op = INCA_LANE_READ_A;
			} else if (hdr.bridge.step == INCA_STEP_HARVEST_B) {
				hdr.data1.setValid();
				md.lane_op = INCA_LANE_READ_B;
			}
		} else {
			if (md.pass == INCA_PASS_PORT) {
				hdr.bridge.setValid();
				hdr.bridge.step = INCA_STEP_FORWARD;
				hdr.bridge.from_parent = 0;
				hdr.bridge.in_port = (bit<16>)ig_intr_md.ingress_port;
			}
			if (hdr.inca.isValid()) {
				/*
				 * Stage 0: every lookup, reading only what the
				 * parser made (a parent's RESULT is rewritten
				 * into its leaf job by a pass of its own).
				 */
				agg_addr.apply();
				classify.apply();
				job.apply();
				member.apply();
				parent.apply();
				uplink.apply();
				slot_map.apply();
				if (md.from_parent == 0) {
					rank_bit.apply();
				} else {
					/* The leaf's members, which set_bitmap
					 * compares with PARTIAL. */
					md.rank_bit = hdr.inca.bitmap;
				}
				md.seq1 = hdr.inca.seq + 1;
				md.exp_in = (bit<16>)((bit<8>)hdr.inca.exp ^ 8w0x80);
			}

			if (ig_prsr_md.parser_err != 0) {
				md.reason = INCA_DROP_PARSE;
			} else if (!hdr.inca.isValid() || md.to_agg == 0) {
				l2.apply();
			} else if (!md.ipv4_csum_ok) {
				md.reason = INCA_DROP_IP_CSUM;
			} else if (hdr.inca.type != INCA_MSG_CONTRIB &&
				   hdr.inca.type != INCA_MSG_RESULT) {
				/* Control messages: the control plane answers. */
				cpu.apply();
			} else {
				/* Bit 31 only in a leaf's sets, so that it
				 * means PARTIAL whatever uplink says later. */
				if (md.leaf == 1) {
					md.rank_mask = md.rank_bit | INCA_BITMAP_OPEN;
				} else {
					md.rank_mask = md.rank_bit;
				}
				/* Stages 1..3: admission and the set state. */
				bitmap.apply(hdr, md);
			}
		}

		/*
		 * From here on only tables at the top level, no conditional
		 * block (verdict.p4 says why): the lanes in stages 4..11, and
		 * beside them the verdict, the RESULT header, the bridge
		 * header and the next step.
		 */
		lane00.apply(hdr.data0.e00, hdr.data1.e00, md);
		lane01.apply(hdr.data0.e01, hdr.data1.e01, md);
		lane02.apply(hdr.data0.e02, hdr.data1.e02, md);
		lane03.apply(hdr.data0.e03, hdr.data1.e03, md);
		lane04.apply(hdr.data0.e04, hdr.data1.e04, md);
		lane05.apply(hdr.data0.e05, hdr.data1.e05, md);
		lane06.apply(hdr.data0.e06, hdr.data1.e06, md);
		lane07.apply(hdr.data0.e07, hdr.data1.e07, md);
		lane08.apply(hdr.data0.e08, hdr.data1.e08, md);
		lane09.apply(hdr.data0.e09, hdr.data1.e09, md);
		lane10.apply(hdr.data0.e10, hdr.data1.e10, md);
		lane11.apply(hdr.data0.e11, hdr.data1.e11, md);
		lane12.apply(hdr.data0.e12, hdr.data1.e12, md);
		lane13.apply(hdr.data0.e13, hdr.data1.e13, md);
		lane14.apply(hdr.data0.e14, hdr.data1.e14, md);
		lane15.apply(hdr.data0.e15, hdr.data1.e15, md);
		lane16.apply(hdr.data0.e16, hdr.data1.e16, md);
		lane17.apply(hdr.data0.e17, hdr.data1.e17, md);
		lane18.apply(hdr.data0.e18, hdr.data1.e18, md);
		lane19.apply(hdr.data0.e19, hdr.data1.e19, md);
		lane20.apply(hdr.data0.e20, hdr.data1.e20, md);
		lane21.apply(hdr.data0.e21, hdr.data1.e21, md);
		lane22.apply(hdr.data0.e22, hdr.data1.e22, md);
		lane23.apply(hdr.data0.e23, hdr.data1.e23, md);
		lane24.apply(hdr.data0.e24, hdr.data1.e24, md);
		lane25.apply(hdr.data0.e25, hdr.data1.e25, md);
		lane26.apply(hdr.data0.e26, hdr.data1.e26, md);
		lane27.apply(hdr.data0.e27, hdr.data1.e27, md);
		lane28.apply(hdr.data0.e28, hdr.data1.e28, md);
		lane29.apply(hdr.data0.e29, hdr.data1.e29, md);
		lane30.apply(hdr.data0.e30, hdr.data1.e30, md);
		lane31.apply(hdr.data0.e31, hdr.data1.e31, md);

		verdict.apply(hdr, md, ig_tm_md);
		next_step.apply(hdr, md, ig_tm_md);
		if (md.reason != INCA_DROP_NONE) {
			ig_dprsr_md.drop_ctl = 0x1;
			drops.count(md.reason);
		}
	}
}

control Egress(inout inca_headers_t hdr,
	       inout inca_eg_md_t md,
	       in egress_intrinsic_metadata_t eg_intr_md,
	       in egress_intrinsic_metadata_from_parser_t eg_prsr_md,
	       inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md,
	       inout egress_intrinsic_metadata_for_output_port_t eg_oport_md)
{
	Counter<bit<32>, bit<8>>(INCA_DROP_REASONS, CounterType_t.PACKETS) egress_drops;

	/* Where a member gets its RESULTs: the address it contributes from. */
	action set_member(mac_addr_t mac, ipv4_addr_t ip, bit<16> udp_port, bit<12> vid) {
		md.addr_ok = 1;
		md.vid = vid;
		hdr.ethernet.dst_addr = mac;
		hdr.ipv4.dst_addr = ip;
		hdr.udp.dst_port = udp_port;
	}

	action no_member() {
		md.addr_ok = 0;
	}

	table member_addr {
		key = {
			hdr.inca.job : exact @name("job");
			md.rank : exact @name("rank");
		}
		actions = {
			set_member;
			@defaultonly no_member;
		}
		const default_action = no_member();
		size = INCA_MAX_MEMBERS;
	}

	/* A leaf's parent: where its partials go, as which member of which
	 * job, in which session (rewritten at each parent JOIN_ACK). */
	action set_parent(mac_addr_t mac, ipv4_addr_t ip, bit<16> udp_port,
			  bit<16> parent_job, bit<16> rank, bit<32> session) {
		md.addr_ok = 1;
		hdr.ethernet.dst_addr = mac;
		hdr.ipv4.dst_addr = ip;
		hdr.udp.dst_port = udp_port;
		hdr.inca.job = parent_job;
		hdr.inca.rank = rank;
		hdr.inca.token = session;
	}

	action no_parent() {
		md.addr_ok = 0;
	}

	table parent_addr {
		key = {
			hdr.inca.job : exact @name("job");
		}
		actions = {
			set_parent;
			@defaultonly no_parent;
		}
		const default_action = no_parent();
		size = INCA_MAX_JOBS;
	}

	/* RESULTs and partials come from the aggregator's address and INCA port. */
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
		if (hdr.bridge.step == INCA_STEP_RESULT || hdr.bridge.step == INCA_STEP_REPLAY ||
		    hdr.bridge.step == INCA_STEP_UPLINK) {
			if (hdr.bridge.step == INCA_STEP_UPLINK) {
				parent_addr.apply();
			} else {
				if (hdr.bridge.step == INCA_STEP_RESULT) {
					md.rank = eg_intr_md.egress_rid;
				} else {
					md.rank = hdr.bridge.rank;
				}
				member_addr.apply();
				hdr.inca.rank = md.rank;
			}
			if (md.addr_ok == 0) {
				eg_dprsr_md.drop_ctl = 0x1;
				egress_drops.count(INCA_DROP_NO_ROUTE);
			} else {
				aggregator.apply();
				hdr.ipv4.tos = 0;
				hdr.ipv4.identification = 0;
				hdr.ipv4.flags = 3w2;  /* DF */
				hdr.ipv4.frag_offset = 0;
				hdr.ipv4.ttl = 64;
				hdr.udp.checksum = 0;
				md.update_ipv4_csum = true;
				if (md.vid != 0) {
					hdr.vlan.setValid();
					hdr.vlan.pcp = 0;
					hdr.vlan.dei = 0;
					hdr.vlan.vid = md.vid;
					hdr.vlan.ether_type = ETHERTYPE_IPV4;
					hdr.ethernet.ether_type = ETHERTYPE_VLAN;
				}
			}
		}
		hdr.bridge.setInvalid();
	}
}

Pipeline(IngressParser(),
	 Ingress(),
	 IngressDeparser(),
	 EgressParser(),
	 Egress(),
	 EgressDeparser()) pipe;

Switch(pipe) main;

/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * INCA protocol v2 headers and constants for P4_16.
 *
 * The one definition of the wire format is lib/include/inca/wire.h; every
 * constant named INCA_* below mirrors the C macro or enum of the same name, and
 * inca_h mirrors struct inca_hdr field by field (same names, widths, order).
 * tests/p4/check_p4_constants.py compares the two and fails when either
 * changes alone. This file uses plain bit<> types only, so that both the
 * Tofino program (inca.p4) and the BMv2 program (v1model/inca_v1model.p4)
 * include it.
 */
#ifndef INCA_HEADERS_P4_
#define INCA_HEADERS_P4_

typedef bit<48> mac_addr_t;
typedef bit<32> ipv4_addr_t;

const bit<16> ETHERTYPE_IPV4 = 0x0800;
/* One 802.1Q tag is parsed (a tenant's VLAN, docs/protocol.md
 * "Encapsulation"); 802.1ad (0x88a8) and any other tag are not INCA. */
const bit<16> ETHERTYPE_VLAN = 0x8100;
const bit<8> IP_PROTO_UDP = 17;

/* ---- Wire constants (lib/include/inca/wire.h) ---- */

const bit<8> INCA_PROTO_VERSION = 2;
const bit<16> INCA_UDP_PORT = 18766;
const bit<16> INCA_HDR_LEN = 32;
const bit<16> INCA_CTRL_LEN = 32;
const bit<16> INCA_MAX_WORKERS = 32;
const bit<16> INCA_PAYLOAD_SMALL = 64;
const bit<16> INCA_PAYLOAD_LARGE = 256;
const bit<16> INCA_ENCAP_LEN = 42;

/* Message types (enum inca_msg_type). */
const bit<8> INCA_MSG_CONTRIB = 1;
const bit<8> INCA_MSG_RESULT = 2;
const bit<8> INCA_MSG_HELLO = 3;
const bit<8> INCA_MSG_CAPS = 4;
const bit<8> INCA_MSG_JOIN = 5;
const bit<8> INCA_MSG_JOIN_ACK = 6;
const bit<8> INCA_MSG_LEAVE = 7;
const bit<8> INCA_MSG_LEAVE_ACK = 8;
const bit<8> INCA_MSG_HEARTBEAT = 9;
const bit<8> INCA_MSG_HEARTBEAT_ACK = 10;
const bit<8> INCA_MSG_NACK = 11;

/* Element data types (enum inca_dtype). */
const bit<8> INCA_DTYPE_INT32 = 0;
const bit<8> INCA_DTYPE_FP32 = 1;
const bit<8> INCA_DTYPE_FP16 = 2;
const bit<8> INCA_DTYPE_BF16 = 3;
/* Defined for the header's sake only: a switch aggregates int32 alone (its
 * stateful ALUs are 32 bits wide) and never advertises these. */
const bit<8> INCA_DTYPE_INT64 = 4;
const bit<8> INCA_DTYPE_FP64 = 5;

/* Reduction operations (enum inca_op). */
const bit<8> INCA_OP_SUM = 0;
const bit<8> INCA_OP_MIN = 1;
const bit<8> INCA_OP_MAX = 2;

/* Header flags (INCA_F_*). */
const bit<8> INCA_F_SET = 0x01;
const bit<8> INCA_F_RETX = 0x02;
const bit<8> INCA_F_LAST = 0x04;
const bit<8> INCA_F_BFP = 0x08;
/* Routed chunks (ReduceScatter, AllGather): incad only, not in the Tofino
 * subset, so classify drops a CONTRIB with any of them as it drops one with
 * a reserved bit. */
const bit<8> INCA_F_ROUTED = 0x10;
const bit<8> INCA_F_GATHER = 0x20;
const bit<8> INCA_F_BRIEF = 0x40;
const bit<8> INCA_F_MASK = 0x7f;

/* Capability bits (INCA_CAP_*): the Tofino subset announces BFP, SEQ_CHECK
 * and FIXED_COUNT. */
const bit<16> INCA_CAP_NATIVE_FLOAT = 0x0001;
const bit<16> INCA_CAP_BFP = 0x0002;
const bit<16> INCA_CAP_SEQ_CHECK = 0x0004;
const bit<16> INCA_CAP_FIXED_COUNT = 0x0008;
const bit<16> INCA_CAP_ROCE = 0x0010; // incad only: the switch has no RoCEv2
const bit<16> INCA_CAP_ROUTED = 0x0020; // incad only: no routed chunks on the switch
const bit<16> INCA_CAP_MASK = 0x003f;

/* ---- Frame headers ---- */

header ethernet_h {
	mac_addr_t dst_addr;
	mac_addr_t src_addr;
	bit<16> ether_type;
}

header vlan_h {
	bit<3> pcp;
	bit<1> dei;
	bit<12> vid;
	bit<16> ether_type;
}

header ipv4_h {
	bit<4> version;
	bit<4> ihl;
	bit<8> tos;
	bit<16> total_len;
	bit<16> identification;
	bit<3> flags;
	bit<13> frag_offset;
	bit<8> ttl;
	bit<8> protocol;
	bit<16> hdr_checksum;
	ipv4_addr_t src_addr;
	ipv4_addr_t dst_addr;
}

header udp_h {
	bit<16> src_port;
	bit<16> dst_port;
	bit<16> length;
	bit<16> checksum;
}

/* struct inca_hdr: 32 bytes, network byte order. */
header inca_h {
	bit<8> version;
	bit<8> type;
	bit<8> dtype;
	bit<8> op;
	bit<16> job;
	bit<16> rank;
	bit<32> token;
	bit<16> slot;
	bit<8> flags;
	int<8> exp;
	bit<32> seq;
	bit<32> offset;
	bit<16> count;
	bit<16> reason;
	bit<32> bitmap;
}

/*
 * Payload elements. One pipeline pass aggregates one group of 64 int32
 * elements, carried in two headers of 32 lanes: data0 holds elements 0..31 of
 * the group, data1 elements 32..63, so that lane i of both sits in one 64-bit
 * register entry (see processor.p4). The 64-element class is one group; the
 * 256-element class is four groups, consumed one per pass by recirculation.
 */
const bit<16> INCA_LANES_PER_HDR = 32;
const bit<16> INCA_GROUP_ELEMS = 64;

header inca_data_h {
	bit<32> e00; bit<32> e01; bit<32> e02; bit<32> e03;
	bit<32> e04; bit<32> e05; bit<32> e06; bit<32> e07;
	bit<32> e08; bit<32> e09; bit<32> e10; bit<32> e11;
	bit<32> e12; bit<32> e13; bit<32> e14; bit<32> e15;
	bit<32> e16; bit<32> e17; bit<32> e18; bit<32> e19;
	bit<32> e20; bit<32> e21; bit<32> e22; bit<32> e23;
	bit<32> e24; bit<32> e25; bit<32> e26; bit<32> e27;
	bit<32> e28; bit<32> e29; bit<32> e30; bit<32> e31;
}

/* Lengths of a valid CONTRIB of each class (UDP length, IPv4 total length). */
const bit<16> INCA_UDP_LEN_SMALL = 296;   /* 8 + 32 + 64 * 4 */
const bit<16> INCA_IP_LEN_SMALL = 316;
const bit<16> INCA_UDP_LEN_LARGE = 1064;  /* 8 + 32 + 256 * 4 */
const bit<16> INCA_IP_LEN_LARGE = 1084;

/* ---- Switch-internal state (never on the wire between hosts) ---- */

/* Slot memory of one pipe: see README.md, "Resource budget". */
#define INCA_NUM_SLOTS 8192       /* slots: two sets each */
#define INCA_NUM_SETS 16384       /* (slot, set) entries: slot_map, seq, bitmap, counters, exponents */
#define INCA_LANE_ENTRIES 16384   /* 64-bit entries of each lane register */
#define INCA_MAX_JOBS 1024
#define INCA_MAX_MEMBERS 4096

typedef bit<13> slot_index_t;
typedef bit<14> set_index_t;
typedef bit<14> lane_index_t;

/* Payload class of a contribution. */
const bit<8> INCA_CLASS_NONE = 0;
const bit<8> INCA_CLASS_SMALL = 1;  /* 64 elements: one group */
const bit<8> INCA_CLASS_LARGE = 2;  /* 256 elements: four groups */

/* What the next pipeline pass of a packet does (inca_bridge_h.step). */
const bit<8> INCA_STEP_FORWARD = 0;    /* not a contribution: leave it alone */
const bit<8> INCA_STEP_ENTER = 1;      /* admit in the job's home pipe */
const bit<8> INCA_STEP_CONSUME = 2;    /* aggregate group `quarter` */
const bit<8> INCA_STEP_HARVEST_A = 3;  /* prepend lanes a of group `quarter` */
const bit<8> INCA_STEP_HARVEST_B = 4;  /* prepend lanes b of group `quarter` */
const bit<8> INCA_STEP_RESULT = 5;     /* egress: one RESULT per member */
const bit<8> INCA_STEP_REPLAY = 6;     /* egress: RESULT to `rank` only */
const bit<8> INCA_STEP_UPLINK = 7;     /* egress: a tree leaf's partial to its parent */

/* What a contribution leads to once its groups are consumed. */
const bit<8> INCA_V_PENDING = 0;   /* counted; the set is still filling */
const bit<8> INCA_V_COMPLETE = 1;  /* completed the set: RESULT to all */
const bit<8> INCA_V_REPLAY = 2;    /* retransmission into a complete set */
/* A job that is a tree leaf (docs/protocol.md, "Aggregation trees"). */
const bit<8> INCA_V_PARTIAL = 3;   /* completed the set: the partial to the parent */
const bit<8> INCA_V_RESEND = 4;    /* retransmission into a PARTIAL set: partial again */
const bit<8> INCA_V_HOLD = 5;      /* PARTIAL or RESEND without a parent session (Tofino) */

/*
 * What the BMv2 program's set access returns for a contribution with an
 * older seq than the set's use (v1model/inca_v1model.p4). Bit 31 is never a
 * member's bit: a job on the switch has at most INCA_SWITCH_MAX_RANKS
 * members (both programs keep that limit, so that they run one subset).
 */
const bit<32> INCA_STATE_STALE = 0x80000000;

const bit<16> INCA_SWITCH_MAX_RANKS = 31;

/*
 * Lane register operations (processor.p4). The first pass of a
 * contribution knows only its seq against the set's use when the first
 * lanes run (set_seq, bitmap.p4); FIRST, SAME and PARENT are settled by the
 * sender's bit of set_bitmap in the lane table itself. Later passes carry
 * WRITE, ADD, READ_A or READ_B.
 */
const bit<8> INCA_LANE_NOP = 0;
const bit<8> INCA_LANE_WRITE = 1;   /* first contribution of a use */
const bit<8> INCA_LANE_ADD = 2;     /* later contributions */
const bit<8> INCA_LANE_READ_A = 3;  /* harvest lanes a */
const bit<8> INCA_LANE_READ_B = 4;  /* harvest lanes b */
const bit<8> INCA_LANE_FIRST = 5;   /* first pass, newer seq: a use starts (WRITE) */
const bit<8> INCA_LANE_SAME = 6;    /* first pass, same seq: ADD, or READ_B if counted */
const bit<8> INCA_LANE_PARENT = 7;  /* first pass, a parent's RESULT: WRITE if PARTIAL */

/*
 * Bit 31 of set_bitmap (never a member's bit): set by every member's
 * contribution to a tree leaf's set, cleared when a parent's RESULT
 * finishes it. A set with every member's bit and this one is PARTIAL.
 */
const bit<32> INCA_BITMAP_OPEN = 0x80000000;

/* Which pass of the pipe a frame is on (inca_ig_md_t.pass, set by the parser). */
const bit<2> INCA_PASS_PORT = 0;    /* from a front-panel port */
const bit<2> INCA_PASS_ENTER = 1;   /* recirculated to be admitted in its job's home pipe */
const bit<2> INCA_PASS_LATER = 2;   /* a later consume or harvest pass */

/* Why a first pass recirculates a frame for admission (inca_ig_md_t.go). */
const bit<8> INCA_GO_NONE = 0;
const bit<8> INCA_GO_HOME = 1;     /* to the job's home pipe */
const bit<8> INCA_GO_PARENT = 2;   /* a parent's RESULT, rewritten into its leaf job */

/* Why the switch ended a frame: index of the drop counter. */
const bit<8> INCA_DROP_NONE = 0;
const bit<8> INCA_DROP_PARSE = 1;       /* parser error (truncated frame) */
const bit<8> INCA_DROP_IP_CSUM = 2;     /* bad IPv4 header checksum */
const bit<8> INCA_DROP_BAD_MSG = 3;     /* not a valid Tofino-subset CONTRIB */
const bit<8> INCA_DROP_BAD_TOKEN = 4;   /* unknown job or wrong token */
const bit<8> INCA_DROP_NOT_MEMBER = 5;  /* (job, rank, source IP) unknown */
const bit<8> INCA_DROP_BAD_SLOT = 6;    /* slot beyond the job's pool */
const bit<8> INCA_DROP_DUPLICATE = 7;   /* already counted, set filling */
const bit<8> INCA_DROP_STALE = 8;       /* older seq than the set's use */
const bit<8> INCA_DROP_CONSUMED = 9;    /* counted; nothing to send yet */
const bit<8> INCA_DROP_NO_ROUTE = 10;   /* no address for a member */
const bit<8> INCA_DROP_L2_MISS = 11;    /* ordinary frame, unknown MAC */
const bit<8> INCA_DROP_PARENT_STALE = 12;  /* a RESULT no PARTIAL set waits for */
const bit<8> INCA_DROP_UPLINK_WAIT = 13;   /* a leaf's partial while it has no parent session */
#define INCA_DROP_REASONS 16

/*
 * Carried in front of the Ethernet header from ingress to egress and across
 * recirculation passes: what a contribution's next pass does and what its
 * first pass decided. Byte-aligned so that the Tofino and BMv2 programs share
 * it; 16 bytes.
 */
header inca_bridge_h {
	bit<8> step;        /* INCA_STEP_* */
	bit<8> quarter;     /* payload group of this pass, 0..3 */
	bit<8> cls;         /* INCA_CLASS_* */
	bit<8> verdict;     /* INCA_V_* */
	bit<8> lane_op;     /* INCA_LANE_* of the consume passes */
	bit<8> from_parent; /* ENTER: 1 for a parent's RESULT, rewritten into the leaf job */
	bit<16> lane_idx0;  /* lane register entry of group 0 */
	bit<16> mgid;       /* multicast group of the job */
	bit<16> rank;       /* addressee of a replay */
	bit<16> in_port;    /* port the contribution came in on */
	bit<16> up_port;    /* a tree leaf's port to its parent */
}

/* Headers of the Tofino program, in deparsing order. */
struct inca_headers_t {
	inca_bridge_h bridge;
	ethernet_h ethernet;
	vlan_h vlan;
	ipv4_h ipv4;
	udp_h udp;
	inca_h inca;
	inca_data_h data0;  /* elements 0..31 of the group */
	inca_data_h data1;  /* elements 32..63 of the group */
}

#endif /* INCA_HEADERS_P4_ */

/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * The verdict on a contribution's first pass, and what it writes into the
 * frame: the RESULT (or partial) header fields and the bridge header that
 * carries the decision through the later passes and to egress.
 *
 * Every decision here is a table with constant entries, applied at the top
 * level of the ingress control, never a chain of if/else. On Tofino-1 a
 * table runs only when the previous one names it as its next table (there
 * are no long branches), so p4c-barefoot cannot place anything that follows
 * a conditional block in the control flow until the whole block is placed.
 * Written as nested conditions, the verdict and the bridge header were a
 * chain of gateways over stages 3..8, and the lanes, which follow them,
 * could only start in stage 8: 16 stages (README.md, "Status"). As tables
 * they take stages 4..7 (the verdict first, then what depends on it),
 * beside the lanes, which read none of what they write and fill 4..11.
 *
 * The rules, as bitmap.p4's table says them:
 *
 *   older seq (NOP)                  -> STALE (a parent's: PARENT_STALE)
 *   a parent's RESULT, set PARTIAL   -> COMPLETE; otherwise PARENT_STALE
 *   counted before, remaining > 0    -> DUPLICATE
 *   counted before, remaining 0      -> REPLAY, or RESEND if PARTIAL
 *   counted now, remaining > 0       -> PENDING
 *   counted now, remaining 0         -> COMPLETE, or PARTIAL on a leaf
 *
 * "Counted before" is bits 30..0 of seen (the sender's bit in the set
 * before this contribution); bit 31 is INCA_BITMAP_OPEN, the PARTIAL state.
 */

control Verdict(inout inca_headers_t hdr,
		inout inca_ig_md_t md,
		inout ingress_intrinsic_metadata_for_tm_t ig_tm_md)
{
	action refuse(bit<8> reason) {
		md.reason = reason;
	}

	action decide(bit<8> v) {
		md.verdict = v;
	}

	/* Only frames the admission let look at set_seq (checked = 1). */
	table verdict {
		key = {
			md.checked : exact;
			md.lane_op : exact;
			md.from_parent : ternary;
			md.seen : ternary;
			md.cnt : ternary;
			md.leaf : ternary;
		}
		actions = {
			refuse;
			decide;
			@defaultonly NoAction;
		}
		const entries = {
			(1, INCA_LANE_NOP, 1, _, _, _) : refuse(INCA_DROP_PARENT_STALE);
			(1, INCA_LANE_NOP, _, _, _, _) : refuse(INCA_DROP_STALE);
			(1, INCA_LANE_PARENT, _, 0, _, _) : refuse(INCA_DROP_PARENT_STALE);
			(1, INCA_LANE_PARENT, _, _, _, _) : decide(INCA_V_COMPLETE);
			/* Same use, the sender not counted before: counted now. */
			(1, INCA_LANE_SAME, _, 0 &&& 0x7fffffff, 0, 1) : decide(INCA_V_PARTIAL);
			(1, INCA_LANE_SAME, _, 0 &&& 0x7fffffff, 0, _) : decide(INCA_V_COMPLETE);
			(1, INCA_LANE_SAME, _, 0 &&& 0x7fffffff, _, _) : decide(INCA_V_PENDING);
			/* Counted before: look at the set, change nothing. */
			(1, INCA_LANE_SAME, _, 0x80000000 &&& 0x80000000, 0, _) :
				decide(INCA_V_RESEND);
			(1, INCA_LANE_SAME, _, _, 0, _) : decide(INCA_V_REPLAY);
			(1, INCA_LANE_SAME, _, _, _, _) : refuse(INCA_DROP_DUPLICATE);
			/* A new use: the sender is its first contribution. */
			(1, INCA_LANE_FIRST, _, _, 0, 1) : decide(INCA_V_PARTIAL);
			(1, INCA_LANE_FIRST, _, _, 0, _) : decide(INCA_V_COMPLETE);
			(1, INCA_LANE_FIRST, _, _, _, _) : decide(INCA_V_PENDING);
		}
		const default_action = NoAction();
		size = 16;
	}

	/*
	 * The RESULT keeps the contribution's job, token, slot, seq, offset,
	 * count, dtype, op and its SET, LAST and BFP flags; RETX marks a
	 * replay; its bitmap is every member. The rank is rewritten per copy
	 * in egress. A leaf's partial stays a CONTRIB, bitmap 0, RETX on a
	 * resend; egress puts it into the parent's job, rank and session.
	 */
	action result(bit<1> retx) {
		hdr.inca.exp = (int<8>)(md.exp_out[7:0] ^ 8w0x80);
		hdr.inca.type = INCA_MSG_RESULT;
		hdr.inca.bitmap = md.members;
		hdr.inca.flags[1:1] = retx;
	}

	action partial(bit<1> retx) {
		hdr.inca.exp = (int<8>)(md.exp_out[7:0] ^ 8w0x80);
		hdr.inca.bitmap = 0;
		hdr.inca.flags[1:1] = retx;
	}

	table answer {
		key = {
			md.checked : exact;
			md.reason : exact;
			md.verdict : exact;
		}
		actions = {
			result;
			partial;
			@defaultonly NoAction;
		}
		const entries = {
			(1, INCA_DROP_NONE, INCA_V_COMPLETE) : result(0);
			(1, INCA_DROP_NONE, INCA_V_REPLAY) : result(1);
			(1, INCA_DROP_NONE, INCA_V_PARTIAL) : partial(0);
			(1, INCA_DROP_NONE, INCA_V_RESEND) : partial(1);
		}
		const default_action = NoAction();
		size = 8;
	}

	/* A parent's RESULT, rewritten into its leaf job: admitted next pass. */
	action to_leaf() {
		hdr.inca.job = md.leaf_job;
		hdr.inca.token = md.leaf_session;
		hdr.inca.bitmap = md.leaf_members;
		hdr.bridge.step = INCA_STEP_ENTER;
		hdr.bridge.from_parent = 1;
		ig_tm_md.ucast_egress_port = md.leaf_recirc;
		ig_tm_md.bypass_egress = 1w1;
	}

	/* The job lives in another pipe: admitted there. */
	action to_home() {
		hdr.bridge.step = INCA_STEP_ENTER;
		ig_tm_md.ucast_egress_port = md.recirc_port;
		ig_tm_md.bypass_egress = 1w1;
	}

	/*
	 * The consume passes: @lane_op is what the later passes of 256
	 * elements do (processor.p4's first-pass entries, settled); a PARTIAL
	 * or RESEND with no parent session is held (@verdict HOLD).
	 */
	action consume(bit<8> lane_op) {
		hdr.bridge.step = INCA_STEP_CONSUME;
		hdr.bridge.quarter = 0;
		hdr.bridge.cls = md.cls;
		hdr.bridge.verdict = md.verdict;
		hdr.bridge.lane_op = lane_op;
		hdr.bridge.up_port = (bit<16>)md.up_port;
		hdr.bridge.lane_idx0 = (bit<16>)md.lane_idx;
		hdr.bridge.mgid = md.mgid;
		hdr.bridge.rank = hdr.inca.rank;
	}

	action consume_hold(bit<8> lane_op) {
		consume(lane_op);
		hdr.bridge.verdict = INCA_V_HOLD;
	}

	table bridge_out {
		key = {
			md.go : ternary;
			md.checked : ternary;
			md.reason : ternary;
			md.verdict : ternary;
			md.up : ternary;
			md.lane_op : ternary;
			md.seen : ternary;
		}
		actions = {
			to_leaf;
			to_home;
			consume;
			consume_hold;
			@defaultonly NoAction;
		}
		const entries = {
			(INCA_GO_PARENT, _, _, _, _, _, _) : to_leaf();
			(INCA_GO_HOME, _, _, _, _, _, _) : to_home();
			(_, 1, INCA_DROP_NONE, INCA_V_PARTIAL, 0, INCA_LANE_SAME, 0 &&& 0x7fffffff) :
				consume_hold(INCA_LANE_ADD);
			(_, 1, INCA_DROP_NONE, INCA_V_PARTIAL, 0, INCA_LANE_SAME, _) :
				consume_hold(INCA_LANE_READ_B);
			(_, 1, INCA_DROP_NONE, INCA_V_PARTIAL, 0, _, _) :
				consume_hold(INCA_LANE_WRITE);
			(_, 1, INCA_DROP_NONE, INCA_V_RESEND, 0, INCA_LANE_SAME, 0 &&& 0x7fffffff) :
				consume_hold(INCA_LANE_ADD);
			(_, 1, INCA_DROP_NONE, INCA_V_RESEND, 0, INCA_LANE_SAME, _) :
				consume_hold(INCA_LANE_READ_B);
			(_, 1, INCA_DROP_NONE, INCA_V_RESEND, 0, _, _) :
				consume_hold(INCA_LANE_WRITE);
			(_, 1, INCA_DROP_NONE, _, _, INCA_LANE_SAME, 0 &&& 0x7fffffff) :
				consume(INCA_LANE_ADD);
			(_, 1, INCA_DROP_NONE, _, _, INCA_LANE_SAME, _) :
				consume(INCA_LANE_READ_B);
			(_, 1, INCA_DROP_NONE, _, _, _, _) :
				consume(INCA_LANE_WRITE);
		}
		const default_action = NoAction();
		size = 16;
	}

	/* The member matched on its VLAN; RESULTs get theirs in egress, so
	 * later passes and egress parse no tag. */
	action untag() {
		hdr.ethernet.ether_type = hdr.vlan.ether_type;
		hdr.vlan.setInvalid();
	}

	table vlan_out {
		key = {
			md.go : ternary;
			md.checked : ternary;
			md.reason : exact;
			hdr.vlan.isValid() : exact;
		}
		actions = {
			untag;
			@defaultonly NoAction;
		}
		const entries = {
			(INCA_GO_PARENT, _, INCA_DROP_NONE, true) : untag();
			(INCA_GO_HOME, _, INCA_DROP_NONE, true) : untag();
			(_, 1, INCA_DROP_NONE, true) : untag();
		}
		const default_action = NoAction();
		size = 4;
	}

	apply {
		verdict.apply();
		answer.apply();
		bridge_out.apply();
		vlan_out.apply();
	}
}

/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * Admission and slot state of the Tofino subset (docs/protocol.md, "Tofino
 * subset"); verdict.p4 turns what they return into the verdict. Laid out
 * for Tofino-1's 12 stages: the 32 lane registers (processor.p4) take four
 * stateful ALUs in each of eight stages, so the state a lane needs must be
 * known after three: stage 0 looks the frame up (inca.p4), then
 *
 *   stage 1  admit        one ternary table over the lookups' results: a
 *                         drop reason, a recirculation, or set_seq
 *   stage 2  set_bitmap   the sender's bit (or a parent's PARTIAL check)
 *   stage 3  remaining and max_exp, which, like the lanes (stages 4..11),
 *            match on (lane_op, seen): what set_seq and set_bitmap returned
 *
 * and the verdict (verdict.p4) follows while the lanes run. Three stateful
 * registers per set (slot, SET flag), because a Tofino-1 stateful ALU
 * returns one value per access:
 *
 *   set_seq     the seq (+ 1) of the set's use: same use (lane op SAME),
 *               newer (FIRST: the use restarts, seq written) or older (NOP:
 *               nothing changes);
 *   set_bitmap  SAME: sets the sender's bit, returns whether it was set;
 *               FIRST: the sender's bit alone;
 *   remaining   FIRST: nworkers - 1; SAME, bit clear: minus one; bit set:
 *               read.
 *
 *   older seq                      -> dropped (STALE)
 *   newer seq                      -> lanes written; COMPLETE if N = 1
 *   bit set, remaining 0           -> REPLAY to the sender (rule 4)
 *   bit set, remaining > 0         -> DUPLICATE, dropped (rule 2)
 *   bit clear                      -> ADD; COMPLETE when remaining reaches 0
 *
 * A contribution is therefore only ever combined with contributions of the
 * same seq, whatever order copies arrive in, and nothing but a contribution
 * that is counted (or starts a use) changes a lane or an exponent. Where the
 * switch differs from incad: a newer seq always starts a new use, also of a
 * set still filling (incad drops it as CONFLICT; only a worker breaking the
 * window rule sends one, and the abandoned use's members time out); there
 * is no rule 6, so a late copy of a chunk whose set is still complete with
 * it is replayed to its sender (which ignores it) where incad drops it; no
 * MISMATCH check. Zeroed registers (a new job's or a reset job's) hold seq
 * 2^32 - 1 with an empty bitmap, older than any chunk a fresh member sends
 * first. The BMv2 program keeps the same rules with a bitmap comparison
 * instead of the remaining counter.
 *
 * A job that is a tree leaf (docs/protocol.md, "Aggregation trees"; the
 * uplink table) keeps its PARTIAL state in bit 31 of set_bitmap
 * (INCA_BITMAP_OPEN), which every member's contribution to a leaf's set
 * sets (never a root's, so that a retransmission into a PARTIAL set is
 * resent even while the control plane rewrites uplink): a set with all
 * members' bits and bit 31 is PARTIAL, every member counted and the
 * parent's RESULT awaited; the parent's RESULT (rewritten into the leaf's
 * job by a first pass, inca.p4) compares the seq without writing it and
 * clears bit 31 if, and only if, the set was PARTIAL:
 *
 *   completes, leaf                -> PARTIAL: the partial to the parent
 *   bit set, remaining 0, bit 31   -> RESEND: the partial again (RETX)
 *   parent RESULT, same seq, PARTIAL -> bit 31 cleared, lanes and exp
 *                                     written: COMPLETE, RESULT to every member
 *   parent RESULT otherwise        -> dropped (PARENT_STALE), nothing changed
 */

control Bitmap(inout inca_headers_t hdr, inout inca_ig_md_t md)
{
	/* Stage 1: the seq (+ 1) of each set's use; returns the lane op. */
	Register<bit<32>, set_index_t>(INCA_NUM_SETS) set_seq;

	RegisterAction<bit<32>, set_index_t, bit<8>>(set_seq) seq_check = {
		void apply(inout bit<32> v, out bit<8> op) {
			if (v == md.seq1) {
				op = INCA_LANE_SAME;
			} else if ((int<32>)(v - md.seq1) < 0) {
				v = md.seq1;
				op = INCA_LANE_FIRST;
			} else {
				op = INCA_LANE_NOP;
			}
		}
	};

	/* A parent's RESULT: the seq of the use it names, or nothing. */
	RegisterAction<bit<32>, set_index_t, bit<8>>(set_seq) seq_match = {
		void apply(inout bit<32> v, out bit<8> op) {
			if (v == md.seq1) {
				op = INCA_LANE_PARENT;
			} else {
				op = INCA_LANE_NOP;
			}
		}
	};

	action seq_member() {
		md.checked = 1;
		md.lane_op = seq_check.execute(md.set_index);
	}

	action seq_parent() {
		md.checked = 1;
		md.lane_op = seq_match.execute(md.set_index);
	}

	action refuse(bit<8> reason) {
		md.reason = reason;
	}

	/* The job lives in another pipe: admitted there (ENTER pass). */
	action go_home() {
		md.go = INCA_GO_HOME;
	}

	/* A parent's RESULT: rewritten into its leaf job, admitted next pass. */
	action go_parent() {
		md.go = INCA_GO_PARENT;
	}

	/*
	 * Every check of the first stage's lookups in one table, so that the
	 * seq access is in stage 1. First match wins: the order is that of
	 * the drop reasons' precedence.
	 */
	table admit {
		key = {
			md.cls : ternary;
			md.pass : ternary;
			hdr.inca.type : ternary;
			md.parent_hit : ternary;
			md.from_parent : ternary;
			md.leaf : ternary;
			md.job_ok : ternary;
			md.job_remote : ternary;
			md.member_ok : ternary;
			md.slot_ok : ternary;
		}
		actions = {
			seq_member;
			seq_parent;
			go_home;
			go_parent;
			refuse;
		}
		const entries = {
			(INCA_CLASS_NONE, _, _, _, _, _, _, _, _, _) :
				refuse(INCA_DROP_BAD_MSG);
			/* A RESULT from a port: a parent's, in a leaf's session. */
			(_, INCA_PASS_PORT, INCA_MSG_RESULT, 0, _, _, _, _, _, _) :
				refuse(INCA_DROP_PARENT_STALE);
			(_, INCA_PASS_PORT, INCA_MSG_RESULT, 1, _, _, _, _, _, _) :
				go_parent();
			/* The parent's RESULT in the leaf job: the leaf must still be. */
			(_, _, _, _, 1, _, 0, _, _, _) :
				refuse(INCA_DROP_PARENT_STALE);
			(_, _, _, _, 1, 0, _, _, _, _) :
				refuse(INCA_DROP_PARENT_STALE);
			(_, _, _, _, _, _, 0, _, _, _) :
				refuse(INCA_DROP_BAD_TOKEN);
			(_, _, _, _, _, _, _, _, 0, _) :
				refuse(INCA_DROP_NOT_MEMBER);
			(_, _, _, _, _, _, _, _, _, 0) :
				refuse(INCA_DROP_BAD_SLOT);
			(_, INCA_PASS_PORT, _, _, _, _, _, 1, _, _) :
				go_home();
			/* Sent home by another pipe and not home here: no loop. */
			(_, _, _, _, _, _, _, 1, _, _) :
				refuse(INCA_DROP_BAD_TOKEN);
			(_, _, _, _, 1, _, _, _, _, _) :
				seq_parent();
			(_, _, INCA_MSG_CONTRIB, _, _, _, _, _, _, _) :
				seq_member();
		}
		const default_action = refuse(INCA_DROP_BAD_MSG);
		size = 16;
	}

	/* Stage 2: the bitmap of the use; counting returns the sender's bit. */
	Register<bit<32>, set_index_t>(INCA_NUM_SETS) set_bitmap;

	/* rank_mask = the sender's bit | INCA_BITMAP_OPEN (a parent's
	 * RESULT: every member's bit | INCA_BITMAP_OPEN). */
	RegisterAction<bit<32>, set_index_t, bit<32>>(set_bitmap) bitmap_count = {
		void apply(inout bit<32> v, out bit<32> seen) {
			seen = v & md.rank_mask;
			v = v | md.rank_mask;
		}
	};

	RegisterAction<bit<32>, set_index_t, bit<32>>(set_bitmap) bitmap_start = {
		void apply(inout bit<32> v) {
			v = md.rank_mask;
		}
	};

	/* PARTIAL: every member counted and bit 31 still set. */
	RegisterAction<bit<32>, set_index_t, bit<32>>(set_bitmap) bitmap_take = {
		void apply(inout bit<32> v, out bit<32> was) {
			if (v == md.rank_mask) {
				was = v;
				v = v & ~INCA_BITMAP_OPEN;
			} else {
				was = 0;
			}
		}
	};

	action count_member() {
		md.seen = bitmap_count.execute(md.set_index);
	}

	action start_use() {
		bitmap_start.execute(md.set_index);
	}

	action take_partial() {
		md.seen = bitmap_take.execute(md.set_index);
	}

	table bits {
		key = {
			md.lane_op : exact;
		}
		actions = {
			count_member;
			start_use;
			take_partial;
			@defaultonly NoAction;
		}
		const entries = {
			INCA_LANE_SAME : count_member();
			INCA_LANE_FIRST : start_use();
			INCA_LANE_PARENT : take_partial();
		}
		const default_action = NoAction();
		size = 4;
	}

	/* Stage 3: contributions still missing from the use. */
	Register<bit<8>, set_index_t>(INCA_NUM_SETS) remaining;

	RegisterAction<bit<8>, set_index_t, bit<8>>(remaining) remaining_start = {
		void apply(inout bit<8> v, out bit<8> now) {
			v = md.nworkers_m1;
			now = md.nworkers_m1;
		}
	};

	RegisterAction<bit<8>, set_index_t, bit<8>>(remaining) remaining_count = {
		void apply(inout bit<8> v, out bit<8> now) {
			if (v != 0) {
				v = v - 1;
			}
			now = v;
		}
	};

	RegisterAction<bit<8>, set_index_t, bit<8>>(remaining) remaining_read = {
		void apply(inout bit<8> v, out bit<8> now) {
			now = v;
		}
	};

	action cnt_start() {
		md.cnt = remaining_start.execute(md.set_index);
	}

	action cnt_count() {
		md.cnt = remaining_count.execute(md.set_index);
	}

	action cnt_read() {
		md.cnt = remaining_read.execute(md.set_index);
	}

	/* seen's bit 31 is INCA_BITMAP_OPEN, not the sender's. */
	table tally {
		key = {
			md.lane_op : exact;
			md.seen : ternary;
		}
		actions = {
			cnt_start;
			cnt_count;
			cnt_read;
			@defaultonly NoAction;
		}
		const entries = {
			(INCA_LANE_FIRST, _) : cnt_start();
			(INCA_LANE_SAME, 0 &&& 0x7fffffff) : cnt_count();
			(INCA_LANE_SAME, _) : cnt_read();
		}
		const default_action = NoAction();
		size = 4;
	}

	/*
	 * Stage 3: maximum of the contributions' exponents, kept biased (exp +
	 * 128) so that an unsigned comparison orders the signed int8 values.
	 */
	Register<bit<16>, set_index_t>(INCA_NUM_SETS) max_exp;

	RegisterAction<bit<16>, set_index_t, bit<16>>(max_exp) exp_start = {
		void apply(inout bit<16> v, out bit<16> now) {
			v = md.exp_in;
			now = v;
		}
	};

	RegisterAction<bit<16>, set_index_t, bit<16>>(max_exp) exp_max = {
		void apply(inout bit<16> v, out bit<16> now) {
			if (md.exp_in > v) {
				v = md.exp_in;
			}
			now = v;
		}
	};

	RegisterAction<bit<16>, set_index_t, bit<16>>(max_exp) exp_read = {
		void apply(inout bit<16> v, out bit<16> now) {
			now = v;
		}
	};

	action exp_write() {
		md.exp_out = exp_start.execute(md.set_index);
	}

	action exp_combine() {
		md.exp_out = exp_max.execute(md.set_index);
	}

	action exp_look() {
		md.exp_out = exp_read.execute(md.set_index);
	}

	table exponent {
		key = {
			md.lane_op : exact;
			md.seen : ternary;
		}
		actions = {
			exp_write;
			exp_combine;
			exp_look;
			NoAction;
		}
		const entries = {
			(INCA_LANE_FIRST, _) : exp_write();
			(INCA_LANE_SAME, 0 &&& 0x7fffffff) : exp_combine();
			(INCA_LANE_SAME, _) : exp_look();
			/* The parent's sum into a PARTIAL set; a stale one: nothing. */
			(INCA_LANE_PARENT, 0) : NoAction();
			(INCA_LANE_PARENT, _) : exp_write();
		}
		const default_action = NoAction();
		size = 8;
	}

	apply {
		admit.apply();
		bits.apply();
		tally.apply();
		exponent.apply();
	}
}

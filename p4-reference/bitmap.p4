/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * Slot state of the Tofino subset and the verdict on a contribution
 * (docs/protocol.md, "Tofino subset"), in three stateful registers per set
 * (slot, SET flag), one stage each, because a Tofino-1 stateful ALU returns
 * one kind of value per access:
 *
 *   set_seq     the seq (+ 1) of the set's use: SAME, or NEWER (the use
 *               restarts: seq written), or OLDER (nothing changes);
 *   set_bitmap  SAME: sets the sender's bit, returns whether it was set;
 *               NEWER: the sender's bit alone;
 *   remaining   NEWER: nworkers - 1; SAME, bit clear: minus one; bit set:
 *               read.
 *
 *   OLDER                          -> dropped (STALE)
 *   NEWER                          -> FIRST: lanes written; COMPLETE if N = 1
 *   bit set, remaining 0           -> REPLAY to the sender (rule 4)
 *   bit set, remaining > 0         -> DUPLICATE, dropped (rule 2)
 *   bit clear                      -> ADD; COMPLETE when remaining reaches 0
 *
 * A contribution is therefore only ever combined with contributions of the
 * same seq, whatever order copies arrive in. Where the switch differs from
 * incad: a newer seq always starts a new use, also of a set still filling
 * (incad drops it as CONFLICT; only a worker breaking the window rule sends
 * one, and the abandoned use's members time out); there is no rule 6, so a
 * late copy of a chunk whose set is still complete with it is replayed to
 * its sender (which ignores it) where incad drops it; no MISMATCH check.
 * Zeroed registers (a new job's or a reset job's) hold seq 2^32 - 1 with an
 * empty bitmap, older than any chunk a fresh member sends first. The BMv2
 * program keeps the same rules with a bitmap comparison instead of the
 * remaining counter.
 *
 * A job that is a tree leaf (docs/protocol.md, "Aggregation trees"; the
 * uplink table) has a fourth register, after `remaining`:
 *
 *   set_partial  1 while the set is PARTIAL: every member counted, the
 *                parent's RESULT awaited. Written when a use starts (0, or
 *                1 when it completes at once) and when it completes (1);
 *                read by a retransmission; taken (1 -> 0) by the parent's
 *                RESULT.
 *
 *   completes, leaf                -> PARTIAL: the partial to the parent
 *   bit set, remaining 0, PARTIAL  -> RESEND: the partial again (RETX)
 *   parent RESULT, SAME, PARTIAL   -> lanes and exp written: COMPLETE,
 *                                     RESULT to every member
 *   parent RESULT otherwise        -> dropped (PARENT_STALE), nothing changed
 *
 * The parent's RESULT only compares the seq (set_seq is not written), so
 * max_exp comes after set_partial: its exponent is written only into a set
 * that was PARTIAL.
 */

control Bitmap(inout inca_headers_t hdr, inout inca_ig_md_t md)
{
	/* Stage 1: the seq (+ 1) of each set's use. */
	Register<bit<32>, set_index_t>(INCA_NUM_SETS) set_seq;

	RegisterAction<bit<32>, set_index_t, bit<8>>(set_seq) seq_check = {
		void apply(inout bit<32> v, out bit<8> rel) {
			if (v == md.seq1) {
				rel = INCA_REL_SAME;
			} else if ((int<32>)(v - md.seq1) < 0) {
				v = md.seq1;
				rel = INCA_REL_NEWER;
			} else {
				rel = INCA_REL_OLDER;
			}
		}
	};

	/* A parent's RESULT: the seq of the use it names, or nothing. */
	RegisterAction<bit<32>, set_index_t, bit<8>>(set_seq) seq_match = {
		void apply(inout bit<32> v, out bit<8> rel) {
			if (v == md.seq1) {
				rel = INCA_REL_SAME;
			} else {
				rel = INCA_REL_OLDER;
			}
		}
	};

	/* Stage 2: the bitmap of the use; counting returns the sender's bit. */
	Register<bit<32>, set_index_t>(INCA_NUM_SETS) set_bitmap;

	RegisterAction<bit<32>, set_index_t, bit<32>>(set_bitmap) bitmap_count = {
		void apply(inout bit<32> v, out bit<32> seen) {
			seen = v & md.rank_bit;
			v = v | md.rank_bit;
		}
	};

	RegisterAction<bit<32>, set_index_t, bit<32>>(set_bitmap) bitmap_start = {
		void apply(inout bit<32> v) {
			v = md.rank_bit;
		}
	};

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

	/* Stage 4: PARTIAL (tree leaf): all counted, the parent's RESULT awaited. */
	Register<bit<8>, set_index_t>(INCA_NUM_SETS) set_partial;

	RegisterAction<bit<8>, set_index_t, bit<8>>(set_partial) partial_write = {
		void apply(inout bit<8> v) {
			v = md.partial_in;
		}
	};

	RegisterAction<bit<8>, set_index_t, bit<8>>(set_partial) partial_read = {
		void apply(inout bit<8> v, out bit<8> now) {
			now = v;
		}
	};

	RegisterAction<bit<8>, set_index_t, bit<8>>(set_partial) partial_take = {
		void apply(inout bit<8> v, out bit<8> was) {
			was = v;
			v = 0;
		}
	};

	/*
	 * Stage 5: maximum of the contributions' exponents, kept biased (exp + 128) so
	 * that an unsigned comparison orders the signed int8 values.
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

	apply {
		md.exp_in = (bit<16>)((bit<8>)hdr.inca.exp ^ 8w0x80);
		md.seq1 = hdr.inca.seq + 1;
		md.set_index = md.pool_index ++ md.set;

		if (md.from_parent == 1) {
			md.rel = seq_match.execute(md.set_index);
		} else {
			md.rel = seq_check.execute(md.set_index);
			if (md.rel == INCA_REL_SAME) {
				md.seen = bitmap_count.execute(md.set_index);
			} else if (md.rel == INCA_REL_NEWER) {
				bitmap_start.execute(md.set_index);
			}
		}

		if (md.from_parent == 1) {
			/* Decided by set_partial below. */
		} else if (md.rel == INCA_REL_OLDER) {
			md.reason = INCA_DROP_STALE;
		} else if (md.rel == INCA_REL_NEWER) {
			md.cnt = remaining_start.execute(md.set_index);
			md.lane_op = INCA_LANE_WRITE;
		} else if (md.seen != 0) {
			/* Already counted: look at the set, change nothing. */
			md.cnt = remaining_read.execute(md.set_index);
			md.lane_op = INCA_LANE_READ_B;
		} else {
			md.cnt = remaining_count.execute(md.set_index);
			md.lane_op = INCA_LANE_ADD;
		}

		if (md.from_parent == 1) {
			/* The parent's sum for the PARTIAL set of its seq. */
			if (md.rel == INCA_REL_SAME) {
				md.partial = partial_take.execute(md.set_index);
			}
			if (md.partial == 1) {
				md.lane_op = INCA_LANE_WRITE;
				md.verdict = INCA_V_COMPLETE;
			} else {
				md.reason = INCA_DROP_PARENT_STALE;
			}
		} else if (md.reason == INCA_DROP_NONE) {
			if (md.lane_op == INCA_LANE_READ_B) {
				if (md.cnt != 0) {
					md.reason = INCA_DROP_DUPLICATE;
				} else {
					md.partial = partial_read.execute(md.set_index);
					if (md.partial == 1) {
						md.verdict = INCA_V_RESEND;
					} else {
						md.verdict = INCA_V_REPLAY;
					}
				}
			} else {
				/* A use starts (not PARTIAL) or completes. */
				if (md.cnt == 0 && md.leaf == 1) {
					md.partial_in = 1;
					md.verdict = INCA_V_PARTIAL;
				} else if (md.cnt == 0) {
					md.verdict = INCA_V_COMPLETE;
				} else {
					md.verdict = INCA_V_PENDING;
				}
				if (md.cnt == 0 || md.rel == INCA_REL_NEWER) {
					partial_write.execute(md.set_index);
				}
			}
		}

		if (md.reason == INCA_DROP_NONE) {
			if (md.lane_op == INCA_LANE_WRITE) {
				/* A use's first contribution, or the parent's sum. */
				md.exp_out = exp_start.execute(md.set_index);
			} else if (md.lane_op == INCA_LANE_READ_B) {
				md.exp_out = exp_read.execute(md.set_index);
			} else {
				md.exp_out = exp_max.execute(md.set_index);
			}
		}

		/*
		 * The RESULT keeps the contribution's job, token, slot, seq,
		 * offset, count, dtype, op and its SET, LAST and BFP flags; RETX
		 * marks a replay; its bitmap is every member. The rank is
		 * rewritten per copy in egress. A leaf's partial stays a
		 * CONTRIB, bitmap 0, RETX on a resend; egress puts it into the
		 * parent's job, rank and session.
		 */
		if (md.reason == INCA_DROP_NONE && md.verdict != INCA_V_PENDING) {
			hdr.inca.exp = (int<8>)(md.exp_out[7:0] ^ 8w0x80);
			if (md.verdict == INCA_V_PARTIAL || md.verdict == INCA_V_RESEND) {
				hdr.inca.bitmap = 0;
			} else {
				hdr.inca.type = INCA_MSG_RESULT;
				hdr.inca.bitmap = md.members;
			}
			if (md.verdict == INCA_V_REPLAY || md.verdict == INCA_V_RESEND) {
				hdr.inca.flags[1:1] = 1w1;
			} else {
				hdr.inca.flags[1:1] = 1w0;
			}
		}
	}
}

/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * Slot state of the Tofino subset: contributor bitmaps, remaining counts and
 * maximum exponents, and the verdict on a contribution.
 *
 * The bitmaps of both shadow sets of a slot share one 64-bit register entry,
 * so that one stateful ALU access sets the sender's bit in set s and clears it
 * in set 1-s (rule 6 of the protocol). Without sequence registers that is what
 * tells a retransmission from a new use of a set:
 *
 *   bit set, remaining 0      -> REPLAY (rule 4, bit-based)
 *   bit set, remaining > 0    -> DUPLICATE, dropped (rule 2)
 *   bit clear, set bitmap 0   -> FIRST: a new use starts (rules 1 and 5)
 *   bit clear, bitmap not 0   -> ADD (rule 2); COMPLETE when remaining hits 0
 *
 * A set's bitmap is all zero again exactly when every member has counted a
 * contribution in the other set, which a correct worker (window <= pool size)
 * waits for before it reuses the set. Counters and exponents are indexed by
 * (slot, set). The MISMATCH and seq checks of the software aggregator are not
 * made here (INCA_CAP_SEQ_CHECK is clear in a switch's CAPS).
 */

struct bitmap_pair_t {
	bit<32> set0;
	bit<32> set1;
}

control Bitmap(inout inca_headers_t hdr, inout inca_ig_md_t md)
{
	Register<bitmap_pair_t, slot_index_t>(INCA_NUM_SLOTS) bitmaps;

	/* Each returns the bitmap of the sender's set before the update. */
	RegisterAction<bitmap_pair_t, slot_index_t, bit<32>>(bitmaps) count_in_set0 = {
		void apply(inout bitmap_pair_t v, out bit<32> before) {
			before = v.set0;
			v.set0 = v.set0 | md.rank_bit;
			v.set1 = v.set1 & ~md.rank_bit;
		}
	};

	RegisterAction<bitmap_pair_t, slot_index_t, bit<32>>(bitmaps) count_in_set1 = {
		void apply(inout bitmap_pair_t v, out bit<32> before) {
			before = v.set1;
			v.set0 = v.set0 & ~md.rank_bit;
			v.set1 = v.set1 | md.rank_bit;
		}
	};

	/* Contributions still missing from the current use of a set. */
	Register<bit<8>, set_index_t>(INCA_NUM_SETS) remaining;

	RegisterAction<bit<8>, set_index_t, bit<8>>(remaining) remaining_start = {
		void apply(inout bit<8> v) {
			v = md.nworkers_m1;
		}
	};

	/*
	 * Returns the count before the decrement. A zero count is left alone:
	 * a new contribution into a complete set that is not empty is a
	 * conflict (a worker broke the window rule), never a wrap to 255.
	 */
	RegisterAction<bit<8>, set_index_t, bit<8>>(remaining) remaining_count = {
		void apply(inout bit<8> v, out bit<8> before) {
			before = v;
			if (v != 0) {
				v = v - 1;
			}
		}
	};

	RegisterAction<bit<8>, set_index_t, bit<8>>(remaining) remaining_read = {
		void apply(inout bit<8> v, out bit<8> now) {
			now = v;
		}
	};

	/*
	 * Maximum of the contributions' exponents, kept biased (exp + 128) so
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
		md.set_index = md.pool_index ++ md.set;

		if (md.set == 0) {
			md.bitmap_before = count_in_set0.execute(md.pool_index);
		} else {
			md.bitmap_before = count_in_set1.execute(md.pool_index);
		}
		md.seen = md.bitmap_before & md.rank_bit;

		if (md.seen != 0) {
			/* Already counted: look at the set, change nothing. */
			md.cnt = remaining_read.execute(md.set_index);
			md.exp_out = exp_read.execute(md.set_index);
			md.lane_op = INCA_LANE_READ_B;
			if (md.cnt == 0) {
				md.verdict = INCA_V_REPLAY;
			} else {
				md.reason = INCA_DROP_DUPLICATE;
			}
		} else if (md.bitmap_before == 0) {
			remaining_start.execute(md.set_index);
			md.exp_out = exp_start.execute(md.set_index);
			md.lane_op = INCA_LANE_WRITE;
			if (md.nworkers_m1 == 0) {
				md.verdict = INCA_V_COMPLETE;
			} else {
				md.verdict = INCA_V_PENDING;
			}
		} else {
			md.cnt = remaining_count.execute(md.set_index);
			md.exp_out = exp_max.execute(md.set_index);
			md.lane_op = INCA_LANE_ADD;
			if (md.cnt == 0) {
				md.reason = INCA_DROP_CONFLICT;
			} else if (md.cnt == 1) {
				md.verdict = INCA_V_COMPLETE;
			} else {
				md.verdict = INCA_V_PENDING;
			}
		}

		/*
		 * The RESULT keeps the contribution's job, token, slot, seq,
		 * offset, count, dtype, op and its SET, LAST and BFP flags; RETX
		 * marks a replay. The rank is rewritten per copy in egress.
		 */
		if (md.reason == INCA_DROP_NONE && md.verdict != INCA_V_PENDING) {
			hdr.inca.type = INCA_MSG_RESULT;
			hdr.inca.bitmap = md.bitmap_before | md.rank_bit;
			hdr.inca.exp = (int<8>)(md.exp_out[7:0] ^ 8w0x80);
			if (md.verdict == INCA_V_REPLAY) {
				hdr.inca.flags[1:1] = 1w1;
			} else {
				hdr.inca.flags[1:1] = 1w0;
			}
		}
	}
}

/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * Slot state of the Tofino subset and the verdict on a contribution
 * (docs/protocol.md, "Tofino subset").
 *
 * Each set (slot, SET flag) has one 64-bit state entry: the seq of its
 * current use, stored plus one, and the bitmap of the ranks counted in it.
 * One stateful ALU access compares the contribution's seq with the use's
 * and returns
 *
 *   same seq   -> the bitmap before (and sets the sender's bit);
 *   newer seq  -> 0: a new use starts with the sender's bit alone;
 *   older seq  -> INCA_STATE_STALE: a late copy of an earlier use; nothing
 *                 changes.
 *
 * and from that word and the job's full bitmap:
 *
 *   STALE                          -> dropped (STALE)
 *   0                              -> FIRST: lanes written; COMPLETE if N = 1
 *   sender's bit set, bitmap full  -> REPLAY to the sender (rule 4)
 *   sender's bit set, not full     -> DUPLICATE, dropped (rule 2)
 *   sender's bit clear             -> ADD; COMPLETE when the bitmap is full
 *
 * A contribution is therefore only ever combined with contributions of the
 * same seq, whatever order copies arrive in. Where the switch differs from
 * incad: a newer seq always starts a new use, also of a set still filling
 * (incad drops it as CONFLICT; only a worker breaking the window rule sends
 * one, and the abandoned use's members time out); there is no rule 6, so a
 * late copy of a chunk whose set is still complete with it is replayed to
 * its sender (which ignores it) where incad drops it; no MISMATCH check.
 * A zeroed entry (a new job's or a reset job's) holds seq 2^32 - 1 with an
 * empty bitmap, older than any chunk a fresh member sends first.
 */

struct set_state_t {
	bit<32> seq1;
	bit<32> bitmap;
}

control Bitmap(inout inca_headers_t hdr, inout inca_ig_md_t md)
{
	Register<set_state_t, set_index_t>(INCA_NUM_SETS) state;

	RegisterAction<set_state_t, set_index_t, bit<32>>(state) admit = {
		void apply(inout set_state_t v, out bit<32> before) {
			if (v.seq1 == md.seq1) {
				before = v.bitmap;
				v.bitmap = v.bitmap | md.rank_bit;
			} else if ((int<32>)(v.seq1 - md.seq1) < 0) {
				before = 0;
				v.seq1 = md.seq1;
				v.bitmap = md.rank_bit;
			} else {
				before = INCA_STATE_STALE;
			}
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
		md.seq1 = hdr.inca.seq + 1;
		md.set_index = md.pool_index ++ md.set;

		md.bitmap_before = admit.execute(md.set_index);
		md.seen = md.bitmap_before & md.rank_bit;
		md.bitmap_after = md.bitmap_before | md.rank_bit;

		if (md.bitmap_before == INCA_STATE_STALE) {
			md.reason = INCA_DROP_STALE;
		} else if (md.bitmap_before == 0) {
			md.exp_out = exp_start.execute(md.set_index);
			md.lane_op = INCA_LANE_WRITE;
		} else if (md.seen != 0) {
			/* Already counted: look at the set, change nothing. */
			md.exp_out = exp_read.execute(md.set_index);
			md.lane_op = INCA_LANE_READ_B;
			if (md.bitmap_before == md.members) {
				md.verdict = INCA_V_REPLAY;
			} else {
				md.reason = INCA_DROP_DUPLICATE;
			}
		} else {
			md.exp_out = exp_max.execute(md.set_index);
			md.lane_op = INCA_LANE_ADD;
		}
		if (md.lane_op == INCA_LANE_WRITE || md.lane_op == INCA_LANE_ADD) {
			if (md.bitmap_after == md.members) {
				md.verdict = INCA_V_COMPLETE;
			} else {
				md.verdict = INCA_V_PENDING;
			}
		}

		/*
		 * The RESULT keeps the contribution's job, token, slot, seq,
		 * offset, count, dtype, op and its SET, LAST and BFP flags; RETX
		 * marks a replay; its bitmap is every member. The rank is
		 * rewritten per copy in egress.
		 */
		if (md.reason == INCA_DROP_NONE && md.verdict != INCA_V_PENDING) {
			hdr.inca.type = INCA_MSG_RESULT;
			hdr.inca.bitmap = md.members;
			hdr.inca.exp = (int<8>)(md.exp_out[7:0] ^ 8w0x80);
			if (md.verdict == INCA_V_REPLAY) {
				hdr.inca.flags[1:1] = 1w1;
			} else {
				hdr.inca.flags[1:1] = 1w0;
			}
		}
	}
}

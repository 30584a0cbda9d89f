/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * One lane pair of the accumulator: element i (lane a, in data0) and element
 * i + 32 (lane b, in data1) of a 64-element group share one 64-bit register
 * entry, as in SwitchML. The Tofino program instantiates 32 of these, four per
 * stage over eight stages (p4c-barefoot places them in stages 4 to 11),
 * so one pass adds a whole group.
 *
 * A Tofino-1 stateful ALU updates both 32-bit halves of an entry in one access
 * but returns one 32-bit word: a pass that adds returns lanes b, and lanes a
 * of a finished group are read by a later pass (INCA_LANE_READ_A, see
 * next_step.p4).
 *
 * Register entry = lane index: (slot, set) for the 64-element class, (slot,
 * set, group) for the 256-element class; the control plane lays the job's
 * slots out (README.md). int32 sums wrap modulo 2^32, as the spec says.
 */

struct lane_pair_t {
	bit<32> a;
	bit<32> b;
}

control Processor(inout bit<32> a, inout bit<32> b, in inca_ig_md_t md)
{
	Register<lane_pair_t, lane_index_t>(INCA_LANE_ENTRIES) acc;

	/* First contribution of a use: overwrite what the last use left. */
	RegisterAction<lane_pair_t, lane_index_t, bit<32>>(acc) lanes_write = {
		void apply(inout lane_pair_t v, out bit<32> rv) {
			v.a = a;
			v.b = b;
			rv = v.b;
		}
	};

	RegisterAction<lane_pair_t, lane_index_t, bit<32>>(acc) lanes_add = {
		void apply(inout lane_pair_t v, out bit<32> rv) {
			v.a = v.a + a;
			v.b = v.b + b;
			rv = v.b;
		}
	};

	RegisterAction<lane_pair_t, lane_index_t, bit<32>>(acc) lanes_read_a = {
		void apply(inout lane_pair_t v, out bit<32> rv) {
			rv = v.a;
		}
	};

	RegisterAction<lane_pair_t, lane_index_t, bit<32>>(acc) lanes_read_b = {
		void apply(inout lane_pair_t v, out bit<32> rv) {
			rv = v.b;
		}
	};

	action do_write() {
		b = lanes_write.execute(md.lane_idx);
	}

	action do_add() {
		b = lanes_add.execute(md.lane_idx);
	}

	action do_read_a() {
		a = lanes_read_a.execute(md.lane_idx);
	}

	action do_read_b() {
		b = lanes_read_b.execute(md.lane_idx);
	}

	/*
	 * One table per lane pair (a stage holds 16 logical tables). The
	 * first pass's operation is settled here by what set_bitmap returned
	 * (bit 31 of seen is INCA_BITMAP_OPEN, not the sender's), so that the
	 * lanes start in the stage after set_bitmap's (bitmap.p4).
	 */
	table lane {
		key = {
			md.lane_op : exact;
			md.seen : ternary;
		}
		actions = {
			do_write;
			do_add;
			do_read_a;
			do_read_b;
			NoAction;
		}
		const entries = {
			(INCA_LANE_WRITE, _) : do_write();
			(INCA_LANE_ADD, _) : do_add();
			(INCA_LANE_READ_A, _) : do_read_a();
			(INCA_LANE_READ_B, _) : do_read_b();
			(INCA_LANE_FIRST, _) : do_write();
			(INCA_LANE_SAME, 0 &&& 0x7fffffff) : do_add();
			(INCA_LANE_SAME, _) : do_read_b();
			(INCA_LANE_PARENT, 0) : NoAction();
			(INCA_LANE_PARENT, _) : do_write();
		}
		const default_action = NoAction();
		size = 16;
	}

	apply {
		lane.apply();
	}
}

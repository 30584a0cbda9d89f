/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * Where an INCA contribution goes after a pass: another pass, a multicast
 * RESULT to the job's group, a unicast replay to its sender, a tree leaf's
 * partial to its parent, or nowhere (dropped, counted by reason in
 * inca.p4). A parent's RESULT takes the passes of a contribution that
 * completes its set. Ordinary traffic was given its
 * port by the L2 table before and is not looked at here.
 *
 * Passes of a contribution that gets an answer (quarter = payload group):
 *
 *   64 elements:  CONSUME 0 -> HARVEST_A 0 -> out
 *   256 elements: CONSUME 0 -> CONSUME 1 -> CONSUME 2 -> CONSUME 3
 *                 -> HARVEST_A 3 -> HARVEST_B 2 -> HARVEST_A 2 -> HARVEST_B 1
 *                 -> HARVEST_A 1 -> HARVEST_B 0 -> HARVEST_A 0 -> out
 *
 * A consume pass strips the group it aggregated, except lanes b of the last
 * group, which it already holds as results; each harvest pass prepends one
 * half-group read from the registers right after the INCA header, so the
 * groups end up in order. A contribution still pending is dropped after its
 * last consume pass. All passes use the one recirculation port of the job's
 * home pipe, whose FIFO order keeps every pass of an earlier contribution
 * ahead of the same pass of a later one: the first contribution's WRITE of a
 * group always precedes the others' ADDs, and harvests read complete groups.
 */

control NextStep(inout inca_headers_t hdr,
		 inout inca_ig_md_t md,
		 inout ingress_intrinsic_metadata_for_tm_t ig_tm_md)
{
	action recirculate(bit<8> step) {
		hdr.bridge.step = step;
		ig_tm_md.ucast_egress_port = md.recirc_port;
		ig_tm_md.bypass_egress = 1w1;
	}

	/* A consume pass of 256 elements before the last: the next group. */
	action next_group() {
		hdr.data0.setInvalid();
		hdr.data1.setInvalid();
		hdr.bridge.quarter = hdr.bridge.quarter + 1;
		recirculate(INCA_STEP_CONSUME);
	}

	/* The last consume pass: lanes b of its group stay, they are results. */
	action first_harvest() {
		hdr.data0.setInvalid();
		recirculate(INCA_STEP_HARVEST_A);
	}

	action harvest_a() {
		recirculate(INCA_STEP_HARVEST_A);
	}

	action harvest_b_below() {
		hdr.bridge.quarter = hdr.bridge.quarter - 1;
		recirculate(INCA_STEP_HARVEST_B);
	}

	action finish(bit<8> reason) {
		md.reason = reason;
	}

	/* One copy per member: the PRE node of rank r has RID r. */
	action multicast_result() {
		hdr.bridge.step = INCA_STEP_RESULT;
		ig_tm_md.mcast_grp_a = hdr.bridge.mgid;
		/* No replica shares this RID, so L2 pruning removes none. */
		ig_tm_md.rid = 16w0xffff;
	}

	action unicast_replay() {
		hdr.bridge.step = INCA_STEP_REPLAY;
		ig_tm_md.ucast_egress_port = hdr.bridge.in_port[8:0];
	}

	/* One copy, to the parent: egress rewrites it into the parent's job. */
	action unicast_partial() {
		hdr.bridge.step = INCA_STEP_UPLINK;
		ig_tm_md.ucast_egress_port = hdr.bridge.up_port[8:0];
	}

	/*
	 * One table, not nested conditions (verdict.p4 says why). A frame
	 * already refused (reason set) goes nowhere; neither does one that
	 * is not a contribution (step FORWARD, ENTER): no entry.
	 */
	table next_step {
		key = {
			md.reason : exact;
			hdr.bridge.step : exact;
			hdr.bridge.cls : ternary;
			hdr.bridge.quarter : ternary;
			hdr.bridge.verdict : ternary;
		}
		actions = {
			next_group;
			first_harvest;
			harvest_a;
			harvest_b_below;
			finish;
			multicast_result;
			unicast_replay;
			unicast_partial;
			@defaultonly NoAction;
		}
		const entries = {
			/* hdr.bridge.quarter != 3: groups 0..2 of 256 elements. */
			(INCA_DROP_NONE, INCA_STEP_CONSUME, INCA_CLASS_LARGE, 0, _) : next_group();
			(INCA_DROP_NONE, INCA_STEP_CONSUME, INCA_CLASS_LARGE, 1, _) : next_group();
			(INCA_DROP_NONE, INCA_STEP_CONSUME, INCA_CLASS_LARGE, 2, _) : next_group();
			(INCA_DROP_NONE, INCA_STEP_CONSUME, _, _, INCA_V_PENDING) :
				finish(INCA_DROP_CONSUMED);
			/* Counted (PARTIAL) but no parent session yet. */
			(INCA_DROP_NONE, INCA_STEP_CONSUME, _, _, INCA_V_HOLD) :
				finish(INCA_DROP_UPLINK_WAIT);
			(INCA_DROP_NONE, INCA_STEP_CONSUME, _, _, _) : first_harvest();
			(INCA_DROP_NONE, INCA_STEP_HARVEST_B, _, _, _) : harvest_a();
			(INCA_DROP_NONE, INCA_STEP_HARVEST_A, _, 0, INCA_V_COMPLETE) :
				multicast_result();
			(INCA_DROP_NONE, INCA_STEP_HARVEST_A, _, 0, INCA_V_REPLAY) :
				unicast_replay();
			(INCA_DROP_NONE, INCA_STEP_HARVEST_A, _, 0, _) : unicast_partial();
			(INCA_DROP_NONE, INCA_STEP_HARVEST_A, _, _, _) : harvest_b_below();
		}
		const default_action = NoAction();
		size = 16;
	}

	apply {
		next_step.apply();
	}
}

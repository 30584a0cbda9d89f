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
	action recirculate(in bit<8> step, in bit<8> quarter) {
		hdr.bridge.step = step;
		hdr.bridge.quarter = quarter;
		ig_tm_md.ucast_egress_port = md.recirc_port;
		ig_tm_md.bypass_egress = 1w1;
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

	apply {
		if (hdr.bridge.step == INCA_STEP_CONSUME) {
			if (hdr.bridge.cls == INCA_CLASS_LARGE && hdr.bridge.quarter != 3) {
				hdr.data0.setInvalid();
				hdr.data1.setInvalid();
				recirculate(INCA_STEP_CONSUME, hdr.bridge.quarter + 1);
			} else if (hdr.bridge.verdict == INCA_V_PENDING) {
				md.reason = INCA_DROP_CONSUMED;
			} else if (hdr.bridge.verdict == INCA_V_HOLD) {
				/* Counted (PARTIAL) but no parent session yet. */
				md.reason = INCA_DROP_UPLINK_WAIT;
			} else {
				/* Lanes b of the last group stay: they are results. */
				hdr.data0.setInvalid();
				recirculate(INCA_STEP_HARVEST_A, hdr.bridge.quarter);
			}
		} else if (hdr.bridge.step == INCA_STEP_HARVEST_B) {
			recirculate(INCA_STEP_HARVEST_A, hdr.bridge.quarter);
		} else if (hdr.bridge.step == INCA_STEP_HARVEST_A) {
			if (hdr.bridge.quarter != 0) {
				recirculate(INCA_STEP_HARVEST_B, hdr.bridge.quarter - 1);
			} else if (hdr.bridge.verdict == INCA_V_COMPLETE) {
				multicast_result();
			} else if (hdr.bridge.verdict == INCA_V_REPLAY) {
				unicast_replay();
			} else {
				unicast_partial();
			}
		}
	}
}

/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * Fuzz target: one UDP payload, as incad and libinca hand it to
 * inca_msg_decode(). Besides "no memory error, no undefined behaviour" it
 * holds the decoder to three properties:
 *  - for every receiver limit, the verdict is the one docs/protocol.md's
 *    "Message checks" table gives (spec.c models the table independently);
 *  - a message that decodes re-encodes, with inca_hdr_encode(), to the same
 *    32 header bytes, and its body is the rest of the buffer;
 *  - a control body decodes and re-encodes to the same bytes, reserved
 *    word aside (senders zero it, receivers ignore it).
 */
#include <string.h>

#include <inca/wire.h>

#include "fuzz.h"

/* Receiver limits incad and libinca use, and the edges of the range. */
static const unsigned limits[] = {0, 1, 16, 64, 256, 1024, 2048, 4096, 4097, 65535};

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	return 0;
}

static void
check_names(const struct inca_msg *m)
{
	FUZZ_CHECK(strcmp(inca_msg_type_name(m->type), "?") != 0, "type %u", m->type);
	FUZZ_CHECK(strcmp(inca_dtype_name(m->dtype), "?") != 0, "dtype %u", m->dtype);
	FUZZ_CHECK(strcmp(inca_op_name(m->op), "?") != 0, "op %u", m->op);
	if (m->type == INCA_MSG_NACK) {
		FUZZ_CHECK(strcmp(inca_nack_name(m->reason), "?") != 0, "reason %u",
			   m->reason);
		FUZZ_CHECK(strcmp(inca_nack_str(m->reason), "?") != 0, "reason %u", m->reason);
	}
}

static void
check_ctrl_round_trip(const struct inca_msg *m)
{
	uint8_t out[INCA_CTRL_LEN], want[INCA_CTRL_LEN];
	struct inca_ctrl_info c;

	inca_ctrl_decode(m->body, &c);
	inca_ctrl_encode(&c, out);
	memcpy(want, m->body, INCA_CTRL_LEN);
	FUZZ_CHECK(memcmp(out, want, INCA_CTRL_LEN) == 0, "control body round trip");
	FUZZ_CHECK(c.ver_min <= c.ver_max && c.nworkers <= INCA_MAX_WORKERS &&
		   c.max_elems <= INCA_MAX_ELEMS && (c.caps & ~INCA_CAP_MASK) == 0,
		   "accepted control body has a field out of range");
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t hdr[INCA_HDR_LEN];
	enum inca_wire_err err, want;
	struct inca_msg m;
	size_t i;

	for (i = 0; i < sizeof(limits) / sizeof(limits[0]); i++) {
		memset(&m, 0, sizeof(m));
		err = inca_msg_decode(data, size, limits[i], &m);
		want = spec_msg_check(data, size, limits[i]);
		FUZZ_CHECK(err == want, "max_elems %u: decode says %s, the spec %s", limits[i],
			   inca_wire_err_name(err), inca_wire_err_name(want));
		FUZZ_CHECK(err < INCA_WIRE_ERR_COUNT &&
			   strcmp(inca_wire_err_name(err), "?") != 0 &&
			   strcmp(inca_wire_err_str(err), "?") != 0, "error %u has no name", err);
		if (err != INCA_WIRE_OK)
			continue;

		check_names(&m);
		inca_hdr_encode(&m, hdr);
		FUZZ_CHECK(memcmp(hdr, data, INCA_HDR_LEN) == 0, "header round trip");
		FUZZ_CHECK(m.body == data + INCA_HDR_LEN && m.body_len == size - INCA_HDR_LEN,
			   "body is not the rest of the buffer");
		if (m.type == INCA_MSG_CONTRIB || m.type == INCA_MSG_RESULT)
			FUZZ_CHECK(m.body_len == ((m.flags & INCA_F_BRIEF) ? 0 :
						  (size_t)m.count * inca_dtype_size(m.dtype)) &&
				   m.body_len <= INCA_MAX_PAYLOAD_BYTES, "data body length");
		else if (m.body_len == INCA_CTRL_LEN)
			check_ctrl_round_trip(&m);
	}
	return 0;
}

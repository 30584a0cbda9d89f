/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * Prints the wire format as the C compiler sees it in <inca/wire.h>, one fact
 * per line, for check_p4_constants.py to compare with the P4 headers. The
 * compiler, not a parser of wire.h, is the authority on offsets, sizes and
 * enum values; the X-macros make every message type, data type and operation
 * appear here without this file naming them.
 *
 * Output lines:
 *   field <name> <offset> <size> <signed 0|1>   struct inca_hdr, in order
 *   const <NAME> <value>                        scalar macros
 *   msg|dtype|op|flag|cap <NAME> <value>        enumerations
 */
#include <stddef.h>
#include <stdio.h>

#include <inca/wire.h>

#define IS_SIGNED(m) \
	((__typeof__(((struct inca_hdr *)0)->m))-1 < (__typeof__(((struct inca_hdr *)0)->m))1)
#define FIELD(m) \
	printf("field %s %zu %zu %d\n", #m, offsetof(struct inca_hdr, m), \
	       sizeof(((struct inca_hdr *)0)->m), IS_SIGNED(m))
#define CONST(n) printf("const %s %ld\n", #n, (long)(n))

int
main(void)
{
	/* In declaration order: the order is part of the format. */
	FIELD(version);
	FIELD(type);
	FIELD(dtype);
	FIELD(op);
	FIELD(job);
	FIELD(rank);
	FIELD(token);
	FIELD(slot);
	FIELD(flags);
	FIELD(exp);
	FIELD(seq);
	FIELD(offset);
	FIELD(count);
	FIELD(reason);
	FIELD(bitmap);
	printf("size inca_hdr %zu\n", sizeof(struct inca_hdr));

	CONST(INCA_PROTO_VERSION);
	CONST(INCA_UDP_PORT);
	CONST(INCA_HDR_LEN);
	CONST(INCA_CTRL_LEN);
	CONST(INCA_MAX_WORKERS);
	CONST(INCA_PAYLOAD_SMALL);
	CONST(INCA_PAYLOAD_LARGE);
	CONST(INCA_ENCAP_LEN);

#define X_MSG(n, v, d) printf("msg %s %d\n", #n, (int)INCA_MSG_##n);
	INCA_MSG_TYPES(X_MSG)
#undef X_MSG
#define X_DTYPE(n, v, s) printf("dtype %s %d %d\n", #n, (int)INCA_DTYPE_##n, (int)(s));
	INCA_DTYPES(X_DTYPE)
#undef X_DTYPE
#define X_OP(n, v) printf("op %s %d\n", #n, (int)INCA_OP_##n);
	INCA_OPS(X_OP)
#undef X_OP

	printf("flag SET %d\n", INCA_F_SET);
	printf("flag RETX %d\n", INCA_F_RETX);
	printf("flag LAST %d\n", INCA_F_LAST);
	printf("flag BFP %d\n", INCA_F_BFP);
	printf("flag ROUTED %d\n", INCA_F_ROUTED);
	printf("flag GATHER %d\n", INCA_F_GATHER);
	printf("flag BRIEF %d\n", INCA_F_BRIEF);
	printf("flag MASK %d\n", INCA_F_MASK);
	printf("cap NATIVE_FLOAT %d\n", INCA_CAP_NATIVE_FLOAT);
	printf("cap BFP %d\n", INCA_CAP_BFP);
	printf("cap SEQ_CHECK %d\n", INCA_CAP_SEQ_CHECK);
	printf("cap FIXED_COUNT %d\n", INCA_CAP_FIXED_COUNT);
	printf("cap ROCE %d\n", INCA_CAP_ROCE);
	printf("cap ROUTED %d\n", INCA_CAP_ROUTED);
	printf("cap MASK %d\n", INCA_CAP_MASK);
	return 0;
}

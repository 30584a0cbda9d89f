/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * The stream layer: requests become chunks with job-wide sequence numbers,
 * sent through the window, retransmitted, their results delivered in order
 * (engine.c); the payload codec (codec.c). Owns the ring, base, next_seq and
 * the request queue.
 */
#ifndef INCA_LI_STREAM_H
#define INCA_LI_STREAM_H

#include "li_member.h"

/* engine.c */
/* Size the ring for the granted window and start the stream at seq 0. */
int li_stream_setup(struct inca_comm *c);
int li_progress(struct inca_comm *c, int timeout_ms);
int li_flush(struct inca_comm *c);
void li_handle_msg(struct inca_comm *c, const void *buf, size_t len);
void li_deliver_ready(struct inca_comm *c);
void li_req_layout(struct inca_comm *c, struct li_req *r);
void li_req_complete(struct inca_comm *c, struct li_req *r, int result);
struct li_req *li_req_alloc(struct inca_comm *c);
void li_req_free(struct inca_comm *c, struct li_req *r);
/* Append @r to @c's requests in issue order (li_req_complete() unlinks it). */
void li_req_enqueue(struct inca_comm *c, struct li_req *r);
/* Queue @r at the end of the stream (seq numbers, layout). */
int li_issue(struct inca_comm *c, struct li_req *r);
void li_close_stream(struct inca_comm *c);
/*
 * Routed chunks (docs/protocol.md, "Routed chunks"): does this rank
 * receive the elements of ring entry @e's result (or a BRIEF one)?
 */
bool li_gets_elems(const struct inca_comm *c, const struct li_chunk *e);
/*
 * The payload this rank contributes for chunk @e of a request still
 * pending, in wire format, into @buf (max_payload bytes): its length, 0
 * for a BRIEF contribution.
 */
size_t li_contrib_payload(struct inca_comm *c, const struct li_chunk *e, uint8_t *buf);

#endif /* INCA_LI_STREAM_H */

/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * The membership layer: capabilities (HELLO), joining the job (JOIN, the
 * grants, the session), leaving (LEAVE), heartbeats (keepalive.c). Owns
 * joined, session, caps, the grants, liveness.
 */
#ifndef INCA_LI_MEMBER_H
#define INCA_LI_MEMBER_H

#include "li_state.h"

/* member.c */
int li_send_ctrl(struct inca_comm *c, unsigned type);
int li_hello(struct inca_comm *c, uint32_t wait_ms);
/* JOIN and take the job's grants; the stream is set up by the caller. */
int li_join(struct inca_comm *c, uint32_t give_up_ms);
void li_leave(struct inca_comm *c, uint32_t wait_ms);
/* Payload bytes one datagram of the communicator's MTU carries. */
unsigned li_payload_room(const struct inca_comm *c);

/* keepalive.c */
void li_keepalive_stop(struct inca_comm *c);

#endif /* INCA_LI_MEMBER_H */

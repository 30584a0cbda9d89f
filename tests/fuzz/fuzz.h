/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * What the fuzz harnesses share: the libFuzzer entry points (declared here
 * so that the harnesses also build as plain C with gcc, for the replay
 * tests), the check that turns a broken property into a crash libFuzzer
 * records, and the independent models of docs/protocol.md's validation
 * tables (spec.c) that the harnesses hold the codec to.
 */
#ifndef INCA_FUZZ_H
#define INCA_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <inca/wire.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/*
 * A property the code under test must hold on every input. Breaking one is
 * a finding like a memory error: print what broke and abort, so that
 * libFuzzer keeps the input as a crash file and the replay test fails.
 */
#define FUZZ_CHECK(cond, ...) \
	do { \
		if (!(cond)) { \
			fprintf(stderr, "%s:%d: property broken: %s: ", __FILE__, __LINE__, \
				#cond); \
			fprintf(stderr, __VA_ARGS__); \
			fputc('\n', stderr); \
			abort(); \
		} \
	} while (0)

/*
 * docs/protocol.md's "Message checks" table, written again from the table
 * and nothing else: the first failing check of @p buf, as
 * inca_msg_decode() must report it.
 */
enum inca_wire_err spec_msg_check(const uint8_t *buf, size_t len, unsigned max_elems);

/*
 * docs/protocol.md's "Frame checks" table, likewise. On INCA_WIRE_OK fills
 * the offsets and fields inca_frame_parse() must report.
 */
struct spec_frame {
	size_t msg_off, msg_len;
	uint32_t src_ip, dst_ip;
	uint16_t src_port, dst_port;
};

enum inca_wire_err spec_frame_check(const uint8_t *frame, size_t len, uint16_t port,
				    struct spec_frame *f);

/*
 * docs/protocol.md's "RoCEv2 checks" a parser makes (not the receiver's
 * ICRC, queue pair and Q_Key), for a UDP payload @p buf starting at the
 * BTH. On INCA_WIRE_OK fills where the INCA message is.
 */
enum inca_wire_err spec_roce_check(const uint8_t *buf, size_t len, size_t *msg_off,
				   size_t *msg_len);

#endif /* INCA_FUZZ_H */

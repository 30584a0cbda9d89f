/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * Aggregation kernels: combine a payload in wire format (big-endian
 * elements of the message's dtype) into an accumulator of 32-bit lanes in
 * host order (int32_t for INT32, float for FP32, FP16 and BF16; two lanes
 * holding one int64_t or double for INT64 and FP64), and export
 * the accumulator back to wire format. Semantics are docs/protocol.md's
 * "Data types and operations": int32 sum wraps; float sums accumulate in
 * fp32 in arrival order with round to nearest even; min and max propagate
 * NaN (as the canonical quiet NaN) and order -0 below +0, so their result
 * does not depend on arrival order.
 *
 * Each kernel has a vectorised version chosen at start-up where the CPU
 * has it (x86-64 AVX2, aarch64 NEON) and a portable one; both give the same
 * bits. The agg_ref_* functions are plain scalar code that tests compare
 * against.
 */
#ifndef INCA_KERNELS_H
#define INCA_KERNELS_H

#include <stdint.h>

/* acc = decode(wire): the first contribution of a set. */
typedef void agg_init_fn(void *acc, const void *wire, unsigned count);
/* acc = op(acc, decode(wire)): every further contribution. */
typedef void agg_combine_fn(void *acc, const void *wire, unsigned count);
/* wire = encode(acc). */
typedef void agg_export_fn(void *wire, const void *acc, unsigned count);

/* Pick the fastest implementations this CPU runs. Idempotent, thread-safe. */
void agg_kernels_init(void);
/* Name of the chosen implementation: "avx2", "neon" or "portable". */
const char *agg_kernels_impl(void);
/* Force the portable implementation (tests compare both). */
void agg_kernels_force_portable(int on);

/* NULL for an unknown dtype or op. */
agg_init_fn *agg_kernel_init(unsigned dtype);
agg_combine_fn *agg_kernel_combine(unsigned dtype, unsigned op);
agg_export_fn *agg_kernel_export(unsigned dtype);

/* Scalar reference: one element at a time, straight from the spec. */
void agg_ref_init(unsigned dtype, void *acc, const void *wire, unsigned count);
void agg_ref_combine(unsigned dtype, unsigned op, void *acc, const void *wire, unsigned count);
void agg_ref_export(unsigned dtype, void *wire, const void *acc, unsigned count);

#endif /* INCA_KERNELS_H */

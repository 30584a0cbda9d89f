/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/**
 * @file
 * Conversions between the 16-bit float formats and fp32, as
 * docs/protocol.md ("Data types") specifies them: round to nearest, ties to
 * even; overflow to infinity; NaN stays NaN (quiet, sign kept). All
 * functions are pure and thread-safe.
 */
#ifndef INCA_DTYPE_H
#define INCA_DTYPE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** IEEE 754 binary16 bits to fp32 (exact). */
float inca_fp16_to_fp32(uint16_t h);
/** fp32 to IEEE 754 binary16 bits, round to nearest even. */
uint16_t inca_fp32_to_fp16(float f);
/** bfloat16 bits to fp32 (exact). */
float inca_bf16_to_fp32(uint16_t b);
/** fp32 to bfloat16 bits, round to nearest even. */
uint16_t inca_fp32_to_bf16(float f);

#ifdef __cplusplus
}
#endif

#endif /* INCA_DTYPE_H */

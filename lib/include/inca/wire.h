/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/**
 * @file
 * The INCA wire format, version 2: the one C definition of it.
 *
 * docs/protocol.md is the specification; this header mirrors it field by
 * field and a unit test checks the two against each other. Every multi-byte
 * field, and every payload element, is in network byte order.
 *
 * An INCA message is the payload of a UDP datagram sent to INCA_UDP_PORT
 * (or the port an aggregator is configured with):
 *
 *     Ethernet | IPv4 | UDP | struct inca_hdr (32 bytes) | body
 *
 * The body of a data message (CONTRIB, RESULT) is @c count elements of the
 * header's data type; the body of a control message is one struct
 * inca_ctrl (32 bytes); NACK carries its reason in the header and may carry
 * a struct inca_ctrl with the aggregator's capabilities.
 *
 * Stability: the codec below (inca_msg_decode(), inca_msg_encode(), ...) is
 * exported by libinca for tools, dissectors and other implementations, and
 * follows the wire, not the library: its structures are the protocol
 * version's (INCA_PROTO_VERSION), their layout changes only with a new
 * protocol version, and values of an enum (dtypes, ops, message types,
 * NACK reasons, flags) never change meaning; new ones are appended.
 * Functions take them as unsigned so that a newer value passes through an
 * older binary unchanged.
 */
#ifndef INCA_WIRE_H
#define INCA_WIRE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Protocol version carried in every header. */
#define INCA_PROTO_VERSION 2
/** Default UDP destination port of an aggregator (0x494E, "IN"). */
#define INCA_UDP_PORT 18766

/** Size of the INCA header. */
#define INCA_HDR_LEN 32
/** Size of the control body (HELLO, CAPS, JOIN, JOIN_ACK, LEAVE, HEARTBEAT). */
#define INCA_CTRL_LEN 32
/** Largest number of workers in one job (width of the contributor bitmap). */
#define INCA_MAX_WORKERS 32
/** Payload classes a switch ASIC aggregates: elements of 32 bits. */
#define INCA_PAYLOAD_SMALL 64
#define INCA_PAYLOAD_LARGE 256
/**
 * A set's accumulator is max_elems lanes of 32 bits: an element of a
 * 64-bit dtype (INT64, FP64) takes two, so a 64-bit data message carries at
 * most max_elems / 2 elements (docs/protocol.md, "Payload classes").
 */
#define INCA_LANE_BYTES 4
/** Largest body of a data message in bytes (fits a 9000-byte MTU). */
#define INCA_MAX_PAYLOAD_BYTES 8192
/** Largest element count of any data message (fp16/bf16 at the byte limit). */
#define INCA_MAX_ELEMS 4096
/** Size of Ethernet + IPv4 (no options) + UDP headers in front of inca_hdr. */
#define INCA_ENCAP_LEN (14 + 20 + 8)

/** Message types (inca_hdr.type). X(name, value, description). */
#define INCA_MSG_TYPES(X) \
	X(CONTRIB, 1, "contribution of one chunk from a worker") \
	X(RESULT, 2, "aggregated chunk from the aggregator") \
	X(HELLO, 3, "capability query from a worker") \
	X(CAPS, 4, "capabilities of the aggregator") \
	X(JOIN, 5, "a worker joins a job") \
	X(JOIN_ACK, 6, "the aggregator admitted the worker") \
	X(LEAVE, 7, "a worker leaves a job") \
	X(LEAVE_ACK, 8, "the aggregator released the worker") \
	X(HEARTBEAT, 9, "liveness of a member") \
	X(HEARTBEAT_ACK, 10, "liveness answer of the aggregator") \
	X(NACK, 11, "a request was refused; reason in the header")

enum inca_msg_type {
#define INCA_X_(n, v, d) INCA_MSG_##n = v,
	INCA_MSG_TYPES(INCA_X_)
#undef INCA_X_
	INCA_MSG_MAX_ /* one past the highest value */
};

/** Element data types (inca_hdr.dtype). X(name, value, bytes). */
#define INCA_DTYPES(X) \
	X(INT32, 0, 4) \
	X(FP32, 1, 4) \
	X(FP16, 2, 2) \
	X(BF16, 3, 2) \
	X(INT64, 4, 8) \
	X(FP64, 5, 8)

enum inca_dtype {
#define INCA_X_(n, v, s) INCA_DTYPE_##n = v,
	INCA_DTYPES(INCA_X_)
#undef INCA_X_
	INCA_DTYPE_COUNT
};

/** Reduction operations (inca_hdr.op). */
#define INCA_OPS(X) \
	X(SUM, 0) \
	X(MIN, 1) \
	X(MAX, 2)

enum inca_op {
#define INCA_X_(n, v) INCA_OP_##n = v,
	INCA_OPS(INCA_X_)
#undef INCA_X_
	INCA_OP_COUNT
};

/** Header flags (inca_hdr.flags). */
#define INCA_F_SET 0x01   /**< shadow set of the slot: 0 or 1 */
#define INCA_F_RETX 0x02  /**< the sender retransmits (informational) */
#define INCA_F_LAST 0x04  /**< last chunk of a collective (informational) */
#define INCA_F_BFP 0x08   /**< int32 payload is block fixed point of floats */
/**
 * The chunk has a root rank: a CONTRIB's bitmap names it (one bit). Without
 * GATHER the ranks' elements are reduced and only the root receives the
 * result (ReduceScatter, Reduce); the others get a BRIEF RESULT.
 */
#define INCA_F_ROUTED 0x10
/** With ROUTED: only the root contributes elements, every other rank receives them. */
#define INCA_F_GATHER 0x20
/** No body (count still the chunk's): a non-root's GATHER CONTRIB, or a done RESULT. */
#define INCA_F_BRIEF 0x40
#define INCA_F_MASK 0x7f  /**< all defined flags; other bits must be zero */

/**
 * NACK reasons (inca_hdr.reason of a NACK). X(name, value, description).
 * Zero means "no reason" and is never sent in a NACK.
 */
#define INCA_NACK_REASONS(X) \
	X(BAD_VERSION, 1, "protocol version not supported") \
	X(UNKNOWN_JOB, 2, "no such job on this aggregator") \
	X(NOT_MEMBER, 3, "sender is not an admitted member of the job") \
	X(BAD_TOKEN, 4, "job token does not match") \
	X(QUOTA_EXHAUSTED, 5, "tenant slot quota exhausted") \
	X(NO_SLOTS, 6, "aggregator slot memory exhausted") \
	X(JOB_FULL, 7, "job already has all its ranks") \
	X(BAD_PARAMS, 8, "job parameters do not match the job") \
	X(UNSUPPORTED_DTYPE, 9, "data type not supported") \
	X(UNSUPPORTED_OP, 10, "operation not supported") \
	X(TOO_LARGE, 11, "payload larger than negotiated") \
	X(SHUTTING_DOWN, 12, "aggregator is shutting down") \
	X(EVICTED, 13, "member was evicted (silent too long)") \
	X(MEMBER_LOST, 14, "the job lost a member; rejoin before contributing") \
	X(RATE_LIMITED, 15, "too many control messages from this source") \
	X(MISMATCH, 16, "the ranks' contributions to one chunk differ (count, dtype, op, offset or BFP)") \
	X(HELD, 17, "contribution held back: its tenant is over its rate, or its job's priority class over its share of the aggregator; send it again after a back-off")

enum inca_nack_reason {
	INCA_NACK_NONE = 0,
#define INCA_X_(n, v, d) INCA_NACK_##n = v,
	INCA_NACK_REASONS(INCA_X_)
#undef INCA_X_
	INCA_NACK_MAX_
};

/**
 * The INCA header: 32 bytes, every field naturally aligned, network byte
 * order. Offsets are part of the specification (docs/protocol.md, "Header").
 */
struct inca_hdr {
	uint8_t version;  /**< INCA_PROTO_VERSION */
	uint8_t type;     /**< enum inca_msg_type */
	uint8_t dtype;    /**< enum inca_dtype (data messages; JOIN: job's dtype) */
	uint8_t op;       /**< enum inca_op (data messages; JOIN: job's op) */
	uint16_t job;     /**< job id, 1..65535; 0 only in HELLO/CAPS */
	uint16_t rank;    /**< worker rank, 0..INCA_MAX_WORKERS-1 */
	uint32_t token;   /**< HELLO, JOIN: the job token; else the session token */
	uint16_t slot;    /**< slot index in the job's pool */
	uint8_t flags;    /**< INCA_F_* */
	int8_t exp;       /**< per-packet exponent (block fixed point) */
	uint32_t seq;     /**< job-wide chunk sequence number */
	uint32_t offset;  /**< element offset of the chunk in its tensor */
	uint16_t count;   /**< number of elements in the body */
	uint16_t reason;  /**< enum inca_nack_reason in a NACK, else 0 */
	uint32_t bitmap;  /**< RESULT: contributor bitmap; ROUTED CONTRIB: the root's bit; else 0 */
};

/** Capability bits (inca_ctrl.caps). */
#define INCA_CAP_NATIVE_FLOAT 0x0001 /**< aggregates fp32/fp16/bf16 natively */
#define INCA_CAP_BFP 0x0002          /**< max of per-packet exponents */
#define INCA_CAP_SEQ_CHECK 0x0004    /**< rejects stale chunks by seq */
#define INCA_CAP_FIXED_COUNT 0x0008  /**< counts only data of exactly max_elems: pad */
#define INCA_CAP_ROCE 0x0010         /**< takes CONTRIBs as RoCEv2 UD SENDs (see below) */
#define INCA_CAP_ROUTED 0x0020       /**< takes ROUTED chunks: ReduceScatter, Reduce, AllGather */
#define INCA_CAP_MASK 0x003f

/**
 * Body of a control message: 32 bytes, network byte order.
 * HELLO and JOIN carry what the worker asks for; CAPS and JOIN_ACK what the
 * aggregator grants; LEAVE, HEARTBEAT and their answers carry zeros except
 * where docs/protocol.md says otherwise.
 */
struct inca_ctrl {
	uint8_t ver_min;     /**< lowest protocol version spoken */
	uint8_t ver_max;     /**< highest protocol version spoken */
	uint16_t dtypes;     /**< bit (1 << enum inca_dtype) per data type */
	uint16_t ops;        /**< bit (1 << enum inca_op) per operation */
	uint16_t max_elems;  /**< largest element count of one data message */
	uint16_t nworkers;   /**< JOIN: job size; JOIN_ACK: the same */
	uint16_t pool_size;  /**< JOIN: slots wanted (0: default); ACK: granted */
	uint16_t window;     /**< chunks in flight per worker (ACK: allowed) */
	uint16_t caps;       /**< INCA_CAP_* */
	uint32_t hb_ms;      /**< heartbeat interval the aggregator expects */
	uint32_t evict_ms;   /**< silence after which a member is evicted */
	uint32_t pool_base;  /**< ACK: first slot of the job (informational) */
	/**
	 * JOIN_ACK: the session token of the job's current incarnation, never
	 * 0. Every later message of the member (CONTRIB, HEARTBEAT, LEAVE)
	 * carries it in inca_hdr.token; a job reset starts a new incarnation
	 * with another session token, so messages of an older one are told
	 * apart and dropped. Zero in every other message.
	 */
	uint32_t session;

};

/* The layout is the specification: these must not move. */
_Static_assert(sizeof(struct inca_hdr) == INCA_HDR_LEN, "inca_hdr size");
_Static_assert(offsetof(struct inca_hdr, job) == 4, "inca_hdr.job");
_Static_assert(offsetof(struct inca_hdr, token) == 8, "inca_hdr.token");
_Static_assert(offsetof(struct inca_hdr, slot) == 12, "inca_hdr.slot");
_Static_assert(offsetof(struct inca_hdr, flags) == 14, "inca_hdr.flags");
_Static_assert(offsetof(struct inca_hdr, exp) == 15, "inca_hdr.exp");
_Static_assert(offsetof(struct inca_hdr, seq) == 16, "inca_hdr.seq");
_Static_assert(offsetof(struct inca_hdr, offset) == 20, "inca_hdr.offset");
_Static_assert(offsetof(struct inca_hdr, count) == 24, "inca_hdr.count");
_Static_assert(offsetof(struct inca_hdr, reason) == 26, "inca_hdr.reason");
_Static_assert(offsetof(struct inca_hdr, bitmap) == 28, "inca_hdr.bitmap");
_Static_assert(sizeof(struct inca_ctrl) == INCA_CTRL_LEN, "inca_ctrl size");
_Static_assert(offsetof(struct inca_ctrl, hb_ms) == 16, "inca_ctrl.hb_ms");
_Static_assert(offsetof(struct inca_ctrl, pool_base) == 24, "inca_ctrl.pool_base");
_Static_assert(offsetof(struct inca_ctrl, session) == 28, "inca_ctrl.session");

/**
 * Why a message or frame was rejected: one distinct reason for every
 * malformed case. X(name, description). The daemon counts drops by these.
 */
#define INCA_WIRE_ERRORS(X) \
	X(OK, "valid") \
	X(ETH_SHORT, "frame shorter than an Ethernet header") \
	X(NOT_IPV4, "ethertype is not IPv4") \
	X(IP_SHORT, "truncated IPv4 header") \
	X(IP_VERSION, "IP version is not 4") \
	X(IP_HDR_LEN, "IPv4 header length below 20 bytes or beyond the frame") \
	X(IP_TOTAL_LEN, "IPv4 total length inconsistent with the frame") \
	X(IP_CSUM, "bad IPv4 header checksum") \
	X(IP_FRAGMENT, "IPv4 fragment") \
	X(NOT_UDP, "IP protocol is not UDP") \
	X(UDP_SHORT, "truncated UDP header") \
	X(UDP_LEN, "UDP length inconsistent with the IP payload") \
	X(UDP_CSUM, "bad UDP checksum") \
	X(WRONG_PORT, "UDP destination port is not the INCA port") \
	X(SHORT, "message shorter than the INCA header") \
	X(VERSION, "unsupported protocol version") \
	X(TYPE, "unknown message type") \
	X(DTYPE, "unknown data type") \
	X(OP, "unknown operation") \
	X(FLAGS, "reserved flag bits set") \
	X(RANK, "rank beyond the largest job") \
	X(JOB, "job id 0 in a job message") \
	X(COUNT, "element count zero or above the limit") \
	X(LEN, "body length does not match the element count") \
	X(CTRL_LEN, "control body has the wrong length") \
	X(REASON, "NACK without a known reason, or reason in a non-NACK") \
	X(CTRL_FIELD, "control body field out of range") \
	X(BFP_DTYPE, "block fixed point flag on a non-int32 message") \
	X(ROUTE, "ROUTED, GATHER or BRIEF flags inconsistent with the message") \
	X(ROCE_SHORT, "RoCEv2 packet shorter than BTH, DETH, INCA header and ICRC") \
	X(ROCE_OPCODE, "BTH opcode is not UD SEND only") \
	X(ROCE_TVER, "BTH transport header version is not 0") \
	X(ROCE_PKEY, "partition key is not the default partition 0xffff") \
	X(ROCE_PAD, "BTH pad count does not leave a whole INCA message") \
	X(ROCE_ICRC, "bad RoCEv2 invariant CRC") \
	X(ROCE_QPN, "destination queue pair is not the aggregator's") \
	X(ROCE_QKEY, "DETH Q_Key is not the aggregator's")

enum inca_wire_err {
#define INCA_X_(n, d) INCA_WIRE_##n,
	INCA_WIRE_ERRORS(INCA_X_)
#undef INCA_X_
	INCA_WIRE_ERR_COUNT
};

/*
 * RoCEv2 data path (docs/protocol.md, "RoCEv2"). A worker whose NIC speaks
 * RoCEv2 may send its CONTRIBs as Unreliable Datagram SEND-only packets and
 * get its RESULTs and data NACKs the same way; the control messages stay on
 * the UDP port. The INCA message is the SEND's payload, unchanged:
 *
 *     Ethernet | IPv4 | UDP (to 4791) | BTH (12) | DETH (8) |
 *     struct inca_hdr | body | pad (0..3 zero bytes) | ICRC (4)
 *
 * A worker binds its queue pair to its membership in JOIN, with a struct
 * inca_roce_ext after the control body; the JOIN_ACK answers with the
 * aggregator's queue pair and Q_Key in the same extension.
 */
/** RoCEv2 UDP destination port (IANA). */
#define INCA_ROCE_PORT 4791
/** Base Transport Header, Datagram Extended Transport Header, invariant CRC. */
#define INCA_BTH_LEN 12
#define INCA_DETH_LEN 8
#define INCA_ICRC_LEN 4
/** Bytes between the UDP header and the INCA header of a RoCEv2 message. */
#define INCA_ROCE_HDR_LEN (INCA_BTH_LEN + INCA_DETH_LEN)
/** BTH opcode of every INCA RoCEv2 packet: UD, SEND only. */
#define INCA_ROCE_OP_UD_SEND_ONLY 0x64
/** The only partition key INCA uses: the default partition, full member. */
#define INCA_ROCE_PKEY 0xffff
/** Queue pair numbers are 24 bits; 0 and 1 are the management QPs. */
#define INCA_ROCE_QPN_MIN 2
#define INCA_ROCE_QPN_MAX 0xffffff
/** Size of the RoCEv2 extension after a JOIN or JOIN_ACK control body. */
#define INCA_ROCE_EXT_LEN 16

/**
 * The RoCEv2 binding carried after the control body of a JOIN (the
 * worker's queue pair and the Q_Key it accepts) and of the JOIN_ACK that
 * admits it (the aggregator's queue pair and Q_Key). Network byte order.
 */
struct inca_roce_ext {
	uint32_t qpn;      /**< queue pair number, INCA_ROCE_QPN_MIN..MAX */
	uint32_t qkey;     /**< Q_Key the sender's queue pair accepts; bit 31 clear */
	uint32_t rsvd[2];  /**< zero */
};

_Static_assert(sizeof(struct inca_roce_ext) == INCA_ROCE_EXT_LEN, "inca_roce_ext size");

/** What inca_roce_parse() read from BTH and DETH, host byte order. */
struct inca_roce_info {
	uint8_t opcode;
	uint8_t pad;     /**< BTH pad count */
	uint16_t pkey;
	uint32_t dqpn;   /**< destination queue pair */
	uint32_t psn;
	uint32_t qkey;
	uint32_t sqpn;   /**< source queue pair */
};

/** Header fields in host byte order: what decode produces and encode takes. */
struct inca_msg {
	uint8_t version;
	uint8_t type;
	uint8_t dtype;
	uint8_t op;
	uint16_t job;
	uint16_t rank;
	uint32_t token;
	uint16_t slot;
	uint8_t flags;
	int8_t exp;
	uint32_t seq;
	uint32_t offset;
	uint16_t count;
	uint16_t reason;
	uint32_t bitmap;
	const void *body;  /**< decode: points into the buffer; never copied */
	size_t body_len;   /**< decode: bytes after the header */
};

/** Control body fields in host byte order. */
struct inca_ctrl_info {
	uint8_t ver_min, ver_max;
	uint16_t dtypes, ops, max_elems, nworkers, pool_size, window, caps;
	uint32_t hb_ms, evict_ms, pool_base, session;
};

/** Where the INCA message sits in an Ethernet frame (see inca_frame_parse). */
struct inca_frame {
	const uint8_t *eth;       /**< frame start */
	uint32_t src_ip, dst_ip;  /**< host byte order */
	uint16_t src_port, dst_port; /**< host byte order */
	const uint8_t *msg;       /**< start of struct inca_hdr */
	size_t msg_len;           /**< UDP payload length */
};

/**
 * 32-bit accumulator lanes one element of @p dtype takes in an aggregator's
 * set: 2 for INT64 and FP64, 1 for the others, 0 if unknown. A data
 * message's count times this is at most the granted max_elems.
 */
static inline unsigned
inca_dtype_lanes(unsigned dtype)
{
	switch (dtype) {
#define INCA_X_(n, v, s) case v: return (s) > INCA_LANE_BYTES ? (s) / INCA_LANE_BYTES : 1;
	INCA_DTYPES(INCA_X_)
#undef INCA_X_
	default:
		return 0;
	}
}

/** Bytes per element of @p dtype, 0 if unknown. Thread-safe. */
unsigned inca_dtype_size(unsigned dtype);
/** Name of a data type ("int32", ...), "?" if unknown. Thread-safe. */
const char *inca_dtype_name(unsigned dtype);
/** Name of an operation ("sum", ...), "?" if unknown. Thread-safe. */
const char *inca_op_name(unsigned op);
/** Name of a message type ("CONTRIB", ...), "?" if unknown. Thread-safe. */
const char *inca_msg_type_name(unsigned type);
/** Symbolic name of a NACK reason ("QUOTA_EXHAUSTED", ...). Thread-safe. */
const char *inca_nack_name(unsigned reason);
/** Description of a NACK reason. Thread-safe. */
const char *inca_nack_str(unsigned reason);
/** Symbolic name of a wire error ("IP_CSUM", ...). Thread-safe. */
const char *inca_wire_err_name(unsigned err);
/** Description of a wire error. Thread-safe. */
const char *inca_wire_err_str(unsigned err);

/**
 * Validate and decode the INCA message in @p buf (a UDP payload).
 * @p max_elems bounds the element count (0: INCA_MAX_ELEMS).
 * @return INCA_WIRE_OK and fills @p m, or the reason the message is invalid
 *         (then @p m is unspecified). Never reads beyond @p len. Thread-safe.
 */
enum inca_wire_err inca_msg_decode(const void *buf, size_t len, unsigned max_elems,
				   struct inca_msg *m);

/**
 * Encode the header of @p m into @p buf (INCA_HDR_LEN bytes); the body is
 * the caller's to place after it. Fields are written as given: encode does
 * not validate. Thread-safe.
 */
void inca_hdr_encode(const struct inca_msg *m, void *buf);

/** Decode a control body (INCA_CTRL_LEN bytes at @p buf). Thread-safe. */
void inca_ctrl_decode(const void *buf, struct inca_ctrl_info *c);
/** Encode a control body into INCA_CTRL_LEN bytes at @p buf. Thread-safe. */
void inca_ctrl_encode(const struct inca_ctrl_info *c, void *buf);

/**
 * Validate an Ethernet / IPv4 / UDP frame and locate the INCA message in it.
 * Checks the IPv4 header checksum, rejects fragments, checks the UDP length
 * and (when non-zero) the UDP checksum, and the destination port against
 * @p udp_port. Does not decode the INCA message itself. Thread-safe.
 */
enum inca_wire_err inca_frame_parse(const void *frame, size_t len, uint16_t udp_port,
				    struct inca_frame *f);

/**
 * Build a complete Ethernet / IPv4 / UDP frame around an INCA message of
 * @p msg_len bytes already placed at frame + INCA_ENCAP_LEN: fills the
 * Ethernet, IPv4 (with checksum, TTL 64, DF set) and UDP headers (with
 * checksum). Addresses and ports in host byte order; MACs as 6 bytes.
 * Returns the frame length. Thread-safe.
 */
size_t inca_frame_build(void *frame, const uint8_t dst_mac[6], const uint8_t src_mac[6],
			uint32_t src_ip, uint32_t dst_ip, uint16_t src_port, uint16_t dst_port,
			size_t msg_len);

/**
 * Validate the BTH and DETH of a RoCEv2 UDP payload (@p buf, @p len bytes
 * from the BTH up to and including the ICRC) and locate the INCA message:
 * length, opcode, transport version, partition key and pad count, in the
 * order of enum inca_wire_err. The ICRC, queue pair and Q_Key are the
 * receiver's to check. Fills @p r, and @p msg / @p msg_len with the INCA
 * message (without pad and ICRC). Thread-safe.
 */
enum inca_wire_err inca_roce_parse(const void *buf, size_t len, struct inca_roce_info *r,
				   const uint8_t **msg, size_t *msg_len);

/**
 * Write BTH and DETH from @p r (opcode, pkey, dqpn, psn, qkey, sqpn; the pad
 * count is computed) into the INCA_ROCE_HDR_LEN bytes at @p buf, in front
 * of an INCA message of @p msg_len bytes that must follow them, and zero
 * the pad bytes after the message. Returns the RoCEv2 UDP payload length
 * (headers, message, pad and the ICRC, which is left for the sender to
 * compute). Thread-safe.
 */
size_t inca_roce_encap(void *buf, const struct inca_roce_info *r, size_t msg_len);

/**
 * The RoCEv2 binding of a JOIN or JOIN_ACK @p m decoded by
 * inca_msg_decode(): 1 and @p x filled (host byte order) if it carries
 * one, else 0. Thread-safe.
 */
int inca_roce_ext_decode(const struct inca_msg *m, struct inca_roce_ext *x);
/** Encode @p x (host byte order) into INCA_ROCE_EXT_LEN bytes at @p buf. */
void inca_roce_ext_encode(const struct inca_roce_ext *x, void *buf);

/** RFC 1071 Internet checksum of @p len bytes starting from @p sum. */
uint16_t inca_csum(const void *buf, size_t len, uint32_t sum);

#ifdef __cplusplus
}
#endif

#endif /* INCA_WIRE_H */

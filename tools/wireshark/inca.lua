-- SPDX-License-Identifier: BSD-3-Clause
-- Copyright (c) 2026 The INCA authors
--
-- Wireshark / tshark dissector for the INCA protocol, version 2.
--
-- docs/protocol.md is the specification and lib/include/inca/wire.h its C
-- definition. The tables below repeat wire.h's X-macros; tests/wireshark/
-- compares them (through "tshark -G values" and "-G fields") with the
-- tables compiled from wire.h, so an edit to one without the other fails
-- the test suite. The checks that raise expert info follow the message
-- checks of the spec's "Validation" section and the "RoCEv2 checks" of its
-- "RoCEv2 transport" section; the test feeds this dissector one frame per
-- check and expects the reason the codec gives.
--
-- RoCEv2: INCA over RoCE is a UD SEND-only to UDP port 4791, and
-- Wireshark's InfiniBand dissector owns that port: it dissects BTH and
-- DETH and hands the SEND's payload (the INCA message and its pad, without
-- the ICRC) to the heuristic dissectors of "infiniband.payload". This file
-- hooks INCA there rather than taking port 4791 from it, because
--  - every other RDMA flow on the same capture (RC traffic, CNPs, other UD
--    applications) keeps its InfiniBand dissection instead of being shown
--    as broken INCA;
--  - BTH and DETH are shown, with their filter fields (infiniband.bth.*,
--    infiniband.deth.*), by the dissector that knows every opcode.
-- What it costs: this dissector only sees what the InfiniBand dissector
-- passes on, and claims only a UD SEND-only whose payload starts with
-- INCA's version and a known message type (there is no INCA port to say
-- "this is INCA regardless"). So of the spec's RoCEv2 checks it makes
-- ROCE_SHORT, ROCE_TVER, ROCE_PKEY, ROCE_PAD and ROCE_ICRC (the ICRC is
-- computed here from the IPv4, UDP and InfiniBand bytes: the InfiniBand
-- dissector of Wireshark 4.0 shows the ICRC but does not verify it), and
-- not these:
--  - ROCE_OPCODE: a packet that is not a UD SEND-only is not INCA to a
--    dissector that does not own the port (incad only drops it because it
--    reached the aggregator's address); it stays the InfiniBand
--    dissector's;
--  - ROCE_QPN and ROCE_QKEY: the aggregator's queue pair and Q_Key are its
--    own configuration (they appear in a JOIN_ACK's RoCEv2 extension, which
--    may not be in the capture); a dissector cannot know them.
--
-- Use: tshark -X lua_script:tools/wireshark/inca.lua ..., or copy this file
-- to ~/.local/lib/wireshark/plugins/ (see tools/wireshark/README.md).

local PROTO_VERSION = 2
local UDP_PORT = 18766
local HDR_LEN = 32
local CTRL_LEN = 32
local MAX_WORKERS = 32
local MAX_ELEMS = 4096
local MAX_PAYLOAD_BYTES = 8192

-- RoCEv2 (wire.h INCA_BTH_LEN .. INCA_ROCE_EXT_LEN).
local BTH_LEN, DETH_LEN, ICRC_LEN = 12, 8, 4
local ROCE_OP_UD_SEND_ONLY = 0x64
local ROCE_PKEY = 0xffff
local ROCE_QPN_MIN, ROCE_QPN_MAX = 2, 0xffffff
local ROCE_EXT_LEN = 16

-- INCA_MSG_TYPES: value = { name, description }.
local MSG_TYPES = {
	[1] = { "CONTRIB", "contribution of one chunk from a worker" },
	[2] = { "RESULT", "aggregated chunk from the aggregator" },
	[3] = { "HELLO", "capability query from a worker" },
	[4] = { "CAPS", "capabilities of the aggregator" },
	[5] = { "JOIN", "a worker joins a job" },
	[6] = { "JOIN_ACK", "the aggregator admitted the worker" },
	[7] = { "LEAVE", "a worker leaves a job" },
	[8] = { "LEAVE_ACK", "the aggregator released the worker" },
	[9] = { "HEARTBEAT", "liveness of a member" },
	[10] = { "HEARTBEAT_ACK", "liveness answer of the aggregator" },
	[11] = { "NACK", "a request was refused; reason in the header" },
}
local T_CONTRIB, T_RESULT, T_HELLO, T_CAPS = 1, 2, 3, 4
local T_JOIN, T_JOIN_ACK, T_NACK = 5, 6, 11

-- INCA_DTYPES: value = { name (as inca_dtype_name()), bytes per element }.
local DTYPES = {
	[0] = { "int32", 4 },
	[1] = { "fp32", 4 },
	[2] = { "fp16", 2 },
	[3] = { "bf16", 2 },
	[4] = { "int64", 8 },
	[5] = { "fp64", 8 },
}
local D_INT32, D_INT64, D_FP64 = 0, 4, 5

-- INCA_OPS: value = name (as inca_op_name()).
local OPS = {
	[0] = "sum",
	[1] = "min",
	[2] = "max",
}

-- INCA_F_*: { name, mask, description }; INCA_F_MASK is their union.
local FLAGS = {
	{ "SET", 0x01, "shadow set 1 of the slot" },
	{ "RETX", 0x02, "retransmission (CONTRIB) or replay (RESULT)" },
	{ "LAST", 0x04, "last chunk of a collective" },
	{ "BFP", 0x08, "int32 payload is block fixed point; exp is its exponent" },
	{ "ROUTED", 0x10, "the chunk has a root; a CONTRIB's bitmap names it" },
	{ "GATHER", 0x20, "only the root contributes elements; the others receive them" },
	{ "BRIEF", 0x40, "no body: a non-root's gather contribution, or a done result" },
}
local F_SET, F_RETX, F_LAST, F_BFP, F_MASK = 0x01, 0x02, 0x04, 0x08, 0x7f
local F_ROUTED, F_GATHER, F_BRIEF = 0x10, 0x20, 0x40

-- INCA_NACK_REASONS: value = { name, description }.
local NACK_REASONS = {
	[1] = { "BAD_VERSION", "protocol version not supported" },
	[2] = { "UNKNOWN_JOB", "no such job on this aggregator" },
	[3] = { "NOT_MEMBER", "sender is not an admitted member of the job" },
	[4] = { "BAD_TOKEN", "job token does not match" },
	[5] = { "QUOTA_EXHAUSTED", "tenant slot quota exhausted" },
	[6] = { "NO_SLOTS", "aggregator slot memory exhausted" },
	[7] = { "JOB_FULL", "job already has all its ranks" },
	[8] = { "BAD_PARAMS", "job parameters do not match the job" },
	[9] = { "UNSUPPORTED_DTYPE", "data type not supported" },
	[10] = { "UNSUPPORTED_OP", "operation not supported" },
	[11] = { "TOO_LARGE", "payload larger than negotiated" },
	[12] = { "SHUTTING_DOWN", "aggregator is shutting down" },
	[13] = { "EVICTED", "member was evicted (silent too long)" },
	[14] = { "MEMBER_LOST", "the job lost a member; rejoin before contributing" },
	[15] = { "RATE_LIMITED", "too many control messages from this source" },
	[16] = { "MISMATCH", "the ranks' contributions to one chunk differ (count, dtype, op, offset or BFP)" },
	[17] = { "HELD", "contribution held back: its tenant is over its rate, or its job's priority class over its share of the aggregator; send it again after a back-off" },
}

-- INCA_CAP_*: { name, mask }; INCA_CAP_MASK is their union.
local CAPS = {
	{ "NATIVE_FLOAT", 0x0001 },
	{ "BFP", 0x0002 },
	{ "SEQ_CHECK", 0x0004 },
	{ "FIXED_COUNT", 0x0008 },
	{ "ROCE", 0x0010 },
	{ "ROUTED", 0x0020 },
}
local CAP_MASK = 0x003f

-- The message checks of INCA_WIRE_ERRORS (from SHORT on; the frame checks
-- before it are Ethernet, IPv4 and UDP's, which Wireshark dissects itself),
-- then the RoCEv2 checks this dissector can make (see the top of the file
-- for ROCE_OPCODE, ROCE_QPN and ROCE_QKEY).
local WIRE_ERRORS = {
	{ "SHORT", "message shorter than the INCA header" },
	{ "VERSION", "unsupported protocol version" },
	{ "TYPE", "unknown message type" },
	{ "DTYPE", "unknown data type" },
	{ "OP", "unknown operation" },
	{ "FLAGS", "reserved flag bits set" },
	{ "RANK", "rank beyond the largest job" },
	{ "JOB", "job id 0 in a job message" },
	{ "COUNT", "element count zero or above the limit" },
	{ "LEN", "body length does not match the element count" },
	{ "CTRL_LEN", "control body has the wrong length" },
	{ "REASON", "NACK without a known reason, or reason in a non-NACK" },
	{ "CTRL_FIELD", "control body field out of range" },
	{ "BFP_DTYPE", "block fixed point flag on a non-int32 message" },
	{ "ROUTE", "ROUTED, GATHER or BRIEF flags inconsistent with the message" },
	{ "ROCE_SHORT", "RoCEv2 packet shorter than BTH, DETH, INCA header and ICRC" },
	{ "ROCE_TVER", "BTH transport header version is not 0" },
	{ "ROCE_PKEY", "partition key is not the default partition 0xffff" },
	{ "ROCE_PAD", "BTH pad count does not leave a whole INCA message" },
	{ "ROCE_ICRC", "bad RoCEv2 invariant CRC" },
}

local inca = Proto("inca", "INCA In-Network Collective Aggregation")

local function names_of(tbl)
	local vs = {}
	for v, e in pairs(tbl) do
		vs[v] = type(e) == "table" and e[1] or e
	end
	return vs
end

-- INCA_NACK_NONE (0) is in the enum but not a reason a NACK may carry.
local reason_names = names_of(NACK_REASONS)
reason_names[0] = "NONE"

local hf = {
	version = ProtoField.uint8("inca.version", "Version", base.DEC),
	type = ProtoField.uint8("inca.type", "Type", base.DEC, names_of(MSG_TYPES)),
	dtype = ProtoField.uint8("inca.dtype", "Data type", base.DEC, names_of(DTYPES)),
	op = ProtoField.uint8("inca.op", "Operation", base.DEC, names_of(OPS)),
	job = ProtoField.uint16("inca.job", "Job", base.DEC),
	rank = ProtoField.uint16("inca.rank", "Rank", base.DEC),
	token = ProtoField.uint32("inca.token", "Token", base.HEX),
	slot = ProtoField.uint16("inca.slot", "Slot", base.DEC),
	flags = ProtoField.uint8("inca.flags", "Flags", base.HEX),
	flags_reserved = ProtoField.uint8("inca.flags.reserved", "Reserved flags", base.HEX,
					  nil, 0xff - F_MASK),
	exp = ProtoField.int8("inca.exp", "Exponent", base.DEC),
	seq = ProtoField.uint32("inca.seq", "Sequence number", base.DEC),
	offset = ProtoField.uint32("inca.offset", "Element offset", base.DEC),
	count = ProtoField.uint16("inca.count", "Element count", base.DEC),
	reason = ProtoField.uint16("inca.reason", "Reason", base.DEC, reason_names),
	bitmap = ProtoField.uint32("inca.bitmap", "Contributor bitmap", base.HEX),
	contributors = ProtoField.uint8("inca.bitmap.contributors", "Contributors",
					base.DEC),

	ctrl = ProtoField.bytes("inca.ctrl", "Control body"),
	ver_min = ProtoField.uint8("inca.ctrl.ver_min", "Lowest version", base.DEC),
	ver_max = ProtoField.uint8("inca.ctrl.ver_max", "Highest version", base.DEC),
	dtypes = ProtoField.uint16("inca.ctrl.dtypes", "Data types", base.HEX),
	ops = ProtoField.uint16("inca.ctrl.ops", "Operations", base.HEX),
	max_elems = ProtoField.uint16("inca.ctrl.max_elems", "Max elements", base.DEC),
	nworkers = ProtoField.uint16("inca.ctrl.nworkers", "Workers", base.DEC),
	pool_size = ProtoField.uint16("inca.ctrl.pool_size", "Pool size", base.DEC),
	window = ProtoField.uint16("inca.ctrl.window", "Window", base.DEC),
	caps = ProtoField.uint16("inca.ctrl.caps", "Capabilities", base.HEX),
	caps_reserved = ProtoField.uint16("inca.ctrl.caps.reserved", "Reserved capability bits",
					  base.HEX, nil, 0xffff - CAP_MASK),
	hb_ms = ProtoField.uint32("inca.ctrl.hb_ms", "Heartbeat interval (ms)", base.DEC),
	evict_ms = ProtoField.uint32("inca.ctrl.evict_ms", "Eviction timeout (ms)", base.DEC),
	pool_base = ProtoField.uint32("inca.ctrl.pool_base", "Pool base", base.DEC),
	session = ProtoField.uint32("inca.ctrl.session", "Session token", base.HEX),

	roce_ext = ProtoField.bytes("inca.roce_ext", "RoCEv2 extension"),
	roce_ext_qpn = ProtoField.uint32("inca.roce_ext.qpn", "Queue pair", base.HEX),
	roce_ext_qkey = ProtoField.uint32("inca.roce_ext.qkey", "Q_Key", base.HEX),
	roce_ext_reserved = ProtoField.uint64("inca.roce_ext.reserved", "Reserved", base.HEX),

	roce = ProtoField.none("inca.roce", "RoCEv2 envelope"),
	roce_pad = ProtoField.bytes("inca.roce.pad", "Pad"),
	roce_icrc = ProtoField.uint32("inca.roce.icrc", "Invariant CRC", base.HEX),
	roce_icrc_computed = ProtoField.uint32("inca.roce.icrc.computed",
					       "Computed invariant CRC", base.HEX),

	payload = ProtoField.bytes("inca.payload", "Payload"),
	elems_hidden = ProtoField.uint32("inca.payload.not_shown", "Elements not shown",
					 base.DEC),
	trailing = ProtoField.bytes("inca.trailing", "Trailing bytes"),
	undecoded = ProtoField.bytes("inca.undecoded", "Undecoded bytes"),
}

-- One boolean field per flag, data type bit, operation bit and capability.
local flag_hf, dtype_bit_hf, op_bit_hf, cap_hf = {}, {}, {}, {}
for i, f in ipairs(FLAGS) do
	flag_hf[i] = ProtoField.bool("inca.flags." .. f[1]:lower(), f[1], 8, nil, f[2], f[3])
	hf["flag_" .. f[1]] = flag_hf[i]
end
local dtype_mask, op_mask = 0, 0
for v = 0, 15 do
	if DTYPES[v] then
		dtype_bit_hf[v] = ProtoField.bool("inca.ctrl.dtypes." .. DTYPES[v][1],
						  DTYPES[v][1], 16, nil, 2 ^ v)
		hf["dtype_bit_" .. v] = dtype_bit_hf[v]
		dtype_mask = dtype_mask + 2 ^ v
	end
	if OPS[v] then
		op_bit_hf[v] = ProtoField.bool("inca.ctrl.ops." .. OPS[v], OPS[v], 16, nil, 2 ^ v)
		hf["op_bit_" .. v] = op_bit_hf[v]
		op_mask = op_mask + 2 ^ v
	end
end
for i, c in ipairs(CAPS) do
	cap_hf[i] = ProtoField.bool("inca.ctrl.caps." .. c[1]:lower(), c[1], 16, nil, c[2])
	hf["cap_" .. c[1]] = cap_hf[i]
end
hf.dtypes_other = ProtoField.uint16("inca.ctrl.dtypes.other", "Other data type bits",
				    base.HEX, nil, 0xffff - dtype_mask)
hf.ops_other = ProtoField.uint16("inca.ctrl.ops.other", "Other operation bits",
				 base.HEX, nil, 0xffff - op_mask)

-- Elements, one field per data type so that filters compare numbers.
local elem_hf = {
	[0] = ProtoField.int32("inca.elem.int32", "Element", base.DEC),
	[1] = ProtoField.float("inca.elem.fp32", "Element"),
	[2] = ProtoField.float("inca.elem.fp16", "Element"),
	[3] = ProtoField.float("inca.elem.bf16", "Element"),
	[4] = ProtoField.int64("inca.elem.int64", "Element", base.DEC),
	[5] = ProtoField.double("inca.elem.fp64", "Element"),
}
for v, f in pairs(elem_hf) do
	hf["elem_" .. v] = f
end

local fields = {}
for _, f in pairs(hf) do
	fields[#fields + 1] = f
end
inca.fields = fields

-- Expert info: one per message check, named inca.err.<reason in lower case>.
local ef = {}
local experts = {}
for _, e in ipairs(WIRE_ERRORS) do
	ef[e[1]] = ProtoExpert.new("inca.err." .. e[1]:lower(), e[2], expert.group.MALFORMED,
				   expert.severity.ERROR)
	experts[#experts + 1] = ef[e[1]]
end
ef.nack = ProtoExpert.new("inca.nack", "NACK", expert.group.RESPONSE_CODE,
			  expert.severity.NOTE)
ef.retx = ProtoExpert.new("inca.retx", "Retransmission or replay", expert.group.SEQUENCE,
			  expert.severity.CHAT)
experts[#experts + 1] = ef.nack
experts[#experts + 1] = ef.retx
inca.experts = experts

inca.prefs.udp_port = Pref.uint("UDP port", UDP_PORT,
				"UDP port of the aggregator (incad's udp_port; default 18766)")
-- Wireshark applies --disable-heuristic and heuristic_protos before Lua
-- scripts register, so this dissector's heuristic has its own switch.
inca.prefs.heuristic = Pref.bool("Heuristic on other ports", true,
				 "Recognize well-formed INCA v1 messages on any UDP port")
inca.prefs.roce = Pref.bool("INCA in RoCEv2", true,
			    "Recognize INCA messages in RoCEv2 UD SENDs (UDP port 4791)")
inca.prefs.max_shown = Pref.uint("Elements shown", 16,
				 "How many payload elements to show per message (0: all)")

-- The header's fields in order: { hf key, offset, size }.
local HDR_FIELDS = {
	{ "version", 0, 1 }, { "type", 1, 1 }, { "dtype", 2, 1 }, { "op", 3, 1 },
	{ "job", 4, 2 }, { "rank", 6, 2 }, { "token", 8, 4 }, { "slot", 12, 2 },
	{ "flags", 14, 1 }, { "exp", 15, 1 }, { "seq", 16, 4 }, { "offset", 20, 4 },
	{ "count", 24, 2 }, { "reason", 26, 2 }, { "bitmap", 28, 4 },
}

local function is_data(t)
	return t == T_CONTRIB or t == T_RESULT
end

-- 16-bit floats to Lua numbers by arithmetic, so that no bit library is needed.
local function fp16_value(h)
	local neg = h >= 0x8000
	local e = math.floor(h / 1024) % 32
	local m = h % 1024
	local v
	if e == 0 then
		v = m * 2 ^ -24
	elseif e == 31 then
		if m ~= 0 then
			return 0 / 0
		end
		v = math.huge
	else
		v = (1024 + m) * 2 ^ (e - 25)
	end
	return neg and -v or v
end

local function bf16_value(b)
	local neg = b >= 0x8000
	local e = math.floor(b / 128) % 256
	local m = b % 128
	local v
	if e == 0 then
		v = m * 2 ^ -133
	elseif e == 255 then
		if m ~= 0 then
			return 0 / 0
		end
		v = math.huge
	else
		v = (128 + m) * 2 ^ (e - 134)
	end
	return neg and -v or v
end

-- %.9g is exact for fp32, %.17g for fp64 (@digits).
local function fmt_float(v, digits)
	if v ~= v then
		return "NaN"
	elseif v == math.huge then
		return "inf"
	elseif v == -math.huge then
		return "-inf"
	elseif v == 0 and 1 / v < 0 then
		return "-0"
	end
	return string.format("%." .. (digits or 9) .. "g", v)
end

local function has(flags, f)
	return math.floor(flags / f) % 2 == 1
end

-- The ROUTE row of the message checks: nil, or what is wrong.
local function route_error(h)
	local routed, gather, brief = has(h.flags, F_ROUTED), has(h.flags, F_GATHER),
		has(h.flags, F_BRIEF)
	if not routed then
		if gather or brief then
			return "GATHER or BRIEF without ROUTED"
		end
		return nil
	end
	if gather and has(h.flags, F_BFP) then
		return "GATHER with BFP"
	end
	if h.type ~= T_CONTRIB then
		return nil
	end
	local b = h.bitmap
	local bits = 0
	while b > 0 do
		bits = bits + b % 2
		b = math.floor(b / 2)
	end
	if bits > 1 then
		return "the root bitmap has more than one bit"
	end
	if not gather then
		return brief and "BRIEF without GATHER" or nil
	end
	local root = h.bitmap == 2 ^ h.rank
	if root == brief then
		return root and "BRIEF from the root" or "elements from a rank that is not the root"
	end
	return nil
end

local function flag_names(flags)
	local s = {}
	for _, f in ipairs(FLAGS) do
		if math.floor(flags / f[2]) % 2 == 1 then
			s[#s + 1] = f[1]
		end
	end
	return s
end

local function bitmap_ranks(bm)
	local s, n = {}, 0
	for r = 0, 31 do
		if math.floor(bm / 2 ^ r) % 2 == 1 then
			s[#s + 1] = tostring(r)
			n = n + 1
		end
	end
	return table.concat(s, ","), n
end

-- The payload of a data message: count elements of dtype, the first
-- max_shown of them as items.
local function dissect_payload(tvb, tree, h, body_len)
	local size = DTYPES[h.dtype][2]
	local cap = tvb:len()
	if body_len == 0 then
		return
	end
	local avail = math.min(body_len, cap - HDR_LEN)
	local pt = tree:add(hf.payload, tvb(HDR_LEN, avail))
	pt:set_text(string.format("Payload: %d bytes, %d x %s", body_len,
				  math.floor(body_len / size), DTYPES[h.dtype][1]))
	local n = math.floor(body_len / size)
	local shown = n
	local max = inca.prefs.max_shown
	if max > 0 and shown > max then
		shown = max
	end
	local f = elem_hf[h.dtype]
	for i = 0, shown - 1 do
		local off = HDR_LEN + i * size
		if off + size > cap then
			-- The capture was cut (snaplen): no more bytes to show.
			shown = i
			break
		end
		local r = tvb(off, size)
		if h.dtype == D_INT32 then
			pt:add(f, r, r:int(), string.format("[%d] %d", i, r:int()))
		elseif h.dtype == D_INT64 then
			local v = r:int64()
			pt:add(f, r, v, string.format("[%d] %s", i, tostring(v)))
		elseif h.dtype == D_FP64 then
			local v = r:float()
			pt:add(f, r, v, string.format("[%d] %s (0x%s)", i, fmt_float(v, 17),
						      r:uint64():tohex(16)))
		elseif h.dtype == 1 then
			local v = r:float()
			local bits = r:uint()
			pt:add(f, r, v, string.format("[%d] %s (0x%08x)", i, fmt_float(v), bits))
		else
			local bits = r:uint()
			local v = h.dtype == 2 and fp16_value(bits) or bf16_value(bits)
			pt:add(f, r, v, string.format("[%d] %s (0x%04x)", i, fmt_float(v), bits))
		end
	end
	if shown < n then
		local it = pt:add(hf.elems_hidden, n - shown)
		it:set_generated()
		it:set_text(string.format("[%d more elements not shown; %d in all]", n - shown, n))
	end
	if body_len > n * size and cap > HDR_LEN + n * size then
		pt:add(hf.trailing, tvb(HDR_LEN + n * size, math.min(cap, HDR_LEN + body_len) -
			HDR_LEN - n * size))
	end
end

local function err_text(name, detail)
	for _, e in ipairs(WIRE_ERRORS) do
		if e[1] == name then
			return detail and (e[2] .. ": " .. detail) or e[2]
		end
	end
	return name
end

-- The control body (32 bytes at HDR_LEN; the caller checked they are there).
-- Returns the decoded values; with check (a body of the right length, as a
-- receiver would check it) marks the fields out of range (CTRL_FIELD).
local function dissect_ctrl(tvb, tree, h, check)
	local ct = tree:add(hf.ctrl, tvb(HDR_LEN, CTRL_LEN))
	ct:set_text("Control body")
	local c = {}
	local function add(key, off, size)
		local r = tvb(HDR_LEN + off, size)
		c[key] = r:uint()
		return ct:add(hf[key], r), r
	end
	local bad = {}
	local vmin_it = add("ver_min", 0, 1)
	local vmax_it = add("ver_max", 1, 1)
	local dt_it, dt_r = add("dtypes", 2, 2)
	for v = 0, 15 do
		if dtype_bit_hf[v] then
			dt_it:add(dtype_bit_hf[v], dt_r)
		end
	end
	dt_it:add(hf.dtypes_other, dt_r)
	local op_it, op_r = add("ops", 4, 2)
	for v = 0, 15 do
		if op_bit_hf[v] then
			op_it:add(op_bit_hf[v], op_r)
		end
	end
	op_it:add(hf.ops_other, op_r)
	local me_it = add("max_elems", 6, 2)
	local nw_it = add("nworkers", 8, 2)
	local ps_it = add("pool_size", 10, 2)
	local win_it = add("window", 12, 2)
	local caps_it, caps_r = add("caps", 14, 2)
	for _, f in ipairs(cap_hf) do
		caps_it:add(f, caps_r)
	end
	local capres_it = caps_it:add(hf.caps_reserved, caps_r)
	add("hb_ms", 16, 4)
	add("evict_ms", 20, 4)
	add("pool_base", 24, 4)
	add("session", 28, 4)

	if c.ver_min > c.ver_max then
		bad[#bad + 1] = { vmin_it, "ver_min above ver_max" }
	end
	if c.nworkers > MAX_WORKERS then
		bad[#bad + 1] = { nw_it, "nworkers above " .. MAX_WORKERS }
	end
	if h.type == T_JOIN and c.nworkers == 0 then
		bad[#bad + 1] = { nw_it, "nworkers 0 in a JOIN" }
	end
	if c.window ~= 0 and c.pool_size ~= 0 and c.window > c.pool_size then
		bad[#bad + 1] = { win_it, "window above pool_size" }
	end
	if c.max_elems > MAX_ELEMS then
		bad[#bad + 1] = { me_it, "max_elems above " .. MAX_ELEMS }
	end
	if c.caps % 65536 - c.caps % (CAP_MASK + 1) ~= 0 then
		bad[#bad + 1] = { capres_it, "unknown capability bits" }
	end
	if not check then
		return c, false
	end
	for _, b in ipairs(bad) do
		b[1]:add_proto_expert_info(ef.CTRL_FIELD, err_text("CTRL_FIELD", b[2]))
	end
	return c, #bad > 0
end

-- The RoCEv2 extension of a JOIN or JOIN_ACK (16 bytes after the control
-- body; the caller checked they are there). With check, marks it as
-- wire.c's check_roce_ext() would (CTRL_FIELD). Returns it and whether it
-- is bad.
local function dissect_roce_ext(tvb, tree, check)
	local off = HDR_LEN + CTRL_LEN
	local xt = tree:add(hf.roce_ext, tvb(off, ROCE_EXT_LEN))
	xt:set_text("RoCEv2 extension")
	local x = {
		qpn = tvb(off, 4):uint(),
		qkey = tvb(off + 4, 4):uint(),
		rsvd = tvb(off + 8, 8):uint64(),
	}
	local qpn_it = xt:add(hf.roce_ext_qpn, tvb(off, 4))
	local qkey_it = xt:add(hf.roce_ext_qkey, tvb(off + 4, 4))
	local rsvd_it = xt:add(hf.roce_ext_reserved, tvb(off + 8, 8))
	local bad = {}
	if x.qpn < ROCE_QPN_MIN or x.qpn > ROCE_QPN_MAX then
		bad[#bad + 1] = { qpn_it, string.format("queue pair 0x%x outside 0x%x..0x%x",
							x.qpn, ROCE_QPN_MIN, ROCE_QPN_MAX) }
	end
	if x.qkey >= 0x80000000 then
		bad[#bad + 1] = { qkey_it, "controlled Q_Key (bit 31 set)" }
	end
	if tostring(x.rsvd) ~= "0" then
		bad[#bad + 1] = { rsvd_it, "reserved bytes not 0" }
	end
	xt:append_text(string.format(": queue pair 0x%06x, Q_Key 0x%08x", x.qpn, x.qkey))
	if not check then
		return x, false
	end
	for _, b in ipairs(bad) do
		b[1]:add_proto_expert_info(ef.CTRL_FIELD, err_text("CTRL_FIELD", b[2]))
	end
	return x, #bad > 0
end

-- CRC-32 as the Ethernet FCS (reflected 0x04C11DB7), for the ICRC. Lua 5.2
-- (Wireshark 4.0) has bit32; Lua 5.3 and later have operators, which 5.2
-- cannot parse, so they are compiled only when bit32 is missing.
local band, bxor, rshift
if bit32 then
	band, bxor, rshift = bit32.band, bit32.bxor, bit32.rshift
else
	band, bxor, rshift = load("return function(a, b) return a & b end, " ..
				  "function(a, b) return a ~ b end, " ..
				  "function(a, n) return a >> n end")()
end
local crc_table = {}
for i = 0, 255 do
	local c = i
	for _ = 1, 8 do
		if c % 2 == 1 then
			c = bxor(rshift(c, 1), 0xedb88320)
		else
			c = rshift(c, 1)
		end
	end
	crc_table[i] = c
end

local function crc32_update(crc, s)
	for i = 1, #s do
		crc = bxor(crc_table[bxor(band(crc, 0xff), s:byte(i))], rshift(crc, 8))
	end
	return crc
end

-- The ICRC of a RoCEv2 packet (docs/protocol.md, "Packet layout"): over 8
-- bytes of ones, the IPv4 header, the UDP header and BTH to the end of the
-- payload, with what routers may change (type of service, TTL, IPv4
-- checksum, UDP checksum, BTH byte 4) replaced by ones.
local function icrc_of(ip, udp, ib)
	local h = ip:raw()
	h = h:sub(1, 1) .. "\255" .. h:sub(3, 8) .. "\255" .. h:sub(10, 10) .. "\255\255" ..
		h:sub(13)
	local u = udp:raw():sub(1, 6) .. "\255\255"
	local b = ib:raw()
	b = b:sub(1, 4) .. "\255" .. b:sub(6)
	local crc = crc32_update(0xffffffff, string.rep("\255", 8))
	crc = crc32_update(crc, h)
	crc = crc32_update(crc, u)
	crc = crc32_update(crc, b)
	return bxor(crc, 0xffffffff)
end

-- The RoCEv2 envelope around a message: tvb is the SEND's payload (message
-- and pad), env the ranges roce_envelope() found. Makes the RoCEv2 checks
-- a dissector can, in the spec's order, under one subtree of t. Returns the
-- message without its pad, and whether the payload is too short for a
-- header (then the message checks have nothing to add). A pad count that
-- would cut into the header (ROCE_PAD) is not applied: the message shown
-- is then the whole payload.
local function dissect_envelope(tvb, t, env, flag_err)
	local ib = env.ib
	local payload = tvb:reported_len()
	local b1 = ib:range(1, 1):uint()
	local pad = math.floor(b1 / 16) % 4
	local tver = b1 % 16
	local pkey = ib:range(2, 2):uint()
	local rt = t:add(hf.roce, ib)
	rt:set_text(string.format("RoCEv2 UD SEND: destination QP 0x%06x, source QP 0x%06x, " ..
				  "pad %d", env.dqp, env.sqp, pad))

	local short = payload < HDR_LEN
	if short then
		flag_err("ROCE_SHORT", rt,
			 string.format("%d bytes between DETH and ICRC", payload))
	end
	if tver ~= 0 then
		flag_err("ROCE_TVER", rt, string.format("version %d", tver))
	end
	if pkey ~= ROCE_PKEY then
		flag_err("ROCE_PKEY", rt, string.format("0x%04x", pkey))
	end
	-- A short payload fails this check too; ROCE_SHORT says it first.
	if not short and (payload % 4 ~= 0 or payload - pad < HDR_LEN) then
		flag_err("ROCE_PAD", rt, string.format("%d bytes with pad count %d", payload, pad))
	end
	local n = ib:len()
	if n == BTH_LEN + DETH_LEN + payload + ICRC_LEN then
		local icrc_r = ib:range(n - ICRC_LEN, ICRC_LEN)
		local got = icrc_r:le_uint()
		local want = icrc_of(env.ip, env.udp, ib:range(0, n - ICRC_LEN))
		-- Sent least significant byte first, as the Ethernet FCS.
		rt:add_le(hf.roce_icrc, icrc_r)
		local it = rt:add(hf.roce_icrc_computed, want)
		it:set_generated()
		if got ~= want then
			flag_err("ROCE_ICRC", it, string.format("0x%08x received, 0x%08x computed",
								got, want))
		end
	end

	local msg_len = payload - pad
	if msg_len < HDR_LEN then
		msg_len = payload
	end
	if msg_len < payload then
		rt:add(hf.roce_pad, tvb(msg_len, payload - msg_len))
	end
	return tvb(0, math.min(msg_len, tvb:len())):tvb(), short
end

-- Dissects one INCA message: a whole UDP payload, or with env the payload
-- of a RoCEv2 UD SEND (message and pad; see roce_heuristic). Never raises:
-- every length is checked before a read, and what cannot be parsed is
-- shown as bytes with expert info.
local function dissect(tvb, pinfo, tree, env)
	pinfo.cols.protocol = "INCA"
	local t = tree:add(inca, tvb())
	local items = {}
	local errs = {}
	local function flag_err(name, item, detail)
		local target = item or t
		errs[#errs + 1] = name
		target:add_proto_expert_info(ef[name], err_text(name, detail))
	end
	local roce_short = false
	local via = ""
	if env then
		tvb, roce_short = dissect_envelope(tvb, t, env, flag_err)
		via = string.format(" RoCEv2 sqp=0x%x dqp=0x%x", env.sqp, env.dqp)
	end
	local function malformed()
		return #errs > 0 and " [malformed: " .. table.concat(errs, ",") .. "]" or ""
	end
	local cap = tvb:len()
	local len = tvb:reported_len()

	if len < HDR_LEN then
		for _, f in ipairs(HDR_FIELDS) do
			if f[2] + f[3] <= cap then
				t:add(hf[f[1]], tvb(f[2], f[3]))
			end
		end
		if not roce_short then
			flag_err("SHORT", t, string.format("%d bytes", len))
		end
		pinfo.cols.info = string.format("INCA short message (%d bytes)%s%s", len, via,
						malformed())
		t:append_text(", short message")
		return cap
	end
	if cap < HDR_LEN then
		-- The header itself was cut by the capture's snaplen.
		t:append_text(", header not captured")
		pinfo.cols.info = "INCA [header not captured]"
		return cap
	end

	local h = {}
	for _, f in ipairs(HDR_FIELDS) do
		local r = tvb(f[2], f[3])
		h[f[1]] = f[1] == "exp" and r:int() or r:uint()
	end
	local tname = MSG_TYPES[h.type] and MSG_TYPES[h.type][1] or
		string.format("type %d", h.type)
	items.version = t:add(hf.version, tvb(0, 1))
	items.type = t:add(hf.type, tvb(1, 1))
	if MSG_TYPES[h.type] then
		items.type:append_text(", " .. MSG_TYPES[h.type][2])
	end

	if h.version ~= PROTO_VERSION then
		-- Every version keeps version and type at offsets 0 and 1; the
		-- rest is not this version's to interpret.
		flag_err("VERSION", items.version, string.format("version %d", h.version))
		t:add(hf.undecoded, tvb(2, cap - 2))
		t:append_text(string.format(", version %d", h.version))
		pinfo.cols.info = string.format("INCA version %d %s%s%s", h.version, tname, via,
						malformed())
		return cap
	end

	for i = 3, #HDR_FIELDS do
		local f = HDR_FIELDS[i]
		items[f[1]] = t:add(hf[f[1]], tvb(f[2], f[3]))
	end
	local fl = items.flags
	for _, f in ipairs(flag_hf) do
		fl:add(f, tvb(14, 1))
	end
	fl:add(hf.flags_reserved, tvb(14, 1))
	local fnames = flag_names(h.flags)
	if #fnames > 0 then
		fl:append_text(" (" .. table.concat(fnames, ", ") .. ")")
	end
	if h.type == T_NACK and NACK_REASONS[h.reason] then
		items.reason:append_text(", " .. NACK_REASONS[h.reason][2])
	end
	if h.bitmap ~= 0 then
		local ranks, n = bitmap_ranks(h.bitmap)
		items.bitmap:append_text(" (ranks " .. ranks .. ")")
		local it = items.bitmap:add(hf.contributors, n)
		it:set_generated()
	end

	local body_len = len - HDR_LEN
	local data = is_data(h.type)
	local dsize = DTYPES[h.dtype] and DTYPES[h.dtype][2]

	-- The message checks, in the order of the spec's table. Unlike a
	-- receiver, which stops at the first, every failing check is shown.
	if not MSG_TYPES[h.type] then
		flag_err("TYPE", items.type, string.format("type %d", h.type))
	end
	if not dsize then
		flag_err("DTYPE", items.dtype, string.format("dtype %d", h.dtype))
	end
	if not OPS[h.op] then
		flag_err("OP", items.op, string.format("op %d", h.op))
	end
	if h.flags >= 0x80 then
		flag_err("FLAGS", items.flags, string.format("0x%02x", h.flags - h.flags % 0x80))
	end
	if h.rank >= MAX_WORKERS then
		flag_err("RANK", items.rank, string.format("rank %d", h.rank))
	end
	if h.job == 0 and MSG_TYPES[h.type] and h.type ~= T_HELLO and h.type ~= T_CAPS then
		flag_err("JOB", items.job)
	end
	local ctrl_ok = false
	if data and dsize then
		-- max_elems counts 32-bit lanes: an 8-byte element takes two.
		local lanes = dsize == 8 and 2 or 1
		if h.count == 0 or h.count * lanes > MAX_ELEMS or
		   h.count * dsize > MAX_PAYLOAD_BYTES then
			flag_err("COUNT", items.count, string.format("%d elements of %d bytes",
								     h.count, dsize))
		end
		local want_len = has(h.flags, F_BRIEF) and 0 or h.count * dsize
		if body_len ~= want_len then
			flag_err("LEN", t, string.format("body is %d bytes, not %d", body_len,
							 want_len))
		end
	elseif MSG_TYPES[h.type] and not data then
		if h.count ~= 0 then
			flag_err("COUNT", items.count, "not 0 in a control message")
		end
		local join = h.type == T_JOIN or h.type == T_JOIN_ACK
		local needs_body = h.type == T_HELLO or h.type == T_CAPS or join
		if body_len == CTRL_LEN or (join and body_len == CTRL_LEN + ROCE_EXT_LEN) then
			ctrl_ok = true
		elseif needs_body or body_len ~= 0 then
			local want = join and CTRL_LEN .. " or " .. CTRL_LEN + ROCE_EXT_LEN or
				needs_body and tostring(CTRL_LEN) or "0 or " .. CTRL_LEN
			flag_err("CTRL_LEN", t, string.format("%d bytes, not %s", body_len, want))
		end
	end
	if MSG_TYPES[h.type] then
		if h.type == T_NACK then
			if not NACK_REASONS[h.reason] then
				flag_err("REASON", items.reason,
					 string.format("reason %d in a NACK", h.reason))
			end
		elseif h.reason ~= 0 then
			flag_err("REASON", items.reason,
				 string.format("reason %d in a %s", h.reason, tname))
		end
	end

	-- The body.
	local c, x
	if data and dsize then
		dissect_payload(tvb, t, h, body_len)
	elseif body_len > 0 and cap > HDR_LEN then
		if MSG_TYPES[h.type] and body_len >= CTRL_LEN and cap >= HDR_LEN + CTRL_LEN then
			local bad, xbad
			local at = HDR_LEN + CTRL_LEN
			c, bad = dissect_ctrl(tvb, t, h, ctrl_ok)
			if (h.type == T_JOIN or h.type == T_JOIN_ACK) and
			    body_len == CTRL_LEN + ROCE_EXT_LEN and cap >= at + ROCE_EXT_LEN then
				x, xbad = dissect_roce_ext(tvb, t, ctrl_ok)
				at = at + ROCE_EXT_LEN
			end
			-- One reason for the body, as the codec counts it.
			if bad or xbad then
				errs[#errs + 1] = "CTRL_FIELD"
			end
			if cap > at then
				t:add(hf.trailing, tvb(at, cap - at))
			end
		else
			t:add(hf.undecoded, tvb(HDR_LEN, cap - HDR_LEN))
		end
	end

	if math.floor(h.flags / F_BFP) % 2 == 1 and dsize and h.dtype ~= D_INT32 then
		flag_err("BFP_DTYPE", items.flags, DTYPES[h.dtype][1] .. " message")
	end
	if data then
		local why = route_error(h)
		if why then
			flag_err("ROUTE", items.flags, why)
		end
	end

	if h.type == T_NACK and NACK_REASONS[h.reason] then
		t:add_proto_expert_info(ef.nack, string.format("NACK %s: %s",
			NACK_REASONS[h.reason][1], NACK_REASONS[h.reason][2]))
	end
	if data and math.floor(h.flags / F_RETX) % 2 == 1 then
		t:add_proto_expert_info(ef.retx, h.type == T_CONTRIB and
			"Retransmitted contribution" or "Replayed result")
	end

	-- Info column and tree summary.
	local info
	local set = h.flags % 2
	if data then
		info = string.format("%s job=%d rank=%d slot=%d set=%d seq=%u n=%d %s %s", tname,
				     h.job, h.rank, h.slot, set, h.seq, h.count,
				     DTYPES[h.dtype] and DTYPES[h.dtype][1] or "dtype?" .. h.dtype,
				     OPS[h.op] or "op?" .. h.op)
		if h.type == T_RESULT then
			info = info .. string.format(" bitmap=0x%x", h.bitmap)
		end
		if math.floor(h.flags / F_BFP) % 2 == 1 then
			info = info .. string.format(" exp=%d", h.exp)
		end
		for _, n in ipairs(fnames) do
			if n ~= "SET" and n ~= "BFP" then
				info = info .. " " .. n
			end
		end
	else
		info = string.format("%s job=%d rank=%d", tname, h.job, h.rank)
		if h.type == T_NACK then
			info = info .. " reason=" .. (NACK_REASONS[h.reason] and
				NACK_REASONS[h.reason][1] or tostring(h.reason))
		end
		if c and (h.type == T_HELLO or h.type == T_CAPS) then
			info = info .. string.format(" ver=%d-%d max_elems=%d",
						     c.ver_min, c.ver_max, c.max_elems)
		elseif c and (h.type == T_JOIN or h.type == T_JOIN_ACK) then
			info = info .. string.format(" nworkers=%d pool=%d window=%d max_elems=%d",
						     c.nworkers, c.pool_size, c.window,
						     c.max_elems)
		end
		if x then
			info = info .. string.format(" qpn=0x%x qkey=0x%x", x.qpn, x.qkey)
		end
	end
	info = info .. via .. malformed()
	pinfo.cols.info = info
	t:append_text(", " .. info)
	return cap
end

function inca.dissector(tvb, pinfo, tree)
	return dissect(tvb, pinfo, tree)
end

-- Heuristic for INCA on other ports: only a well-formed version 2 message
-- (the message checks short of the control body fields) is claimed, so
-- that other UDP traffic is not mistaken for INCA.
local function looks_like_inca(tvb)
	local len = tvb:reported_len()
	if len < HDR_LEN or tvb:len() < HDR_LEN then
		return false
	end
	local t = tvb(1, 1):uint()
	local d = DTYPES[tvb(2, 1):uint()]
	local flags = tvb(14, 1):uint()
	local job = tvb(4, 2):uint()
	local count = tvb(24, 2):uint()
	local reason = tvb(26, 2):uint()
	if tvb(0, 1):uint() ~= PROTO_VERSION or not MSG_TYPES[t] or not d or
	    not OPS[tvb(3, 1):uint()] or flags >= 0x80 or tvb(6, 2):uint() >= MAX_WORKERS then
		return false
	end
	if job == 0 and t ~= T_HELLO and t ~= T_CAPS then
		return false
	end
	if (t == T_NACK) ~= (reason ~= 0) or (t == T_NACK and not NACK_REASONS[reason]) then
		return false
	end
	if is_data(t) then
		return count > 0 and count <= MAX_ELEMS and count * d[2] <= MAX_PAYLOAD_BYTES and
			len == HDR_LEN + (has(flags, F_BRIEF) and 0 or count * d[2])
	end
	return count == 0 and (len == HDR_LEN + CTRL_LEN or
		((t == T_JOIN or t == T_JOIN_ACK) and len == HDR_LEN + CTRL_LEN + ROCE_EXT_LEN) or
		(len == HDR_LEN and t ~= T_HELLO and t ~= T_CAPS and t ~= T_JOIN and
		 t ~= T_JOIN_ACK))
end

local function heuristic(tvb, pinfo, tree)
	if not inca.prefs.heuristic or not looks_like_inca(tvb) then
		return false
	end
	dissect(tvb, pinfo, tree)
	return true
end

-- RoCEv2 (see the top of the file): the InfiniBand dissector hands the
-- payload of every SEND to its heuristics. The headers around it are read
-- through the ranges of the ip, udp and infiniband protocol items (in the
-- frame's bytes), which field extractors give even without a tree.
local f_ip = Field.new("ip")
local f_udp = Field.new("udp")
local f_ib = Field.new("infiniband")

local function innermost(field)
	local all = { field() }
	return all[#all]
end

-- INCA's kind of RoCEv2 around the InfiniBand payload tvb: IPv4 | UDP | BTH
-- | DETH | payload, back to back, and a UD SEND-only; nil otherwise (native
-- InfiniBand, RoCEv1, IPv6, other opcodes: not INCA transports).
local function roce_envelope(tvb)
	local ip, udp, ib = innermost(f_ip), innermost(f_udp), innermost(f_ib)
	if not (ip and udp and ib) then
		return nil
	end
	local ipr, ur, ibr = ip.range, udp.range, ib.range
	if ipr:offset() + ipr:len() ~= ur:offset() or ur:offset() + ur:len() ~= ibr:offset() or
	    ibr:len() < BTH_LEN + DETH_LEN or tvb:offset() ~= ibr:offset() + BTH_LEN + DETH_LEN or
	    ibr:range(0, 1):uint() ~= ROCE_OP_UD_SEND_ONLY then
		return nil
	end
	return { ip = ipr, udp = ur, ib = ibr, dqp = ibr:range(5, 3):uint(),
		 sqp = ibr:range(17, 3):uint() }
end

-- A UD SEND carries anything; it is claimed as INCA when its payload starts
-- with this version and a known message type, the two bytes every version
-- keeps, so that a message broken after them still shows its expert info.
local function roce_heuristic(tvb, pinfo, tree)
	if not inca.prefs.roce or tvb:len() < 2 or tvb(0, 1):uint() ~= PROTO_VERSION or
	    not MSG_TYPES[tvb(1, 1):uint()] then
		return false
	end
	local env = roce_envelope(tvb)
	if not env then
		return false
	end
	dissect(tvb, pinfo, tree, env)
	return true
end

local udp_table = DissectorTable.get("udp.port")
local current_port = 0

local function set_port(port)
	if port == current_port then
		return
	end
	if current_port ~= 0 then
		udp_table:remove(current_port, inca)
	end
	if port ~= 0 then
		udp_table:add(port, inca)
	end
	current_port = port
end

function inca.prefs_changed()
	set_port(inca.prefs.udp_port)
end

set_port(UDP_PORT)
inca:register_heuristic("udp", heuristic)
inca:register_heuristic("infiniband.payload", roce_heuristic)

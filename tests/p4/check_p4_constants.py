#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The INCA authors
"""Check the P4 programs' view of the INCA wire format against wire.h.

No P4 compiler is needed: the P4 side is read from p4-reference/headers.p4
(and the programs that use it) with a small parser of the declarations it
contains; the C side is what p4_wire_dump, compiled against
lib/include/inca/wire.h, prints. Any difference fails, whichever side moved.

Usage: check_p4_constants.py --dump PATH_TO_p4_wire_dump --p4-dir p4-reference
"""

import argparse
import re
import subprocess
import sys


class Checker:
    def __init__(self):
        self.failures = []
        self.checks = 0

    def expect(self, cond, msg):
        self.checks += 1
        if not cond:
            self.failures.append(msg)

    def equal(self, what, p4_value, c_value):
        self.expect(p4_value == c_value,
                    "%s: P4 has %r, wire.h has %r" % (what, p4_value, c_value))

    def same(self, what, value, expected):
        """A check within the P4 sources (or derived from wire.h)."""
        self.expect(value == expected, "%s: %r, expected %r" % (what, value, expected))


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def parse_int(token):
    token = token.strip()
    m = re.fullmatch(r"(?:\d+[ws])?(0x[0-9a-fA-F]+|\d+)", token)
    if not m:
        raise ValueError("not an integer literal: %r" % token)
    return int(m.group(1), 0)


def p4_consts(text):
    """const bit<W> NAME = VALUE; -> {NAME: (W, VALUE)}; #define NAME N too."""
    consts = {}
    for m in re.finditer(r"\bconst\s+(bit|int)<(\d+)>\s+(\w+)\s*=\s*([^;]+);", text):
        consts[m.group(3)] = (int(m.group(2)), parse_int(m.group(4)))
    for m in re.finditer(r"^\s*#define\s+(\w+)\s+(0x[0-9a-fA-F]+|\d+)\b", text, re.M):
        consts[m.group(1)] = (None, int(m.group(2), 0))
    return consts


def p4_headers(text):
    """header NAME { fields } -> {NAME: [(name, width, signed)]}."""
    headers = {}
    for m in re.finditer(r"\bheader\s+(\w+)\s*\{(.*?)\}", text, re.S):
        fields = []
        for f in re.finditer(r"\b(bit|int)<(\d+)>\s+(\w+)\s*;|\b(\w+_t)\s+(\w+)\s*;",
                             m.group(2)):
            if f.group(1):
                fields.append((f.group(3), int(f.group(2)), f.group(1) == "int"))
            else:
                width = {"mac_addr_t": 48, "ipv4_addr_t": 32}.get(f.group(4))
                if width is None:
                    raise ValueError("unknown type %s in header %s" % (f.group(4), m.group(1)))
                fields.append((f.group(5), width, False))
        headers[m.group(1)] = fields
    return headers


def c_facts(dump):
    out = subprocess.run([dump], check=True, capture_output=True, text=True).stdout
    facts = {"field": [], "const": {}, "msg": {}, "dtype": {}, "op": {}, "flag": {},
             "cap": {}, "size": {}}
    for line in out.splitlines():
        parts = line.split()
        kind = parts[0]
        if kind == "field":
            facts["field"].append((parts[1], int(parts[2]), int(parts[3]), parts[4] == "1"))
        elif kind == "dtype":
            facts["dtype"][parts[1]] = (int(parts[2]), int(parts[3]))
        else:
            facts[kind][parts[1]] = int(parts[2])
    return facts


def check_header(ck, headers, consts, c):
    fields = headers.get("inca_h")
    ck.expect(fields is not None, "headers.p4 has no header inca_h")
    if not fields:
        return
    ck.equal("inca_h field names in order",
             [f[0] for f in fields], [f[0] for f in c["field"]])
    offset = 0
    p4_layout = {}
    for name, width, signed in fields:
        ck.expect(width % 8 == 0, "inca_h.%s is %d bits, not whole bytes" % (name, width))
        p4_layout[name] = (offset // 8, width // 8, signed)
        offset += width
    for name, c_off, c_size, c_signed in c["field"]:
        if name in p4_layout:
            ck.equal("inca_h.%s (offset, size, signed)" % name, p4_layout[name],
                     (c_off, c_size, c_signed))
    ck.equal("inca_h size in bytes", offset // 8, c["size"]["inca_hdr"])
    ck.equal("inca_h size vs INCA_HDR_LEN", offset // 8, c["const"]["INCA_HDR_LEN"])

    encap = sum(w for h in ("ethernet_h", "ipv4_h", "udp_h")
                for _, w, _ in headers.get(h, [])) // 8
    ck.equal("ethernet_h + ipv4_h + udp_h bytes (INCA_ENCAP_LEN)", encap,
             c["const"]["INCA_ENCAP_LEN"])

    # Fields that a constant is compared with must be as wide as the constant.
    widths = {f[0]: f[1] for f in fields}
    for prefix, field in (("INCA_MSG_", "type"), ("INCA_DTYPE_", "dtype"),
                          ("INCA_OP_", "op"), ("INCA_F_", "flags"),
                          ("INCA_PROTO_VERSION", "version"),
                          ("INCA_PAYLOAD_", "count")):
        for name, (w, _) in consts.items():
            if name.startswith(prefix):
                ck.expect(w == widths[field], "%s is bit<%s> but inca_h.%s is bit<%d>"
                          % (name, w, field, widths[field]))
    udp_widths = {f[0]: f[1] for f in headers.get("udp_h", [])}
    ck.equal("INCA_UDP_PORT width vs udp_h.dst_port", consts["INCA_UDP_PORT"][0],
             udp_widths.get("dst_port"))


def check_consts(ck, consts, c):
    for name, value in c["const"].items():
        ck.expect(name in consts, "headers.p4 lacks %s" % name)
        if name in consts:
            ck.equal(name, consts[name][1], value)
            width = consts[name][0]
            ck.expect(width is None or value < (1 << width),
                      "%s = %d does not fit bit<%s>" % (name, value, width))
    for kind, prefix in (("msg", "INCA_MSG_"), ("op", "INCA_OP_"), ("flag", "INCA_F_"),
                         ("cap", "INCA_CAP_")):
        p4_set = {n[len(prefix):]: v for n, (_, v) in consts.items() if n.startswith(prefix)}
        ck.equal("set of %s names" % kind, sorted(p4_set), sorted(c[kind]))
        for name, value in c[kind].items():
            if name in p4_set:
                ck.equal(prefix + name, p4_set[name], value)
    p4_dtypes = {n[len("INCA_DTYPE_"):]: v for n, (_, v) in consts.items()
                 if n.startswith("INCA_DTYPE_")}
    ck.equal("set of dtype names", sorted(p4_dtypes), sorted(c["dtype"]))
    for name, (value, _) in c["dtype"].items():
        if name in p4_dtypes:
            ck.equal("INCA_DTYPE_" + name, p4_dtypes[name], value)
    ck.equal("the Tofino subset's element size (int32, bits)",
             32, c["dtype"]["INT32"][1] * 8)


def check_payload(ck, headers, consts, c):
    small = c["const"]["INCA_PAYLOAD_SMALL"]
    large = c["const"]["INCA_PAYLOAD_LARGE"]
    data = headers.get("inca_data_h", [])
    ck.expect(all(w == 32 and not s for _, w, s in data), "inca_data_h lanes are not bit<32>")
    ck.same("inca_data_h lane names", [n for n, _, _ in data],
             ["e%02d" % i for i in range(len(data))])
    ck.same("INCA_LANES_PER_HDR vs inca_data_h", consts["INCA_LANES_PER_HDR"][1], len(data))
    group = consts["INCA_GROUP_ELEMS"][1]
    ck.same("group = two data headers", group, 2 * len(data))
    ck.same("one group is the small class", group, small)
    ck.same("the large class is four groups (quarter 0..3)", large, 4 * group)
    hdr = c["const"]["INCA_HDR_LEN"]
    for cls, n in (("SMALL", small), ("LARGE", large)):
        udp_len = 8 + hdr + 4 * n
        ck.same("INCA_UDP_LEN_" + cls, consts["INCA_UDP_LEN_" + cls][1], udp_len)
        ck.same("INCA_IP_LEN_" + cls, consts["INCA_IP_LEN_" + cls][1], 20 + udp_len)


def check_programs(ck, p4_dir, consts, c):
    """The programs use the constants the way the header says."""
    top = strip_comments(open(p4_dir + "/inca.p4").read())
    parser = strip_comments(open(p4_dir + "/parser.p4").read())
    next_step = strip_comments(open(p4_dir + "/next_step.p4").read())
    v1 = strip_comments(open(p4_dir + "/v1model/inca_v1model.p4").read())
    ck.expect('#include "headers.p4"' in top, "inca.p4 does not include headers.p4")
    ck.expect('#include "../headers.p4"' in v1,
              "inca_v1model.p4 does not include ../headers.p4")
    for name, text in (("parser.p4", parser), ("inca_v1model.p4", v1)):
        ck.expect(re.search(r"select\(hdr\.udp\.dst_port\)\s*\{\s*INCA_UDP_PORT\s*:", text),
                  "%s does not select INCA_UDP_PORT on the UDP destination port" % name)
        ck.expect(re.search(r"\(INCA_MSG_CONTRIB,\s*INCA_PAYLOAD_SMALL\)", text) and
                  re.search(r"\(INCA_MSG_CONTRIB,\s*INCA_PAYLOAD_LARGE\)", text),
                  "%s does not parse the payload of both CONTRIB classes" % name)
    # Validation masks follow the flag mask and the worker limit. The
    # Tofino subset has no routed chunks: their flags are dropped as the
    # reserved bits are (docs/protocol.md, "Tofino subset").
    routed = c["flag"]["ROUTED"] | c["flag"]["GATHER"] | c["flag"]["BRIEF"]
    flag_mask = (~(c["flag"]["MASK"] & ~routed)) & 0xff
    rank_mask = (~(c["const"]["INCA_MAX_WORKERS"] - 1)) & 0xffff
    for name, text in (("inca.p4", top), ("inca_v1model.p4", v1)):
        ck.expect(len(re.findall(r"8w0 &&& 8w0x%02x\b" % flag_mask, text)) == 2,
                  "%s: classify does not mask reserved flags with 0x%02x" % (name, flag_mask))
        ck.expect(len(re.findall(r"16w0 &&& 16w0x%04x\b" % rank_mask, text)) == 2,
                  "%s: classify does not bound rank with mask 0x%04x" % (name, rank_mask))
    # The rank bit table covers every rank and nothing else.
    entries = re.findall(r"(\d+)\s*:\s*set_rank_bit\((0x[0-9a-fA-F]+)\)", top)
    ck.same("rank_bit entries", sorted((int(r), int(b, 16)) for r, b in entries),
             [(r, 1 << r) for r in range(c["const"]["INCA_MAX_WORKERS"])])
    # Every lane of both halves of a group is aggregated once.
    lanes = consts["INCA_LANES_PER_HDR"][1]
    applied = re.findall(r"lane(\d+)\.apply\(hdr\.data0\.e(\d+), hdr\.data1\.e(\d+), md\)", top)
    ck.same("Processor lanes applied in inca.p4", sorted(applied),
             [("%02d" % i,) * 3 for i in range(lanes)])
    v1_lanes = re.findall(r"OP\(H\.e(\d+), \(B\) \+ (\d+)\)", v1)
    ck.same("lanes of the v1model LANES macro", sorted((int(a), int(b)) for a, b in v1_lanes),
             [(i, i) for i in range(lanes)])
    # A large contribution is consumed group by group: the next group
    # after groups 0..2, never after the last (3).
    groups = re.findall(r"\(INCA_DROP_NONE,\s*INCA_STEP_CONSUME,\s*INCA_CLASS_LARGE,\s*"
                        r"(\d+),\s*_\)\s*:\s*next_group\(\)", next_step)
    ck.same("next_step.p4: groups followed by the next group", sorted(int(g) for g in groups),
            list(range(4 - 1)))
    # Every INCA_* name a program uses is defined in headers.p4 or the file.
    for path in ("inca.p4", "parser.p4", "bitmap.p4", "verdict.p4", "processor.p4",
                 "next_step.p4", "deparser.p4", "v1model/inca_v1model.p4"):
        text = strip_comments(open(p4_dir + "/" + path).read())
        local = p4_consts(text)
        for name in sorted(set(re.findall(r"\bINCA_[A-Z0-9_]+\b", text))):
            ck.expect(name in consts or name in local or name.endswith("_P4_"),
                      "%s uses %s, defined nowhere" % (path, name))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dump", required=True, help="p4_wire_dump binary")
    ap.add_argument("--p4-dir", required=True, help="p4-reference directory")
    args = ap.parse_args()

    text = strip_comments(open(args.p4_dir + "/headers.p4").read())
    consts = p4_consts(text)
    headers = p4_headers(text)
    c = c_facts(args.dump)

    ck = Checker()
    ck.expect(len(c["field"]) > 0 and len(c["msg"]) > 0, "p4_wire_dump printed nothing")
    check_header(ck, headers, consts, c)
    check_consts(ck, consts, c)
    check_payload(ck, headers, consts, c)
    check_programs(ck, args.p4_dir, consts, c)

    for f in ck.failures:
        print("FAIL: " + f)
    print("%d checks, %d failed" % (ck.checks, len(ck.failures)))
    return 1 if ck.failures else 0


if __name__ == "__main__":
    sys.exit(main())

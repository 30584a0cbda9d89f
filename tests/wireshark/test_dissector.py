#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The INCA authors
"""Test of the Wireshark dissector tools/wireshark/inca.lua.

usage: test_dissector.py INCA_PCAP_GEN INCA_LUA [PROTOCOL_MD]

1. The dissector's tables against wire.h: value strings (tshark -G values)
   and bit fields (tshark -G fields) against what inca_pcap_gen prints
   from the X-macros and flag/capability macros it is compiled with.
2. A capture written by inca_pcap_gen with the codec (every message type,
   data type and operation, a NACK per reason, boundary values, one
   malformed message per message check, mutated messages, JOINs with the
   RoCEv2 extension, RoCEv2 frames with one malformed frame per RoCEv2
   check) is decoded by tshark; every field must equal what was encoded
   (for RoCEv2 also BTH and DETH as the InfiniBand dissector shows them,
   and the ICRC), and the dissector's expert info must name the reason the
   codec gives, first. No frame may raise a Lua error.
3. The preferences: the UDP port, the number of elements shown, the
   heuristic dissector on other ports, and INCA in RoCEv2.
4. With PROTOCOL_MD (docs/protocol.md): the worked examples of the spec,
   decoded, show the values their "fields:" lines list (every other
   header and control field 0).

Exit status 0: pass, 1: fail, 77: skipped (tshark is not installed).
"""

import os
import shutil
import struct
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

SHOWN = 16  # the default of the inca.max_shown preference
OTHER_PORT = 19000

failures = []


def fail(msg):
    failures.append(msg)
    if len(failures) <= 60:
        print("FAIL: " + msg)


def run(cmd, env):
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, check=False)
    # tshark warns on stderr when run as root; that is the only thing
    # allowed there, Lua errors at load time also land there.
    err = [l for l in p.stderr.splitlines() if l and "Running as user" not in l]
    if p.returncode != 0 or err:
        fail("%s: exit %d, stderr: %s" % (" ".join(cmd[:4]), p.returncode,
                                         "\n".join(err[:10])))
    return p.stdout


def load_tables(gen):
    out = subprocess.run([gen, "tables"], stdout=subprocess.PIPE, text=True,
                         check=True).stdout
    t = {"const": {}, "type": {}, "dtype": {}, "op": {}, "reason": {}, "flag": {},
         "cap": {}, "wireerr": {}}
    for line in out.splitlines():
        f = line.split("\t")
        kind = f[0]
        if kind == "const":
            t["const"][f[1]] = int(f[2])
        elif kind in ("type", "reason"):
            t[kind][int(f[1])] = (f[2], f[3])
        elif kind == "dtype":
            t["dtype"][int(f[1])] = (f[2], int(f[3]))
        elif kind == "op":
            t["op"][int(f[1])] = f[2]
        elif kind in ("flag", "cap"):
            t[kind][f[2]] = int(f[1])
        elif kind in ("flagmask", "capmask"):
            t[kind] = int(f[1])
        elif kind == "wireerr":
            t["wireerr"][f[2]] = f[3]
    return t


def check_tables(t, tshark, lua, env):
    """The dissector's tables are wire.h's."""
    values = {}
    for line in run([tshark, "-G", "values", "-X", "lua_script:" + lua], env).splitlines():
        f = line.split("\t")
        if len(f) == 4 and f[0] == "V" and f[1].startswith("inca."):
            values.setdefault(f[1], {})[int(f[2])] = f[3]
    want = {
        "inca.type": {v: n for v, (n, _) in t["type"].items()},
        "inca.dtype": {v: n for v, (n, _) in t["dtype"].items()},
        "inca.op": dict(t["op"]),
        "inca.reason": {v: n for v, (n, _) in t["reason"].items()},
    }
    for field, vs in want.items():
        if values.get(field) != vs:
            fail("value strings of %s: dissector %s, wire.h %s" %
                 (field, values.get(field), vs))

    fields = {}
    for line in run([tshark, "-G", "fields", "-X", "lua_script:" + lua], env).splitlines():
        f = line.split("\t")
        if len(f) >= 7 and f[0] == "F" and f[2].startswith("inca."):
            fields[f[2]] = (f[3], int(f[6], 0))

    def bits(prefix, table, width, reserved):
        """Boolean fields prefix.<name> with the table's masks, and the rest."""
        union = 0
        for name, mask in table.items():
            fld = prefix + "." + name.lower()
            if fields.get(fld) != ("FT_BOOLEAN", mask):
                fail("%s: dissector %s, wire.h FT_BOOLEAN mask 0x%x" %
                     (fld, fields.get(fld), mask))
            union |= mask
        rest = (1 << width) - 1 & ~union
        if fields.get(prefix + "." + reserved, (None, None))[1] != rest:
            fail("%s.%s: mask %s, want 0x%x" % (prefix, reserved,
                                                fields.get(prefix + "." + reserved), rest))
        known = {prefix + "." + n.lower() for n in table} | {prefix + "." + reserved}
        extra = {f for f in fields if f.startswith(prefix + ".")} - known
        if extra:
            fail("%s: fields not in wire.h: %s" % (prefix, sorted(extra)))
        return union

    if bits("inca.flags", t["flag"], 8, "reserved") != t["flagmask"]:
        fail("the flags listed by inca_pcap_gen do not make up INCA_F_MASK")
    if bits("inca.ctrl.caps", t["cap"], 16, "reserved") != t["capmask"]:
        fail("the capabilities listed by inca_pcap_gen do not make up INCA_CAP_MASK")
    bits("inca.ctrl.dtypes", {n: 1 << v for v, (n, _) in t["dtype"].items()}, 16, "other")
    bits("inca.ctrl.ops", {n: 1 << v for v, n in t["op"].items()}, 16, "other")

    for name in ("version", "type", "dtype", "op", "job", "rank", "token", "slot", "flags",
                 "exp", "seq", "offset", "count", "reason", "bitmap", "ctrl.ver_min",
                 "ctrl.ver_max", "ctrl.dtypes", "ctrl.ops", "ctrl.max_elems",
                 "ctrl.nworkers", "ctrl.pool_size", "ctrl.window", "ctrl.caps",
                 "ctrl.hb_ms", "ctrl.evict_ms", "ctrl.pool_base", "ctrl.session",
                 "payload", "elem.int32", "elem.fp32", "elem.fp16", "elem.bf16",
                 "roce_ext", "roce_ext.qpn", "roce_ext.qkey", "roce_ext.reserved", "roce",
                 "roce.pad", "roce.icrc", "roce.icrc.computed"):
        if "inca." + name not in fields:
            fail("field inca.%s is missing" % name)
    if fields.get("inca.exp", ("",))[0] != "FT_INT8":
        fail("inca.exp is %s, not a signed 8-bit field" % (fields.get("inca.exp"),))

    prefs = run([tshark, "-G", "defaultprefs", "-X", "lua_script:" + lua], env)
    if "#inca.udp_port: %d" % t["const"]["UDP_PORT"] not in prefs:
        fail("default of inca.udp_port is not INCA_UDP_PORT %d" % t["const"]["UDP_PORT"])
    if "#inca.roce: TRUE" not in prefs:
        fail("INCA in RoCEv2 (inca.roce) is not on by default")


def load_expect(path):
    frames = []
    with open(path) as f:
        for line in f:
            frames.append(dict(kv.split("=", 1) for kv in line.rstrip("\n").split("\t")))
    return frames


def packets(pdml):
    """Per packet: the list of (name, show, showname) of every field, nested."""
    out = []
    root = ET.fromstring(pdml)
    for pkt in root.iter("packet"):
        fl = []
        for el in pkt.iter():
            if el.tag in ("field", "proto"):
                fl.append((el.get("name", ""), el.get("show", ""), el.get("showname", "")))
        out.append(fl)
    return out


def check_frame(i, e, fl, info, t):
    """Frame i (1-based): expectation e, pdml fields fl, Info column."""
    where = "frame %d" % i
    for name, show, showname in fl:
        if "Lua Error" in showname or "Lua Error" in show:
            fail("%s: %s" % (where, showname or show))
    names = [f[0] for f in fl]
    if "inca" not in names:
        fail("%s: not decoded as INCA" % where)
        return
    first = {}
    for name, show, showname in fl:
        first.setdefault(name, (show, showname))
    snap = e["snap"] != "0"
    if e.get("roce") == "1" and ("infiniband" not in names or
                                 names.index("infiniband") > names.index("inca")):
        fail("%s: RoCEv2, but INCA is not under the InfiniBand dissector: %s" %
             (where, [n for n in names if "." not in n]))

    # INCA's fields, and for RoCEv2 the BTH and DETH that carried it.
    for key, val in e.items():
        if not key.startswith(("inca.", "infiniband.")):
            continue
        if key not in first:
            if not snap:
                fail("%s: field %s missing" % (where, key))
            continue
        try:
            got = int(first[key][0], 0)
        except ValueError:
            fail("%s: %s shows %r" % (where, key, first[key][0]))
            continue
        if got != int(val):
            fail("%s: %s = %d, encoded %s" % (where, key, got, val))

    if "inca.flags" in e and "inca.flags" in first:
        flags = int(e["inca.flags"])
        for name, mask in t["flag"].items():
            fld = "inca.flags." + name.lower()
            want = "1" if flags & mask else "0"
            if first.get(fld, ("",))[0] != want:
                fail("%s: %s = %r, flags 0x%02x" % (where, fld, first.get(fld), flags))

    typ = int(e.get("inca.type", "0"))
    errors = [x for x in e["errors"].split(",") if x]
    if "inca.type" in first and e.get("inca.version") == str(t["const"]["PROTO_VERSION"]) \
            and typ in t["type"]:
        desc = t["type"][typ][1]
        if not first.get("inca.type", ("", ""))[1].endswith(", " + desc):
            fail("%s: type shown as %r, want the description %r" %
                 (where, first.get("inca.type"), desc))
        reason = int(e.get("inca.reason", "0"))
        if typ == 11 and reason in t["reason"] and reason != 0:
            desc = t["reason"][reason][1]
            if not first.get("inca.reason", ("", ""))[1].endswith(", " + desc):
                fail("%s: reason shown as %r, want %r" % (where, first.get("inca.reason"), desc))
            if "inca.nack" not in names:
                fail("%s: NACK without its expert note" % where)

    # Elements: the first SHOWN of them, with their values (and bits).
    if "elems" in e:
        dname = t["dtype"][int(e["inca.dtype"])][0]
        size = t["dtype"][int(e["inca.dtype"])][1]
        total = (int(e["len"]) - 32) // size
        got = [(s, sn) for n, s, sn in fl if n == "inca.elem." + dname]
        vals = e["elems"].split(",") if e["elems"] else []
        bitl = e["bits"].split(",") if e.get("bits") else []
        nshow = min(total, SHOWN)
        if len(got) != nshow and not snap:
            fail("%s: %d elements shown, want %d" % (where, len(got), nshow))
        for k, (show, showname) in enumerate(got[:nshow]):
            want = "[%d] %s" % (k, vals[k])
            if bitl:
                want += " (%s)" % bitl[k]
            if showname != want:
                fail("%s: element %d shown as %r, want %r" % (where, k, showname, want))
        hidden = first.get("inca.payload.not_shown")
        if total > SHOWN and not snap:
            if hidden is None or int(hidden[0]) != total - SHOWN:
                fail("%s: not_shown %s, want %d" % (where, hidden, total - SHOWN))
        elif total <= SHOWN and hidden is not None:
            fail("%s: not_shown present with %d elements" % (where, total))

    # Malformed: the dissector's reasons, in order, from the Info column;
    # the expert items must be the same set, with wire.h's descriptions.
    got_errs = []
    if "[malformed: " in info:
        got_errs = info.split("[malformed: ", 1)[1].rstrip("]").split(",")
    experts = {n[len("inca.err."):].upper(): sn for n, _, sn in fl
               if n.startswith("inca.err.")}
    if set(experts) != set(got_errs):
        fail("%s: expert items %s, Info lists %s" % (where, sorted(experts), got_errs))
    for name, showname in experts.items():
        desc = t["wireerr"].get(name)
        if desc is None or not showname.startswith(desc):
            fail("%s: expert %s says %r, wire.h says %r" % (where, name, showname, desc))
    if not errors:
        if got_errs:
            fail("%s: codec accepts it, the dissector flags %s" % (where, got_errs))
    elif not got_errs or got_errs[0] != errors[0]:
        fail("%s: codec rejects it as %s, the dissector flags %s" %
             (where, errors[0], got_errs))
    elif e["fuzz"] == "0" and got_errs != errors:
        fail("%s: broken in one way (%s), the dissector flags %s" %
             (where, errors[0], got_errs))

    # Info column of well-formed messages.
    if not errors and not snap and "inca.type" in e:
        tname = t["type"][typ][0]
        want = "%s job=%s rank=%s" % (tname, e["inca.job"], e["inca.rank"])
        if typ in (1, 2):
            want += " slot=%s set=%d seq=%s n=%s %s %s" % (
                e["inca.slot"], int(e["inca.flags"]) & 1, e["inca.seq"], e["inca.count"],
                t["dtype"][int(e["inca.dtype"])][0], t["op"][int(e["inca.op"])])
        if typ == 11:
            want += " reason=" + t["reason"][int(e["inca.reason"])][0]
        if not info.startswith(want):
            fail("%s: Info %r, want it to start with %r" % (where, info, want))
        if typ in (1, 2) and int(e["inca.flags"]) & t["flag"]["RETX"] and \
                "inca.retx" not in names:
            fail("%s: RETX without its expert note" % where)


HDR_FIELDS = ("version", "type", "dtype", "op", "job", "rank", "token", "slot", "flags", "exp",
              "seq", "offset", "count", "reason", "bitmap")
CTRL_FIELDS = ("ver_min", "ver_max", "dtypes", "ops", "max_elems", "nworkers", "pool_size",
               "window", "caps", "hb_ms", "evict_ms", "pool_base", "session")


# The RoCEv2 keys of the worked examples' "fields:" lines: BTH and DETH as
# Wireshark's InfiniBand dissector shows them, the JOIN extension as ours.
SPEC_ROCE_FIELDS = {"bth_dqpn": "infiniband.bth.destqp", "bth_psn": "infiniband.bth.psn",
                    "deth_qkey": "infiniband.deth.q_key",
                    "deth_sqpn": "infiniband.deth.srcqp",
                    "roce_qpn": "inca.roce_ext.qpn", "roce_qkey": "inca.roce_ext.qkey"}


def spec_examples(path):
    """The worked examples of docs/protocol.md: [(title, fields dict, frame bytes)]."""
    out = []
    title, fields, hexl = "", None, None
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("### "):
                title = line[4:]
            elif line.startswith("fields: "):
                fields = dict(kv.split("=", 1) for kv in line[8:].split())
            elif line == "```hex" and fields is not None:
                hexl = []
            elif line == "```" and hexl is not None:
                out.append((title, fields, bytes.fromhex(" ".join(hexl))))
                fields, hexl = None, None
            elif hexl is not None:
                hexl.append(line.split(":", 1)[1])
    return out


def check_spec(path, t, tshark, env, tmp):
    examples = spec_examples(path)
    if len(examples) < 6:
        fail("%s: %d worked examples found, expected at least 6" % (path, len(examples)))
    cap = os.path.join(tmp, "spec.pcap")
    with open(cap, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xa1b2c3d4, 2, 4, 0, 0, 65535, 1))
        for n, (_, _, frame) in enumerate(examples):
            f.write(struct.pack("<IIII", n, 0, len(frame), len(frame)))
            f.write(frame)
    pk = packets(run([tshark, "-X", "lua_script:" + LUA, "-r", cap, "-T", "pdml"], env))
    names = {
        "type": {n: v for v, (n, _) in t["type"].items()},
        "dtype": {n: v for v, (n, _) in t["dtype"].items()},
        "op": {v: k for k, v in t["op"].items()},
        "reason": {n: v for v, (n, _) in t["reason"].items()},
    }
    for (title, fields, _), fl in zip(examples, pk):
        where = "spec example %r" % title
        first = {}
        for name, show, _ in fl:
            first.setdefault(name, show)
        if "inca" not in first:
            fail("%s: not decoded as INCA" % where)
            continue
        for name, show, showname in fl:
            if name.startswith("inca.err.") or "Lua Error" in showname:
                fail("%s: %s" % (where, showname))
        want = {"inca." + k: 0 for k in HDR_FIELDS}
        want["inca.version"] = t["const"]["PROTO_VERSION"]
        if "ver_min" in fields:
            want.update({"inca.ctrl." + k: 0 for k in CTRL_FIELDS})
        elems = None
        for k, v in fields.items():
            if k in ("src", "dst"):
                ip, port = v.rsplit(":", 1)
                got = (first.get("ip." + k), first.get("udp.%sport" % k))
                if got != (ip, port):
                    fail("%s: %s is %s, the spec says %s" % (where, k, got, v))
            elif k == "elems":
                elems = v.split(",")
            elif k in names:
                want["inca." + k] = names[k][v]
            elif k in CTRL_FIELDS:
                want["inca.ctrl." + k] = int(v, 0)
            elif k in SPEC_ROCE_FIELDS:
                want[SPEC_ROCE_FIELDS[k]] = int(v, 0)
            else:
                want["inca." + k] = int(v, 0)
        if "inca.count" in want and elems is not None and want["inca.count"] != len(elems):
            fail("%s: count %s but %d elements listed" % (where, want["inca.count"],
                                                          len(elems)))
        for k, v in want.items():
            if k not in first:
                fail("%s: no field %s" % (where, k))
            elif int(first[k], 0) != v:
                fail("%s: %s = %s, the spec says %d" % (where, k, first[k], v))
        if elems is not None:
            dname = t["dtype"][want["inca.dtype"]][0]
            got = [s for n, s, _ in fl if n == "inca.elem." + dname]
            if got != elems:
                fail("%s: elements %s, the spec says %s" % (where, got, elems))
    return len(examples)


def decoded(tshark, cap, args, env):
    """Frame number -> (protocols, not_shown, elements) with the given options."""
    out = run([tshark, "-X", "lua_script:" + LUA, "-r", cap] + args +
              ["-T", "fields", "-E", "separator=/t", "-e", "frame.number",
               "-e", "frame.protocols", "-e", "inca.elem.fp16", "-e", "inca.elem.int32",
               "-e", "inca.payload.not_shown"], env)
    res = {}
    for line in out.splitlines():
        f = line.split("\t")
        elems = [x for x in (f[2] + "," + f[3]).split(",") if x]
        res[int(f[0])] = (f[1].split(":"), f[4], elems)
    return res


def main():
    global LUA
    if len(sys.argv) not in (3, 4):
        print(__doc__)
        return 2
    gen, LUA = sys.argv[1], os.path.abspath(sys.argv[2])
    spec = sys.argv[3] if len(sys.argv) == 4 else None
    nspec = 0
    tshark = shutil.which("tshark")
    if tshark is None:
        print("SKIP: tshark is not installed (tools/install-deps installs it)")
        return 77
    tmp = tempfile.mkdtemp(prefix="inca-wireshark-")
    try:
        # A private home: no personal preferences or plugins (a copy of
        # inca.lua installed there would register the protocol twice).
        env = dict(os.environ, HOME=tmp, XDG_CONFIG_HOME=os.path.join(tmp, ".config"))
        env.pop("WIRESHARK_CONFIG_DIR", None)
        t = load_tables(gen)
        check_tables(t, tshark, LUA, env)
        if not all(k in t["wireerr"] for k in ("SHORT", "BFP_DTYPE")):
            fail("inca_pcap_gen lists no message-level wire errors")

        cap = os.path.join(tmp, "inca.pcap")
        exp = os.path.join(tmp, "inca.expect")
        seed = os.environ.get("INCA_WIRESHARK_SEED", "0x1c4a2026")
        if subprocess.run([gen, "pcap", cap, exp, seed], check=False).returncode != 0:
            fail("inca_pcap_gen could not write the capture")
            return 1
        frames = load_expect(exp)
        print("capture: %d frames (seed %s)" % (len(frames), seed))

        pdml = run([tshark, "-X", "lua_script:" + LUA, "-r", cap, "-T", "pdml"], env)
        pk = packets(pdml)
        infos = {}
        out = run([tshark, "-X", "lua_script:" + LUA, "-r", cap, "-T", "fields",
                   "-E", "separator=/t", "-e", "frame.number", "-e", "_ws.col.Info"], env)
        for line in out.splitlines():
            n, _, info = line.partition("\t")
            infos[int(n)] = info
        if len(pk) != len(frames):
            fail("tshark read %d packets, %d were written" % (len(pk), len(frames)))

        # Default preferences: the INCA port, the heuristic elsewhere, and
        # RoCEv2 UD SENDs that start with INCA's version and a known type
        # (claim=1): those are decoded whatever their other faults.
        covered, left_to_ib = set(), set()
        for i, (e, fl) in enumerate(zip(frames, pk), 1):
            port = int(e["port"])
            valid = e["inca"] == "1" and e["errors"] == ""
            has = any(f[0] == "inca" for f in fl)
            if e.get("roce") == "1":
                if port != t["const"]["ROCE_PORT"]:
                    fail("frame %d: RoCEv2 on port %d" % (i, port))
                if e["claim"] == "1":
                    check_frame(i, e, fl, infos.get(i, ""), t)
                    if e["fuzz"] == "0" and e["errors"]:
                        covered.add(e["errors"])
                elif has:
                    fail("frame %d: RoCEv2 that is not a UD SEND-only of INCA (%s) "
                         "decoded as INCA" % (i, e["errors"]))
                else:
                    left_to_ib.add(e["errors"])
            elif port == t["const"]["UDP_PORT"]:
                check_frame(i, e, fl, infos.get(i, ""), t)
                if e["fuzz"] == "0" and e["errors"]:
                    covered.add(e["errors"])
            elif has != valid:
                fail("frame %d (port %d): INCA %s by the heuristic, want %s" %
                     (i, port, "claimed" if has else "not claimed", valid))
            elif has:
                check_frame(i, e, fl, infos.get(i, ""), t)
        # The RoCEv2 checks a dissector cannot make (inca.lua's header says
        # why). ROCE_OPCODE: a packet that is not a UD SEND-only is not INCA
        # to a dissector that does not own port 4791, so the frames built
        # for it must stay the InfiniBand dissector's, which is checked
        # above. ROCE_QPN, ROCE_QKEY: the aggregator's queue pair and Q_Key
        # are its configuration, not in the packet; there is no frame that
        # is wrong in itself, so none is written and none is expected.
        if "ROCE_OPCODE" in left_to_ib:
            covered.add("ROCE_OPCODE")
        missing = set(t["wireerr"]) - covered - {"ROCE_QPN", "ROCE_QKEY"}
        if missing:
            fail("no malformed frame for the wire errors %s" % sorted(missing))

        # Without the heuristic, and with every element shown.
        res = decoded(tshark, cap, ["-o", "inca.heuristic:FALSE", "-o", "inca.max_shown:0"],
                      env)
        for i, e in enumerate(frames, 1):
            protos, hidden, elems = res.get(i, ([], "", []))
            # RoCEv2 has its own preference: the heuristic's does not touch it.
            want = e["claim"] == "1" if e.get("roce") == "1" else \
                int(e["port"]) == t["const"]["UDP_PORT"]
            if ("inca" in protos) != want:
                fail("frame %d: INCA %s without the heuristic" %
                     (i, "decoded" if not want else "not decoded"))
            if want and e["errors"] == "" and e["snap"] == "0" and \
                    e.get("inca.dtype") in ("0", "2") and e.get("inca.type") in ("1", "2"):
                # A BRIEF message (flag 0x40) has a count and no elements.
                brief = int(e.get("inca.flags", "0"), 0) & 0x40
                if len(elems) != (0 if brief else int(e["inca.count"])) or hidden:
                    fail("frame %d: max_shown 0 shows %d of %s elements" %
                         (i, len(elems), e["inca.count"]))

        # The port preference moves the dissector; inca.roce:FALSE leaves
        # RoCEv2 to the InfiniBand dissector.
        res = decoded(tshark, cap, ["-o", "inca.heuristic:FALSE", "-o", "inca.roce:FALSE",
                                    "-o", "inca.udp_port:%d" % OTHER_PORT], env)
        for i, e in enumerate(frames, 1):
            want = int(e["port"]) == OTHER_PORT
            if ("inca" in res.get(i, ([],))[0]) != want:
                fail("frame %d (port %s): inca.udp_port:%d %s it" %
                     (i, e["port"], OTHER_PORT, "missed" if want else "decoded"))

        # 802.1Q: incad answers a member on its VLAN (docs/incad.md,
        # "vlans"); the same frames with a tag are INCA all the same.
        tagged = os.path.join(tmp, "tagged.pcap")
        picked = [i for i, e in enumerate(frames, 1)
                  if int(e["port"]) == t["const"]["UDP_PORT"] and e["inca"] == "1" and
                  e["errors"] == "" and e["snap"] == "0"][:8]
        # RoCEv2 too: the ICRC does not cover the Ethernet header.
        picked = sorted(picked + [i for i, e in enumerate(frames, 1)
                                  if e.get("roce") == "1" and e["claim"] == "1" and
                                  e["errors"] == ""][:2])
        if not picked:
            fail("no valid INCA frame to tag")
        with open(cap, "rb") as f:
            raw = f.read()
        out_pcap, off, n = [raw[:24]], 24, 0
        while off + 16 <= len(raw):
            hdr = raw[off:off + 16]
            incl = struct.unpack("<I", hdr[8:12])[0]
            data = raw[off + 16:off + 16 + incl]
            off += 16 + incl
            n += 1
            if n in picked:
                data = data[:12] + b"\x81\x00\x00\x0a" + data[12:]
                hdr = hdr[:8] + struct.pack("<II", len(data), len(data))
                out_pcap.append(hdr + data)
        with open(tagged, "wb") as f:
            f.write(b"".join(out_pcap))
        res = decoded(tshark, tagged, [], env)
        for k in range(1, len(picked) + 1):
            protos = res.get(k, ([],))[0]
            if "vlan" not in protos or "inca" not in protos:
                fail("tagged frame %d (frame %d untagged): protocols %s" %
                     (k, picked[k - 1], ":".join(protos)))

        if spec:
            nspec = check_spec(spec, t, tshark, env, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    if failures:
        print("%d failures" % len(failures))
        return 1
    print("ok: tables match wire.h; %d frames decoded as encoded; %d spec examples" %
          (len(frames), nspec))
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The INCA authors
"""libinca's layers (lib/li_util.h draws them): every li_ function a source
file calls is defined in its own layer or one below, and every source file
includes only its own layer's header. Exit status 1 names each violation.

    check_layers.py LIBDIR
"""

import os
import re
import sys

# file -> (layer, the one internal header it includes)
LAYERS = {
    'util.c': (0, 'li_util.h'), 'tcpgroup.c': (0, 'li_util.h'),
    'udp.c': (1, 'li_transport.h'), 'transport.c': (1, 'li_transport.h'),
    'xdp.c': (1, 'li_transport.h'),
    # The verbs transport's own header is the transport layer's, extended.
    'verbs.c': (1, 'li_verbs.h'), 'verbs_logic.c': (1, 'li_verbs.h'),
    'codec.c': (2, 'li_state.h'),
    'member.c': (3, 'li_member.h'), 'keepalive.c': (3, 'li_member.h'),
    'engine.c': (4, 'li_stream.h'),
    'agree.c': (5, 'li_recover.h'), 'fallback.c': (5, 'li_recover.h'),
    'comm.c': (6, 'li_recover.h'), 'collective.c': (6, 'li_recover.h'),
}
DEF = re.compile(r'^(?:[a-z_]+ \**)?\**(li_[a-z0-9_]+)\(', re.M)
CALL = re.compile(r'\b(li_[a-z0-9_]+)\(')
INCL = re.compile(r'^#include "([^"]+)"', re.M)


def strip_comments(s):
    return re.sub(r'/\*.*?\*/', '', s, flags=re.S)


def main():
    lib = sys.argv[1]
    srcs = sorted(f for f in os.listdir(lib) if f.endswith('.c') and f not in
                  ('wire.c', 'dtype.c'))
    bad = [f for f in srcs if f not in LAYERS]
    defs, text = {}, {}
    for f in srcs:
        with open(os.path.join(lib, f)) as fh:
            text[f] = strip_comments(fh.read())
        for m in re.finditer(r'^(li_[a-z0-9_]+)\(', text[f], re.M):
            defs[m.group(1)] = f
    errors = ['%s: not in the layer table' % f for f in bad]
    for f in srcs:
        if f in bad:
            continue
        layer, header = LAYERS[f]
        incs = INCL.findall(text[f])
        if incs != [header]:
            errors.append('%s includes %s, its layer\'s header is %s' % (f, incs, header))
        for name in sorted(set(CALL.findall(text[f]))):
            where = defs.get(name)
            if where is not None and LAYERS[where][0] > layer:
                errors.append('%s (layer %d) calls %s of %s (layer %d): upward'
                              % (f, layer, name, where, LAYERS[where][0]))
    for e in errors:
        print('check_layers: ' + e, file=sys.stderr)
    print('%d files, %d li_ functions, %d violations' % (len(srcs), len(defs), len(errors)))
    return 1 if errors else 0


if __name__ == '__main__':
    sys.exit(main())

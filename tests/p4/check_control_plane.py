#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The INCA authors
"""Check the control-plane scripts against the P4 programs they program.

No switch, SDE or BMv2 is needed: p4-reference/control/setup_job.py runs
against a recording stand-in for bfshell's `bfrt` object, and
p4-reference/v1model/gen_commands.py prints its simple_switch_CLI commands;
and control/switch_ctl.py's Tofino driver handles JOINs and a LEAVE against
the same stand-in; every table, action, key, action parameter, register,
register field and counter they
name must exist in inca.p4 / inca_v1model.p4 with the right arity, and the
entries must describe the job (one member entry per rank, one slot entry per
slot, one multicast node per member with RID = rank).

Usage: check_control_plane.py --p4-dir p4-reference --vectors tests/vectors
"""

import argparse
import importlib.util
import io
import json
import os
import re
import sys
import contextlib


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def block(text, start):
    """The text between the brace at or after start and its match."""
    i = text.index('{', start)
    depth = 0
    for j in range(i, len(text)):
        if text[j] == '{':
            depth += 1
        elif text[j] == '}':
            depth -= 1
            if depth == 0:
                return text[i + 1:j]
    raise ValueError('unbalanced braces')


def p4_controls(text):
    """{control or parser name: {'tables': {...}, 'actions': {...}, 'registers': {...},
    'value_sets': set(), 'instances': {instance: type}}}"""
    out = {}
    for m in re.finditer(r"^(control|parser)\s+(\w+)\s*\(", text, re.M):
        body = block(text, m.end())
        c = {'tables': {}, 'actions': {}, 'registers': {}, 'value_sets': set(),
             'instances': {}}
        for a in re.finditer(r"\baction\s+(\w+)\s*\(([^)]*)\)", body):
            params = [p.split()[-1] for p in a.group(2).split(',') if p.strip()]
            c['actions'][a.group(1)] = params
        for t in re.finditer(r"\btable\s+(\w+)\s*\{", body):
            tb = block(body, t.start())
            keys = []
            km = re.search(r"\bkey\s*=\s*\{", tb)
            if km:
                for k in block(tb, km.start()).split(';'):
                    k = k.strip()
                    if not k:
                        continue
                    nm = re.search(r'@name\("(\w+)"\)', k)
                    keys.append(nm.group(1) if nm else k.split(':')[0].strip())
            acts = re.findall(r"(?:@defaultonly\s+)?(\w+)\s*;",
                              block(tb, re.search(r"\bactions\s*=\s*\{", tb).start()))
            c['tables'][t.group(1)] = {'keys': keys, 'actions': acts}
        for r in re.finditer(r"\bregister<(.+?)>\s*\([^)]*\)\s*(\w+)\s*;", body):
            c['registers'][r.group(2)] = r.group(1)
        for r in re.finditer(r"\bRegister<(.+?),\s*\w+>\s*\([^)]*\)\s*(\w+)\s*;", body):
            c['registers'][r.group(2)] = r.group(1)
        for v in re.finditer(r"\bvalue_set<[^>]+>\s*\(\d+\)\s*(\w+)\s*;", body):
            c['value_sets'].add(v.group(1))
        for i in re.finditer(r"^\s*([A-Z]\w*)\(\)\s+(\w+)\s*;", body, re.M):
            c['instances'][i.group(2)] = i.group(1)
        out[m.group(2)] = c
    return out


def struct_fields(text, name):
    m = re.search(r"\bstruct\s+%s\s*\{" % name, text)
    return re.findall(r"\b\w+(?:<\d+>)?\s+(\w+)\s*;", block(text, m.start())) if m else None


class Failures:
    def __init__(self):
        self.items = []
        self.checks = 0

    def expect(self, cond, msg):
        self.checks += 1
        if not cond and msg not in self.items:
            self.items.append(msg)


class Recorder:
    """Stands in for bfshell's bfrt object: records every call by path."""

    def __init__(self, log, path=()):
        self._log = log
        self._path = path

    def __getattr__(self, name):
        return Recorder(self._log, self._path + (name,))

    def __call__(self, *args, **kwargs):
        self._log.append((self._path, args, kwargs))
        return Recorder(self._log, self._path + ('()',))


# The files of the Tofino program (inca.p4 and what it includes).
TNA_FILES = ('headers.p4', 'parser.p4', 'bitmap.p4', 'verdict.p4', 'processor.p4',
             'next_step.p4', 'inca.p4')


def tna_text(p4_dir):
    """The Tofino program's source, comments stripped."""
    return ''.join(strip_comments(open(os.path.join(p4_dir, f)).read()) for f in TNA_FILES)


def check_calls(fail, log, ctl, text):
    """Every bfrt call recorded in @log must name what the P4 has, with the
    right keys and parameters. Returns ({(table, action): adds}, PRE nodes)."""
    counts = {}
    nodes = []
    for path, args, kw in log:
        where = '.'.join(path)
        if path[:2] == ('inca', 'pipe') and len(path) == 5 and \
                re.match(r'(add|set_default)_with_', path[4]):
            control, table, method = path[2], path[3], path[4]
            action = method.split('_with_', 1)[1]
            t = ctl.get(control, {}).get('tables', {}).get(table)
            fail.expect(t is not None, '%s: no table %s in control %s' % (where, table,
                                                                          control))
            if t is None:
                continue
            fail.expect(action in t['actions'], '%s: table %s has no action %s'
                        % (where, table, action))
            params = ctl[control]['actions'].get(action, [])
            want = set(params) | (set(t['keys']) if method.startswith('add') else set())
            fail.expect(set(kw) == want, '%s: arguments %s, the P4 has %s'
                        % (where, sorted(kw), sorted(want)))
            counts[(table, action)] = counts.get((table, action), 0) + 1
        elif path[:2] == ('inca', 'pipe') and len(path) == 6 and path[5] == 'mod':
            control, inst, reg = path[2], path[3], path[4]
            typ = ctl.get(control, {}).get('instances', {}).get(inst)
            regs = ctl.get(typ, {}).get('registers', {})
            fail.expect(reg in regs, '%s: no register %s in %s' % (where, reg, typ))
            if reg in regs:
                fields = struct_fields(text, regs[reg]) or ['f1']
                fail.expect(set(kw) == {'REGISTER_INDEX'} | set(fields),
                            '%s: fields %s, the register has %s' % (where, sorted(kw),
                                                                     fields))
        elif path[:2] == ('inca', 'pipe') and len(path) == 5 and path[4] == 'add':
            fail.expect(path[3] in ctl.get(path[2], {}).get('value_sets', set()),
                        '%s: no value set %s in %s' % (where, path[3], path[2]))
        elif path[:2] == ('inca', 'pipe') and len(path) == 5 and path[4] == 'delete':
            t = ctl.get(path[2], {}).get('tables', {}).get(path[3])
            fail.expect(t is not None and set(kw) == set(t['keys']),
                        '%s: keys %s, the P4 has %s' % (where, sorted(kw),
                                                        t and sorted(t['keys'])))
        elif path[:2] == ('inca', 'pipe') and len(path) == 5 and path[4] == 'get':
            fail.expect(re.search(r"\bCounter\s*<[^;]*>\s*\([^;]*\)\s*%s\s*;" % path[3],
                                  text) is not None and 'COUNTER_INDEX' in kw,
                        '%s: no counter %s read by index in the P4' % (where, path[3]))
        elif path == ('pre', 'node', 'entry'):
            nodes.append(kw)
        elif path[-1] in ('push', 'complete_operations') or \
                path in (('pre', 'mgid', 'entry'), ('pre', 'mgid', 'mod_inc'),
                         ('pre', 'mgid', 'mod_dec'), ('pre', 'node', 'delete'),
                         ('pre', 'mgid', 'delete')):
            pass
        else:
            fail.expect(False, 'unexpected call %s' % where)

    return counts, nodes


def check_bfrt(fail, p4_dir, vectors, scenario):
    text = tna_text(p4_dir)
    ctl = p4_controls(text)
    log = []
    env = {'INCA_MANIFEST': os.path.join(vectors, 'vectors.json'), 'INCA_SCENARIO': scenario}
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        src = open(os.path.join(p4_dir, 'control', 'setup_job.py')).read()
        with contextlib.redirect_stdout(io.StringIO()):
            exec(compile(src, 'setup_job.py', 'exec'),
                 {'bfrt': Recorder(log), '__name__': 'setup_job'})
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v

    with open(os.path.join(vectors, 'vectors.json')) as f:
        sc = [s for s in json.load(f)['scenarios'] if s['name'] == scenario][0]
    job = sc['job']
    counts, nodes = check_calls(fail, log, ctl, text)
    n, pool = job['nworkers'], job['pool_size']
    fail.expect(counts.get(('member', 'member_ok')) == n, 'bfrt: %s member entries for %d '
                'ranks' % (counts.get(('member', 'member_ok')), n))
    fail.expect(counts.get(('member_addr', 'set_member')) == n,
                'bfrt: member_addr entries != ranks')
    fail.expect(counts.get(('slot_map', 'slot_entry')) == 2 * pool,
                'bfrt: %s slot entries for %d slots of two sets'
                % (counts.get(('slot_map', 'slot_entry')), pool))
    sets = sorted(kw['set_index'] for path, _, kw in log
                  if path[-1:] == ('add_with_slot_entry',))
    base = 2 * sc.get('pool_base', 0)
    fail.expect(sets == list(range(base, base + 2 * pool)),
                'bfrt: slot entries do not cover the sets 2 (pool_base + slot) + set once each')
    fail.expect(counts.get(('job', 'job_home')) == 1, 'bfrt: not one job_home entry')
    fail.expect(sorted(k['multicast_rid'] for k in nodes) == list(range(n)),
                'bfrt: multicast nodes do not have RID = rank, one per member')
    homes = [kw for path, _, kw in log if path[-1:] == ('add_with_job_home',)]
    fail.expect(homes and homes[0].get('members') == (1 << n) - 1,
                'bfrt: job_home does not carry the bitmap of all n members')
    # A tree leaf: its uplink, its parent's RESULTs, its partials' address.
    leaf = 1 if 'parent' in sc else 0
    for entry in (('uplink', 'leaf_up'), ('parent', 'from_parent'),
                  ('parent_addr', 'set_parent')):
        fail.expect(counts.get(entry, 0) == leaf, 'bfrt: %s %s entries for %d leaf jobs'
                    % (counts.get(entry, 0), '/'.join(entry), leaf))
    zeroed = {path[4] for path, _, _ in log if path[-1:] == ('mod',)}
    fail.expect(zeroed == {'set_seq', 'set_bitmap', 'remaining', 'max_exp'},
                'bfrt: registers zeroed: %s' % sorted(zeroed))


def load_module(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def scenario_of(vectors, name):
    """(manifest, scenario) of the conformance vectors."""
    with open(os.path.join(vectors, 'vectors.json')) as f:
        man = json.load(f)
    return man, [s for s in man['scenarios'] if s['name'] == name][0]


def check_cli(fail, p4_dir, vectors, scenario):
    text = strip_comments(open(os.path.join(p4_dir, 'headers.p4')).read() +
                          open(os.path.join(p4_dir, 'v1model', 'inca_v1model.p4')).read())
    ctl = p4_controls(text)
    gen = load_module('gen_commands', os.path.join(p4_dir, 'v1model', 'gen_commands.py'))
    man, sc = scenario_of(vectors, scenario)
    j, agg = sc['job'], man['aggregator']
    lines = gen.commands(j['id'], j['token'], sc['members'], agg['ip'], agg['mac'],
                         j['pool_size'], j['elems'], parent=sc.get('parent'))
    counts = {}
    rids = []
    for line in lines:
        w = line.split()
        if not w or w[0].startswith('#'):
            continue
        if w[0] in ('table_add', 'table_set_default'):
            control, table = w[1].split('.')
            action = w[2].split('.')[-1]
            t = ctl.get(control, {}).get('tables', {}).get(table)
            fail.expect(t is not None, 'CLI: no table %s' % w[1])
            if t is None:
                continue
            fail.expect(action in t['actions'], 'CLI: table %s has no action %s'
                        % (w[1], action))
            fail.expect(w[2] == 'NoAction' or w[2].startswith(control + '.'),
                        'CLI: action %s not named in its control' % w[2])
            params = ctl[control]['actions'].get(action, [])
            if w[0] == 'table_add':
                arrow = w.index('=>')
                keys, vals = w[3:arrow], w[arrow + 1:]
                fail.expect(len(keys) == len(t['keys']), 'CLI: %s: %d keys, table has %d'
                            % (line, len(keys), len(t['keys'])))
            else:
                vals = w[3:]
            fail.expect(len(vals) == len(params), 'CLI: %s: %d parameters, %s has %d'
                        % (line, len(vals), action, len(params)))
            counts[table] = counts.get(table, 0) + 1
        elif w[0] == 'register_write':
            control, reg = w[1].split('.')
            fail.expect(reg in ctl.get(control, {}).get('registers', {}),
                        'CLI: no register %s' % w[1])
        elif w[0] == 'mc_node_create':
            rids.append(int(w[1]))
        elif w[0] not in ('mc_mgrp_create', 'mc_node_associate'):
            fail.expect(False, 'CLI: unknown command %s' % w[0])
    n = j['nworkers']
    fail.expect(counts.get('member') == n and counts.get('member_addr') == n,
                'CLI: member entries do not match the %d ranks' % n)
    fail.expect(counts.get('slot_map') == j['pool_size'], 'CLI: slot entries != pool size')
    fail.expect(sorted(rids) == list(range(n)), 'CLI: multicast node RIDs are not the ranks')
    leaf = 1 if 'parent' in sc else 0
    fail.expect([counts.get(t, 0) for t in ('uplink', 'parent', 'parent_addr')] == [leaf] * 3,
                'CLI: leaf entries (uplink, parent, parent_addr) do not match a %s job'
                % ('leaf' if leaf else 'root'))


class FakeSock:
    def __init__(self):
        self.sent = []

    def send(self, frame):
        self.sent.append(bytes(frame))


def check_tofino_ctl(fail, p4_dir, vectors, scenario):
    """control/switch_ctl.py's TofinoSwitch against the recording bfrt:
    switch set-up, the JOINs of the scenario's members, one LEAVE, a
    liveness pass. Every call must fit inca.p4; every member gets a
    JOIN_ACK; the LEAVE starts a new incarnation (a new job entry)."""
    from scapy.all import UDP, rdpcap
    text = tna_text(p4_dir)
    ctl_p4 = p4_controls(text)
    mod = load_module('switch_ctl', os.path.join(p4_dir, 'control', 'switch_ctl.py'))
    man, sc = scenario_of(vectors, scenario)
    j = sc['job']
    conf = {'aggregator': man['aggregator'], 'cpu_port': 192,
            'hosts': [{'mac': m['mac'], 'port': m['switch_port']} for m in sc['members']],
            'jobs': [{k: j[k] for k in ('id', 'token', 'nworkers', 'pool_size', 'window',
                                         'elems')}],
            'dynamic': {'job_ids': [100, 199], 'token': 0x5151, 'pool_size': 8,
                        'slots': [512, 64]}}
    log = []
    sock = FakeSock()
    ctl = mod.Control(conf, mod.TofinoSwitch(Recorder(log)), sock)
    joins = [bytes(p) for p in rdpcap(os.path.join(vectors, sc['files']['in']))
             if UDP in p and bytes(p[UDP].payload)[1] == 5]
    for f in joins:
        ctl.on_frame(f)
    acks = [f for f in sock.sent if len(f) > 43 and f[43] == 6]
    fail.expect(len(acks) == len(joins) == j['nworkers'],
                'switch_ctl: %d JOIN_ACKs for %d JOINs of %d ranks'
                % (len(acks), len(joins), j['nworkers']))
    session = ctl.jobs[j['id']].session
    # Rank 0's LEAVE with its address and session but without the member
    # secret of its JOIN_ACK (header bitmap) changes nothing; with it, the
    # job starts a new incarnation.
    secret = acks[0][70:74]
    fail.expect(secret != bytes(4), 'switch_ctl: a JOIN_ACK without a member secret')
    leave = bytearray(joins[0])
    leave[43] = 7
    leave[50:54] = session.to_bytes(4, 'big')
    ctl.on_frame(bytes(leave))
    fail.expect(ctl.jobs[j['id']].session == session,
                'switch_ctl: a LEAVE without the member secret started a new incarnation')
    leave[70:74] = secret
    ctl.on_frame(bytes(leave))
    fail.expect(ctl.jobs[j['id']].session != session,
                'switch_ctl: a LEAVE did not start a new incarnation')
    ctl.check_liveness()
    # A dynamic job: created by a JOIN, deleted by its only member's LEAVE.
    dyn = bytearray(joins[0])
    dyn[46:48] = (150).to_bytes(2, 'big')
    dyn[48:50] = (0).to_bytes(2, 'big')
    dyn[50:54] = (0x5151).to_bytes(4, 'big')
    dyn[42 + 32 + 8:42 + 32 + 10] = (1).to_bytes(2, 'big')      # nworkers 1
    ctl.on_frame(bytes(dyn))
    fail.expect(150 in ctl.jobs and ctl.jobs[150].members,
                'switch_ctl: a dynamic JOIN created no job')
    if 150 in ctl.jobs:
        dyn[43] = 7
        dyn[50:54] = ctl.jobs[150].session.to_bytes(4, 'big')
        dyn[70:74] = sock.sent[-1][70:74]      # its JOIN_ACK's member secret
        ctl.on_frame(bytes(dyn))
        fail.expect(150 not in ctl.jobs, 'switch_ctl: the last LEAVE left the dynamic job')
    counts, nodes = check_calls(fail, log, ctl_p4, text)
    n = j['nworkers']
    fail.expect(counts.get(('member', 'member_ok')) == n + 1 and
                counts.get(('member_addr', 'set_member')) == n + 1,
                'switch_ctl: %s member entries for %d ranks' % (counts, n))
    fail.expect(counts.get(('job', 'job_home')) == 3,
                'switch_ctl: not one job entry per incarnation: %s' % counts)
    fail.expect(sorted(k['multicast_rid'] for k in nodes) == sorted(list(range(n)) + [0]),
                'switch_ctl: multicast nodes do not have RID = rank')


def check_tofino_uplink(fail, p4_dir):
    """TofinoSwitch.set_uplink, as switch_ctl.py calls it through a leaf's
    life: no parent session (leaf_down), a session, the next session after
    the parent's incarnation changed, none again. Every call must fit
    inca.p4 (tables, keys, actions, parameters); each session gets one
    uplink leaf_up entry, one parent_addr entry and a parent entry in every
    pipe, all carrying it, and the previous session's entries are deleted
    by their keys."""
    text = tna_text(p4_dir)
    ctl_p4 = p4_controls(text)
    mod = load_module('switch_ctl', os.path.join(p4_dir, 'control', 'switch_ctl.py'))
    j = mod.Job({'id': 7, 'token': 0x77, 'nworkers': 3, 'pool_size': 4, 'elems': 64,
                 'parent': {'ip': '10.0.100.1', 'mac': '02:00:00:00:cc:00', 'port': 3,
                            'udp_port': 18766, 'job': 70, 'rank': 2, 'nworkers': 4}})
    j.session = 0x5e55
    pipes, home = (0, 1), 1
    ing = ('inca', 'pipe', 'Ingress')
    egr = ('inca', 'pipe', 'Egress')
    steps = []
    for session in (0, 0x1111, 0x2222, 0):
        log = []
        sw = mod.TofinoSwitch(Recorder(log), pipes=pipes, home_pipe=home)
        if steps:
            j.handles['uplink'] = steps[-1][0]
        else:
            j.handles.pop('uplink', None)
        sw.set_uplink(j, session)
        check_calls(fail, log, ctl_p4, text)
        steps.append((session, log))
    calls = {}
    for i, (session, log) in enumerate(steps):
        old = steps[i - 1][0] if i else None
        adds = [(p[3], p[4], kw) for p, _, kw in log if len(p) == 5 and
                p[4].startswith('add_with_')]
        dels = [(p[3], kw) for p, _, kw in log if len(p) == 5 and p[4] == 'delete']
        calls[session] = (adds, dels)
        what = 'set_uplink(%#x after %s)' % (session, old if old is None else hex(old))
        if session == 0:
            fail.expect([(t, a) for t, a, _ in adds] == [('uplink', 'add_with_leaf_down')] and
                        adds[0][2] == {'job': 7},
                        '%s: not one uplink leaf_down entry for the job: %s' % (what, adds))
        else:
            ups = [kw for t, a, kw in adds if (t, a) == ('uplink', 'add_with_leaf_up')]
            fail.expect(ups == [{'job': 7, 'port': 3}],
                        '%s: uplink leaf_up entries %s' % (what, ups))
            pa = [kw for t, a, kw in adds if (t, a) == ('parent_addr', 'add_with_set_parent')]
            fail.expect(len(pa) == 1 and pa[0]['session'] == session and
                        pa[0]['parent_job'] == 70 and pa[0]['rank'] == 2 and
                        pa[0]['ip'] == 0x0a006401 and pa[0]['udp_port'] == 18766 and
                        pa[0]['mac'] == 0x02000000cc00,
                        '%s: parent_addr entries %s' % (what, pa))
            fp = [kw for t, a, kw in adds if (t, a) == ('parent', 'add_with_from_parent')]
            fail.expect(sorted(kw['pipe'] for kw in fp) == list(pipes) and
                        all(kw['token'] == session and kw['job'] == 70 and kw['vlan'] == 0 and
                            kw['leaf_job'] == 7 and kw['session'] == 0x5e55 and
                            kw['members'] == 0x7 and kw['recirc_port'] == (home << 7 | 68)
                            for kw in fp),
                        '%s: parent entries %s' % (what, fp))
        want_dels = []
        if old is not None:
            want_dels.append(('uplink', {'job': 7}))
        if old:
            for pipe in pipes:
                want_dels.append(('parent', {'ip': 0x0a006401, 'udp_port': 18766, 'vlan': 0,
                                             'job': 70, 'token': old, 'pipe': pipe}))
            want_dels.append(('parent_addr', {'job': 7}))
        fail.expect(sorted(dels, key=repr) == sorted(want_dels, key=repr),
                    '%s: deleted %s, want %s' % (what, dels, want_dels))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--p4-dir', required=True)
    ap.add_argument('--vectors', required=True)
    args = ap.parse_args()
    fail = Failures()
    for scenario in ('sum2', 'sum4_bfp', 'sum2_large', 'leaf_partial'):
        check_bfrt(fail, args.p4_dir, args.vectors, scenario)
        check_cli(fail, args.p4_dir, args.vectors, scenario)
    check_tofino_ctl(fail, args.p4_dir, args.vectors, 'sum2')
    check_tofino_uplink(fail, args.p4_dir)
    for f in fail.items:
        print('FAIL: ' + f)
    print('%d checks, %d failed' % (fail.checks, len(fail.items)))
    return 1 if fail.items else 0


if __name__ == '__main__':
    sys.exit(main())

#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The INCA authors
"""incad integration tests: the real daemon in an emulated rack (tools/rack),
driven by real UDP traffic from worker namespaces.

    integration.py --incad PATH TEST

Each TEST builds its own rack (a unique name), starts incad in the rack's
agg namespace and removes both when it ends, whether it passes or not.
Exit status 0: passed; 1: failed (the reason and incad's log on stderr).
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import inca_proto as P  # noqa: E402
from harness import (PYTHON, HERE, Failed, Rack, Incad, Telemetry, check,  # noqa: E402
                     run_workers, log)

PING = os.path.join(HERE, 'icmp_ping.py')
TOKEN = 0x494E4341  # tools/rack conf's default token of job 1 (job 1 + k: +k)
INCAD = None

# Every collective a worker runs: dtype:op:elements:seed. Sizes are not
# multiples of the chunk so that the last chunk is short; together they use
# more chunks than twice the pool so that both shadow sets of every slot are
# reused several times.
COLLECTIVES = ['int32:sum:3077:1', 'int32:min:1500:2', 'int32:max:1500:3',
               'fp32:sum:3077:4', 'fp16:sum:2000:5', 'bf16:sum:2000:6',
               'fp32:min:1000:7', 'fp32:max:1000:8', 'int64:sum:1500:9', 'int64:min:700:10',
               'fp64:sum:1500:11', 'fp64:max:700:12']
POOL = 16


def ping(rack, node, dest, count=3, timeout=1.0):
    r = rack.run(node, [PYTHON, PING, dest, str(count), str(timeout)],
                 capture_output=True, text=True, timeout=60)
    return json.loads(r.stdout)


def neigh_mac(rack, node, ip):
    r = rack.run(node, ['ip', '-j', 'neigh', 'show', ip], capture_output=True, text=True,
                 check=True)
    entries = json.loads(r.stdout or '[]')
    return entries[0].get('lladdr') if entries else None


def link_mac(rack, node, ifname):
    r = rack.run(node, ['ip', '-j', 'link', 'show', ifname], capture_output=True, text=True,
                 check=True)
    return json.loads(r.stdout)[0]['address']


def worker_args(rack, job, rank, nworkers, colls, token=TOKEN, extra=()):
    return ['--agg', rack.agg_ip, '--job', str(job), '--rank', str(rank),
            '--token', hex(token), '--nworkers', str(nworkers)] + list(extra) + list(colls)


def check_results(outs, colls, nworkers, what=''):
    """Every worker got the exact reduction of all workers' inputs."""
    for spec in colls:
        d, op, n, seed = spec.split(':')
        inputs = [P.gen_data(d, op, r, int(n), int(seed)) for r in range(nworkers)]
        want = P.expected(d, op, inputs)
        for o in outs:
            check('error' not in o, '%s rank %d: %s', what, o['rank'], o.get('error'))
            got = o['results'][spec]
            bad = [i for i in range(len(want)) if got[i] != want[i]]
            check(not bad, '%s rank %d %s: %d wrong elements, first [%d] = %#x, expected %#x',
                  what, o['rank'], spec, len(bad), bad[0] if bad else 0,
                  got[bad[0]] if bad else 0, want[bad[0]] if bad else 0)


def allreduce_test(tag, nworkers, mode='switch', rate='0', colls=COLLECTIVES, mtu=1500,
                   chained=False):
    with Rack(tag, workers=nworkers, mode=mode, rate=rate, mtu=mtu) as rack:
        with Incad(rack, INCAD, conf_args=['--pool-size', str(POOL)]) as inc:
            outs = run_workers(rack, [(r, worker_args(rack, 1, r, nworkers, colls))
                                      for r in range(nworkers)])
            check_results(outs, colls, nworkers)
            if chained:
                st = Telemetry(inc.prefix).connect(timeout=10).query('/incad/stats')
                check(st.get('RESULT_CHAINED', 0) > 0,
                      'no RESULT replicated (header mbuf chained to the shared payload): %s',
                      st.get('RESULT_CHAINED'))
            for o in outs:
                check(o['ack']['pool_size'] == POOL, 'pool_size %d granted, config says %d',
                      o['ack']['pool_size'], POOL)
            log('retransmissions per rank:', [o['retx'] for o in outs])


# ---- the tests ----

def test_arp_ping():
    """incad answers ARP for its address and ICMP echo from a worker."""
    with Rack('arp', workers=2) as rack:
        with Incad(rack, INCAD):
            for node in (0, 1):
                r = ping(rack, node, rack.agg_ip, count=3)
                check(r.get('received') == 3, 'worker %d ping %s: %s', node, rack.agg_ip, r)
                mac = neigh_mac(rack, node, rack.agg_ip)
                # incad answers with the MAC of the port facing the worker.
                want = link_mac(rack, 'agg', 'w%d' % node)
                check(mac == want, 'worker %d: ARP says %s is at %s, port w%d is %s',
                      node, rack.agg_ip, mac, node, want)


def test_ping_workers():
    """Switch mode: incad forwards ordinary frames (ARP, ICMP) between workers."""
    with Rack('fwd', workers=3) as rack:
        # No incad, no path: the rack itself does not connect the workers.
        r = ping(rack, 0, rack.worker_ips[1], count=1, timeout=0.3)
        check(r.get('received') == 0, 'workers reach each other without incad: %s', r)
        with Incad(rack, INCAD):
            for a, b in ((0, 1), (1, 0), (2, 0)):
                r = ping(rack, a, rack.worker_ips[b], count=3)
                check(r.get('received') == 3, 'worker %d -> worker %d: %s', a, b, r)
                mac = neigh_mac(rack, a, rack.worker_ips[b])
                check(mac == rack.env['RACK_WORKER_MACS'].split()[b],
                      'worker %d sees worker %d at %s', a, b, mac)


def test_allreduce_2():
    """2 workers: int32 sum/min/max, fp32/fp16/bf16 sum, fp32 min/max, int64
    sum/min, fp64 sum/max, exact."""
    allreduce_test('ar2', 2)


def test_allreduce_4():
    """4 workers on 500 Mbit/s links: the same collectives, exact."""
    allreduce_test('ar4', 4, rate='500mbit')


def test_jumbo():
    """MTU 9000: 2048-element chunks (8 KiB int32 payloads) through af_packet,
    whose RESULTs go out replicated (net_af_packet sends chained mbufs)."""
    allreduce_test('jumbo', 2, mtu=9000, chained=True,
                   colls=['int32:sum:20000:61', 'fp32:sum:9000:62', 'fp16:sum:9000:63'])


def test_aggregator_mode():
    """Aggregator mode: incad on one port behind a Linux bridge, 4 workers."""
    allreduce_test('agg', 4, mode='aggregator',
                   colls=['int32:sum:3077:11', 'fp32:sum:3077:12', 'bf16:sum:999:13'])


def test_two_jobs():
    """Two jobs at once, two workers each: each gets its own job's sums."""
    colls = {1: ['int32:sum:4000:21', 'fp32:sum:2000:22'],
             2: ['int32:sum:4000:31', 'fp32:sum:2000:32']}
    with Rack('2job', workers=4) as rack:
        with Incad(rack, INCAD, conf_args=['--jobs', '2', '--nworkers', '2',
                                           '--pool-size', str(POOL)]):
            specs = []
            for node in range(4):
                job = 1 + node // 2
                specs.append((node, worker_args(rack, job, node % 2, 2, colls[job],
                                                token=TOKEN + job - 1)))
            outs = run_workers(rack, specs)
            check_results(outs[0:2], colls[1], 2, 'job 1')
            check_results(outs[2:4], colls[2], 2, 'job 2')


def test_non_member():
    """A sender that is not a member of the job changes nothing, gets no
    answer, and each of its packets is counted as a drop."""
    colls = ['int32:sum:2560:41']
    nchunks = 10  # 2560 elements in chunks of 256
    with Rack('spoof', workers=3) as rack:
        with Incad(rack, INCAD, conf_args=['--nworkers', '2', '--pool-size', str(POOL)]) as d:
            tel = d.telemetry()
            gate = os.path.join(d.dir, 'go')
            procs = []
            try:
                for r in range(2):
                    args = worker_args(rack, 1, r, 2, colls,
                                       extra=['--chunk', '256', '--wait-file', gate])
                    procs.append(rack.popen(r, [PYTHON, os.path.join(HERE, 'inca_worker.py')]
                                            + args, stdout=subprocess.PIPE, text=True))
                wait_files([gate + '.joined.%d' % r for r in range(2)], procs)
                before = tel.query('/incad/drops')
                # Worker 2 is no member: it sends the chunks the members are
                # about to send, as rank 0 and rank 1, with the right token.
                sent = inject(rack, 2, rack.agg_ip, 1, TOKEN, nchunks, 256)
                check(sent['answers'] == 0, 'non-member got %d answers', sent['answers'])
                after = tel.query('/incad/drops')
                job = tel.query('/incad/job,1')
                open(gate, 'w').close()
                outs = [json.loads(p.communicate(timeout=60)[0]) for p in procs]
            finally:
                for p in procs:
                    if p.poll() is None:
                        p.kill()
                        p.wait()
            check_results(outs, colls, 2)
            moved = {k: after[k] - before.get(k, 0) for k in after if after[k] != before.get(k, 0)}
            log('drops caused by the non-member:', moved)
            # It knows the job token, not the members' session token: every
            # frame is a BAD_TOKEN drop, none answered, none counted.
            check(moved == {'core/BAD_TOKEN': sent['sent']},
                  'expected %d core/BAD_TOKEN drops and nothing else, got %s',
                  sent['sent'], moved)
            check(job['CONTRIB'] == 0 and job['COMPLETE'] == 0 and job['DROP'] == sent['sent'],
                  'job 1 after the non-member sent %d packets: %s', sent['sent'], job)
            done = tel.query('/incad/job,1')
            tel.close()
            check(done.get('COMPLETE') == nchunks,
                  'job 1 completed %s sets, the members sent %d chunks', done.get('COMPLETE'),
                  nchunks)


def test_sigterm():
    """SIGTERM: incad stops cleanly (status 0) and prints its final stats."""
    with Rack('term', workers=2) as rack:
        d = Incad(rack, INCAD)
        with d:
            outs = run_workers(rack, [(r, worker_args(rack, 1, r, 2, ['int32:sum:1000:51']))
                                      for r in range(2)])
            check_results(outs, ['int32:sum:1000:51'], 2)
            t0 = time.monotonic()
            rc = d.stop(signal.SIGTERM, grace=10.0)
            took = time.monotonic() - t0
            out = d.output()
            check(rc == 0, 'incad exited with %s after SIGTERM:\n%s', rc, out)
            log('incad stopped in %.2f s' % took)
            # 1000 elements in chunks of 256: 4 sets, 8 contributions.
            for line in ('final statistics', 'counter CONTRIB 8\n', 'counter COMPLETE 4\n',
                         'counter RESULT_TX 8\n'):
                check(line in out, 'no "%s" in the final output:\n%s', line.strip(), out)
            # A worker that starts first retransmits while it waits for the
            # other: DUPLICATE drops are expected. On a loaded host a
            # retransmission can also get a replay after its worker had the
            # result and exited: the worker's kernel answers that with ICMP
            # port unreachable, which incad counts as ICMP_INVALID. Nothing
            # else.
            replays = 'counter REPLAY_TX ' in out
            drops = [ln for ln in out.splitlines() if ln.startswith('drop ')
                     and not ln.startswith('drop core/DUPLICATE ')
                     and not (replays and ln.startswith('drop incad/ICMP_INVALID '))]
            check(not drops, 'unexpected drops: %s', drops)


# ---- helpers of the tests above ----

def wait_files(paths, procs, timeout=30.0):
    end = time.monotonic() + timeout
    while not all(os.path.exists(p) for p in paths):
        for p in procs:
            if p.poll() is not None:
                raise Failed('worker exited early: %s' % p.communicate()[0])
        check(time.monotonic() < end, 'workers did not join: %s', paths)
        time.sleep(0.05)


def inject(rack, node, agg_ip, job, token, nchunks, count):
    """Send CONTRIBs for ranks 0 and 1 of a job from another node."""
    code = '''
import sys, json, select, socket
sys.path.insert(0, %r)
import inca_proto as P
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(('', 0))
n = 0
for k in range(%d):
    for rank in (0, 1):
        h = P.hdr_pack(type=P.MSG['CONTRIB'], dtype=P.DTYPE['INT32'], op=P.OP['SUM'],
                       job=%d, rank=rank, token=%d, slot=k %% %d,
                       flags=P.F_SET if (k // %d) %% 2 else 0, seq=k, offset=k * %d, count=%d)
        s.sendto(h + P.elems_pack(P.DTYPE['INT32'], [0x01010101] * %d), (%r, P.UDP_PORT))
        n += 1
answers = 0
while select.select([s], [], [], 0.5)[0]:
    s.recv(65536)
    answers += 1
print(json.dumps({'sent': n, 'answers': answers}))
''' % (HERE, nchunks, job, token, POOL, POOL, count, count, count, agg_ip)
    r = rack.run(node, [PYTHON, '-c', code], capture_output=True, text=True, timeout=30,
                 check=True)
    return json.loads(r.stdout)


TESTS = {name[5:]: fn for name, fn in globals().items() if name.startswith('test_')}


def main():
    global INCAD
    ap = argparse.ArgumentParser()
    ap.add_argument('--incad', required=True)
    ap.add_argument('test', choices=sorted(TESTS))
    a = ap.parse_args()
    INCAD = os.path.abspath(a.incad)
    if os.geteuid() != 0:
        log('integration tests need root (network namespaces)')
        return 1
    # meson stops a test that overruns its timeout with SIGTERM: turn it
    # into an exception so that every 'with' block removes its rack and
    # stops its incad on the way out.
    def stop(sig, frame):
        raise Failed('stopped by signal %d' % sig)
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    t0 = time.monotonic()
    try:
        TESTS[a.test]()
    except Exception as e:
        if not isinstance(e, Failed):
            traceback.print_exc()
        log('FAIL %s: %s (%.1f s)' % (a.test, e, time.monotonic() - t0))
        return 1
    log('PASS %s (%.1f s)' % (a.test, time.monotonic() - t0))
    return 0


if __name__ == '__main__':
    sys.exit(main())

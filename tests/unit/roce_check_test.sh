#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# tools/roce-check on a host without an RDMA device stops at its first step
# with exit status 1 and says why. Skipped (77) where there is a device:
# there the check is tools/roce-check itself, against a real incad.
#
#   roce_check_test.sh PATH/TO/roce-check
set -u
if compgen -G '/sys/class/infiniband/*' >/dev/null; then
	echo "this host has RDMA devices: skipped"
	exit 77
fi
out=$("$1" -a 127.0.0.1 -j 1 2>&1)
rc=$?
if [ $rc -ne 1 ]; then
	echo "roce-check exited $rc, want 1:"
	echo "$out"
	exit 1
fi
if ! grep -q 'FAIL: no RDMA device on this host' <<<"$out"; then
	echo "roce-check did not say there is no RDMA device:"
	echo "$out"
	exit 1
fi
echo "ok: $out" | tail -1

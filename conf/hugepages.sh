#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Reserve hugepages for incad (DPDK EAL memory) and mount hugetlbfs for each
# page size, then print what the kernel actually granted and the lines that
# make it survive a reboot. Nothing is written outside /sys and the mounts.
#
#   conf/hugepages.sh [--2m N] [--1g N] [--node N] [--dir2m DIR] [--dir1g DIR]
#                     [--dry-run]
#
# --2m N     reserve N 2 MiB pages (default 512 = 1 GiB unless --1g is given)
# --1g N     reserve N 1 GiB pages (x86-64 CPUs with pdpe1gb, arm64 with 4K
#            base pages); at run time the kernel often finds fewer contiguous
#            gigabytes than asked: reserve them on the kernel command line
# --node N   reserve on NUMA node N only (the NIC's node: cat
#            /sys/bus/pci/devices/<pci>/numa_node); default: let the kernel
#            spread them over all nodes
# --dir2m, --dir1g  mount points (default /dev/hugepages, /dev/hugepages1G),
#            mounted only if no hugetlbfs of that page size is mounted yet
# --dry-run  print what would be done, do nothing
#
# Counts are absolute (0 releases the free pages of that size). Exit status:
# 0 when every requested count was granted, 1 when fewer were, 2 on misuse.
set -uo pipefail

N2M=
N1G=
NODE=
DIR2M=/dev/hugepages
DIR1G=/dev/hugepages1G
DRY=0
while [ $# -gt 0 ]; do
	case "$1" in
	--2m) N2M=$2; shift 2 ;;
	--1g) N1G=$2; shift 2 ;;
	--node) NODE=$2; shift 2 ;;
	--dir2m) DIR2M=$2; shift 2 ;;
	--dir1g) DIR1G=$2; shift 2 ;;
	--dry-run) DRY=1; shift ;;
	-h|--help) sed -n '3,22p' "$0"; exit 0 ;;
	*) echo "hugepages: unknown argument $1" >&2; exit 2 ;;
	esac
done
if [ -z "$N2M" ] && [ -z "$N1G" ]; then
	N2M=512
fi
for v in "$N2M" "$N1G" "$NODE"; do
	case "$v" in
	''|*[!0-9]*) [ -z "$v" ] || { echo "hugepages: '$v' is not a count" >&2; exit 2; } ;;
	esac
done
if [ "$DRY" = 0 ] && [ "$(id -u)" -ne 0 ]; then
	echo "hugepages: needs root (or --dry-run)" >&2
	exit 2
fi

run() {
	echo "  # $*"
	[ "$DRY" = 1 ] || "$@"
}

# The sysfs file holding the count of pages of SIZE kB, for NODE or for all.
count_file() {
	if [ -n "$NODE" ]; then
		echo "/sys/devices/system/node/node$NODE/hugepages/hugepages-${1}kB/nr_hugepages"
	else
		echo "/sys/kernel/mm/hugepages/hugepages-${1}kB/nr_hugepages"
	fi
}

# Mount point of a hugetlbfs whose page size is SIZE kB, if any. A mount
# without pagesize= uses the default size, which /proc/mounts spells out.
mounted_at() {
	local kb=$1 want
	if [ "$kb" = 1048576 ]; then want=1024M; else want=$((kb / 1024))M; fi
	awk -v w="pagesize=$want" '$3 == "hugetlbfs" && index("," $4 ",", "," w ",") { print $2; exit }' \
		/proc/mounts
}

fail=0
reserve() { # size_kB count dir pagesize
	local kb=$1 n=$2 dir=$3 size=$4 label file got at
	if [ "$kb" -ge 1048576 ]; then label="$((kb / 1048576)) GiB"; else label="$((kb / 1024)) MiB"; fi
	file=$(count_file "$kb")
	if [ ! -e "$file" ]; then
		echo "hugepages: no $label pages${NODE:+ on node $NODE} here ($file missing)" >&2
		fail=1
		return
	fi
	echo "$label pages: asking for $n${NODE:+ on node $NODE}"
	echo "  # echo $n > $file"
	if [ "$DRY" = 1 ]; then
		echo "  (dry run; now $(cat "$file"))"
		got=$n
	else
		# The kernel grants what it can find; the read-back says how much.
		echo "$n" >"$file" 2>/dev/null ||
			echo "hugepages: writing $file failed" >&2
		got=$(cat "$file")
		echo "  granted $got of $n (free $(cat "${file%nr_hugepages}free_hugepages"))"
	fi
	if [ "$got" -lt "$n" ]; then
		echo "hugepages: only $got $label pages: memory is fragmented or short;" \
			"reserve them at boot (see below)" >&2
		fail=1
	fi
	at=$(mounted_at "$kb")
	if [ "$n" = 0 ]; then
		return
	elif [ -n "$at" ]; then
		echo "  hugetlbfs for $label pages already mounted at $at"
	else
		run mkdir -p "$dir"
		run mount -t hugetlbfs -o "pagesize=$size" nodev "$dir" ||
			{ echo "hugepages: mounting $dir failed" >&2; fail=1; return; }
		[ "$DRY" = 1 ] || echo "  hugetlbfs for $label pages mounted at $dir"
	fi
}

[ -n "$N2M" ] && reserve 2048 "$N2M" "$DIR2M" 2M
[ -n "$N1G" ] && reserve 1048576 "$N1G" "$DIR1G" 1G

default_kb=$(awk '/^Hugepagesize:/ { print $2 }' /proc/meminfo)
echo
echo "Hugepages now (default size $default_kb kB):"
for d in /sys/kernel/mm/hugepages/hugepages-*kB; do
	[ -e "$d/nr_hugepages" ] || continue
	echo "  ${d##*hugepages-}: total $(cat "$d/nr_hugepages") free $(cat "$d/free_hugepages")"
done
awk '$3 == "hugetlbfs" { print "  hugetlbfs at " $2 " (" $4 ")" }' /proc/mounts
echo
echo "To keep this across reboots:"
if [ -n "$N2M" ]; then
	# vm.nr_hugepages counts pages of the default size, on all nodes.
	if [ "$default_kb" = 2048 ] && [ -z "$NODE" ]; then
		echo "  echo 'vm.nr_hugepages = $N2M' > /etc/sysctl.d/80-incad-hugepages.conf"
	else
		echo "  kernel command line: hugepagesz=2M hugepages=${NODE:+$NODE:}$N2M"
	fi
fi
if [ -n "$N1G" ]; then
	echo "  kernel command line: hugepagesz=1G hugepages=${NODE:+$NODE:}$N1G"
	echo "  (Debian/Ubuntu: add it to GRUB_CMDLINE_LINUX in /etc/default/grub, then update-grub)"
	echo "  /etc/fstab: nodev $DIR1G hugetlbfs pagesize=1G 0 0"
fi
if [ -n "$N2M" ] && [ "$DIR2M" != /dev/hugepages ]; then
	echo "  /etc/fstab: nodev $DIR2M hugetlbfs pagesize=2M 0 0"
elif [ -n "$N2M" ]; then
	echo "  /dev/hugepages is mounted by systemd (dev-hugepages.mount)"
fi
echo "  (node-specific counts on the command line, N:count, need Linux 5.7 or later)"
exit $fail

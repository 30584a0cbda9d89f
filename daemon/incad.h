/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * incad's shared run-time state: ports, dataplane lcores, counters and log
 * types. Which thread owns what (docs/incad.md, "Threads"):
 *  - the I/O lcore (dataplane lcore 0) polls every port, answers ARP and
 *    ICMP, forwards in switch mode, meters HELLO and JOIN per source, runs
 *    the tree leaves' uplinks and transmits every frame; control messages
 *    it passes to the control thread through a ring;
 *  - the other dataplane lcores aggregate the slots they own, fed by the
 *    I/O lcore through a ring, and hand their frames back through another;
 *  - the control thread (ctrl_thread.c, a DPDK control thread, asleep when
 *    idle) handles HELLO, JOIN, LEAVE and HEARTBEAT, evicts, waits for RCU
 *    grace periods and resets jobs; it is the only writer of the job
 *    table and hands its answers back through a ring, as an lcore does;
 *  - the main lcore prints statistics and waits for a signal (or is the
 *    I/O lcore itself when EAL gave incad a single lcore);
 *  - telemetry threads only read, inside an RCU read-side section.
 */
#ifndef INCAD_H
#define INCAD_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <rte_common.h>
#include <rte_dev.h>
#include <rte_ether.h>
#include <rte_log.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_meter.h>
#include <rte_rcu_qsbr.h>
#include <rte_ring.h>

#include <inca/wire.h>

#include "agg.h"
#include "config.h"

/* Counters of things done, per dataplane lcore. X(name, description). */
#define INCAD_COUNTERS(X) \
	X(RX, "frames received") \
	X(TX, "frames handed to a port") \
	X(INCA_RX, "valid INCA messages received") \
	X(CONTRIB, "contributions counted") \
	X(COMPLETE, "sets completed") \
	X(RESULT_TX, "RESULT frames sent (one per member)") \
	X(RESULT_CHAINED, "of which a header mbuf chained to the set's shared payload") \
	X(REPLAY_TX, "RESULT replays sent to one sender") \
	X(NACK_TX, "NACK frames sent") \
	X(CTRL_QUEUED, "control messages passed to the control thread") \
	X(CTRL_RX, "control messages handled by the control thread") \
	X(CTRL_TX, "control answers sent") \
	X(CTRL_TX_RING, "answers the control thread passed to the I/O lcore") \
	X(CTRL_WAKEUP, "wake-ups of the sleeping control thread by the I/O lcore") \
	X(CTRL_HELD, "data messages the I/O lcore held back behind their job's JOIN or LEAVE until the control thread had handled it") \
	X(ARP_REPLY, "ARP replies sent") \
	X(ARP_LEARN, "neighbours learned from ARP") \
	X(ARP_REQUEST, "ARP requests sent (a tree's parent)") \
	X(PARTIAL_TX, "partial sums sent to a tree's parent") \
	X(PARTIAL_RETX, "partial sums sent again (a member retransmitted)") \
	X(PARENT_RESULT, "results from a tree's parent handed to the members") \
	X(UPLINK_TX, "control messages sent to a tree's parent") \
	X(ICMP_REPLY, "ICMP echo replies sent") \
	X(L2_FWD, "frames forwarded to one port (switch mode)") \
	X(L2_FLOOD, "frames flooded to the other ports (switch mode)") \
	X(DISPATCH, "contributions handed to another lcore") \
	X(EVICT, "members evicted") \
	X(IDLE_SLEEP, "idle sleeps") \
	X(ROCE_RX, "RoCEv2 packets received whose envelope was valid") \
	X(ROCE_TX, "RoCEv2 packets built for RoCE members (RESULTs, replays, NACKs)")

enum incad_counter {
#define INCAD_X_(n, d) INCAD_CNT_##n,
	INCAD_COUNTERS(INCAD_X_)
#undef INCAD_X_
	INCAD_CNT_COUNT
};

/*
 * Drops the daemon itself decides (wire errors and the core's reasons are
 * counted under their own enums). X(name, description).
 */
#define INCAD_DROPS(X) \
	X(NOT_LOCAL, "not addressed to incad (aggregator mode) or not a local IPv4 address") \
	X(UNHANDLED, "addressed to incad but neither ARP, ICMP echo nor INCA") \
	X(ARP_INVALID, "malformed or unsupported ARP") \
	X(ICMP_INVALID, "malformed ICMP or not an echo request") \
	X(L2_SAME_PORT, "destination MAC learned on the ingress port (switch mode)") \
	X(MULTI_SEG, "multi-segment frame that could not be linearised") \
	X(UNEXPECTED_MSG, "INCA message type an aggregator never receives") \
	X(MARTIAN_SRC, "control message from an address no worker can have (0/8, 127/8, multicast, 240/4, broadcast, incad's own)") \
	X(GROUP_DST, "INCA message to a broadcast or multicast MAC") \
	X(UNKNOWN_JOB, "data message for a job that does not exist") \
	X(NOT_MEMBER_ADDR, "data message whose source is not the rank's member address") \
	X(EVICTED, "data message from an evicted member (NACK EVICTED sent)") \
	X(MEMBER_LOST, "data message while the job misses a member (NACK sent)") \
	X(JOB_RESETTING, "contribution while the job's sets are being reset") \
	X(STALE_SESSION, "message of the job's previous incarnation (its session token)") \
	X(CONTRIB_REFUSED, "contribution larger than the incarnation's max_elems (NACK sent)") \
	X(CTRL_BAD_TOKEN, "control message with the wrong job or session token") \
	X(CTRL_NOT_MEMBER, "LEAVE or HEARTBEAT not from the rank's member address") \
	X(CTRL_BAD_SECRET, "LEAVE or HEARTBEAT from the member's address without its member secret") \
	X(CTRL_REFUSED, "control request refused (NACK sent)") \
	X(CTRL_RATE_LIMITED, "HELLO or JOIN beyond its source's rate and burst, after RATE_LIMITED was sent") \
	X(CTRL_TENANT_RATE, "JOIN beyond its tenant's control_rate and control_burst, after RATE_LIMITED was sent") \
	X(CTRL_RING_FULL, "control message dropped: the ring to the control thread is full") \
	X(CTRL_HOLD_FULL, "data message to hold behind its job's JOIN or LEAVE dropped: the hold queue is full") \
	X(NO_MBUF, "no mbuf for an answer") \
	X(RING_FULL, "dispatch ring to an aggregation lcore full") \
	X(TX_RING_FULL, "ring back to the I/O lcore (from an lcore or the control thread) full") \
	X(TX_FULL, "port transmit queue full") \
	X(SHUTDOWN, "frame left in a ring at shutdown") \
	X(UPLINK_DOWN, "JOIN of a tree's leaf job while it is not joined to its parent") \
	X(UPLINK_WAIT, "partial sum held: the leaf is not joined to its parent (resent on retransmission)") \
	X(PARENT_STALE, "result or NACK from the parent for no waiting set or another session") \
	X(PARENT_UNEXPECTED, "message from the parent the leaf does not expect now") \
	X(INJECTED_LOSS, "contribution dropped on purpose (telemetry /incad/drop_prob)") \
	X(ROCE_NOT_DATA, "RoCEv2 packet carrying an INCA message other than a CONTRIB") \
	X(TENANT_RATE, "contribution beyond its tenant's rate_mbps and burst_kb (NACK HELD sent; the worker retransmits)") \
	X(PRIO_HELD, "contribution held back: its job's priority class is over its share of arbitration.capacity_mbps (NACK HELD sent; the worker retransmits)")

enum incad_drop {
#define INCAD_X_(n, d) INCAD_DROP_##n,
	INCAD_DROPS(INCAD_X_)
#undef INCAD_X_
	INCAD_DROP_COUNT
};

const char *incad_counter_name(unsigned int c);
const char *incad_drop_name(unsigned int d);
const char *incad_drop_str(unsigned int d);

/* Counters of one dataplane lcore; only that lcore writes them. */
struct incad_lcore_stats {
	uint64_t cnt[INCAD_CNT_COUNT];
	uint64_t wire[INCA_WIRE_ERR_COUNT];
	uint64_t agg[AGG_DROP_COUNT];
	uint64_t drop[INCAD_DROP_COUNT];
	uint64_t nack[INCA_NACK_MAX_];
	uint64_t port_rx[INCAD_MAX_PORTS];
	uint64_t port_tx[INCAD_MAX_PORTS];
	uint64_t busy_polls;
	uint64_t empty_polls;
	/* Contributions a tenant's members sent that passed its meter, and
	 * the frames it dropped (incad/TENANT_RATE as well). */
	uint64_t tenant_bytes[INCAD_MAX_TENANTS];
	uint64_t tenant_rate_drops[INCAD_MAX_TENANTS];
	/* JOINs over the tenant's control_rate (control thread). */
	uint64_t tenant_ctrl_limited[INCAD_MAX_TENANTS];
	/* Arbitration, by priority class: bytes that reached it (demand),
	 * bytes it let through, contributions it held back. */
	uint64_t class_offered[INCAD_PRIO_CLASSES];
	uint64_t class_bytes[INCAD_PRIO_CLASSES];
	uint64_t class_held[INCAD_PRIO_CLASSES];
} __rte_cache_aligned;

struct incad_port {
	char name[INCAD_NAME_LEN];
	char devname[RTE_DEV_NAME_MAX_LEN];
	uint16_t port_id;
	bool hotplugged;
	bool started;
	struct rte_ether_addr mac;
	uint32_t ipv4;       /* host order */
	rte_be32_t ipv4_be;
	uint32_t bcast;      /* the subnet's broadcast address, host order (0: none) */
	/* The PMD sends chained mbufs: a set's RESULTs share one payload. */
	bool tx_multi_seg;
};

struct incad_lcore {
	unsigned int idx;        /* dataplane index; 0 is the I/O lcore, nlcores the control thread */
	unsigned int lcore_id;
	struct rte_ring *rx_ring; /* I/O lcore -> this lcore (contributions) */
	struct rte_ring *tx_ring; /* this lcore -> I/O lcore (frames to send) */
	struct incad_lcore_stats st;
	uint32_t sleep_us;
	uint32_t empty_run;
	uint64_t last_work;       /* timer cycles of the last poll that found work */
	unsigned int ntx;         /* frames waiting in tx[] (non-I/O lcores) */
	struct rte_mbuf *tx[64];
	unsigned int nfree;       /* contributions done with, freed in bulk */
	struct rte_mbuf *free[64];
	/* Per-tenant meters of this lcore's share of each tenant's rate
	 * (rate_mbps / workers: slots, hence contributions, spread evenly). */
	struct rte_meter_srtcm tenant_meter[INCAD_MAX_TENANTS];
	/* Per-class meters of this lcore's share of the arbitration's
	 * capacity (arbiter.h). */
	struct rte_meter_srtcm class_meter[INCAD_PRIO_CLASSES];
} __rte_cache_aligned;

/*
 * Per-tenant rates (tenants' rate_mbps, burst_kb): one srTCM profile per
 * tenant with its share per lcore, every lcore's meters configured. Before
 * the lcores start. 0 or a negative errno.
 */
int incad_tenant_meters_init(void);

/* What the I/O lcore learned of a frame, kept in the mbuf's private area. */
struct incad_meta {
	struct inca_msg msg;  /* decoded header; body points into the mbuf */
	uint32_t src_ip;      /* host order */
	uint32_t dst_ip;
	uint16_t src_port;
	uint16_t in_port;     /* index into incad.ports */
	uint16_t vlan;        /* 802.1Q VLAN id of the frame, 0: untagged */
	uint8_t src_mac[6];
	uint32_t qpn;         /* RoCEv2: the sender's queue pair (DETH SrcQP) */
	bool roce;            /* came as RoCEv2 (else UDP to the INCA port) */
	uint64_t ctrl_seq;    /* control message: its place in the stream to the control thread;
			       * held data: the one it waits for */
	uint64_t ctrl_after;  /* held data: the last control message queued before it */
};

struct incad {
	struct incad_config cfg;
	struct rte_mempool *pool;
	unsigned int nports;
	struct incad_port ports[INCAD_MAX_PORTS];
	unsigned int nlcores;          /* dataplane lcores */
	struct incad_lcore *lcores;    /* nlcores of them */
	/*
	 * The control thread's state in the form of an lcore's (index
	 * nlcores): its counters, its tx buffer and its tx ring back to the
	 * I/O lcore. Its rx_ring takes the control messages. Not an RCU
	 * reader: it is the only writer of what the readers read.
	 */
	struct incad_lcore *ctrl;
	struct rte_rcu_qsbr *qs;       /* readers: dataplane lcores, then telemetry */
	unsigned int tel_tid;          /* RCU thread id of the telemetry threads */
	uint64_t hz;                   /* timer cycles per second */
	uint64_t start_tsc;
	volatile bool quit;
	/* A signal came: the I/O lcore stops receiving, lets the control
	 * thread finish what it was given, then sets quit. */
	volatile bool stopping;
	size_t mbuf_bytes;             /* footprint figures printed at start-up */
	size_t slot_bytes_max;
	size_t table_bytes;
	/* Operator requests from telemetry, carried out by the I/O lcore. */
	uint64_t drop_thresh;          /* drop a contribution if rand32 < this (2^32: all) */
	uint32_t evict_req;            /* job << 8 | rank to evict; 0: none pending */
	uint32_t ctrl_stall_ms;        /* test hook: the control thread sleeps this long */
};

extern struct incad incad;

extern int incad_logtype_port;
extern int incad_logtype_ctrl;
extern int incad_logtype_dp;
extern int incad_logtype_cfg;

#define INCAD_LOG(type, level, fmt, ...) \
	rte_log(RTE_LOG_##level, incad_logtype_##type, "incad." #type ": " fmt "\n", \
		##__VA_ARGS__)

static inline struct incad_meta *
incad_meta(struct rte_mbuf *m)
{
	return rte_mbuf_to_priv(m);
}

static inline uint64_t
incad_now(void)
{
	return rte_get_timer_cycles();
}

/* Index of the port with local address @ip (host order), -1 if none. */
int incad_local_port(uint32_t ip);
/* True for a source address no worker can have: 0/8, 127/8, 224/4, 240/4,
 * incad's own addresses and its subnets' broadcast addresses. */
bool incad_martian_src(uint32_t ip);

/* ports.c: bring up every configured port, and take them down. */
int incad_ports_init(void);
void incad_ports_fini(void);

/* stats.c: sums, printing and the footprint. */
void incad_stats_sum(struct incad_lcore_stats *out);
void incad_stats_print(FILE *f, const char *title);
void incad_stats_periodic(uint64_t now);
/* The statistics' timer hook (dataplane.h): incad_stats_periodic() on the main lcore. */
void incad_stats_timer(struct incad_lcore *lc, uint64_t now);
void incad_footprint_print(FILE *f);
/*
 * Enter and leave a read-side section from a thread that is not a
 * dataplane lcore (telemetry, the main lcore's statistics): jobs, lcores
 * and ports seen inside stay valid until incad_reader_exit(). Enter fails
 * (returns false) before incad_readers_open(true) and after
 * incad_readers_open(false), which waits for the readers inside.
 */
bool incad_reader_enter(void);
void incad_reader_exit(void);
void incad_readers_open(bool open);

/* telemetry.c */
int incad_telemetry_init(void);

#endif /* INCAD_H */

/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * incad's configuration as a plain struct. config.c is the only file that
 * knows libconfig: it parses, validates and copies into this struct, and
 * reports every problem as "file:line: message" on stderr.
 */
#ifndef INCAD_CONFIG_H
#define INCAD_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <inca/wire.h>

#define INCAD_MAX_PORTS 16
#define INCAD_MAX_LCORES 16
#define INCAD_MAX_TENANTS 64
#define INCAD_MAX_STATIC_JOBS 256
#define INCAD_MAX_PREFIXES 16
#define INCAD_MAX_VLANS 16
#define INCAD_NAME_LEN 32
/* Job priorities 0 (lowest, the default) .. 7 (highest): one class each. */
#define INCAD_PRIO_CLASSES 8
#define INCAD_DEVARGS_LEN 512
/* Global slot memory may not exceed this many slots (2 sets each). */
#define INCAD_MAX_SLOTS (1u << 20)

enum incad_mode {
	INCAD_MODE_AGGREGATOR, /* answer what is addressed to incad, drop the rest */
	INCAD_MODE_SWITCH,     /* also learn MACs and forward other frames between ports */
};

enum incad_idle {
	INCAD_IDLE_ADAPTIVE, /* sleep with exponential backoff after empty polls */
	INCAD_IDLE_POLL,     /* never sleep */
};

struct incad_prefix {
	uint32_t addr; /* host order, already masked */
	uint32_t mask;
};

struct incad_port_conf {
	char name[INCAD_NAME_LEN];
	/* Exactly one of these says where the port comes from. */
	char device[INCAD_DEVARGS_LEN];  /* an ethdev EAL already probed (--vdev, -a) */
	char devargs[INCAD_DEVARGS_LEN]; /* a device incad hot-plugs */
	char pci[INCAD_DEVARGS_LEN];     /* a PCI address */
	uint32_t ipv4;                   /* host order */
	uint8_t prefix_len;
	bool has_mac;
	uint8_t mac[6];
	uint16_t rx_queue_size;
	uint16_t tx_queue_size;
	uint16_t mtu;                    /* 0: leave the device's */
	int line;
};

/* A tenant's job_key: 16..64 bytes, given in hex. */
#define INCAD_JOB_KEY_MIN 16
#define INCAD_JOB_KEY_MAX 64

struct incad_tenant_conf {
	char name[INCAD_NAME_LEN];
	bool has_token;                  /* needed for dynamic jobs without a job_key */
	uint32_t token;
	uint8_t job_key[INCAD_JOB_KEY_MAX]; /* dynamic jobs' tokens: HMAC(job_key, job) */
	unsigned int job_key_len;        /* 0: none, the tenant token creates jobs */
	uint16_t job_min, job_max;
	uint32_t slot_quota;
	bool dynamic_jobs;
	unsigned int nprefixes;          /* 0: any source */
	struct incad_prefix prefixes[INCAD_MAX_PREFIXES];
	unsigned int nvlans;             /* 0: any VLAN, untagged included */
	uint16_t vlans[INCAD_MAX_VLANS]; /* 802.1Q ids; 0 stands for untagged */
	uint32_t rate_mbps;              /* contributions' bandwidth into incad; 0: no limit */
	uint32_t burst_kb;               /* what may arrive at once above the rate */
	uint8_t priority;                /* its dynamic jobs' class (and static jobs' default) */
	uint32_t ctrl_rate;              /* its JOINs per second, 0: no limit */
	uint32_t ctrl_burst;             /* its JOINs at once above the rate */
};

struct incad_member_conf {
	uint16_t rank;
	uint32_t ip;       /* host order */
	uint16_t udp_port; /* 0: any */
};

struct incad_job_conf {
	uint16_t id;
	unsigned int tenant; /* index into incad_config.tenants */
	uint32_t token;      /* default: the tenant's */
	uint16_t nworkers;
	uint16_t pool_size;
	uint16_t max_elems;
	uint16_t window;
	uint16_t dtypes;     /* bit (1 << enum inca_dtype) */
	uint16_t ops;        /* bit (1 << enum inca_op) */
	uint8_t priority;    /* arbitration class; default: the tenant's */
	uint32_t fixed;      /* ranks with a fixed address */
	struct incad_member_conf members[INCA_MAX_WORKERS]; /* indexed by rank */
	/*
	 * A leaf of an aggregation tree (docs/protocol.md, "Aggregation
	 * trees"): the job's partial sums go to the parent aggregator, as rank
	 * parent_rank of its job parent_job.
	 */
	bool has_parent;
	uint32_t parent_ip;        /* host order */
	uint16_t parent_udp_port;  /* default: inca_port */
	uint16_t parent_job;       /* default: this job's id */
	uint32_t parent_token;     /* default: this job's token */
	uint16_t parent_rank;
	uint16_t parent_nworkers;  /* the parent job's size (its JOIN needs it) */
	int parent_via;            /* port index to reach it; -1: the port whose subnet holds it */
	bool parent_has_mac;       /* else resolved with ARP */
	uint8_t parent_mac[6];
};

/*
 * Arbitration between priority classes when the aggregator is the
 * bottleneck: the operator states the contribution bandwidth incad
 * sustains (capacity_mbps, measured with bench_incad.sh) and how it is
 * shared out (docs/incad.md, "Priorities and arbitration").
 */
enum incad_arb_policy {
	INCAD_ARB_OFF,    /* no arbitration section: no class is held back */
	INCAD_ARB_STRICT, /* a class gets the capacity the higher classes left */
	INCAD_ARB_WRR,    /* each class with traffic gets its weight's share at least */
};

struct incad_arb_conf {
	enum incad_arb_policy policy;
	uint32_t capacity_mbps;
	uint32_t burst_kb;                      /* per class */
	uint32_t interval_ms;                   /* how often the shares are recomputed */
	uint32_t weights[INCAD_PRIO_CLASSES];   /* wrr, indexed by priority; 0: none given */
	unsigned int nweights;
};

struct incad_config {
	char path[4096];
	enum incad_mode mode;
	uint16_t inca_port;
	unsigned int workers;          /* dataplane lcores */
	enum incad_idle idle;
	uint32_t idle_max_sleep_us;
	uint32_t idle_empty_polls;     /* empty polls before the first sleep */
	uint32_t idle_hot_us;          /* and no sleep this long after the last work */
	bool roce;                     /* RoCEv2 members (docs/protocol.md, "RoCEv2 transport") */
	uint32_t roce_qpn;             /* incad's queue pair number */
	uint32_t roce_qkey;            /* the Q_Key incad accepts */
	uint32_t mbufs;                /* mbuf pool size */
	uint32_t ring_size;            /* per-lcore dispatch and tx rings */
	uint16_t pool_size;            /* default slots of a dynamic job */
	uint16_t max_elems;            /* largest element count incad accepts */
	uint16_t window;               /* default window */
	uint32_t max_slots;            /* slots of all jobs together */
	/*
	 * Session tokens from a seed instead of random: for conformance
	 * vectors and tests that must know them in advance (ctrl.c).
	 */
	bool has_session_seed;
	uint32_t session_seed;
	uint32_t hb_ms;
	uint32_t evict_ms;             /* >= 1 */
	uint32_t ctrl_rate;            /* HELLO+JOIN per second per source, 0: no limit */
	uint32_t ctrl_burst;
	uint32_t ctrl_ring_size;       /* the rings to and from the control thread */
	bool ctrl_test_stall;          /* test hook /incad/ctrl_stall allowed */
	uint32_t stats_interval;       /* seconds, 0: off */
	uint32_t mac_table_size;       /* switch mode MAC table entries */
	uint32_t mac_age_s;
	unsigned int nports;
	struct incad_port_conf ports[INCAD_MAX_PORTS];
	unsigned int ntenants;
	struct incad_tenant_conf tenants[INCAD_MAX_TENANTS];
	unsigned int njobs;
	struct incad_job_conf *jobs;
	struct incad_arb_conf arb;
};

/* Fill @c with the built-in defaults (no ports, tenants or jobs). */
void incad_config_defaults(struct incad_config *c);

/*
 * Load and validate @path into @c (defaults first). On error, print
 * "file:line: message" lines to stderr and return -EINVAL (or -ENOENT,
 * -ENOMEM); @c is then freed.
 */
int incad_config_load(const char *path, struct incad_config *c);

/* Free what incad_config_load allocated; fine on a zeroed struct. */
void incad_config_free(struct incad_config *c);

/* Largest frame incad must receive for its max_elems, IPv4 options included. */
size_t incad_config_max_frame(const struct incad_config *c);

/* Parse "a.b.c.d" into host order; 0 on success, -EINVAL otherwise. */
int incad_parse_ipv4(const char *s, uint32_t *ip);

/* Format a host-order IPv4 address into @buf (at least 16 bytes). */
const char *incad_ipv4_str(uint32_t ip, char *buf, size_t len);

#endif /* INCAD_CONFIG_H */

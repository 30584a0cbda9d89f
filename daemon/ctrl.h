/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * incad's control plane: tenants, jobs and their members; HELLO, JOIN,
 * LEAVE, HEARTBEAT; eviction. It runs on the control thread
 * (ctrl_thread.c), fed by the I/O lcore through a ring in arrival order,
 * so a control message that follows a JOIN always sees its effect; a data
 * message that follows a JOIN sees it once the JOIN_ACK is out (the view
 * is published before the answer is built), which is when a worker sends
 * one.
 *
 * The dataplane reads jobs without locks: the job table and each job's
 * member view are pointers published with release stores and freed only
 * after an RCU grace period (incad.qs); a job's sets are reset only while
 * the job is paused and no lcore is inside agg_contribute() for it.
 */
#ifndef INCAD_CTRL_H
#define INCAD_CTRL_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/queue.h>

#include "incad.h"
#include "tx.h"

/* Where a member sends from and how to reach it. */
struct incad_member {
	uint32_t ip;        /* host order */
	uint32_t local_ip;  /* the incad address it talks to (answers come from it) */
	uint16_t udp_port;
	uint16_t port;      /* index into incad.ports */
	uint16_t vlan;      /* 802.1Q VLAN id it joined on, 0: untagged */
	uint8_t mac[6];
	uint32_t qpn;       /* RoCE member: its UD queue pair; 0: a UDP member */
	uint32_t qkey;      /* RoCE member: the Q_Key its queue pair accepts */
	uint32_t secret;    /* given in its JOIN_ACK, required in its LEAVE and HEARTBEAT */
};

/* The host a member joined from: IP, MAC, incad port and VLAN. */
static inline bool
incad_member_host(const struct incad_member *mb, const struct incad_meta *meta)
{
	return mb->ip == meta->src_ip && mb->port == meta->in_port && mb->vlan == meta->vlan &&
	       memcmp(mb->mac, meta->src_mac, 6) == 0;
}

/*
 * Does a control message come from this member? Its IP and UDP port, and
 * also the MAC and the incad port its JOIN came from: a host elsewhere on
 * the L2 domain that forges a member's IP and port (and knows the token)
 * must not count as the member (docs/threat-model.md). A member whose NIC
 * or port changes joins again. Control messages are UDP, RoCE members'
 * too.
 */
static inline bool
incad_member_match(const struct incad_member *mb, const struct incad_meta *meta)
{
	return meta->qpn == 0 && mb->udp_port == meta->src_port && incad_member_host(mb, meta);
}

/*
 * Does a data message come from this member? A UDP member's by UDP from
 * its address and port; a RoCE member's by RoCEv2 from its queue pair (the
 * UDP source port of RoCEv2 is entropy, not identity), and never by UDP.
 */
static inline bool
incad_member_data_match(const struct incad_member *mb, const struct incad_meta *meta)
{
	return mb->qpn == meta->qpn && (mb->qpn != 0 || mb->udp_port == meta->src_port) &&
	       incad_member_host(mb, meta);
}

/* Immutable once published; replaced as a whole when membership changes. */
struct incad_grant {
	uint16_t max_elems;
	uint16_t window;
	uint16_t dtypes;
	uint16_t ops;
};

struct incad_view {
	/*
	 * Session token of the job's current incarnation (handed out in
	 * JOIN_ACK, carried by members' CONTRIB, HEARTBEAT and LEAVE), and
	 * the one of the incarnation before it, so that its late packets are
	 * told from forged ones. A reset starts a new incarnation.
	 */
	uint32_t session;
	uint32_t prev_session;
	uint32_t cur;     /* ranks that joined this incarnation (know the session) */
	/*
	 * What every member of the incarnation was granted: fixed by its
	 * first JOIN, the same for all, so that their chunk geometry and
	 * windows agree (the fallback's frontier argument needs equal windows).
	 */
	struct incad_grant g;
	uint32_t live;    /* admitted ranks */
	uint32_t evicted; /* ranks evicted; their address is kept to NACK them */
	uint32_t lost;    /* ranks evicted or gone; others get MEMBER_LOST until they rejoin */
	struct incad_member m[INCA_MAX_WORKERS];
};

/*
 * A tree leaf's link to its parent aggregator (uplink.c runs it on the I/O
 * lcore). The dataplane and the control thread read session (acquire)
 * and, when it is not 0, the fields above it, which do not change while
 * session is not 0.
 */
struct incad_uplink {
	struct incad_dest d;   /* the parent */
	uint16_t job;          /* the parent's job ... */
	uint16_t rank;         /* ... and this leaf's rank in it */
	uint16_t max_elems;    /* the parent's grants: caps on the job's own */
	uint16_t window;
	/* The parent's caps: ROUTED lets the leaf take routed chunks. */
	uint16_t caps;
	/*
	 * The parent's session this leaf's partials carry; 0 while not
	 * joined (partials wait). Zeroed by the control plane before every
	 * reset of the job, so that one incarnation of the job only ever
	 * sends under one parent session (docs/protocol.md, "Aggregation
	 * trees").
	 */
	uint32_t session;
	/*
	 * Not 0 while the job's incarnation is being replaced: 'resetting' is
	 * the control thread's (around a member's removal or a restart),
	 * 'restart_req' the uplink's, set when the parent's incarnation is
	 * lost and cleared by the control thread once the job has restarted.
	 * While either is set the uplink neither JOINs the parent nor keeps a
	 * session it was granted: one incarnation, one parent session.
	 */
	uint32_t resetting;
	uint32_t restart_req;
	/* uplink.c only. */
	const struct incad_job_conf *conf;
	int state;             /* enum in uplink.c */
	uint32_t joined;       /* the session while UP, or the one being left */
	uint32_t left;         /* the last session left (a late JOIN_ACK with it is refused) */
	uint32_t secret;       /* the parent's member secret for this leaf (its LEAVE, HEARTBEAT) */
	uint32_t hb_ms, evict_ms;
	uint64_t next_tx;      /* next JOIN, LEAVE, HEARTBEAT or ARP request */
	uint64_t last_rx;      /* last answer from the parent */
	uint64_t since;        /* when the state was entered */
	uint32_t backoff_ms;
	uint64_t joins, losses; /* JOIN_ACKs taken, parent incarnations lost */
	uint16_t last_nack;    /* the parent's last NACK reason */
	bool fresh;            /* not joined since incad started */
	uint64_t hold_until;   /* HOLD: the first JOIN waits until then */
};

/* Per-lcore per-job counters. X(name, description). */
#define INCAD_JOB_COUNTERS(X) \
	X(CONTRIB, "contributions counted") \
	X(COMPLETE, "sets completed") \
	X(REPLAY, "replays sent") \
	X(DROP, "contributions dropped") \
	X(PRIO_HELD, "contributions held back by arbitration (in DROP too)")

enum incad_job_counter {
#define INCAD_X_(n, d) INCAD_JOB_##n,
	INCAD_JOB_COUNTERS(INCAD_X_)
#undef INCAD_X_
	INCAD_JOB_CNT_COUNT
};

struct incad_job_stats {
	uint64_t c[INCAD_JOB_CNT_COUNT];
} __rte_cache_aligned;

/* What a member was granted, to answer a repeated JOIN the same way. */

struct incad_job {
	struct agg_job *agg;
	uint16_t id;
	uint32_t token;
	struct incad_view *view;           /* RCU-published */
	struct incad_uplink *up;           /* tree leaf: the parent (NULL: a root) */
	uint32_t paused;                   /* sets being reset: contributions drop */
	uint8_t prio;                      /* arbitration class: the job's or its tenant's */
	uint64_t last_seen[INCA_MAX_WORKERS]; /* timer cycles; written by any lcore */
	struct incad_job_stats st[INCAD_MAX_LCORES];
	/* Control plane only. */
	TAILQ_ENTRY(incad_job) next;
	bool dynamic;
	unsigned int tenant;
	const struct incad_job_conf *conf; /* static jobs */
	uint16_t window;
	uint32_t pool_base;
	uint64_t created;
	uint64_t resets;
	uint32_t incarnations;             /* sessions handed out so far */
	struct incad_grant grant[INCA_MAX_WORKERS];
};

/* Job table, indexed by job id; readers load with acquire semantics. */
extern struct incad_job *incad_jobs[65536];

static inline struct incad_job *
incad_job_get(uint16_t id)
{
	return __atomic_load_n(&incad_jobs[id], __ATOMIC_ACQUIRE);
}

static inline struct incad_view *
incad_job_view(struct incad_job *j)
{
	return __atomic_load_n(&j->view, __ATOMIC_ACQUIRE);
}

/* Is @token the session of the incarnation before @v's? (0 never is.) */
static inline bool
incad_prev_session(const struct incad_view *v, uint32_t token)
{
	return token == v->prev_session && token != 0;
}

/* Create the tenants' bookkeeping and the static jobs. 0 or -errno. */
int incad_ctrl_init(void);
/* Destroy every job (no lcore may run any more). */
void incad_ctrl_fini(void);

/*
 * The per-source meter of HELLO and JOIN (control.rate), on the I/O lcore
 * @lc before the message goes to the control thread: true when @m may go
 * on; otherwise @m was answered (NACK RATE_LIMITED) or dropped.
 */
bool incad_ctrl_admit(struct incad_lcore *lc, struct rte_mbuf *m);

/*
 * Handle the control message in @m (meta filled) on the control thread
 * (@lc is its incad.ctrl). Takes ownership of @m; answers go out through
 * incad_tx(), hence the control thread's tx ring.
 */
void incad_ctrl_handle(struct incad_lcore *lc, struct rte_mbuf *m, uint64_t now);


/*
 * Start a new incarnation of @j that every member must join again (its
 * members stay admitted; their messages of the old one get MEMBER_LOST):
 * a tree leaf whose parent lost its incarnation. Control thread only.
 */
void incad_ctrl_job_restart(struct incad_job *j);

/* Evict silent members, free what RCU allows; on the control thread every 10 ms. */
void incad_ctrl_timer(struct incad_lcore *lc, uint64_t now);

/*
 * The control thread (ctrl_thread.c). init: its rings, eventfd and
 * counters (after the lcores exist); start: the thread; stop: wake it,
 * wait for it (incad.quit set) and free what its rings still hold;
 * fini: free the rest. 0 or a negative errno.
 */
int incad_ctrl_thread_init(void);
int incad_ctrl_thread_start(void);
void incad_ctrl_thread_stop(void);
void incad_ctrl_thread_fini(void);

/*
 * I/O lcore: pass the control message @m to the control thread (takes
 * @m; a full ring is the counted drop CTRL_RING_FULL, never a wait).
 */
void incad_ctrl_enqueue(struct incad_lcore *lc, struct rte_mbuf *m);
/*
 * I/O lcore, once per loop: wake the control thread if it sleeps and
 * something was queued for it (a syscall only then).
 */
void incad_ctrl_kick(struct incad_lcore *lc);
/* Any thread: wake the control thread now (telemetry's requests). */
void incad_ctrl_wake(void);
/*
 * Order per job. A JOIN or LEAVE of job J in the control thread's ring has
 * not taken effect yet; a data message of J that arrives meanwhile must
 * see its effect, as when the control plane ran inline (and as the
 * conformance tests, which send a JOIN and its CONTRIBs back to back,
 * expect). So the I/O lcore holds J's data messages back, in arrival
 * order, until the control thread has handled the JOIN or LEAVE before
 * them and its answers are out; and the control thread handles a control
 * message only once the data that arrived before it has been released.
 * Other jobs' data never waits: the fence is per job id, and nothing of
 * the data path runs on the control thread. Every control message queued
 * gets a sequence number; incad_fences[J].ctrl holds the one of J's last
 * JOIN or LEAVE, .held how many of J's data messages are held; the
 * control thread publishes the last number it has finished and answered
 * (incad_ctrl_done).
 */
struct incad_ctrl_fence {
	uint64_t ctrl;
	uint64_t held;
};

extern struct incad_ctrl_fence incad_fences[65536];
extern uint64_t incad_ctrl_done;

/* The I/O lcore's side: only it reads and writes these. */
struct incad_ctrl_io {
	uint64_t seq;        /* last sequence number given */
	uint64_t done_cache; /* incad_ctrl_done as last read */
};

extern struct incad_ctrl_io incad_ctrl_io;

/* I/O lcore: must a data message of @job be held? */
static inline bool
incad_ctrl_fenced(uint16_t job)
{
	const struct incad_ctrl_fence *f = &incad_fences[job];

	/* The common case reads nothing the control thread writes. */
	if (likely(f->held == 0 && f->ctrl <= incad_ctrl_io.done_cache))
		return false;
	if (f->held != 0)
		return true;
	incad_ctrl_io.done_cache = __atomic_load_n(&incad_ctrl_done, __ATOMIC_ACQUIRE);
	return f->ctrl > incad_ctrl_io.done_cache;
}

/* I/O lcore: hold the data message @m behind its job's JOIN or LEAVE (takes @m). */
void incad_ctrl_hold(struct incad_lcore *lc, struct rte_mbuf *m);
/*
 * I/O lcore, every loop: send the control thread's answers and take the
 * held data messages whose JOIN or LEAVE has been handled and answered
 * (at most @n, in order, into @b: the caller dispatches them). Returns
 * how many were taken into @b; *@answers: how many answers were sent.
 */
unsigned int incad_ctrl_release(struct incad_lcore *lc, struct rte_mbuf **b, unsigned int n,
				unsigned int *answers);
/* I/O lcore: has the control thread finished everything it was given, is nothing held? */
bool incad_ctrl_idle(void);
/* True while the control thread is stalled by the test hook (telemetry). */
bool incad_ctrl_stalled(void);

/* Slots in use by a tenant (racy read for telemetry). */
uint32_t incad_tenant_used(unsigned int t);

/** Token of dynamic job @job of a tenant with a job_key (never 0 on success). */
uint32_t incad_job_token(const struct incad_tenant_conf *tc, uint16_t job);

/* Slots in use by all jobs (racy read for telemetry). */
uint32_t incad_slots_used(void);
/* Bytes held by jobs now (racy read for telemetry). */
size_t incad_jobs_bytes(void);

#endif /* INCAD_CTRL_H */

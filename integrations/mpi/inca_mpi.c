/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * libinca-mpi: a PMPI interposer that sends MPI collectives through an INCA
 * aggregator, and everything else to the MPI library underneath (PMPI_*).
 * Load it with LD_PRELOAD or link it before libmpi; the application is not
 * changed. docs/mpi.md is the user guide.
 *
 * Communicators: MPI_COMM_WORLD is one INCA job (INCA_JOB). A communicator
 * made from an INCA-served one by MPI_Comm_dup, _dup_with_info, _split,
 * _split_type, _create or _create_group gets an INCA job of its own (its
 * own ranks, slots and session), created collectively over its members and
 * all or none; its record hangs on the communicator as an attribute whose
 * delete callback (MPI_Comm_free, or MPI_Finalize) destroys the job. INCA
 * is one stream per job in which every rank must issue the same
 * collectives in the same order, and MPI promises that order per
 * communicator, hence one job per communicator.
 *
 * What goes through INCA on such a communicator: MPI_Allreduce,
 * MPI_Iallreduce, MPI_Reduce (inca_reduce()) and MPI_Reduce_scatter_block
 * (inca_reduce_scatter()), both in routed chunks where the aggregator has
 * them, else as an allreduce, of MPI_INT, MPI_INT32_T, MPI_FLOAT,
 * MPI_INT64_T, MPI_LONG_LONG, MPI_LONG (where it is 8 bytes) and MPI_DOUBLE
 * with MPI_SUM, MPI_MIN or MPI_MAX (and MPI_UNSIGNED / MPI_UINT32_T,
 * MPI_UINT64_T / MPI_UNSIGNED_LONG_LONG with MPI_SUM, whose wrapping sums
 * are the same bits); 64-bit types on an aggregator without them (a switch)
 * go to PMPI, counted as passed; MPI_Bcast and MPI_Ibcast of any datatype as an int32 sum of raw
 * bytes to which every other rank adds zeros (bit-exact for any content);
 * MPI_Allgather of any datatype (inca_allgather(): routed chunks, else
 * that int32 sum); MPI_Barrier and MPI_Ibarrier.
 *
 * Every routing decision depends only on arguments MPI requires to agree
 * across ranks (communicator, count, datatype and op of a reduction, the
 * byte sizes of a broadcast or allgather), on configuration that rank 0
 * broadcasts, and on the outcome of a communicator's creation agreement, so
 * all members take the same path at every call.
 *
 * The fallback: libinca calls im_fallback() (PMPI_Allreduce on a private
 * duplicate of the communicator) when the aggregator is absent, refuses the
 * job or stops answering, so the application runs unchanged without incad.
 */

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <mpi.h>

#include <inca/inca.h>

_Static_assert(sizeof(int) == 4, "MPI_INT must be a 32-bit integer");
_Static_assert(sizeof(long long) == 8 && sizeof(double) == 8, "MPI_LONG_LONG, MPI_DOUBLE: 64 bits");

/* The interposed MPI entry points are the library's only interface. */
#define IM_EXPORT __attribute__((visibility("default")))

/* Where INCA_MPI_ROUTE sends eligible MPI_Allreduce calls. */
enum im_route_mode { IM_ROUTE_INCA, IM_ROUTE_HOST, IM_ROUTE_AUTO };

/* Routes of one call: through libinca (the aggregator) or PMPI (the host). */
enum { IM_VIA_INCA, IM_VIA_HOST, IM_VIAS };

/* Size classes: log2 of the payload bytes. */
#define IM_CLASSES 64
/* Calls per route a class explores before its first decision. */
#define IM_EXPLORE 3
/* A decided class re-probes its losing route once every IM_REEVAL to
 * IM_REEVAL_MAX calls, fewer the slower that route (reeval_calls()). */
#define IM_REEVAL 64
#define IM_REEVAL_MAX 4096
#define IM_PROBE_COST 50

/*
 * The selector's state of one size class of MPI_Allreduce on one
 * communicator (docs/mpi.md, "Dynamic path selection"). @seq counts the
 * class's calls, which are the same on every rank; the route of call @seq
 * depends only on @seq and @via, which only changes at an agreement, where
 * every rank takes the same numbers (PMPI_Allreduce MAX): so all ranks take
 * the same route for the same call.
 */
struct im_class {
	uint64_t seq;
	double ns[IM_VIAS]; /* this rank's time of each route (mean, EWMA) */
	unsigned n[IM_VIAS];
	int via;            /* the decided route, once seq >= 2 * IM_EXPLORE */
	uint64_t probe;     /* the call that next probes the other route */
};

/* The INCA side of one MPI communicator. MPI_COMM_WORLD's is im.world; a
 * derived communicator's is its attribute im.keyval. */
struct im_comm {
	struct im_comm *next; /* im.comms, in creation order */
	MPI_Comm mcomm;       /* the application's communicator */
	MPI_Comm fb_comm;     /* private duplicate of it for the fallback */
	struct inca_comm *comm;
	uint32_t job;
	int rank;
	int size;
	int slot; /* the job slot this process picked as its leader, or -1 */
	/* Serialises every use of @comm by the application's threads (with
	 * MPI_THREAD_MULTIPLE). One per communicator: a thread blocked in a
	 * collective on one communicator must not hold up another thread's
	 * collective on another, which the peers may need first. */
	pthread_mutex_t lock;
	struct im_class cls[IM_CLASSES]; /* INCA_MPI_ROUTE=auto, under @lock */
};

/* A nonblocking collective in flight through INCA, seen by the user as the
 * generalized request @mreq. */
struct im_ireq {
	struct im_ireq *next;
	MPI_Request mreq;
	struct im_comm *c;
	struct inca_request *ireq; /* NULL once libinca returned its result */
	int result;                /* INCA_OK or the error, once finished */
	int count;
	MPI_Datatype datatype;
	/* MPI_Ibcast through a scratch buffer: unpacked into @ubuf on the
	 * non-roots once complete. */
	void *scratch;
	void *ubuf;
	int ucount;
	MPI_Datatype utype;
	MPI_Comm ucomm;
	size_t bytes;
	bool unpack;
	int32_t word; /* MPI_Ibarrier's contribution and result */
};

/* What rank 0 reads from its environment and broadcasts, so that every rank
 * uses the same job parameters and makes the same routing decisions. */
struct im_conf {
	char aggregator[256];
	int32_t enabled;
	uint32_t job;
	uint32_t token;
	uint32_t window;
	uint32_t pool_size;
	uint32_t max_elems;
	uint32_t mtu;
	uint32_t timeout_ms;
	uint32_t give_up_ms;
	uint32_t probe_every;
	int32_t float_mode;
	uint64_t min_bytes;
	int32_t bcast;
	int32_t barrier;
	int32_t iallreduce;
	int32_t keepalive;
	int32_t allgather;
	uint32_t max_comms;  /* INCA communicators per process besides WORLD */
	uint32_t comm_first; /* job ids of derived communicators (0: none) */
	uint32_t comm_last;
	uint32_t stride;     /* job ids per communicator: its stripes */
	int32_t route;       /* enum im_route_mode */
};

/* Most derived communicators one process may have on INCA. */
#define IM_MAX_COMMS 64

/* Calls counted by the interposer, printed with libinca's counters. */
#define IM_COUNTERS(X) \
	X(allreduce_inca, "MPI_Allreduce calls sent through libinca") \
	X(iallreduce_inca, "MPI_Iallreduce calls sent through libinca") \
	X(bcast_inca, "MPI_Bcast calls sent through libinca") \
	X(barrier_inca, "MPI_Barrier calls sent through libinca") \
	X(reduce_inca, "MPI_Reduce calls sent through libinca (inca_reduce())") \
	X(reduce_routed, "of those, calls routed to the root alone (others got BRIEF results)") \
	X(reduce_scatter_inca, "MPI_Reduce_scatter_block calls sent through libinca") \
	X(allgather_inca, "MPI_Allgather calls sent through libinca") \
	X(ibcast_inca, "MPI_Ibcast calls sent through libinca") \
	X(ibarrier_inca, "MPI_Ibarrier calls sent through libinca") \
	X(allreduce_host, "eligible MPI_Allreduce calls routed to PMPI by INCA_MPI_ROUTE") \
	X(route_agreements, "selector decisions agreed between the ranks") \
	X(route_switches, "agreements that changed a class's route") \
	X(route_digest, "hash of the route of every routed MPI_Allreduce, in order") \
	X(derived_inca, "of the calls above, those on communicators other than WORLD") \
	X(bytes_inca, "payload bytes of the calls sent through libinca") \
	X(passed, "collectives on INCA communicators passed to PMPI") \
	X(errors, "collectives that returned an error") \
	X(comms_inca, "derived communicators given an INCA job") \
	X(comms_pmpi, "derived intracommunicators of 2+ ranks left on PMPI (limits)") \
	X(comms_freed, "INCA communicators of derived ones destroyed")

struct im_counters {
#define IM_X_(n, d) uint64_t n;
	IM_COUNTERS(IM_X_)
#undef IM_X_
};

static struct {
	bool enabled;        /* collectives on WORLD may go through INCA */
	int rank;            /* in WORLD */
	int size;
	int verbose;
	struct im_conf conf;
	struct im_comm world;
	struct im_comm *comms; /* derived communicators on INCA */
	unsigned ncomms;       /* read without the lock as a fast-path test */
	int keyval;
	bool slot_used[IM_MAX_COMMS];
	unsigned slot_next;
	/* Guards the lists (ireqs, comms) and the job slots. Taken inside a
	 * communicator's lock, never the other way round. */
	pthread_mutex_t lock;
	struct im_ireq *ireqs; /* in issue order */
	unsigned nireqs;       /* read without the lock as a fast-path test */
	struct im_counters n;
	struct inca_stats gone; /* libinca counters of destroyed communicators */
} im = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.world = { .mcomm = MPI_COMM_NULL, .fb_comm = MPI_COMM_NULL, .slot = -1,
		   .lock = PTHREAD_MUTEX_INITIALIZER },
	.keyval = MPI_KEYVAL_INVALID,
};

/* ---- logging ------------------------------------------------------------ */

static void
im_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void
im_log(int level, const char *fmt, ...)
{
	char line[512];
	va_list ap;
	int n;

	if (level > im.verbose)
		return;
	n = snprintf(line, sizeof(line), "inca-mpi[%d]: ", im.rank);
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s\n", line);
}

static void
lib_log(void *ctx, int level, const char *msg)
{
	(void)ctx;
	im_log(level, "libinca: %s", msg);
}

/* ---- configuration ------------------------------------------------------ */

/* An integer environment variable in [0, max], or @def when unset. */
static int
env_num(const char *name, unsigned long long max, unsigned long long def,
	unsigned long long *v)
{
	const char *s = getenv(name);
	char *end;

	*v = def;
	if (s == NULL || *s == '\0')
		return 0;
	errno = 0;
	*v = strtoull(s, &end, 0);
	if (errno != 0 || *end != '\0' || *s == '-' || *v > max) {
		im_log(INCA_LOG_ERR, "%s=%s: not an integer in 0..%llu", name, s, max);
		return -1;
	}
	return 0;
}

/*
 * The job ids of derived communicators: INCA_MPI_COMM_JOBS=FIRST-LAST, by
 * default from the id after WORLD's job (and its stripes) to 65535. A
 * communicator striped over K aggregators uses K consecutive ids (libinca
 * gives stripe s the id job + s). A tree's leaves would need a job of each
 * block configured on them: derived communicators stay on PMPI there.
 */
static int
conf_comm_jobs(struct im_conf *conf)
{
	const char *s = getenv("INCA_MPI_COMM_JOBS"), *p;
	unsigned first, last;
	char tail;

	conf->stride = 1;
	for (p = conf->aggregator; *p != '\0' && *p != ','; p++)
		conf->stride += *p == '+';
	if (strchr(conf->aggregator, ',') != NULL || conf->max_comms == 0)
		return 0; /* comm_first 0: no derived communicator on INCA */
	if (s == NULL || *s == '\0') {
		conf->comm_first = conf->job + conf->stride;
		conf->comm_last = UINT16_MAX;
	} else if (sscanf(s, "%u-%u%c", &first, &last, &tail) == 2 && first >= 1 &&
		   first <= last && last <= UINT16_MAX) {
		conf->comm_first = first;
		conf->comm_last = last;
	} else {
		im_log(INCA_LOG_ERR, "INCA_MPI_COMM_JOBS=%s: not FIRST-LAST in 1..65535", s);
		return -1;
	}
	if (conf->comm_first > UINT16_MAX)
		conf->comm_first = 0;
	return 0;
}

/* INCA_MPI_ROUTE=inca|host|auto: where eligible MPI_Allreduce calls go. */
static int
conf_route(struct im_conf *conf)
{
	const char *s = getenv("INCA_MPI_ROUTE");

	conf->route = IM_ROUTE_INCA;
	if (s == NULL || *s == '\0' || strcmp(s, "inca") == 0)
		return 0;
	if (strcmp(s, "host") == 0)
		conf->route = IM_ROUTE_HOST;
	else if (strcmp(s, "auto") == 0)
		conf->route = IM_ROUTE_AUTO;
	else {
		im_log(INCA_LOG_ERR, "INCA_MPI_ROUTE=%s: not inca, host or auto", s);
		return -1;
	}
	return 0;
}

/* Rank 0: the job parameters from the environment. conf->enabled stays 0
 * when INCA is not configured or the configuration is wrong. */
static void
conf_read(struct im_conf *conf)
{
	struct inca_comm_opts o;
	unsigned long long v;

	memset(conf, 0, sizeof(*conf));
	if (env_num("INCA_MPI_DISABLE", 1, 0, &v) < 0 || v == 1)
		return;
	inca_comm_opts_init(&o);
	if (inca_comm_opts_from_env(&o) < 0) {
		im_log(INCA_LOG_ERR, "bad INCA_* variable: MPI collectives use PMPI");
		return;
	}
	if (o.aggregator == NULL) {
		im_log(INCA_LOG_INFO, "INCA_AGGREGATOR is not set: MPI collectives use PMPI");
		return;
	}
	if (strlen(o.aggregator) >= sizeof(conf->aggregator)) {
		im_log(INCA_LOG_ERR, "INCA_AGGREGATOR is too long: MPI collectives use PMPI");
		return;
	}
	if (o.job == 0) {
		im_log(INCA_LOG_ERR, "INCA_JOB is not set (1..65535): MPI collectives use PMPI");
		return;
	}
	snprintf(conf->aggregator, sizeof(conf->aggregator), "%s", o.aggregator);
	conf->job = o.job;
	conf->token = o.token;
	conf->window = o.window;
	conf->pool_size = o.pool_size;
	conf->max_elems = o.max_elems;
	conf->mtu = o.mtu;
	conf->timeout_ms = o.timeout_ms;
	conf->give_up_ms = o.give_up_ms;
	conf->probe_every = o.probe_every;
	conf->float_mode = o.float_mode;
	if (env_num("INCA_MPI_MIN_BYTES", UINT64_MAX, 0, &v) < 0)
		return;
	conf->min_bytes = v;
	if (env_num("INCA_MPI_BCAST", 1, 1, &v) < 0)
		return;
	conf->bcast = (int32_t)v;
	if (env_num("INCA_MPI_BARRIER", 1, 1, &v) < 0)
		return;
	conf->barrier = (int32_t)v;
	if (env_num("INCA_MPI_IALLREDUCE", 1, 1, &v) < 0)
		return;
	conf->iallreduce = (int32_t)v;
	if (env_num("INCA_MPI_KEEPALIVE", 1, 1, &v) < 0)
		return;
	conf->keepalive = (int32_t)v;
	if (env_num("INCA_MPI_ALLGATHER", 1, 1, &v) < 0)
		return;
	conf->allgather = (int32_t)v;
	if (env_num("INCA_MPI_MAX_COMMS", IM_MAX_COMMS, 4, &v) < 0)
		return;
	conf->max_comms = (uint32_t)v;
	if (conf_comm_jobs(conf) < 0)
		return;
	if (conf_route(conf) < 0)
		return;
	conf->enabled = 1;
}

/* ---- the fallback: PMPI ------------------------------------------------- */

static MPI_Datatype
mpi_type_of(unsigned dtype)
{
	switch (dtype) {
	case INCA_DTYPE_INT32:
		return MPI_INT32_T;
	case INCA_DTYPE_FP32:
		return MPI_FLOAT;
	case INCA_DTYPE_INT64:
		return MPI_INT64_T;
	case INCA_DTYPE_FP64:
		return MPI_DOUBLE;
	default:
		/* fp16 / bf16 never come from this interposer. */
		return MPI_DATATYPE_NULL;
	}
}

static MPI_Op
mpi_op_of(unsigned op)
{
	switch (op) {
	case INCA_OP_SUM:
		return MPI_SUM;
	case INCA_OP_MIN:
		return MPI_MIN;
	case INCA_OP_MAX:
		return MPI_MAX;
	default:
		return MPI_OP_NULL;
	}
}

/* libinca's host allreduce: PMPI on the communicator's private duplicate,
 * so that it never matches anything the application posts on it. */
static int
im_fallback(void *ctx, const struct inca_fallback_args *a)
{
	const struct im_comm *c = ctx;
	MPI_Datatype t = mpi_type_of(a->dtype);
	MPI_Op op = mpi_op_of(a->op);
	const char *src = a->sendbuf;
	char *dst = a->recvbuf;
	size_t left = a->count, us = inca_dtype_size(a->dtype);
	bool in_place = a->sendbuf == a->recvbuf;

	if (t == MPI_DATATYPE_NULL || op == MPI_OP_NULL)
		return -EINVAL;
	/* MPI counts are int: large vectors go in pieces. */
	while (left > 0) {
		int n = left > INT_MAX ? INT_MAX : (int)left;

		if (PMPI_Allreduce(in_place ? MPI_IN_PLACE : src, dst, n, t, op, c->fb_comm) !=
		    MPI_SUCCESS)
			return -EIO;
		left -= (size_t)n;
		dst += (size_t)n * us;
		src += (size_t)n * us;
	}
	return 0;
}

/* libinca's out-of-band allgather for its all-or-none agreements: PMPI
 * on the same private communicator. */
static int
im_oob(void *ctx, const void *sendbuf, void *recvbuf, size_t bytes)
{
	const struct im_comm *c = ctx;

	if (bytes > INT_MAX)
		return -EINVAL;
	if (PMPI_Allgather(sendbuf, (int)bytes, MPI_BYTE, recvbuf, (int)bytes, MPI_BYTE,
			   c->fb_comm) != MPI_SUCCESS)
		return -EIO;
	return 0;
}

/* ---- INCA communicators ------------------------------------------------ */

/*
 * Create @c's INCA communicator: collective over the members of c->mcomm,
 * whose private duplicate c->fb_comm exists. libinca agrees across the
 * ranks (all or none) inside inca_comm_create(): every rank is on the
 * aggregator, or every rank is in its fallback mode. Only invalid options
 * or memory fail creation before that agreement, on some ranks: one
 * PMPI_Allreduce then makes every member give INCA up for @c. Returns
 * whether @c is on INCA (the same on every member).
 */
static bool
comm_create(struct im_comm *c)
{
	struct inca_comm_opts o;
	struct inca_comm_info info;
	char bind[64];
	int agree[1], ret;

	inca_comm_opts_init(&o);
	o.aggregator = im.conf.aggregator;
	o.job = (uint16_t)c->job;
	o.rank = (uint16_t)c->rank;
	o.size = (uint16_t)c->size;
	o.token = im.conf.token;
	o.window = (uint16_t)im.conf.window;
	o.pool_size = (uint16_t)im.conf.pool_size;
	o.max_elems = (uint16_t)im.conf.max_elems;
	o.mtu = (uint16_t)im.conf.mtu;
	o.timeout_ms = im.conf.timeout_ms;
	o.give_up_ms = im.conf.give_up_ms;
	o.probe_every = im.conf.probe_every;
	o.float_mode = im.conf.float_mode;
	/* The source address is a property of each rank's host. A derived
	 * communicator binds INCA_BIND's address on any port: its port is
	 * WORLD's. */
	o.bind = getenv("INCA_BIND");
	if (o.bind != NULL && *o.bind == '\0')
		o.bind = NULL;
	if (o.bind != NULL && c != &im.world) {
		snprintf(bind, sizeof(bind), "%s", o.bind);
		bind[strcspn(bind, ":")] = '\0';
		o.bind = bind;
	}
	o.fallback = im_fallback;
	o.fallback_ctx = c;
	o.oob = im_oob;
	o.oob_ctx = c;
	ret = inca_comm_create(&o, &c->comm);
	if (ret < 0)
		im_log(INCA_LOG_ERR, "inca_comm_create (job %u): %s", c->job, inca_strerror(ret));
	agree[0] = ret == INCA_OK;
	PMPI_Allreduce(MPI_IN_PLACE, agree, 1, MPI_INT, MPI_MIN, c->fb_comm);
	if (!agree[0]) {
		if (c->rank == 0)
			im_log(INCA_LOG_WARN,
			       "job %u: a rank has no INCA communicator: using PMPI", c->job);
		/* Not every rank has one to tear down: no teardown round. */
		inca_comm_set_fallback(c->comm, NULL, NULL);
		inca_comm_destroy(c->comm);
		c->comm = NULL;
		return false;
	}
	inca_comm_info(c->comm, &info);
	if (c->rank == 0)
		im_log(INCA_LOG_INFO, "job %u, %d ranks, aggregator %s: %s", c->job, c->size,
		       im.conf.aggregator,
		       !info.in_fallback ? "joined" : "not on the aggregator, using the fallback");
	/* libinca sends only from inside its calls: a rank computing longer
	 * than the aggregator's evict_ms between collectives would be evicted
	 * and pay a fallback round and a rejoin. Its keepalive thread sends
	 * heartbeats meanwhile (and never calls MPI). */
	if (im.conf.keepalive && (ret = inca_comm_keepalive(c->comm, 1)) < 0)
		im_log(INCA_LOG_WARN, "no keepalive thread: %s", inca_strerror(ret));
	return true;
}

static void
stats_add(struct inca_stats *sum, const struct inca_comm *comm)
{
	struct inca_stats st;
	size_t i;

	inca_comm_stats(comm, &st);
	for (i = 0; i < sizeof(st) / sizeof(uint64_t); i++)
		((uint64_t *)sum)[i] += ((const uint64_t *)&st)[i];
}

static void ireq_drive(struct im_ireq *x, bool block);

/* Finish every request of @c (every request, if NULL) that libinca still
 * holds: requests the application never completed must still finish
 * everywhere before anyone leaves the job. */
static void
ireqs_finish(struct im_comm *c)
{
	struct im_ireq *x;

	for (;;) {
		pthread_mutex_lock(&im.lock);
		for (x = im.ireqs; x != NULL && (x->ireq == NULL || (c != NULL && x->c != c));
		     x = x->next)
			;
		pthread_mutex_unlock(&im.lock);
		/* @x stays allocated: only the application frees it, once
		 * complete. */
		if (x == NULL)
			break;
		pthread_mutex_lock(&x->c->lock);
		ireq_drive(x, true);
		pthread_mutex_unlock(&x->c->lock);
	}
}

/* Destroy @c's INCA communicator: collective over its members (libinca's
 * teardown round runs on c->fb_comm). */
static void
comm_destroy(struct im_comm *c)
{
	ireqs_finish(c);
	pthread_mutex_lock(&c->lock);
	/* No barrier of our own here: a rank that lost its last result may
	 * still be recovering it through the fallback, and a barrier would
	 * not match that. inca_comm_destroy() closes the stream and runs the
	 * teardown round, which serves such a rank before anyone leaves. */
	if (c != &im.world) {
		pthread_mutex_lock(&im.lock);
		stats_add(&im.gone, c->comm);
		pthread_mutex_unlock(&im.lock);
		__atomic_fetch_add(&im.n.comms_freed, 1, __ATOMIC_RELAXED);
	}
	inca_comm_destroy(c->comm);
	c->comm = NULL;
	pthread_mutex_unlock(&c->lock);
}

/*
 * The job id of the next communicator this process leads (is rank 0 of):
 * process p owns ids FIRST + (p * MAX_COMMS + i) * STRIDE, i < MAX_COMMS,
 * and picks them round robin. A process is on at most MAX_COMMS derived
 * communicators at once, so it never leads more, and no two processes own
 * the same id: two live communicators of the run never share a job. Round
 * robin keeps a freed id resting while its members' LEAVEs are in flight.
 * Returns the slot, or -1 (none free, or the range is too small).
 */
static int
slot_take(uint32_t *job)
{
	unsigned i, k;
	uint64_t id;

	for (k = 0; k < im.conf.max_comms; k++) {
		i = (im.slot_next + k) % im.conf.max_comms;
		if (im.slot_used[i])
			continue;
		id = im.conf.comm_first +
		     ((uint64_t)im.rank * im.conf.max_comms + i) * im.conf.stride;
		if (id + im.conf.stride - 1 > im.conf.comm_last)
			return -1;
		im.slot_used[i] = true;
		im.slot_next = (i + 1) % im.conf.max_comms;
		*job = (uint32_t)id;
		return (int)i;
	}
	return -1;
}

/* The attribute's delete callback: MPI_Comm_free (collective), or
 * MPI_Finalize for communicators never freed. */
static int
comm_delete_attr(MPI_Comm comm, int keyval, void *attr, void *extra)
{
	struct im_comm *c = attr, **pp;

	(void)comm;
	(void)keyval;
	(void)extra;
	comm_destroy(c);
	PMPI_Comm_free(&c->fb_comm);
	pthread_mutex_destroy(&c->lock);
	pthread_mutex_lock(&im.lock);
	if (c->slot >= 0)
		im.slot_used[c->slot] = false;
	for (pp = &im.comms; *pp != NULL; pp = &(*pp)->next) {
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	}
	__atomic_store_n(&im.ncomms, im.ncomms - 1, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&im.lock);
	free(c);
	return MPI_SUCCESS;
}

/*
 * A new communicator @nc (MPI_COMM_NULL on processes outside it) gets an
 * INCA job of its own, or stays on PMPI on every member alike. Collective
 * over @nc's members, on @nc itself before the application has it, so
 * nothing of the application's can match these calls.
 */
static void
comm_attach(MPI_Comm nc)
{
	struct im_comm *c, **pp;
	uint32_t job = 0;
	int inter, size, rank, v[2];

	if (!im.enabled || im.conf.comm_first == 0 || nc == MPI_COMM_NULL)
		return;
	/* Intercommunicators have no INCA equivalent; a communicator of one
	 * rank gains nothing; one aggregator has at most INCA_MAX_WORKERS
	 * members per job. All of this is the same on every member. */
	if (PMPI_Comm_test_inter(nc, &inter) != MPI_SUCCESS || inter)
		return;
	PMPI_Comm_size(nc, &size);
	PMPI_Comm_rank(nc, &rank);
	if (size < 2)
		return;
	if (size > INCA_MAX_WORKERS) {
		im.n.comms_pmpi++;
		return;
	}
	/* The per-process limit differs between members: they agree on it,
	 * and rank 0 chooses the job id, in one PMPI_Allreduce (MIN of
	 * "can", MIN of minus the id, which only rank 0 gives). */
	c = calloc(1, sizeof(*c));
	v[0] = c != NULL && __atomic_load_n(&im.ncomms, __ATOMIC_RELAXED) < im.conf.max_comms;
	v[1] = 0;
	if (c != NULL) {
		c->slot = -1;
		c->fb_comm = MPI_COMM_NULL;
	}
	if (rank == 0 && v[0]) {
		pthread_mutex_lock(&im.lock);
		c->slot = slot_take(&job);
		pthread_mutex_unlock(&im.lock);
		v[1] = -(int)job;
	}
	PMPI_Allreduce(MPI_IN_PLACE, v, 2, MPI_INT, MPI_MIN, nc);
	if (!v[0] || v[1] == 0) {
		if (rank == 0)
			im_log(INCA_LOG_INFO, "a communicator of %d ranks stays on PMPI: %s", size,
			       !v[0] ? "a member has its INCA_MPI_MAX_COMMS" :
				       "no job id left in INCA_MPI_COMM_JOBS");
		if (c != NULL && c->slot >= 0) {
			pthread_mutex_lock(&im.lock);
			im.slot_used[c->slot] = false;
			pthread_mutex_unlock(&im.lock);
		}
		free(c);
		im.n.comms_pmpi++;
		return;
	}
	pthread_mutex_init(&c->lock, NULL);
	c->mcomm = nc;
	c->job = (uint32_t)-v[1];
	c->rank = rank;
	c->size = size;
	if (PMPI_Comm_dup(nc, &c->fb_comm) != MPI_SUCCESS || !comm_create(c)) {
		/* PMPI_Comm_dup fails on every member or calls the error
		 * handler; the creation agreement is everyone's. */
		if (c->fb_comm != MPI_COMM_NULL)
			PMPI_Comm_free(&c->fb_comm);
		pthread_mutex_lock(&im.lock);
		if (c->slot >= 0)
			im.slot_used[c->slot] = false;
		pthread_mutex_unlock(&im.lock);
		pthread_mutex_destroy(&c->lock);
		free(c);
		im.n.comms_pmpi++;
		return;
	}
	pthread_mutex_lock(&im.lock);
	for (pp = &im.comms; *pp != NULL; pp = &(*pp)->next)
		;
	*pp = c;
	__atomic_store_n(&im.ncomms, im.ncomms + 1, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&im.lock);
	PMPI_Comm_set_attr(nc, im.keyval, c);
	im.n.comms_inca++;
}

/* The INCA communicator of @comm, or NULL: PMPI serves it. */
static struct im_comm *
comm_of(MPI_Comm comm)
{
	struct im_comm *c;
	int flag = 0;

	if (!im.enabled)
		return NULL;
	if (comm == MPI_COMM_WORLD)
		return &im.world;
	if (__atomic_load_n(&im.ncomms, __ATOMIC_RELAXED) == 0 || comm == MPI_COMM_NULL)
		return NULL;
	if (PMPI_Comm_get_attr(comm, im.keyval, &c, &flag) != MPI_SUCCESS || !flag)
		return NULL;
	return c;
}

/* ---- set-up and tear-down ----------------------------------------------- */

static void
im_setup(void)
{
	unsigned long long v;

	PMPI_Comm_rank(MPI_COMM_WORLD, &im.rank);
	PMPI_Comm_size(MPI_COMM_WORLD, &im.size);
	im.verbose = INCA_LOG_WARN;
	if (env_num("INCA_MPI_VERBOSE", INCA_LOG_DEBUG, INCA_LOG_WARN, &v) == 0)
		im.verbose = (int)v;
	inca_set_log_fn(lib_log, NULL, im.verbose);

	if (im.rank == 0)
		conf_read(&im.conf);
	PMPI_Bcast(&im.conf, sizeof(im.conf), MPI_BYTE, 0, MPI_COMM_WORLD);
	if (!im.conf.enabled)
		return;
	/* Beyond 32 ranks a job needs a tree: INCA_AGGREGATOR lists its
	 * leaves (libinca says so when the list is too short). */
	if (im.size > UINT16_MAX) {
		if (im.rank == 0)
			im_log(INCA_LOG_WARN, "%d ranks, INCA jobs have at most %d: using PMPI",
			       im.size, UINT16_MAX);
		return;
	}
	if (PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, comm_delete_attr, &im.keyval,
				    NULL) != MPI_SUCCESS)
		return;
	im.world.mcomm = MPI_COMM_WORLD;
	im.world.job = im.conf.job;
	im.world.rank = im.rank;
	im.world.size = im.size;
	if (PMPI_Comm_dup(MPI_COMM_WORLD, &im.world.fb_comm) != MPI_SUCCESS)
		return;
	if (!comm_create(&im.world)) {
		PMPI_Comm_free(&im.world.fb_comm);
		return;
	}
	im.enabled = true;
}

static void
print_stats(void)
{
	static const char *const names[] = {
#define IM_X_(n, d) #n,
		IM_COUNTERS(IM_X_)
#undef IM_X_
	};
	const uint64_t *cnt = (const uint64_t *)&im.n;
	const char *path = getenv("INCA_MPI_STATS");
	struct inca_comm_info info;
	struct inca_stats st, sum;
	char line[4096];
	const char *name;
	size_t len;
	unsigned i;
	int fd;

	if (path == NULL || *path == '\0')
		return;
	/* WORLD's chunks on their own (incad's counters of INCA_JOB match
	 * them), then libinca's counters summed over every communicator. */
	inca_comm_stats(im.world.comm, &st);
	inca_comm_info(im.world.comm, &info);
	sum = im.gone;
	stats_add(&sum, im.world.comm);
	len = (size_t)snprintf(line, sizeof(line),
			       "inca-mpi: rank %d job %u in_fallback %d world_chunks %llu",
			       im.rank, im.conf.job, info.in_fallback,
			       (unsigned long long)st.chunks);
	for (i = 0; i < sizeof(names) / sizeof(names[0]) && len < sizeof(line); i++)
		len += (size_t)snprintf(line + len, sizeof(line) - len, " %s %llu", names[i],
					(unsigned long long)cnt[i]);
	for (i = 0; (name = inca_stats_name(i)) != NULL && len < sizeof(line); i++)
		len += (size_t)snprintf(line + len, sizeof(line) - len, " %s %llu", name,
					(unsigned long long)((const uint64_t *)&sum)[i]);

	if (len >= sizeof(line) - 1)
		len = sizeof(line) - 2;
	line[len++] = '\n';
	/* One write per rank, appended: lines of different ranks do not mix. */
	if (strcmp(path, "-") == 0)
		fd = STDERR_FILENO;
	else
		fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0) {
		im_log(INCA_LOG_ERR, "INCA_MPI_STATS=%s: %s", path, strerror(errno));
		return;
	}
	if (write(fd, line, len) != (ssize_t)len)
		im_log(INCA_LOG_ERR, "INCA_MPI_STATS=%s: short write", path);
	if (fd != STDERR_FILENO)
		close(fd);
}

static void
im_teardown(void)
{
	if (!im.enabled)
		return;
	/* Derived communicators the application never freed, in creation
	 * order: every member destroys them in the same order (the order in
	 * which MPI made them collectively), so their teardown rounds
	 * match. Deleting the attribute runs comm_delete_attr(). */
	while (im.comms != NULL)
		if (PMPI_Comm_delete_attr(im.comms->mcomm, im.keyval) != MPI_SUCCESS)
			comm_delete_attr(im.comms->mcomm, im.keyval, im.comms, NULL);
	ireqs_finish(NULL);
	print_stats();
	comm_destroy(&im.world);
	PMPI_Comm_free(&im.world.fb_comm);
	PMPI_Comm_free_keyval(&im.keyval);
	im.enabled = false;
}

IM_EXPORT int
MPI_Init(int *argc, char ***argv)
{
	int ret = PMPI_Init(argc, argv);

	if (ret == MPI_SUCCESS)
		im_setup();
	return ret;
}

IM_EXPORT int
MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
	int ret = PMPI_Init_thread(argc, argv, required, provided);

	if (ret == MPI_SUCCESS)
		im_setup();
	return ret;
}

IM_EXPORT int
MPI_Finalize(void)
{
	im_teardown();
	return PMPI_Finalize();
}

/* ---- communicators -------------------------------------------------------- */

/*
 * Each constructor lets MPI make the communicator, then gives it an INCA job
 * (comm_attach, collective over the new communicator's members). A failed
 * constructor returns what MPI said; MPI_COMM_NULL results (a color of
 * MPI_UNDEFINED, a process outside the group) are left alone.
 * MPI_Comm_idup is not interposed: its communicator is not usable until
 * its request completes, so it stays on PMPI (the keyval's null copy
 * function keeps the parent's record off any duplicate MPI makes).
 */

IM_EXPORT int
MPI_Comm_dup(MPI_Comm comm, MPI_Comm *newcomm)
{
	int ret = PMPI_Comm_dup(comm, newcomm);

	if (ret == MPI_SUCCESS)
		comm_attach(*newcomm);
	return ret;
}

IM_EXPORT int
MPI_Comm_dup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm *newcomm)
{
	int ret = PMPI_Comm_dup_with_info(comm, info, newcomm);

	if (ret == MPI_SUCCESS)
		comm_attach(*newcomm);
	return ret;
}

IM_EXPORT int
MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm *newcomm)
{
	int ret = PMPI_Comm_split(comm, color, key, newcomm);

	if (ret == MPI_SUCCESS)
		comm_attach(*newcomm);
	return ret;
}

IM_EXPORT int
MPI_Comm_split_type(MPI_Comm comm, int split_type, int key, MPI_Info info, MPI_Comm *newcomm)
{
	int ret = PMPI_Comm_split_type(comm, split_type, key, info, newcomm);

	if (ret == MPI_SUCCESS)
		comm_attach(*newcomm);
	return ret;
}

IM_EXPORT int
MPI_Comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm *newcomm)
{
	int ret = PMPI_Comm_create(comm, group, newcomm);

	if (ret == MPI_SUCCESS)
		comm_attach(*newcomm);
	return ret;
}

IM_EXPORT int
MPI_Comm_create_group(MPI_Comm comm, MPI_Group group, int tag, MPI_Comm *newcomm)
{
	int ret = PMPI_Comm_create_group(comm, group, tag, newcomm);

	if (ret == MPI_SUCCESS)
		comm_attach(*newcomm);
	return ret;
}

/* The INCA job goes first, explicitly (its teardown round is collective
 * over the members, as MPI_Comm_free is), then MPI frees the rest. Without
 * this the attribute's delete callback would do the same inside
 * PMPI_Comm_free. */
IM_EXPORT int
MPI_Comm_free(MPI_Comm *comm)
{
	if (comm != NULL && *comm != MPI_COMM_WORLD && comm_of(*comm) != NULL)
		PMPI_Comm_delete_attr(*comm, im.keyval);
	return PMPI_Comm_free(comm);
}

/* ---- routing ------------------------------------------------------------ */

/* The INCA dtype and op of an MPI reduction, or -1 if INCA cannot do it. */
static int
map_reduction(MPI_Datatype t, MPI_Op op, unsigned *dtype, unsigned *iop)
{
	if (op == MPI_SUM)
		*iop = INCA_OP_SUM;
	else if (op == MPI_MIN)
		*iop = INCA_OP_MIN;
	else if (op == MPI_MAX)
		*iop = INCA_OP_MAX;
	else
		return -1;
	if (t == MPI_INT || t == MPI_INT32_T)
		*dtype = INCA_DTYPE_INT32;
	else if (t == MPI_FLOAT)
		*dtype = INCA_DTYPE_FP32;
	else if ((t == MPI_UNSIGNED || t == MPI_UINT32_T) && op == MPI_SUM)
		*dtype = INCA_DTYPE_INT32; /* sum mod 2^32: the same bits */
	else if (t == MPI_INT64_T || t == MPI_LONG_LONG || (t == MPI_LONG && sizeof(long) == 8))
		*dtype = INCA_DTYPE_INT64;
	else if ((t == MPI_UINT64_T || t == MPI_UNSIGNED_LONG_LONG) && op == MPI_SUM)
		*dtype = INCA_DTYPE_INT64; /* sum mod 2^64: the same bits */
	else if (t == MPI_DOUBLE)
		*dtype = INCA_DTYPE_FP64;
	else
		return -1;
	return 0;
}

/* Bytes of @count elements of INCA @dtype: what a reduction moves. */
static inline uint64_t
red_bytes(uint64_t count, unsigned dtype)
{
	return count * inca_dtype_size(dtype);
}

/* The INCA communicator a reduction of @count elements goes through, or
 * NULL for PMPI. */
static struct im_comm *
reduction_route(uint64_t count, MPI_Datatype t, MPI_Op op, MPI_Comm comm, unsigned *dtype,
		unsigned *iop)
{
	struct im_comm *c = comm_of(comm);

	if (c == NULL)
		return NULL;
	if (count == 0 || count > INT_MAX || map_reduction(t, op, dtype, iop) < 0 ||
	    red_bytes(count, *dtype) < im.conf.min_bytes) {
		im.n.passed++;
		return NULL;
	}
	return c;
}

/* Count a call that went through libinca (threads may count on several
 * communicators at once). */
static void
count_inca(const struct im_comm *c, uint64_t *which, uint64_t bytes)
{
	__atomic_fetch_add(which, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&im.n.derived_inca, c != &im.world, __ATOMIC_RELAXED);
	__atomic_fetch_add(&im.n.bytes_inca, bytes, __ATOMIC_RELAXED);
}

/* MPI's answer for a libinca result: errors go through the communicator's
 * error handler, as MPI's own would. */
static int
im_result(int ret, MPI_Comm comm)
{
	if (ret == INCA_OK)
		return MPI_SUCCESS;
	im.n.errors++;
	im_log(INCA_LOG_ERR, "collective failed: %s", inca_strerror(ret));
	PMPI_Comm_call_errhandler(comm, MPI_ERR_OTHER);
	return MPI_ERR_OTHER;
}

/* One contiguous block of @count elements of @t, starting at the buffer
 * address itself? Otherwise the data must be packed. */
static bool
type_contiguous(MPI_Datatype t, int count)
{
	MPI_Aint lb, extent, tlb, textent;
	int tsize;

	if (PMPI_Type_size(t, &tsize) != MPI_SUCCESS ||
	    PMPI_Type_get_extent(t, &lb, &extent) != MPI_SUCCESS ||
	    PMPI_Type_get_true_extent(t, &tlb, &textent) != MPI_SUCCESS)
		return false;
	return tlb == 0 && textent == tsize && (count <= 1 || extent == tsize);
}

/* ---- dynamic path selection (INCA_MPI_ROUTE=auto) ----------------------- */

static double
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static unsigned
size_class(uint64_t bytes)
{
	unsigned k = 0;

	while (bytes > 1 && k < IM_CLASSES - 1) {
		bytes >>= 1;
		k++;
	}
	return k;
}

/*
 * The route of call @seq of class @k: during exploration the two routes
 * alternate; then the decided route, except call @probe, which tries the
 * other one. A function of @seq, @via and @probe only.
 */
static int
class_via(const struct im_class *k)
{
	if (k->seq < 2 * IM_EXPLORE)
		return (int)(k->seq & 1);
	return k->seq == k->probe ? !k->via : k->via;
}

/*
 * Calls until the next probe, from the agreed whole-nanosecond times @lo of
 * the winner and @hi of the loser: a probe costs hi - lo more than the
 * winner, IM_PROBE_COST * (hi - lo) / lo calls keep that under 2 %.
 */
static uint64_t
reeval_calls(uint64_t lo, uint64_t hi)
{
	uint64_t k = lo ? IM_PROBE_COST * (hi - lo) / lo : IM_REEVAL_MAX;

	return k < IM_REEVAL ? IM_REEVAL : k > IM_REEVAL_MAX ? IM_REEVAL_MAX : k;
}

/* Record this rank's time of the call class_via() routed; at the end of
 * the exploration and after each probe, agree on the route. */
static void
class_record(struct im_comm *c, unsigned cls, int via, double ns)
{
	struct im_class *k = &c->cls[cls];
	uint64_t ti, th;
	double t[IM_VIAS];
	bool agree;
	int prev;

	/* Mean of the exploration's calls, then an EWMA: recent load counts. */
	if (k->n[via] < IM_EXPLORE)
		k->ns[via] = (k->ns[via] * k->n[via] + ns) / (k->n[via] + 1);
	else
		k->ns[via] = 0.75 * k->ns[via] + 0.25 * ns;
	k->n[via]++;
	agree = k->seq + 1 == 2 * IM_EXPLORE || (k->seq >= 2 * IM_EXPLORE && k->seq == k->probe);
	k->seq++;
	if (!agree)
		return;
	/* A collective's time is its slowest rank's: every rank decides on
	 * the same maxima, in whole nanoseconds, with the same rule (ties
	 * stay on INCA). */
	t[0] = k->ns[0];
	t[1] = k->ns[1];
	PMPI_Allreduce(MPI_IN_PLACE, t, IM_VIAS, MPI_DOUBLE, MPI_MAX, c->fb_comm);
	ti = (uint64_t)t[IM_VIA_INCA];
	th = (uint64_t)t[IM_VIA_HOST];
	prev = k->via;
	k->via = th < ti ? IM_VIA_HOST : IM_VIA_INCA;
	k->probe = k->seq - 1 + (th < ti ? reeval_calls(th, ti) : reeval_calls(ti, th));
	/* Atomic: threads may decide on several communicators at once. */
	__atomic_fetch_add(&im.n.route_agreements, 1, __ATOMIC_RELAXED);
	if (k->seq > 2 * IM_EXPLORE && prev != k->via)
		__atomic_fetch_add(&im.n.route_switches, 1, __ATOMIC_RELAXED);
	im_log(INCA_LOG_INFO, "route: job %u class 2^%u call %llu inca %llu ns host %llu ns -> %s",
	       c->job, cls, (unsigned long long)k->seq, (unsigned long long)ti,
	       (unsigned long long)th, k->via == IM_VIA_INCA ? "inca" : "host");
}

/* Fold a routed call's route into route_digest (FNV-1a): equal digests on
 * all ranks mean the same route for every call. Meaningful with one thread
 * making collectives at a time (threads on several communicators
 * interleave differently on each rank). */
static void
route_note(int via)
{
	uint64_t h = im.n.route_digest ? im.n.route_digest : 14695981039346656037ULL;

	im.n.route_digest = (h ^ (uint64_t)(via + 1)) * 1099511628211ULL;
}

IM_EXPORT int
MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
	      MPI_Comm comm)
{
	struct im_comm *c;
	unsigned dtype, iop;
	int ret;

	unsigned cls = 0;
	double t0 = 0;
	int via;

	c = count > 0 ? reduction_route((uint64_t)count, datatype, op, comm, &dtype, &iop) : NULL;
	if (c == NULL)
		return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
	pthread_mutex_lock(&c->lock);
	via = im.conf.route == IM_ROUTE_HOST ? IM_VIA_HOST : IM_VIA_INCA;
	if (im.conf.route == IM_ROUTE_AUTO) {
		cls = size_class(red_bytes((uint64_t)count, dtype));
		via = class_via(&c->cls[cls]);
		t0 = now_ns();
	}
	route_note(via);
	if (via == IM_VIA_HOST) {
		/* On the application's communicator, as without the
		 * interposer: the host route is MPI's own. */
		ret = PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm) == MPI_SUCCESS ?
			      INCA_OK : INCA_EFALLBACK;
		if (ret == INCA_OK)
			__atomic_fetch_add(&im.n.allreduce_host, 1, __ATOMIC_RELAXED);
	} else {
		ret = inca_allreduce(c->comm, sendbuf == MPI_IN_PLACE ? INCA_IN_PLACE : sendbuf,
				     recvbuf, (size_t)count, dtype, iop);
		if (ret == INCA_OK)
			count_inca(c, &im.n.allreduce_inca, red_bytes((uint64_t)count, dtype));
	}
	/* Every call advances its class, failed or not, on every rank. */
	if (im.conf.route == IM_ROUTE_AUTO)
		class_record(c, cls, via, now_ns() - t0);
	pthread_mutex_unlock(&c->lock);
	/* Refused before anything was sent, on every rank alike (they share
	 * the aggregator and its capabilities). */
	if (ret == INCA_ENOTSUP) {
		im.n.passed++;
		return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
	}
	return im_result(ret, comm);
}

/*
 * Did the inca_reduce() between the counters @b and @a go routed, as
 * Reduce (docs/protocol.md, "Routed chunks")? Every chunk routed, and at a
 * rank other than the root every result BRIEF: it received no elements.
 */
static bool
reduce_was_routed(const struct inca_stats *b, const struct inca_stats *a, bool root)
{
	uint64_t chunks = a->chunks - b->chunks, routed = a->routed_chunks - b->routed_chunks;
	uint64_t brief = a->brief_results - b->brief_results;

	return chunks > 0 && routed == chunks && brief == (root ? 0 : routed);
}

/*
 * MPI_Reduce through inca_reduce(): where the aggregator routes chunks
 * (INCA_CAP_ROUTED) every chunk's result goes to the root and the other
 * ranks get header-only BRIEF results, so only the root receives the
 * vector, as with a host reduce; elsewhere libinca runs it as an
 * allreduce whose result the other ranks do not see. Exact either way.
 */
IM_EXPORT int
MPI_Reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
	   int root, MPI_Comm comm)
{
	struct inca_stats before, after;
	struct im_comm *c;
	unsigned dtype, iop;
	int ret;

	c = count > 0 ? reduction_route((uint64_t)count, datatype, op, comm, &dtype, &iop) : NULL;
	if (c == NULL || root < 0 || root >= c->size)
		return PMPI_Reduce(sendbuf, recvbuf, count, datatype, op, root, comm);
	pthread_mutex_lock(&c->lock);
	inca_comm_stats(c->comm, &before);
	/* recvbuf is significant at the root only (NULL elsewhere is fine). */
	ret = inca_reduce(c->comm, sendbuf == MPI_IN_PLACE ? INCA_IN_PLACE : sendbuf,
			  c->rank == root ? recvbuf : NULL, (size_t)count, dtype, iop,
			  (unsigned)root);
	if (ret == INCA_OK) {
		count_inca(c, &im.n.reduce_inca, red_bytes((uint64_t)count, dtype));
		inca_comm_stats(c->comm, &after);
		if (reduce_was_routed(&before, &after, c->rank == root))
			__atomic_fetch_add(&im.n.reduce_routed, 1, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&c->lock);
	if (ret == INCA_ENOTSUP) {
		im.n.passed++;
		return PMPI_Reduce(sendbuf, recvbuf, count, datatype, op, root, comm);
	}
	return im_result(ret, comm);
}

/*
 * MPI_Reduce_scatter_block through inca_reduce_scatter(): where the
 * aggregator routes chunks (INCA_CAP_ROUTED), each block's result goes
 * to its owner only, so a rank receives one block; elsewhere libinca runs
 * it as an allreduce of all N blocks of which each rank keeps its own.
 * Exact either way.
 */
IM_EXPORT int
MPI_Reduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount,
			 MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
	struct im_comm *c = comm_of(comm);
	unsigned dtype, iop;
	uint64_t total;
	char *tmp = NULL;
	int ret;

	total = c != NULL && recvcount > 0 ? (uint64_t)recvcount * (uint64_t)c->size : 0;
	if (total == 0 || reduction_route(total, datatype, op, comm, &dtype, &iop) == NULL)
		return PMPI_Reduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, comm);
	pthread_mutex_lock(&c->lock);
	if (sendbuf == MPI_IN_PLACE) {
		/* The input is recvbuf, all N blocks; the result is its first:
		 * the input is copied, the output must not overlap it. */
		tmp = malloc((size_t)total * inca_dtype_size(dtype));
		if (tmp != NULL)
			memcpy(tmp, recvbuf, (size_t)total * inca_dtype_size(dtype));
		ret = tmp == NULL ? INCA_ENOMEM :
		      inca_reduce_scatter(c->comm, tmp, recvbuf, (size_t)recvcount, dtype, iop);
		free(tmp);
	} else {
		ret = inca_reduce_scatter(c->comm, sendbuf, recvbuf, (size_t)recvcount, dtype, iop);
	}
	if (ret == INCA_OK)
		count_inca(c, &im.n.reduce_scatter_inca, red_bytes(total, dtype));
	pthread_mutex_unlock(&c->lock);
	if (ret == INCA_ENOTSUP) {
		im.n.passed++;
		return PMPI_Reduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, comm);
	}
	return im_result(ret, comm);
}

/*
 * The byte size of a broadcast of @count @datatype on @c, or 0 for PMPI.
 * The byte size is what MPI makes every rank agree on (type signatures
 * match; the datatypes themselves may differ).
 */
static uint64_t
bcast_bytes(const struct im_comm *c, int count, MPI_Datatype datatype, int root)
{
	uint64_t bytes;
	int tsize;

	if (!im.conf.bcast || count <= 0 || root < 0 || root >= c->size ||
	    PMPI_Type_size(datatype, &tsize) != MPI_SUCCESS || tsize <= 0 ||
	    (bytes = (uint64_t)count * (uint64_t)tsize) < im.conf.min_bytes ||
	    bytes > (uint64_t)INT_MAX) {
		im.n.passed++;
		return 0;
	}
	return bytes;
}

IM_EXPORT int
MPI_Bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm)
{
	struct im_comm *c = comm_of(comm);
	uint64_t bytes;
	void *buf = buffer;
	bool pack_err = false;
	int pos = 0, ret;

	if (c == NULL || (bytes = bcast_bytes(c, count, datatype, root)) == 0)
		return PMPI_Bcast(buffer, count, datatype, root, comm);
	if (!type_contiguous(datatype, count)) {
		/* Not one contiguous block: pack. */
		buf = malloc(bytes);
		if (buf == NULL)
			return im_result(INCA_ENOMEM, comm);
		if (c->rank == root && PMPI_Pack(buffer, count, datatype, buf, (int)bytes, &pos,
						 comm) != MPI_SUCCESS) {
			/* Every rank must still take part: send zeros, and
			 * report the error at the root. */
			memset(buf, 0, bytes);
			pack_err = true;
		}
	}
	pthread_mutex_lock(&c->lock);
	ret = inca_broadcast(c->comm, buf, bytes, (unsigned)root);
	if (ret == INCA_OK)
		count_inca(c, &im.n.bcast_inca, bytes);
	pthread_mutex_unlock(&c->lock);
	if (buf != buffer) {
		pos = 0;
		if (ret == INCA_OK && c->rank != root)
			PMPI_Unpack(buf, (int)bytes, &pos, buffer, count, datatype, comm);
		free(buf);
	}
	return im_result(ret == INCA_OK && pack_err ? INCA_EINVAL : ret, comm);
}

IM_EXPORT int
MPI_Barrier(MPI_Comm comm)
{
	struct im_comm *c = comm_of(comm);
	int ret;

	if (c == NULL)
		return PMPI_Barrier(comm);
	if (!im.conf.barrier) {
		im.n.passed++;
		return PMPI_Barrier(comm);
	}
	pthread_mutex_lock(&c->lock);
	ret = inca_barrier(c->comm);
	if (ret == INCA_OK)
		count_inca(c, &im.n.barrier_inca, 0);
	pthread_mutex_unlock(&c->lock);
	return im_result(ret, comm);
}

/*
 * MPI_Allgather through inca_allgather(): where the aggregator routes
 * chunks (INCA_CAP_ROUTED), a rank sends its block alone and receives the
 * others' (S each way, S being one rank's block, as a host allgather);
 * elsewhere libinca runs it as an int32 sum of the N blocks' bytes, each
 * rank contributing its own block and zeros elsewhere: in every byte at
 * most one rank adds something other than zero, so no carry ever crosses a
 * byte and the result is each rank's bytes, whatever they hold (-0.0, NaN
 * payloads, doubles), at S·N each way.
 */
IM_EXPORT int
MPI_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
	      int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
	struct im_comm *c = comm_of(comm);
	MPI_Aint lb, rext;
	uint64_t b = 0, total = 0;
	size_t words;
	bool contig, pack_err = false;
	char *buf, *mine;
	int tsize, pos = 0, ret;

	if (c == NULL)
		return PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
				      comm);
	/* Every rank agrees on the byte size of a block: recvcount of
	 * recvtype, significant on every rank, equals what each one sends. */
	if (recvcount > 0 && PMPI_Type_size(recvtype, &tsize) == MPI_SUCCESS && tsize > 0) {
		b = (uint64_t)recvcount * (uint64_t)tsize;
		total = b * (uint64_t)c->size;
	}
	if (!im.conf.allgather || total == 0 || total < im.conf.min_bytes ||
	    total > (uint64_t)INT_MAX) {
		im.n.passed++;
		return PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
				      comm);
	}
	words = (size_t)(total + 3) / 4;
	contig = type_contiguous(recvtype, recvcount * c->size);
	PMPI_Type_get_extent(recvtype, &lb, &rext);
	/* Straight in recvbuf when it is one contiguous block. */
	buf = contig ? recvbuf : malloc(words * 4);
	if (buf == NULL)
		return im_result(INCA_ENOMEM, comm);
	mine = buf + (size_t)c->rank * b;
	if (sendbuf == MPI_IN_PLACE) {
		/* This rank's block is already in recvbuf, at its place. */
		if (buf != recvbuf && contig)
			memcpy(mine, (char *)recvbuf + (size_t)c->rank * b, b);
		else if (buf != recvbuf)
			pack_err = PMPI_Pack((char *)recvbuf + (size_t)c->rank * recvcount * rext,
					     recvcount, recvtype, mine, (int)b, &pos,
					     comm) != MPI_SUCCESS;
	} else if (type_contiguous(sendtype, sendcount)) {
		memcpy(mine, sendbuf, b);
	} else {
		pack_err = PMPI_Pack(sendbuf, sendcount, sendtype, mine, (int)b, &pos, comm) !=
			   MPI_SUCCESS;
	}
	if (pack_err)
		memset(mine, 0, b); /* take part anyway; report the error */
	pthread_mutex_lock(&c->lock);
	ret = inca_allgather(c->comm, INCA_IN_PLACE, buf, (size_t)b);
	if (ret == INCA_OK)
		count_inca(c, &im.n.allgather_inca, total);
	pthread_mutex_unlock(&c->lock);
	if (buf != recvbuf) {
		pos = 0;
		if (ret == INCA_OK && contig)
			memcpy(recvbuf, buf, total);
		else if (ret == INCA_OK)
			PMPI_Unpack(buf, (int)total, &pos, recvbuf, recvcount * c->size, recvtype,
				    comm);
		free(buf);
	}
	if (ret == INCA_ENOTSUP) {
		im.n.passed++;
		return PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
				      comm);
	}
	return im_result(ret == INCA_OK && pack_err ? INCA_EINVAL : ret, comm);
}

/* ---- nonblocking collectives ---------------------------------------------- */

/*
 * An MPI_Iallreduce, MPI_Ibcast or MPI_Ibarrier through INCA hands the user
 * a generalized request: a real MPI_Request that every MPI function
 * accepts. All three are inca_iallreduce() requests (a broadcast is an
 * int32 sum of bytes to which the non-roots add zeros, a barrier a sum of
 * one int32). libinca makes progress only when called, so the wait and
 * test functions below drive the INCA requests they are given and mark them
 * complete; then PMPI does the rest (status, freeing). The order of
 * completion does not matter: libinca completes a communicator's requests
 * in issue order, and waiting for a later one finishes the earlier ones.
 *
 * Limitation: while the communicator is in fallback mode, driving a request
 * runs the host allreduce (PMPI) and blocks until every rank drives it,
 * even inside MPI_Test.
 */

/* Called with im.lock held. */
static struct im_ireq *
ireq_find(MPI_Request r)
{
	struct im_ireq *x;

	if (r == MPI_REQUEST_NULL)
		return NULL;
	for (x = im.ireqs; x != NULL; x = x->next)
		if (x->mreq == r)
			return x;
	return NULL;
}

/* Make progress on @x (wait for it if @block). Called with x->c->lock
 * held. */
static void
ireq_drive(struct im_ireq *x, bool block)
{
	int done = 1, pos = 0;

	if (x->ireq == NULL)
		return;
	if (block)
		x->result = inca_wait(&x->ireq);
	else
		x->result = inca_test(&x->ireq, &done);
	if (!done)
		return;
	x->ireq = NULL;
	if (x->result != INCA_OK)
		im.n.errors++;
	if (x->scratch != NULL) {
		if (x->result == INCA_OK && x->unpack &&
		    PMPI_Unpack(x->scratch, (int)x->bytes, &pos, x->ubuf, x->ucount, x->utype,
				x->ucomm) != MPI_SUCCESS)
			x->result = INCA_EINVAL;
		free(x->scratch);
		x->scratch = NULL;
	}
	PMPI_Grequest_complete(x->mreq);
}

static int
greq_query(void *extra_state, MPI_Status *status)
{
	struct im_ireq *x = extra_state;

	PMPI_Status_set_elements(status, x->datatype, x->count);
	PMPI_Status_set_cancelled(status, 0);
	status->MPI_SOURCE = MPI_UNDEFINED;
	status->MPI_TAG = MPI_UNDEFINED;
	status->MPI_ERROR = x->result == INCA_OK ? MPI_SUCCESS : MPI_ERR_OTHER;
	return status->MPI_ERROR;
}

static int
greq_free(void *extra_state)
{
	struct im_ireq *x = extra_state, **pp;

	pthread_mutex_lock(&im.lock);
	for (pp = &im.ireqs; *pp != NULL; pp = &(*pp)->next) {
		if (*pp == x) {
			*pp = x->next;
			__atomic_store_n(&im.nireqs, im.nireqs - 1, __ATOMIC_RELAXED);
			break;
		}
	}
	pthread_mutex_unlock(&im.lock);
	free(x->scratch);
	free(x);
	return MPI_SUCCESS;
}

static int
greq_cancel(void *extra_state, int complete)
{
	(void)extra_state;
	/* A nonblocking collective cannot be cancelled (MPI says so too). */
	return complete ? MPI_SUCCESS : MPI_ERR_REQUEST;
}

/*
 * Start @x as an inca_iallreduce() on @c and hand out its generalized
 * request. Called with c->lock held; returns an INCA code.
 */
static int
ireq_start(struct im_comm *c, struct im_ireq *x, const void *sendbuf, void *recvbuf,
	   size_t count, unsigned dtype, unsigned iop)
{
	struct im_ireq *y, **pp;
	int ret;

	x->c = c;
	for (;;) {
		ret = inca_iallreduce(c->comm, sendbuf, recvbuf, count, dtype, iop, &x->ireq);
		if (ret != INCA_EBUSY)
			break;
		/* Too many in flight here (maybe not on other ranks, so this
		 * one must not take another path): finish the oldest that
		 * libinca still holds on this communicator. Requests the
		 * application has not freed yet but whose result we took are
		 * not libinca's any more: skipping them is what keeps this
		 * loop from spinning. */
		pthread_mutex_lock(&im.lock);
		for (y = im.ireqs; y != NULL && (y->ireq == NULL || y->c != c); y = y->next)
			;
		pthread_mutex_unlock(&im.lock);
		if (y == NULL)
			break;
		ireq_drive(y, true);
	}
	if (ret == INCA_OK)
		ret = PMPI_Grequest_start(greq_query, greq_free, greq_cancel, x, &x->mreq) ==
		      MPI_SUCCESS ? INCA_OK : INCA_EFALLBACK;
	if (ret == INCA_OK) {
		pthread_mutex_lock(&im.lock);
		for (pp = &im.ireqs; *pp != NULL; pp = &(*pp)->next)
			;
		*pp = x;
		__atomic_store_n(&im.nireqs, im.nireqs + 1, __ATOMIC_RELAXED);
		pthread_mutex_unlock(&im.lock);
	}
	return ret;
}

IM_EXPORT int
MPI_Iallreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
	       MPI_Comm comm, MPI_Request *request)
{
	struct im_comm *c;
	struct im_ireq *x;
	unsigned dtype, iop;
	int ret;

	c = count > 0 ? reduction_route((uint64_t)count, datatype, op, comm, &dtype, &iop) : NULL;
	if (c == NULL)
		return PMPI_Iallreduce(sendbuf, recvbuf, count, datatype, op, comm, request);
	if (!im.conf.iallreduce) {
		im.n.passed++;
		return PMPI_Iallreduce(sendbuf, recvbuf, count, datatype, op, comm, request);
	}
	x = calloc(1, sizeof(*x));
	if (x == NULL)
		return im_result(INCA_ENOMEM, comm);
	x->count = count;
	x->datatype = datatype;
	pthread_mutex_lock(&c->lock);
	ret = ireq_start(c, x, sendbuf == MPI_IN_PLACE ? INCA_IN_PLACE : sendbuf, recvbuf,
			 (size_t)count, dtype, iop);
	if (ret == INCA_OK) {
		count_inca(c, &im.n.iallreduce_inca, red_bytes((uint64_t)count, dtype));
		*request = x->mreq;
	}
	pthread_mutex_unlock(&c->lock);
	if (ret == INCA_OK)
		return MPI_SUCCESS;
	free(x);
	if (ret == INCA_ENOTSUP) {
		im.n.passed++;
		return PMPI_Iallreduce(sendbuf, recvbuf, count, datatype, op, comm, request);
	}
	return im_result(ret, comm);
}

/*
 * MPI_Ibcast: in the user's buffer when it is one block of whole words (the
 * non-roots zero it: its content is undefined until completion anyway),
 * else in a scratch buffer that the non-roots unpack once complete.
 */
IM_EXPORT int
MPI_Ibcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm,
	   MPI_Request *request)
{
	struct im_comm *c = comm_of(comm);
	struct im_ireq *x;
	uint64_t bytes;
	size_t words;
	void *buf = buffer;
	bool pack_err = false;
	int pos = 0, ret;

	if (c == NULL || (bytes = bcast_bytes(c, count, datatype, root)) == 0)
		return PMPI_Ibcast(buffer, count, datatype, root, comm, request);
	if (!im.conf.iallreduce) {
		im.n.passed++;
		return PMPI_Ibcast(buffer, count, datatype, root, comm, request);
	}
	x = calloc(1, sizeof(*x));
	if (x == NULL)
		return im_result(INCA_ENOMEM, comm);
	words = (size_t)(bytes + 3) / 4;
	x->count = count;
	x->datatype = datatype;
	if (!type_contiguous(datatype, count) || bytes % 4 != 0) {
		buf = x->scratch = calloc(words, 4);
		if (buf == NULL) {
			free(x);
			return im_result(INCA_ENOMEM, comm);
		}
		x->ubuf = buffer;
		x->ucount = count;
		x->utype = datatype;
		x->ucomm = comm;
		x->bytes = bytes;
		x->unpack = c->rank != root;
		if (c->rank == root && PMPI_Pack(buffer, count, datatype, buf, (int)bytes, &pos,
						 comm) != MPI_SUCCESS) {
			memset(buf, 0, bytes);
			pack_err = true;
		}
	} else if (c->rank != root) {
		memset(buf, 0, bytes);
	}
	pthread_mutex_lock(&c->lock);
	ret = ireq_start(c, x, INCA_IN_PLACE, buf, words, INCA_DTYPE_INT32, INCA_OP_SUM);
	if (ret == INCA_OK) {
		count_inca(c, &im.n.ibcast_inca, bytes);
		*request = x->mreq;
	}
	pthread_mutex_unlock(&c->lock);
	if (ret == INCA_OK)
		return pack_err ? im_result(INCA_EINVAL, comm) : MPI_SUCCESS;
	free(x->scratch);
	free(x);
	return im_result(ret, comm);
}

IM_EXPORT int
MPI_Ibarrier(MPI_Comm comm, MPI_Request *request)
{
	struct im_comm *c = comm_of(comm);
	struct im_ireq *x;
	int ret;

	if (c == NULL)
		return PMPI_Ibarrier(comm, request);
	if (!im.conf.barrier || !im.conf.iallreduce) {
		im.n.passed++;
		return PMPI_Ibarrier(comm, request);
	}
	x = calloc(1, sizeof(*x));
	if (x == NULL)
		return im_result(INCA_ENOMEM, comm);
	x->datatype = MPI_INT;
	pthread_mutex_lock(&c->lock);
	/* A sum of one int32 completes only once every rank contributed. */
	ret = ireq_start(c, x, INCA_IN_PLACE, &x->word, 1, INCA_DTYPE_INT32, INCA_OP_SUM);
	if (ret == INCA_OK) {
		count_inca(c, &im.n.ibarrier_inca, 0);
		*request = x->mreq;
	}
	pthread_mutex_unlock(&c->lock);
	if (ret == INCA_OK)
		return MPI_SUCCESS;
	free(x);
	return im_result(ret, comm);
}

static inline bool
have_ireqs(void)
{
	return __atomic_load_n(&im.nireqs, __ATOMIC_RELAXED) != 0;
}

/*
 * Drive the INCA requests among @reqs without blocking. Returns how many
 * INCA requests @reqs holds, and in *pending how many of them are not
 * finished; *others counts the non-null requests that are not INCA's.
 */
static int
drive_array(int count, const MPI_Request reqs[], int *pending, int *others)
{
	struct im_ireq *x;
	int i, n = 0;

	*pending = 0;
	*others = 0;
	for (i = 0; i < count; i++) {
		/* Found under the list's lock, driven under its communicator's:
		 * @x stays allocated while the application waits for it. */
		pthread_mutex_lock(&im.lock);
		x = ireq_find(reqs[i]);
		pthread_mutex_unlock(&im.lock);
		if (x == NULL) {
			*others += reqs[i] != MPI_REQUEST_NULL;
			continue;
		}
		n++;
		pthread_mutex_lock(&x->c->lock);
		ireq_drive(x, false);
		*pending += x->ireq != NULL;
		pthread_mutex_unlock(&x->c->lock);
	}
	return n;
}

/* Block until the oldest unfinished INCA request among @reqs finishes. */
static void
wait_oldest(int count, const MPI_Request reqs[])
{
	struct im_ireq *x;
	int i = count;

	pthread_mutex_lock(&im.lock);
	for (x = im.ireqs; x != NULL; x = x->next) {
		if (x->ireq == NULL)
			continue;
		for (i = 0; i < count && reqs[i] != x->mreq; i++)
			;
		if (i < count)
			break;
	}
	pthread_mutex_unlock(&im.lock);
	if (x == NULL)
		return;
	pthread_mutex_lock(&x->c->lock);
	ireq_drive(x, true);
	pthread_mutex_unlock(&x->c->lock);
}

IM_EXPORT int
MPI_Wait(MPI_Request *request, MPI_Status *status)
{
	struct im_ireq *x;

	if (have_ireqs() && request != NULL) {
		pthread_mutex_lock(&im.lock);
		x = ireq_find(*request);
		pthread_mutex_unlock(&im.lock);
		if (x != NULL) {
			pthread_mutex_lock(&x->c->lock);
			ireq_drive(x, true);
			pthread_mutex_unlock(&x->c->lock);
		}
	}
	return PMPI_Wait(request, status);
}

IM_EXPORT int
MPI_Test(MPI_Request *request, int *flag, MPI_Status *status)
{
	int pending, others;

	if (have_ireqs() && request != NULL)
		drive_array(1, request, &pending, &others);
	return PMPI_Test(request, flag, status);
}

IM_EXPORT int
MPI_Request_get_status(MPI_Request request, int *flag, MPI_Status *status)
{
	int pending, others;

	if (have_ireqs())
		drive_array(1, &request, &pending, &others);
	return PMPI_Request_get_status(request, flag, status);
}

IM_EXPORT int
MPI_Waitall(int count, MPI_Request reqs[], MPI_Status statuses[])
{
	int pending, others, flag;

	if (!have_ireqs() || reqs == NULL || count <= 0)
		return PMPI_Waitall(count, reqs, statuses);
	for (;;) {
		if (drive_array(count, reqs, &pending, &others) == 0 || pending == 0)
			break;
		if (others == 0) {
			/* Only INCA requests: sleep in libinca's poll. */
			wait_oldest(count, reqs);
			continue;
		}
		/* Mixed: keep MPI progressing too. This cannot complete
		 * everything while an INCA request is unfinished. */
		PMPI_Testall(count, reqs, &flag, MPI_STATUSES_IGNORE);
	}
	return PMPI_Waitall(count, reqs, statuses);
}

IM_EXPORT int
MPI_Testall(int count, MPI_Request reqs[], int *flag, MPI_Status statuses[])
{
	int pending, others;

	if (have_ireqs() && reqs != NULL && count > 0)
		drive_array(count, reqs, &pending, &others);
	return PMPI_Testall(count, reqs, flag, statuses);
}

IM_EXPORT int
MPI_Waitany(int count, MPI_Request reqs[], int *index, MPI_Status *status)
{
	int pending, others, flag, ret, n;

	if (!have_ireqs() || reqs == NULL || count <= 0)
		return PMPI_Waitany(count, reqs, index, status);
	for (;;) {
		n = drive_array(count, reqs, &pending, &others);
		if (n == 0 || pending < n)
			break; /* none of ours, or one of ours is complete */
		if (others == 0) {
			wait_oldest(count, reqs);
			break;
		}
		ret = PMPI_Testany(count, reqs, index, &flag, status);
		if (ret != MPI_SUCCESS || flag)
			return ret;
	}
	return PMPI_Waitany(count, reqs, index, status);
}

IM_EXPORT int
MPI_Testany(int count, MPI_Request reqs[], int *index, int *flag, MPI_Status *status)
{
	int pending, others;

	if (have_ireqs() && reqs != NULL && count > 0)
		drive_array(count, reqs, &pending, &others);
	return PMPI_Testany(count, reqs, index, flag, status);
}

IM_EXPORT int
MPI_Waitsome(int incount, MPI_Request reqs[], int *outcount, int indices[],
	     MPI_Status statuses[])
{
	int pending, others, ret, n;

	if (!have_ireqs() || reqs == NULL || incount <= 0)
		return PMPI_Waitsome(incount, reqs, outcount, indices, statuses);
	for (;;) {
		n = drive_array(incount, reqs, &pending, &others);
		if (n == 0 || pending < n)
			break;
		if (others == 0) {
			wait_oldest(incount, reqs);
			break;
		}
		ret = PMPI_Testsome(incount, reqs, outcount, indices, statuses);
		if (ret != MPI_SUCCESS || *outcount != 0)
			return ret;
	}
	return PMPI_Waitsome(incount, reqs, outcount, indices, statuses);
}

IM_EXPORT int
MPI_Testsome(int incount, MPI_Request reqs[], int *outcount, int indices[],
	     MPI_Status statuses[])
{
	int pending, others;

	if (have_ireqs() && reqs != NULL && incount > 0)
		drive_array(incount, reqs, &pending, &others);
	return PMPI_Testsome(incount, reqs, outcount, indices, statuses);
}

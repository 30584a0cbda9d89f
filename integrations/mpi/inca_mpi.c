/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * libinca-mpi: a PMPI interposer that sends MPI collectives on
 * MPI_COMM_WORLD through an INCA aggregator, and everything else to the MPI
 * library underneath (PMPI_*). Load it with LD_PRELOAD or link it before
 * libmpi; the application is not changed. docs/mpi.md is the user guide.
 *
 * What goes through INCA: MPI_Allreduce and MPI_Iallreduce of MPI_INT,
 * MPI_INT32_T and MPI_FLOAT with MPI_SUM, MPI_MIN or MPI_MAX (and
 * MPI_UNSIGNED / MPI_UINT32_T with MPI_SUM, whose wrapping sum is the same
 * bits), MPI_Bcast of any datatype, and MPI_Barrier, all on MPI_COMM_WORLD
 * only. INCA is one stream per job in which every rank must issue the same
 * collectives in the same order; MPI promises that order per communicator
 * only, so collectives on other communicators (congruent ones included)
 * could interleave differently on different ranks and go to PMPI.
 *
 * Every routing decision depends only on arguments MPI requires to agree
 * across ranks (communicator, count, datatype and op of a reduction, the
 * byte size of a broadcast) and on configuration that rank 0 broadcasts, so
 * all ranks take the same path at every call.
 *
 * The fallback: libinca calls im_fallback() (PMPI_Allreduce on a private
 * duplicate of MPI_COMM_WORLD) when the aggregator is absent, refuses the
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
#include <unistd.h>

#include <mpi.h>

#include <inca/inca.h>

_Static_assert(sizeof(int) == 4, "MPI_INT must be a 32-bit integer");

/* The interposed MPI entry points are the library's only interface. */
#define IM_EXPORT __attribute__((visibility("default")))

/* An MPI_Iallreduce in flight through INCA, seen by the user as the
 * generalized request @mreq. */
struct im_ireq {
	struct im_ireq *next;
	MPI_Request mreq;
	struct inca_request *ireq; /* NULL once libinca returned its result */
	int result;                /* INCA_OK or the error, once finished */
	int count;
	MPI_Datatype datatype;
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
};

/* Calls counted by the interposer, printed with libinca's counters. */
#define IM_COUNTERS(X) \
	X(allreduce_inca, "MPI_Allreduce calls sent through libinca") \
	X(iallreduce_inca, "MPI_Iallreduce calls sent through libinca") \
	X(bcast_inca, "MPI_Bcast calls sent through libinca") \
	X(barrier_inca, "MPI_Barrier calls sent through libinca") \
	X(bytes_inca, "payload bytes of the calls sent through libinca") \
	X(passed, "collectives on MPI_COMM_WORLD passed to PMPI") \
	X(errors, "collectives that returned an error")

struct im_counters {
#define IM_X_(n, d) uint64_t n;
	IM_COUNTERS(IM_X_)
#undef IM_X_
};

static struct {
	bool enabled;        /* collectives on WORLD may go through INCA */
	int rank;
	int size;
	int verbose;
	struct im_conf conf;
	MPI_Comm fb_comm;    /* private duplicate of WORLD for the fallback */
	struct inca_comm *comm;
	/* Serialises every use of @comm by the application's threads (with
	 * MPI_THREAD_MULTIPLE). */
	pthread_mutex_t lock;
	struct im_ireq *ireqs; /* in issue order */
	unsigned nireqs;       /* read without the lock as a fast-path test */
	struct im_counters n;
} im = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.fb_comm = MPI_COMM_NULL,
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

/* libinca's host allreduce: PMPI on the private communicator, so that it
 * never matches anything the application posts on MPI_COMM_WORLD. */
static int
im_fallback(void *ctx, const struct inca_fallback_args *a)
{
	MPI_Datatype t = mpi_type_of(a->dtype);
	MPI_Op op = mpi_op_of(a->op);
	const char *src = a->sendbuf;
	char *dst = a->recvbuf;
	size_t left = a->count, us = inca_dtype_size(a->dtype);
	bool in_place = a->sendbuf == a->recvbuf;

	(void)ctx;
	if (t == MPI_DATATYPE_NULL || op == MPI_OP_NULL)
		return -EINVAL;
	/* MPI counts are int: large vectors go in pieces. */
	while (left > 0) {
		int n = left > INT_MAX ? INT_MAX : (int)left;

		if (PMPI_Allreduce(in_place ? MPI_IN_PLACE : src, dst, n, t, op, im.fb_comm) !=
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
	(void)ctx;
	if (bytes > INT_MAX)
		return -EINVAL;
	if (PMPI_Allgather(sendbuf, (int)bytes, MPI_BYTE, recvbuf, (int)bytes, MPI_BYTE,
			   im.fb_comm) != MPI_SUCCESS)
		return -EIO;
	return 0;
}

/* ---- set-up and tear-down ----------------------------------------------- */

static void
im_setup(void)
{
	struct inca_comm_opts o;
	struct inca_comm_info info;
	unsigned long long v;
	int agree[1], ret;

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
	if (PMPI_Comm_dup(MPI_COMM_WORLD, &im.fb_comm) != MPI_SUCCESS)
		return;

	inca_comm_opts_init(&o);
	o.aggregator = im.conf.aggregator;
	o.job = (uint16_t)im.conf.job;
	o.rank = (uint16_t)im.rank;
	o.size = (uint16_t)im.size;
	o.token = im.conf.token;
	o.window = (uint16_t)im.conf.window;
	o.pool_size = (uint16_t)im.conf.pool_size;
	o.max_elems = (uint16_t)im.conf.max_elems;
	o.mtu = (uint16_t)im.conf.mtu;
	o.timeout_ms = im.conf.timeout_ms;
	o.give_up_ms = im.conf.give_up_ms;
	o.probe_every = im.conf.probe_every;
	o.float_mode = im.conf.float_mode;
	/* The source address is a property of each rank's host. */
	o.bind = getenv("INCA_BIND");
	if (o.bind != NULL && *o.bind == '\0')
		o.bind = NULL;
	o.fallback = im_fallback;
	o.oob = im_oob;
	ret = inca_comm_create(&o, &im.comm);
	if (ret < 0)
		im_log(INCA_LOG_ERR, "inca_comm_create: %s", inca_strerror(ret));

	/*
	 * libinca agrees across the ranks (all or none) inside
	 * inca_comm_create(): every rank is on the aggregator, or every rank
	 * is in its fallback mode. Only invalid options or memory fail
	 * creation before that agreement, on some ranks: then nobody uses
	 * INCA for this run.
	 */
	agree[0] = ret == INCA_OK;
	PMPI_Allreduce(MPI_IN_PLACE, agree, 1, MPI_INT, MPI_MIN, im.fb_comm);
	if (!agree[0]) {
		if (im.rank == 0)
			im_log(INCA_LOG_WARN, "a rank has no INCA communicator: using PMPI");
		/* Not every rank has one to tear down: no teardown round. */
		inca_comm_set_fallback(im.comm, NULL, NULL);
		inca_comm_destroy(im.comm);
		im.comm = NULL;
		PMPI_Comm_free(&im.fb_comm);
		return;
	}
	inca_comm_info(im.comm, &info);
	if (im.rank == 0)
		im_log(INCA_LOG_INFO, "job %u, %d ranks, aggregator %s: %s", im.conf.job,
		       im.size, im.conf.aggregator,
		       !info.in_fallback ? "joined" : "not on the aggregator, using the fallback");
	im.enabled = true;
	/* libinca sends only from inside its calls: a rank computing longer
	 * than the aggregator's evict_ms between collectives would be evicted
	 * and pay a fallback round and a rejoin. Its keepalive thread sends
	 * heartbeats meanwhile (and never calls MPI). */
	if (im.conf.keepalive && (ret = inca_comm_keepalive(im.comm, 1)) < 0)
		im_log(INCA_LOG_WARN, "no keepalive thread: %s", inca_strerror(ret));
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
	struct inca_stats st;
	char line[2048];
	const char *name;
	size_t len;
	unsigned i;
	int fd;

	if (path == NULL || *path == '\0')
		return;
	inca_comm_stats(im.comm, &st);
	inca_comm_info(im.comm, &info);
	len = (size_t)snprintf(line, sizeof(line), "inca-mpi: rank %d job %u in_fallback %d",
			       im.rank, im.conf.job, info.in_fallback);
	for (i = 0; i < sizeof(names) / sizeof(names[0]) && len < sizeof(line); i++)
		len += (size_t)snprintf(line + len, sizeof(line) - len, " %s %llu", names[i],
					(unsigned long long)cnt[i]);
	for (i = 0; (name = inca_stats_name(i)) != NULL && len < sizeof(line); i++)
		len += (size_t)snprintf(line + len, sizeof(line) - len, " %s %llu", name,
					(unsigned long long)((const uint64_t *)&st)[i]);
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

static void ireq_drive(struct im_ireq *x, bool block);

static void
im_teardown(void)
{
	struct im_ireq *x;

	if (!im.enabled)
		return;
	/* Requests the application never completed (erroneous in MPI) must
	 * still finish everywhere before anyone leaves the job. */
	pthread_mutex_lock(&im.lock);
	for (x = im.ireqs; x != NULL; x = x->next)
		ireq_drive(x, true);
	pthread_mutex_unlock(&im.lock);
	/* No barrier of our own here: a rank that lost its last result may
	 * still be recovering it through the fallback, and a barrier would
	 * not match that. inca_comm_destroy() closes the stream and runs the
	 * teardown round, which serves such a rank before anyone leaves. */
	print_stats();
	inca_comm_destroy(im.comm);
	im.comm = NULL;
	PMPI_Comm_free(&im.fb_comm);
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
	else
		return -1;
	return 0;
}

static bool
reduction_eligible(int count, MPI_Datatype t, MPI_Op op, MPI_Comm comm, unsigned *dtype,
		   unsigned *iop)
{
	if (!im.enabled || comm != MPI_COMM_WORLD)
		return false;
	if (count <= 0 || map_reduction(t, op, dtype, iop) < 0 ||
	    (uint64_t)count * 4 < im.conf.min_bytes) {
		im.n.passed++;
		return false;
	}
	return true;
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

IM_EXPORT int
MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
	      MPI_Comm comm)
{
	unsigned dtype, iop;
	int ret;

	if (!reduction_eligible(count, datatype, op, comm, &dtype, &iop))
		return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
	pthread_mutex_lock(&im.lock);
	ret = inca_allreduce(im.comm, sendbuf == MPI_IN_PLACE ? INCA_IN_PLACE : sendbuf, recvbuf,
			     (size_t)count, dtype, iop);
	if (ret == INCA_OK) {
		im.n.allreduce_inca++;
		im.n.bytes_inca += (uint64_t)count * 4;
	}
	pthread_mutex_unlock(&im.lock);
	/* Refused before anything was sent, on every rank alike (they share
	 * the aggregator and its capabilities). */
	if (ret == INCA_ENOTSUP) {
		im.n.passed++;
		return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
	}
	return im_result(ret, comm);
}

IM_EXPORT int
MPI_Bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm)
{
	MPI_Aint lb, extent, tlb, textent;
	uint64_t bytes;
	void *buf = buffer;
	bool pack_err = false;
	int tsize, pos = 0, ret;

	if (!im.enabled || comm != MPI_COMM_WORLD)
		return PMPI_Bcast(buffer, count, datatype, root, comm);
	/* The byte size is what MPI makes every rank agree on (type
	 * signatures match; the datatypes themselves may differ). */
	if (!im.conf.bcast || count <= 0 || root < 0 || root >= im.size ||
	    PMPI_Type_size(datatype, &tsize) != MPI_SUCCESS || tsize <= 0 ||
	    (bytes = (uint64_t)count * (uint64_t)tsize) < im.conf.min_bytes ||
	    bytes > (uint64_t)INT_MAX) {
		im.n.passed++;
		return PMPI_Bcast(buffer, count, datatype, root, comm);
	}
	PMPI_Type_get_extent(datatype, &lb, &extent);
	PMPI_Type_get_true_extent(datatype, &tlb, &textent);
	if (tlb != 0 || textent != tsize || (count > 1 && extent != tsize)) {
		/* Not one contiguous block: pack. */
		buf = malloc(bytes);
		if (buf == NULL)
			return im_result(INCA_ENOMEM, comm);
		if (im.rank == root && PMPI_Pack(buffer, count, datatype, buf, (int)bytes, &pos,
						 comm) != MPI_SUCCESS) {
			/* Every rank must still take part: send zeros, and
			 * report the error at the root. */
			memset(buf, 0, bytes);
			pack_err = true;
		}
	}
	pthread_mutex_lock(&im.lock);
	ret = inca_broadcast(im.comm, buf, bytes, (unsigned)root);
	if (ret == INCA_OK) {
		im.n.bcast_inca++;
		im.n.bytes_inca += bytes;
	}
	pthread_mutex_unlock(&im.lock);
	if (buf != buffer) {
		pos = 0;
		if (ret == INCA_OK && im.rank != root)
			PMPI_Unpack(buf, (int)bytes, &pos, buffer, count, datatype, comm);
		free(buf);
	}
	return im_result(ret == INCA_OK && pack_err ? INCA_EINVAL : ret, comm);
}

IM_EXPORT int
MPI_Barrier(MPI_Comm comm)
{
	int ret;

	if (!im.enabled || comm != MPI_COMM_WORLD)
		return PMPI_Barrier(comm);
	if (!im.conf.barrier) {
		im.n.passed++;
		return PMPI_Barrier(comm);
	}
	pthread_mutex_lock(&im.lock);
	ret = inca_barrier(im.comm);
	if (ret == INCA_OK)
		im.n.barrier_inca++;
	pthread_mutex_unlock(&im.lock);
	return im_result(ret, comm);
}

/* ---- nonblocking allreduce ------------------------------------------------ */

/*
 * An MPI_Iallreduce through INCA hands the user a generalized request: a
 * real MPI_Request that every MPI function accepts. libinca makes progress
 * only when called, so the wait and test functions below drive the INCA
 * requests they are given and mark them complete; then PMPI does the rest
 * (status, freeing). The order of completion does not matter: libinca
 * completes requests in issue order, and waiting for a later one finishes
 * the earlier ones too.
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

/* Make progress on @x (wait for it if @block). Called with im.lock held. */
static void
ireq_drive(struct im_ireq *x, bool block)
{
	int done = 1;

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

IM_EXPORT int
MPI_Iallreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
	       MPI_Comm comm, MPI_Request *request)
{
	struct im_ireq *x, *y, **pp;
	unsigned dtype, iop;
	int ret;

	if (!reduction_eligible(count, datatype, op, comm, &dtype, &iop))
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
	pthread_mutex_lock(&im.lock);
	for (;;) {
		ret = inca_iallreduce(im.comm, sendbuf == MPI_IN_PLACE ? INCA_IN_PLACE : sendbuf,
				      recvbuf, (size_t)count, dtype, iop, &x->ireq);
		if (ret != INCA_EBUSY)
			break;
		/* Too many in flight here (maybe not on other ranks, so this
		 * one must not take another path): finish the oldest that
		 * libinca still holds. Requests the application has not freed
		 * yet but whose result we took are not libinca's any more:
		 * skipping them is what keeps this loop from spinning. */
		for (y = im.ireqs; y != NULL && y->ireq == NULL; y = y->next)
			;
		if (y == NULL)
			break;
		ireq_drive(y, true);
	}
	if (ret == INCA_OK)
		ret = PMPI_Grequest_start(greq_query, greq_free, greq_cancel, x, &x->mreq) ==
		      MPI_SUCCESS ? INCA_OK : INCA_EIO;
	if (ret == INCA_OK) {
		for (pp = &im.ireqs; *pp != NULL; pp = &(*pp)->next)
			;
		*pp = x;
		__atomic_store_n(&im.nireqs, im.nireqs + 1, __ATOMIC_RELAXED);
		im.n.iallreduce_inca++;
		im.n.bytes_inca += (uint64_t)count * 4;
		*request = x->mreq;
	}
	pthread_mutex_unlock(&im.lock);
	if (ret == INCA_OK)
		return MPI_SUCCESS;
	free(x);
	if (ret == INCA_ENOTSUP) {
		im.n.passed++;
		return PMPI_Iallreduce(sendbuf, recvbuf, count, datatype, op, comm, request);
	}
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
	pthread_mutex_lock(&im.lock);
	for (i = 0; i < count; i++) {
		x = ireq_find(reqs[i]);
		if (x == NULL) {
			*others += reqs[i] != MPI_REQUEST_NULL;
			continue;
		}
		n++;
		ireq_drive(x, false);
		*pending += x->ireq != NULL;
	}
	pthread_mutex_unlock(&im.lock);
	return n;
}

/* Block until the oldest unfinished INCA request among @reqs finishes. */
static void
wait_oldest(int count, const MPI_Request reqs[])
{
	struct im_ireq *x;
	int i;

	pthread_mutex_lock(&im.lock);
	for (x = im.ireqs; x != NULL; x = x->next) {
		if (x->ireq == NULL)
			continue;
		for (i = 0; i < count && reqs[i] != x->mreq; i++)
			;
		if (i < count) {
			ireq_drive(x, true);
			break;
		}
	}
	pthread_mutex_unlock(&im.lock);
}

IM_EXPORT int
MPI_Wait(MPI_Request *request, MPI_Status *status)
{
	struct im_ireq *x;

	if (have_ireqs() && request != NULL) {
		pthread_mutex_lock(&im.lock);
		x = ireq_find(*request);
		if (x != NULL)
			ireq_drive(x, true);
		pthread_mutex_unlock(&im.lock);
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

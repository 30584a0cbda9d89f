/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * inca-bench: allreduce (or, with -C, reduce-scatter and all-gather)
 * latency and bandwidth through libinca, in the manner of osu_allreduce. Start one process per worker (mpirun, a script,
 * one per network namespace); each needs the aggregator, the job, its rank
 * and the job size, from options or INCA_* variables (mpirun's
 * OMPI_COMM_WORLD_RANK / _SIZE work too). Rank 0 prints the table.
 *
 * Each rank fills its buffer from its rank number, so every rank knows the
 * expected result and checks it after the timed iterations of each size.
 * Timings are per rank; the table shows the mean over ranks of the mean
 * latency, the smallest minimum and the largest maximum, reduced through
 * libinca itself once the timed loop is over.
 */

#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <inca/inca.h>

struct bench {
	struct inca_comm_opts o;
	size_t min_bytes, max_bytes;
	unsigned iters, iters_large, warmup;
	unsigned dtype, op;          /* the combination being measured */
	unsigned dtypes[INCA_DTYPE_COUNT], ndtypes;
	unsigned ops[INCA_OP_COUNT], nops;
	size_t sizes[64];            /* explicit sizes (-s), else powers of two */
	unsigned nsizes;
	double link_mbps;
	bool csv, json, verify, verify_each, inplace, verbose;
	unsigned inflight; /* >1: split each size into that many iallreduce */
	const char *fb_addr; /* --fallback-tcp: rank 0's IP:PORT */
	/*
	 * -C: the collective. A size S is the whole tensor: the allreduce's
	 * S, the reduce-scatter's input (each rank keeps S / N), the
	 * all-gather's output (each rank gives S / N), the reduce's input and
	 * its root's (rank 0's) output.
	 */
	enum { COLL_ALLREDUCE, COLL_RSCAT, COLL_AGATHER, COLL_REDUCE } coll;
	unsigned root;          /* COLL_REDUCE: the rank that receives the result */
	unsigned colls[4], ncolls; /* -C: the collectives, run in this order */
};

static const char *const coll_names[] = {"allreduce", "reduce_scatter", "allgather", "reduce"};

/* Figures per size exchanged between ranks (gather_figures). */
#define NFIG 5

/* User and system CPU time of the whole process (every thread), in us. */
static double
cpu_us(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 + ru.ru_utime.tv_usec +
	       ru.ru_stime.tv_usec;
}

static const char *
transport_name(int kind)
{
	return kind == INCA_TRANSPORT_VERBS ? "verbs" : kind == INCA_TRANSPORT_XDP ? "xdp" : "udp";
}

static double
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static void
usage(FILE *f)
{
	fprintf(f,
		"usage: inca-bench [options]\n"
		"  -a, --aggregator IP[:PORT]  aggregator (INCA_AGGREGATOR)\n"
		"  -j, --job ID                job id (INCA_JOB)\n"
		"  -r, --rank R                this worker's rank (INCA_RANK)\n"
		"  -n, --size N                number of workers (INCA_SIZE)\n"
		"  -t, --token T               job token (INCA_TOKEN)\n"
		"  -b, --bind IP[:PORT]        local address (INCA_BIND)\n"
		"  -m, --min-bytes B           smallest message (default 4)\n"
		"  -M, --max-bytes B           largest message (default 1048576)\n"
		"  -i, --iterations N          timed iterations per size (default 100)\n"
		"  -I, --iterations-large N    for sizes above 1 MiB (default 20)\n"
		"  -x, --warmup N              untimed iterations per size (default 5)\n"
		"  -s, --sizes B,B,...         explicit message sizes instead of -m/-M\n"
		"  -d, --dtype T[,T...]        int32, fp32, fp16, bf16 or all (default int32)\n"
		"  -o, --op OP[,OP...]         sum, min, max or all (default sum)\n"
		"  -L, --link-rate MBIT        link rate for the utilisation column\n"
		"  -W, --window N              chunks in flight (INCA_WINDOW)\n"
		"  -E, --max-elems N           elements per packet (INCA_MAX_ELEMS)\n"
		"  -U, --mtu N                 MTU (INCA_MTU)\n"
		"  -T, --timeout-ms N          retransmission timeout (INCA_TIMEOUT_MS)\n"
		"  -G, --give-up-ms N          give up after silence (INCA_GIVE_UP_MS)\n"
		"  -F, --float-mode M          auto, native, bfp (INCA_FLOAT_MODE)\n"
		"  -k, --inflight K            split each message into K iallreduce\n"
		"  -C, --collective C[,C...]   allreduce, reduce_scatter or allgather (sizes\n"
		"                              are the whole tensor: S in, S / N out, or the\n"
		"                              reverse), or reduce (to --root)\n"
		"      --root R                reduce: the root rank (default 0)\n"
		"      --in-place              sendbuf == recvbuf\n"
		"      --fallback-tcp IP:PORT  host allreduce through rank 0 at IP:PORT when\n"
		"                              the aggregator fails (rank 0 listens there)\n"
		"      --no-verify             do not check results\n"
		"      --verify-each           check every iteration, not only the last\n"
		"      --csv | --json          machine-readable output\n"
		"  -v, --verbose               libinca's log on stderr\n"
		"Sizes are powers of two from min to max bytes; each size is rounded\n"
		"down to whole elements (at least one). Exit status 1 if any result is\n"
		"wrong or a collective fails.\n");
}

/* "a,b,c" or "all" of the names @name gives for 0..@n-1 into @out. */
static int
parse_list(const char *arg, const char *(*name)(unsigned), unsigned n, unsigned *out)
{
	char buf[128], *tok, *save;
	unsigned k = 0, i;

	if (strcmp(arg, "all") == 0) {
		for (i = 0; i < n; i++)
			out[i] = i;
		return (int)n;
	}
	snprintf(buf, sizeof(buf), "%s", arg);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		for (i = 0; i < n; i++)
			if (strcmp(tok, name(i)) == 0)
				break;
		if (i == n || k == n) {
			fprintf(stderr, "inca-bench: unknown or repeated '%s'\n", tok);
			return -1;
		}
		out[k++] = i;
	}
	return k ? (int)k : -1;
}

static unsigned long long
num(const char *opt, const char *s, unsigned long long max)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || *end || v > max || *s == '-') {
		fprintf(stderr, "inca-bench: %s: bad value '%s'\n", opt, s);
		exit(2);
	}
	return v;
}

/* Element i of rank r: small integers, so that float sums are exact in
 * any order and every rank can compute the result. */
static float
gen_f(unsigned r, size_t i)
{
	return (float)((int)((i * 5 + r * 3) % 17) - 8);
}

static int32_t
gen_i(unsigned r, size_t i)
{
	return (int32_t)((uint32_t)i * 2654435761u + (r + 1) * 0x01000193u);
}

/* int64: large values whose sums wrap and carry across the 32-bit halves. */
static int64_t
gen_l(unsigned r, size_t i)
{
	return (int64_t)((uint64_t)i * UINT64_C(0x9e3779b97f4a7c15) +
			 (r + 1) * UINT64_C(0x100000001b3));
}

static void
fill(void *buf, unsigned dtype, unsigned rank, size_t count)
{
	size_t i;

	for (i = 0; i < count; i++) {
		switch (dtype) {
		case INCA_DTYPE_INT32:
			((int32_t *)buf)[i] = gen_i(rank, i);
			break;
		case INCA_DTYPE_INT64:
			((int64_t *)buf)[i] = gen_l(rank, i);
			break;
		case INCA_DTYPE_FP64:
			((double *)buf)[i] = gen_f(rank, i);
			break;
		case INCA_DTYPE_FP32:
			((float *)buf)[i] = gen_f(rank, i);
			break;
		case INCA_DTYPE_FP16:
			((uint16_t *)buf)[i] = inca_fp32_to_fp16(gen_f(rank, i));
			break;
		default:
			((uint16_t *)buf)[i] = inca_fp32_to_bf16(gen_f(rank, i));
			break;
		}
	}
}

/* Number of wrong elements of @buf, elements @base .. @base + @count of the result. */
static size_t
verify_at(const void *buf, unsigned dtype, unsigned op, unsigned n, size_t count, size_t base)
{
	size_t i, bad = 0;
	unsigned r;

	buf = (const uint8_t *)buf - base * inca_dtype_size(dtype);
	for (i = base; i < base + count; i++) {
		if (dtype == INCA_DTYPE_INT32) {
			uint32_t acc = (uint32_t)gen_i(0, i);

			for (r = 1; r < n; r++) {
				int32_t v = gen_i(r, i);

				if (op == INCA_OP_SUM)
					acc += (uint32_t)v;
				else if ((op == INCA_OP_MIN) == (v < (int32_t)acc))
					acc = (uint32_t)v;
			}
			bad += ((const uint32_t *)buf)[i] != acc;
			continue;
		}
		if (dtype == INCA_DTYPE_INT64) {
			uint64_t acc = (uint64_t)gen_l(0, i);

			for (r = 1; r < n; r++) {
				int64_t v = gen_l(r, i);

				if (op == INCA_OP_SUM)
					acc += (uint64_t)v;
				else if ((op == INCA_OP_MIN) == (v < (int64_t)acc))
					acc = (uint64_t)v;
			}
			bad += ((const uint64_t *)buf)[i] != acc;
			continue;
		}
		if (dtype == INCA_DTYPE_FP64) {
			double acc = gen_f(0, i);

			for (r = 1; r < n; r++)
				acc = op == INCA_OP_SUM ? acc + gen_f(r, i) :
				      op == INCA_OP_MIN ? fmin(acc, gen_f(r, i)) : fmax(acc, gen_f(r, i));
			bad += ((const double *)buf)[i] != acc;
			continue;
		}
		float acc = gen_f(0, i), got;

		for (r = 1; r < n; r++) {
			float v = gen_f(r, i);

			acc = op == INCA_OP_SUM ? acc + v :
			      op == INCA_OP_MIN ? fminf(acc, v) : fmaxf(acc, v);
		}
		if (dtype == INCA_DTYPE_FP32)
			got = ((const float *)buf)[i];
		else if (dtype == INCA_DTYPE_FP16)
			got = inca_fp16_to_fp32(((const uint16_t *)buf)[i]);
		else
			got = inca_bf16_to_fp32(((const uint16_t *)buf)[i]);
		bad += got != acc;
	}
	return bad;
}

static size_t
verify(const void *buf, unsigned dtype, unsigned op, unsigned n, size_t count)
{
	return verify_at(buf, dtype, op, n, count, 0);
}

/* All-gather: wrong elements of the @n blocks of @block elements in @buf. */
static size_t
verify_gather(const void *buf, unsigned dtype, unsigned n, size_t block, void *tmp)
{
	size_t es = inca_dtype_size(dtype), bad = 0, i;
	unsigned r;

	for (r = 0; r < n; r++) {
		fill(tmp, dtype, r, block);
		for (i = 0; i < block; i++)
			bad += memcmp((const uint8_t *)buf + (r * block + i) * es,
				      (uint8_t *)tmp + i * es, es) != 0;
	}
	return bad;
}

/* ---- a TCP host allreduce for the fallback ------------------------------
 *
 * A star through rank 0, deliberately simple: every rank sends its buffer
 * to rank 0, which reduces in rank order and sends the result back. It is
 * what an application's MPI_Allreduce would be; here it lets the fallback
 * be exercised with real processes when the aggregator dies.
 */
struct tcp_fb {
	unsigned rank, n;
	int peer[INCA_MAX_WORKERS]; /* rank 0: a socket per rank; others: [0] */
	uint8_t *tmp;
	size_t tmp_len;
};

static int
full_io(int fd, void *buf, size_t len, bool out)
{
	uint8_t *p = buf;

	while (len > 0) {
		ssize_t n = out ? send(fd, p, len, MSG_NOSIGNAL) : recv(fd, p, len, 0);

		if (n <= 0) {
			if (n < 0 && errno == EINTR)
				continue;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int
tcp_fb_setup(struct tcp_fb *t, const char *addr, unsigned rank, unsigned n)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	char host[64];
	const char *colon = strrchr(addr, ':');
	int fd, one = 1;
	unsigned k;

	memset(t, 0, sizeof(*t));
	t->rank = rank;
	t->n = n;
	if (colon == NULL || (size_t)(colon - addr) >= sizeof(host))
		return -1;
	memcpy(host, addr, colon - addr);
	host[colon - addr] = '\0';
	if (inet_pton(AF_INET, host, &sa.sin_addr) != 1)
		return -1;
	sa.sin_port = htons((uint16_t)atoi(colon + 1));
	if (rank == 0) {
		int ls = socket(AF_INET, SOCK_STREAM, 0);

		setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(ls, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(ls, 64) < 0) {
			perror("inca-bench: fallback listen");
			return -1;
		}
		for (k = 1; k < n; k++) {
			uint32_t r;

			fd = accept(ls, NULL, NULL);
			if (fd < 0 || full_io(fd, &r, 4, false) < 0 || r == 0 || r >= n)
				return -1;
			setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
			t->peer[r] = fd;
		}
		close(ls);
		return 0;
	}
	for (k = 0; k < 300; k++) {
		fd = socket(AF_INET, SOCK_STREAM, 0);
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
			break;
		close(fd);
		fd = -1;
		usleep(100000);
	}
	if (fd < 0) {
		fprintf(stderr, "inca-bench: rank %u: cannot reach rank 0 at %s\n", rank, addr);
		return -1;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	uint32_t r = rank;

	t->peer[0] = fd;
	return full_io(fd, &r, 4, true);
}

static float
fb_load(const void *p, unsigned dtype, size_t i)
{
	if (dtype == INCA_DTYPE_FP16)
		return inca_fp16_to_fp32(((const uint16_t *)p)[i]);
	if (dtype == INCA_DTYPE_BF16)
		return inca_bf16_to_fp32(((const uint16_t *)p)[i]);
	return ((const float *)p)[i];
}

/* The protocol's semantics: int32 wraps; floats in fp32, NaN wins, -0 < +0. */
static void
fb_combine(void *acc, const void *in, size_t count, unsigned dtype, unsigned op)
{
	size_t i;

	for (i = 0; i < count; i++) {
		if (dtype == INCA_DTYPE_INT64) {
			int64_t *a = acc, v = ((const int64_t *)in)[i];

			if (op == INCA_OP_SUM)
				a[i] = (int64_t)((uint64_t)a[i] + (uint64_t)v);
			else if ((op == INCA_OP_MIN) == (v < a[i]))
				a[i] = v;
			continue;
		}
		if (dtype == INCA_DTYPE_FP64) {
			double *a = acc, x = a[i], y = ((const double *)in)[i];

			if (op == INCA_OP_SUM)
				a[i] = x + y;
			else if (isnan(x) || isnan(y))
				a[i] = NAN;
			else if (x == y)
				a[i] = (op == INCA_OP_MIN) == (signbit(y) != 0) ? y : x;
			else
				a[i] = (op == INCA_OP_MIN) == (y < x) ? y : x;
			continue;
		}
		if (dtype == INCA_DTYPE_INT32) {
			int32_t *a = acc, v = ((const int32_t *)in)[i];

			if (op == INCA_OP_SUM)
				a[i] = (int32_t)((uint32_t)a[i] + (uint32_t)v);
			else if ((op == INCA_OP_MIN) == (v < a[i]))
				a[i] = v;
			continue;
		}
		float *a = acc, x = a[i], y = fb_load(in, dtype, i);

		if (op == INCA_OP_SUM)
			a[i] = x + y;
		else if (isnan(x) || isnan(y))
			a[i] = NAN;
		else if (x == y)
			a[i] = (op == INCA_OP_MIN) == (signbit(y) != 0) ? y : x;
		else
			a[i] = (op == INCA_OP_MIN) == (y < x) ? y : x;
	}
}

static int
tcp_allreduce(void *ctx, const struct inca_fallback_args *a)
{
	struct tcp_fb *t = ctx;
	size_t es = inca_dtype_size(a->dtype), bytes = a->count * es, i;
	unsigned r;

	if (t->rank != 0) {
		if (full_io(t->peer[0], (void *)a->sendbuf, bytes, true) < 0 ||
		    full_io(t->peer[0], a->recvbuf, bytes, false) < 0)
			return -1;
		return 0;
	}
	/* Accumulate in int32 / fp32 lanes (int64 / fp64 in their own), then
	 * write the dtype back. */
	size_t need = a->count * (es == 8 ? 8 : 4) + bytes;

	if (t->tmp_len < need) {
		free(t->tmp);
		t->tmp = malloc(need);
		t->tmp_len = t->tmp ? need : 0;
		if (t->tmp == NULL)
			return -1;
	}
	uint8_t *acc = t->tmp, *in = t->tmp + a->count * (es == 8 ? 8 : 4);

	if (a->dtype == INCA_DTYPE_INT32 || es == 8)
		memcpy(acc, a->sendbuf, bytes);
	else
		for (i = 0; i < a->count; i++)
			((float *)acc)[i] = fb_load(a->sendbuf, a->dtype, i);
	for (r = 1; r < t->n; r++) {
		if (full_io(t->peer[r], in, bytes, false) < 0)
			return -1;
		fb_combine(acc, in, a->count, a->dtype, a->op);
	}
	for (i = 0; i < a->count; i++) {
		if (a->dtype == INCA_DTYPE_FP16)
			((uint16_t *)a->recvbuf)[i] = inca_fp32_to_fp16(((float *)acc)[i]);
		else if (a->dtype == INCA_DTYPE_BF16)
			((uint16_t *)a->recvbuf)[i] = inca_fp32_to_bf16(((float *)acc)[i]);
	}
	if (es >= 4)
		memcpy(a->recvbuf, acc, bytes);
	for (r = 1; r < t->n; r++)
		if (full_io(t->peer[r], a->recvbuf, bytes, true) < 0)
			return -1;
	return 0;
}

static void
log_stderr(void *ctx, int level, const char *msg)
{
	(void)ctx;
	fprintf(stderr, "libinca[%d]: %s\n", level, msg);
}

static int
one_allreduce(struct bench *b, struct inca_comm *c, const void *in, void *out, size_t count)
{
	struct inca_request *req[64];
	size_t es = inca_dtype_size(b->dtype), part, off = 0;
	unsigned k, n = b->inflight;
	int ret, first = INCA_OK;

	if (b->coll == COLL_RSCAT)
		return inca_reduce_scatter(c, in, out, count / b->o.size, b->dtype, b->op);
	if (b->coll == COLL_AGATHER)
		return inca_allgather(c, b->inplace ? INCA_IN_PLACE : in, out,
				      count / b->o.size * es);
	if (b->coll == COLL_REDUCE)
		return inca_reduce(c, in, b->o.rank == b->root ? out : NULL, count, b->dtype, b->op,
				   b->root);
	if (n <= 1)
		return inca_allreduce(c, b->inplace ? INCA_IN_PLACE : in, out, count, b->dtype,
				      b->op);
	part = (count + n - 1) / n;
	for (k = 0; k < n; k++) {
		size_t cnt = off + part <= count ? part : count - off;

		const void *src = b->inplace ? INCA_IN_PLACE : (const uint8_t *)in + off * es;

		ret = inca_iallreduce(c, src, (uint8_t *)out + off * es, cnt, b->dtype, b->op,
				      &req[k]);
		if (ret < 0) {
			n = k;
			first = ret;
			break;
		}
		off += cnt;
	}
	for (k = 0; k < n; k++) {
		ret = inca_wait(&req[k]);
		if (ret < 0 && first == INCA_OK)
			first = ret;
	}
	return first;
}

static int
cmp_i32(const void *a, const void *b)
{
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;

	return (x > y) - (x < y);
}

/* Wrong elements of the result in @out of the current collective of @count. */
static size_t
check_out(const struct bench *b, const void *out, size_t count, void *in)
{
	size_t block = count / b->o.size, bad;

	if (b->coll == COLL_RSCAT)
		return verify_at(out, b->dtype, b->op, b->o.size, block, b->o.rank * block);
	if (b->coll == COLL_AGATHER) {
		/* @in is this rank's block: refilled after the check. */
		bad = verify_gather(out, b->dtype, b->o.size, block, in);
		fill(in, b->dtype, b->o.rank, block);
		return bad;
	}
	/* A reduce's result is the root's only. */
	if (b->coll == COLL_REDUCE && b->o.rank != b->root)
		return 0;
	return verify(out, b->dtype, b->op, b->o.size, count);
}

/*
 * The figures across ranks: red[0], red[3] and red[4] summed, red[1] the
 * minimum, red[2] the maximum, it[] the maximum per iteration. Exchanged with one
 * int32 SUM allreduce in which each rank fills its own block (an
 * allgather), because a switch aggregates nothing but SUM.
 */
static int
gather_figures(const struct bench *b, struct inca_comm *c, int32_t red[NFIG], int32_t *it,
	       unsigned iters)
{
	size_t per = NFIG + (size_t)iters, n = b->o.size, r, k;
	int32_t *all;
	int ret;

	all = calloc(n * per, sizeof(*all));
	if (all == NULL)
		return INCA_ENOMEM;
	memcpy(all + b->o.rank * per, red, NFIG * sizeof(*red));
	memcpy(all + b->o.rank * per + NFIG, it, iters * sizeof(*it));
	ret = inca_allreduce(c, INCA_IN_PLACE, all, n * per, INCA_DTYPE_INT32, INCA_OP_SUM);
	if (ret == INCA_OK) {
		red[0] = red[3] = red[4] = 0;
		red[1] = INT32_MAX;
		red[2] = INT32_MIN;
		memset(it, 0, iters * sizeof(*it));
		for (r = 0; r < n; r++) {
			const int32_t *v = all + r * per;

			red[0] += v[0];
			red[1] = v[1] < red[1] ? v[1] : red[1];
			red[2] = v[2] > red[2] ? v[2] : red[2];
			red[3] += v[3];
			red[4] += v[4];
			for (k = 0; k < iters; k++)
				it[k] = v[NFIG + k] > it[k] ? v[NFIG + k] : it[k];
		}
	}
	free(all);
	return ret;
}

/*
 * Measure one message size of the current dtype and op; rank 0 prints the
 * row. Besides osu_allreduce's figures (mean over ranks of the mean, the
 * smallest minimum, the largest maximum), each iteration's time is taken as
 * the slowest rank's (the collective is done when the last rank has its
 * result) and the median over iterations is printed: on a shared host it
 * is the figure that one descheduled process does not move, and
 * tools/bench/mpi_allreduce_bench.c computes it the same way.
 * Returns a libinca error if a collective failed; *rc becomes 1 on wrong
 * results.
 */
static int
run_size(struct bench *b, struct inca_comm *c, void *in, void *out, size_t bytes,
	 bool *first_row, int *rc)
{
	size_t es = inca_dtype_size(b->dtype), count = bytes / es, bad = 0;
	unsigned iters = bytes > (1u << 20) ? b->iters_large : b->iters, k;
	double t_sum = 0, t_min = 1e30, t_max = 0, cpu0 = 0;
	int32_t red[NFIG], *it;
	int ret = INCA_OK;

	if (count == 0)
		count = 1;
	if (b->coll == COLL_RSCAT || b->coll == COLL_AGATHER)
		count = (count + b->o.size - 1) / b->o.size * b->o.size; /* whole blocks */
	if (iters == 0)
		iters = 1;
	bytes = count * es;
	/* Per-iteration times in tenths of a microsecond (int32: 200 s). */
	it = calloc(iters, sizeof(*it));
	if (it == NULL) {
		fprintf(stderr, "inca-bench: out of memory\n");
		return INCA_ENOMEM;
	}
	fill(in, b->dtype, b->o.rank, b->coll == COLL_AGATHER ? count / b->o.size : count);
	for (k = 0; k < b->warmup + iters; k++) {
		double t0;

		if (b->inplace && b->coll == COLL_AGATHER)
			memcpy((uint8_t *)out + bytes / b->o.size * b->o.rank, in, bytes / b->o.size);
		else if (b->inplace)
			memcpy(out, in, bytes);
		if (k == b->warmup) {
			ret = inca_barrier(c);
			if (ret < 0)
				break;
			cpu0 = cpu_us();
		}
		/* Each reduce starts together (the barrier untimed), as
		 * mpi_allreduce_bench's: a host reduce does not synchronise,
		 * so back-to-back calls would time a pipeline there. */
		if (b->coll == COLL_REDUCE && (ret = inca_barrier(c)) < 0)
			break;
		t0 = now_us();
		ret = one_allreduce(b, c, in, out, count);
		if (ret < 0)
			break;
		if (k >= b->warmup) {
			double dt = now_us() - t0;

			t_sum += dt;
			t_min = dt < t_min ? dt : t_min;
			t_max = dt > t_max ? dt : t_max;
			it[k - b->warmup] = (int32_t)(dt * 10 < INT32_MAX ? lround(dt * 10)
									  : INT32_MAX);
		}
		if (b->verify_each) {
			bad += check_out(b, out, count, in);
			memset(out, 0xEE, bytes); /* a stale result must not pass */
		}
	}
	if (ret < 0) {
		fprintf(stderr, "inca-bench: rank %u: %s %s allreduce of %zu bytes: %s\n",
			b->o.rank, inca_dtype_name(b->dtype), inca_op_name(b->op), bytes,
			inca_strerror(ret));
		free(it);
		return ret;
	}
	cpu0 = cpu_us() - cpu0;
	if (b->verify && !b->verify_each)
		bad = check_out(b, out, count, in);

	/* The figures across ranks: sum of the means, smallest min, largest
	 * max, wrong elements; then every iteration's slowest rank. */
	red[0] = (int32_t)lround(t_sum / iters * 10);
	red[1] = (int32_t)lround(t_min * 10);
	red[2] = (int32_t)lround(t_max * 10);
	red[3] = (int32_t)(bad > INT32_MAX ? INT32_MAX : bad);
	red[4] = (int32_t)lround(fmin(cpu0, INT32_MAX));
	ret = gather_figures(b, c, red, it, iters);
	if (ret < 0) {
		fprintf(stderr, "inca-bench: rank %u: exchanging the figures: %s\n", b->o.rank,
			inca_strerror(ret));
		free(it);
		return ret;
	}
	if (red[3] != 0) {
		*rc = 1;
		if (bad)
			fprintf(stderr, "inca-bench: rank %u: %s %s %zu bytes: %zu wrong\n",
				b->o.rank, inca_dtype_name(b->dtype), inca_op_name(b->op), bytes,
				bad);
	}
	if (b->o.rank != 0) {
		free(it);
		return INCA_OK;
	}
	qsort(it, iters, sizeof(*it), cmp_i32);
	double med = (iters % 2 ? it[iters / 2] : (it[iters / 2 - 1] + (double)it[iters / 2]) / 2)
		     / 10.0;
	double avg = red[0] / 10.0 / b->o.size, mn = red[1] / 10.0, mx = red[2] / 10.0;
	double algbw = bytes / avg; /* bytes per microsecond = MB/s */
	/* The in-network lower bound is S/B: each link carries S bytes each
	 * way, so S / time over the link rate is the utilisation, and
	 * time / (S/B) its inverse (1.0 is the bound). */
	/* The bounds of docs/protocol.md, "Routed chunks": an allreduce's, a
	 * reduce-scatter's and a reduce's S / B (the uplink carries S), an
	 * all-gather's (N - 1) S / (N B) (the downlink carries the others'
	 * blocks). */
	double lb = b->coll == COLL_AGATHER ? bytes * (b->o.size - 1.0) / b->o.size : bytes;
	double util = b->link_mbps > 0 ? (lb * 8.0 / avg) / b->link_mbps : 0;
	double sb_us = b->link_mbps > 0 ? lb * 8.0 / b->link_mbps : 0;
	double ratio = sb_us > 0 ? med / sb_us : 0;
	/* CPU-seconds a rank spent per GiB it reduced (the mean over ranks). */
	double cpu_gib = red[4] / 1e6 / b->o.size / ((double)bytes * iters / (1 << 30));

	free(it);
	if (b->json) {
		printf("%s{\"collective\":\"%s\",\"dtype\":\"%s\",\"op\":\"%s\",\"bytes\":%zu,"
		       "\"count\":%zu,"
		       "\"avg_us\":%.1f,\"min_us\":%.1f,\"max_us\":%.1f,\"algbw_MBps\":%.2f,"
		       "\"link_util\":%.4f,\"errors\":%d,\"median_us\":%.1f,\"ratio_SB\":%.4f,"
		       "\"cpu_s_per_GiB\":%.4f}",
		       *first_row ? "" : ",", coll_names[b->coll], inca_dtype_name(b->dtype),
		       inca_op_name(b->op),
		       bytes, count, avg, mn, mx, algbw, util, red[3], med, ratio, cpu_gib);
	} else if (b->csv) {
		printf("%s,%s,%zu,%zu,%.1f,%.1f,%.1f,%.2f,%.4f,%d,%.1f,%.4f,%.4f\n",
		       inca_dtype_name(b->dtype), inca_op_name(b->op), bytes, count, avg, mn, mx,
		       algbw, util, red[3], med, ratio, cpu_gib);
	} else {
		char u[16] = "-", x[16] = "-";

		if (b->link_mbps > 0) {
			snprintf(u, sizeof(u), "%.3f", util);
			snprintf(x, sizeof(x), "%.3f", ratio);
		}
		printf("%12zu %10zu %11.1f %11.1f %11.1f %11.1f %12.2f %7s %7s %9.3f %6s\n",
		       bytes, count, avg, mn, mx, med, algbw, u, x, cpu_gib,
		       red[3] ? "FAIL" : b->verify ? "ok" : "-");
	}
	*first_row = false;
	fflush(stdout);
	return INCA_OK;
}

int
main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{"aggregator", required_argument, NULL, 'a'},
		{"job", required_argument, NULL, 'j'},
		{"rank", required_argument, NULL, 'r'},
		{"size", required_argument, NULL, 'n'},
		{"token", required_argument, NULL, 't'},
		{"bind", required_argument, NULL, 'b'},
		{"min-bytes", required_argument, NULL, 'm'},
		{"max-bytes", required_argument, NULL, 'M'},
		{"iterations", required_argument, NULL, 'i'},
		{"iterations-large", required_argument, NULL, 'I'},
		{"warmup", required_argument, NULL, 'x'},
		{"sizes", required_argument, NULL, 's'},
		{"dtype", required_argument, NULL, 'd'},
		{"op", required_argument, NULL, 'o'},
		{"link-rate", required_argument, NULL, 'L'},
		{"window", required_argument, NULL, 'W'},
		{"max-elems", required_argument, NULL, 'E'},
		{"mtu", required_argument, NULL, 'U'},
		{"timeout-ms", required_argument, NULL, 'T'},
		{"give-up-ms", required_argument, NULL, 'G'},
		{"float-mode", required_argument, NULL, 'F'},
		{"inflight", required_argument, NULL, 'k'},
		{"collective", required_argument, NULL, 'C'},
		{"in-place", no_argument, NULL, 1},
		{"fallback-tcp", required_argument, NULL, 5},
		{"verify-each", no_argument, NULL, 6},
		{"root", required_argument, NULL, 7},
		{"no-verify", no_argument, NULL, 2},
		{"csv", no_argument, NULL, 3},
		{"json", no_argument, NULL, 4},
		{"verbose", no_argument, NULL, 'v'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct bench b;
	struct inca_comm *c = NULL;
	struct inca_comm_info info;
	struct inca_stats st;
	struct tcp_fb tcp;
	int opt, ret = INCA_OK, rc = 0, v;
	void *in = NULL, *out = NULL;
	size_t bytes;
	bool first_row = true;
	unsigned k;

	memset(&b, 0, sizeof(b));
	inca_comm_opts_init(&b.o);
	if (inca_comm_opts_from_env(&b.o) < 0) {
		fprintf(stderr, "inca-bench: malformed INCA_* variable\n");
		return 2;
	}
	b.min_bytes = 4;
	b.max_bytes = 1 << 20;
	b.iters = 100;
	b.iters_large = 20;
	b.warmup = 5;
	b.dtypes[0] = INCA_DTYPE_INT32;
	b.ndtypes = 1;
	b.ops[0] = INCA_OP_SUM;
	b.nops = 1;
	b.verify = true;
	b.inflight = 1;

	while ((opt = getopt_long(argc, argv, "a:j:r:n:t:b:m:M:s:i:I:x:d:o:L:W:E:U:T:G:F:k:C:vh",
				  lopts, NULL)) != -1) {
		switch (opt) {
		case 'a': b.o.aggregator = optarg; break;
		case 'j': b.o.job = num("-j", optarg, UINT16_MAX); break;
		case 'r': b.o.rank = num("-r", optarg, INCA_MAX_WORKERS - 1); break;
		case 'n': b.o.size = num("-n", optarg, INCA_MAX_WORKERS); break;
		case 't': b.o.token = num("-t", optarg, UINT32_MAX); break;
		case 'b': b.o.bind = optarg; break;
		case 'm': b.min_bytes = num("-m", optarg, 1ull << 32); break;
		case 'M': b.max_bytes = num("-M", optarg, 1ull << 32); break;
		case 'i': b.iters = num("-i", optarg, 1000000); break;
		case 'I': b.iters_large = num("-I", optarg, 1000000); break;
		case 'x': b.warmup = num("-x", optarg, 1000000); break;
		case 's': {
			char *tok, *save;

			for (tok = strtok_r(optarg, ",", &save); tok;
			     tok = strtok_r(NULL, ",", &save)) {
				if (b.nsizes == 64) {
					fprintf(stderr, "inca-bench: at most 64 sizes\n");
					return 2;
				}
				b.sizes[b.nsizes++] = num("-s", tok, 1ull << 32);
			}
			break;
		}
		case 'd':
			v = parse_list(optarg, inca_dtype_name, INCA_DTYPE_COUNT, b.dtypes);
			if (v < 0)
				return 2;
			b.ndtypes = v;
			break;
		case 'o':
			v = parse_list(optarg, inca_op_name, INCA_OP_COUNT, b.ops);
			if (v < 0)
				return 2;
			b.nops = v;
			break;
		case 'L': b.link_mbps = strtod(optarg, NULL); break;
		case 'W': b.o.window = num("-W", optarg, UINT16_MAX); break;
		case 'E': b.o.max_elems = num("-E", optarg, INCA_MAX_ELEMS); break;
		case 'U': b.o.mtu = num("-U", optarg, UINT16_MAX); break;
		case 'T': b.o.timeout_ms = num("-T", optarg, UINT32_MAX); break;
		case 'G': b.o.give_up_ms = num("-G", optarg, UINT32_MAX); break;
		case 'F':
			b.o.float_mode = !strcmp(optarg, "native") ? INCA_FLOAT_NATIVE :
					 !strcmp(optarg, "bfp") ? INCA_FLOAT_BFP : INCA_FLOAT_AUTO;
			break;
		case 'k': b.inflight = num("-k", optarg, 64); break;
		case 'C': {
			char *tok, *save;

			/* A comma list: one communicator (one job) runs them all. */
			b.ncolls = 0;
			for (tok = strtok_r(optarg, ",", &save); tok;
			     tok = strtok_r(NULL, ",", &save)) {
				for (k = 0; k < 4 && strcmp(tok, coll_names[k]) != 0; k++)
					;
				if (k == 4 || b.ncolls == 4) {
					fprintf(stderr, "inca-bench: unknown collective '%s'"
						", or more than 4\n", tok);
					return 2;
				}
				b.colls[b.ncolls++] = k;
			}
			break;
		}
		case 1: b.inplace = true; break;
		case 2: b.verify = false; break;
		case 3: b.csv = true; break;
		case 4: b.json = true; break;
		case 5: b.fb_addr = optarg; break;
		case 6: b.verify_each = true; break;
		case 7: b.root = num("--root", optarg, 1u << 16); break;
		case 'v': b.verbose = true; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (b.o.aggregator == NULL || b.o.job == 0 || b.o.size == 0) {
		fprintf(stderr, "inca-bench: need the aggregator, the job and the size\n");
		usage(stderr);
		return 2;
	}
	if (b.verbose)
		inca_set_log_fn(log_stderr, NULL, INCA_LOG_DEBUG);
	if (b.fb_addr != NULL) {
		if (tcp_fb_setup(&tcp, b.fb_addr, b.o.rank, b.o.size) < 0) {
			fprintf(stderr, "inca-bench: rank %u: fallback setup failed\n", b.o.rank);
			return 1;
		}
		b.o.fallback = tcp_allreduce;
		b.o.fallback_ctx = &tcp;
	}
	ret = inca_comm_create(&b.o, &c);
	if (ret < 0) {
		fprintf(stderr, "inca-bench: rank %u: cannot join job %u at %s: %s\n", b.o.rank,
			b.o.job, b.o.aggregator, inca_strerror(ret));
		return 1;
	}
	inca_comm_info(c, &info);
	for (k = 0; k < b.nsizes; k++)
		if (b.sizes[k] > b.max_bytes)
			b.max_bytes = b.sizes[k];
	in = malloc(b.max_bytes + 8);
	out = malloc(b.max_bytes + 8);
	if (in == NULL || out == NULL) {
		fprintf(stderr, "inca-bench: out of memory\n");
		rc = 1;
		goto out;
	}

	if (b.o.rank == 0) {
		if (b.json)
			printf("{\"tool\":\"inca-bench\",\"version\":\"%s\",\"nworkers\":%u,"
			       "\"window\":%u,\"max_elems\":%u,\"float_native\":%s,"
			       "\"footprint\":%zu,\"link_mbps\":%.1f,\"transport\":\"%s\","
			       "\"udp_gso\":%s,\"udp_gro\":%s,\"results\":[",
			       inca_version_string(), b.o.size, info.window, info.max_elems,
			       info.float_native ? "true" : "false", info.footprint, b.link_mbps,
			       transport_name(info.transport), info.udp_gso ? "true" : "false",
			       info.udp_gro ? "true" : "false");
		else if (b.csv)
			printf("dtype,op,bytes,count,avg_us,min_us,max_us,algbw_MBps,link_util,"
			       "errors,median_us,ratio_SB,cpu_s_per_GiB\n");
		else
			printf("# inca-bench %s: %u workers, window %u, %u elements/packet, "
			       "floats %s, %zu bytes per communicator, transport %s (UDP GSO %s, "
			       "GRO %s)%s\n", inca_version_string(),
			       b.o.size, info.window, info.max_elems,
			       info.float_native ? "native" : "bfp", info.footprint,
			       transport_name(info.transport), info.udp_gso ? "on" : "off",
			       info.udp_gro ? "on" : "off", info.in_fallback ? ", IN FALLBACK" : "");
	}

	if (b.ncolls == 0)
		b.colls[b.ncolls++] = COLL_ALLREDUCE;
	for (unsigned ci = 0; ci < b.ncolls && ret >= 0; ci++) {
		for (unsigned di = 0; di < b.ndtypes && ret >= 0; di++) {
			for (unsigned oi = 0; oi < b.nops && ret >= 0; oi++) {
				b.coll = b.colls[ci];
				b.dtype = b.dtypes[di];
				b.op = b.ops[oi];
				if (b.o.rank == 0 && !b.json && !b.csv)
					printf("# %s %s\n%12s %10s %11s %11s %11s %11s %12s "
					       "%7s %7s %9s %6s\n", inca_dtype_name(b.dtype),
					       inca_op_name(b.op), "bytes", "count", "avg_us",
					       "min_us", "max_us", "median_us", "algbw_MB/s",
					       "util", "x_S/B", "cpu_s/GiB", "check");
				if (b.nsizes > 0) {
					for (k = 0; k < b.nsizes && ret >= 0; k++)
						ret = run_size(&b, c, in, out, b.sizes[k],
							       &first_row, &rc);
				} else {
					size_t es = inca_dtype_size(b.dtype);

					for (bytes = b.min_bytes < es ? es : b.min_bytes;
					     bytes <= b.max_bytes && ret >= 0; bytes *= 2)
						ret = run_size(&b, c, in, out, bytes, &first_row,
							       &rc);
				}
			}
		}
	}
	if (ret < 0)
		rc = 1;

	inca_comm_stats(c, &st);
	inca_comm_info(c, &info);
	if (b.o.rank == 0) {
		if (b.json)
			printf("],\"stats\":{\"retransmits\":%llu,\"replays\":%llu,"
			       "\"recoveries\":%llu,\"fallback_calls\":%llu,"
			       "\"fallback_collectives\":%llu,\"rejoins\":%llu,"
			       "\"chunks\":%llu,\"nacks\":%llu,\"nacks_held\":%llu,"
			       "\"tx_bytes\":%llu,\"rx_bytes\":%llu,\"caps\":%u,"
			       "\"gso_sends\":%llu,\"gro_pkts\":%llu,"
			       "\"xdp_tx_pkts\":%llu,\"xdp_rx_pkts\":%llu}}\n",
			       (unsigned long long)st.retransmits, (unsigned long long)st.replays,
			       (unsigned long long)st.recoveries,
			       (unsigned long long)st.fallback_calls,
			       (unsigned long long)st.fallback_collectives,
			       (unsigned long long)st.rejoins, (unsigned long long)st.chunks,
			       (unsigned long long)st.nacks,
			       (unsigned long long)st.nack_reasons[INCA_NACK_HELD],
			       (unsigned long long)st.tx_bytes, (unsigned long long)st.rx_bytes,
			       (unsigned)info.caps,
			       (unsigned long long)info.gso_sends,
			       (unsigned long long)info.gro_pkts,
			       (unsigned long long)info.xdp_tx_pkts,
			       (unsigned long long)info.xdp_rx_pkts);
		else if (!b.csv)
			printf("# rank 0: %llu packets sent (%llu GSO sends), %llu received (%llu in "
			       "GRO trains), %llu retransmitted, %llu replays, %llu recoveries%s\n",
			       (unsigned long long)st.tx_pkts, (unsigned long long)info.gso_sends,
			       (unsigned long long)st.rx_pkts, (unsigned long long)info.gro_pkts,
			       (unsigned long long)st.retransmits,
			       (unsigned long long)st.replays, (unsigned long long)st.recoveries,
			       rc ? ", RESULTS WRONG" : "");
	}
out:
	free(in);
	free(out);
	inca_comm_destroy(c);
	return rc;
}

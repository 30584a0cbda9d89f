/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * libinca's interface outside the protocol: version, error strings,
 * options and their environment variables, argument checking, the BFP
 * error bound, and the symbols the shared library exports.
 */

#define _GNU_SOURCE
#include <check.h>
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <stddef.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <inca/inca.h>

START_TEST(test_version)
{
	char want[32];

	snprintf(want, sizeof(want), "%d.%d.%d", INCA_VERSION_MAJOR, INCA_VERSION_MINOR,
		 INCA_VERSION_PATCH);
	ck_assert_str_eq(inca_version_string(), want);
	{
		/* The shared library users load, not only the static one this
		 * test links: its version must be these headers'. */
		void *h = dlopen(LIBINCA_SO, RTLD_NOW | RTLD_LOCAL);
		const char *(*ver)(void);

		ck_assert_msg(h != NULL, "dlopen: %s", dlerror());
		*(void **)&ver = dlsym(h, "inca_version_string");
		ck_assert_ptr_nonnull(ver);
		ck_assert_str_eq(ver(), want);
		dlclose(h);
	}
	ck_assert_int_eq(INCA_VERSION_NUM, (INCA_VERSION_MAJOR << 16) |
						   (INCA_VERSION_MINOR << 8) | INCA_VERSION_PATCH);
}
END_TEST

/* Every error has its own description; unknown codes get a generic one. */
START_TEST(test_strerror)
{
	static const int codes[] = {
#define INCA_X_(n, v, d) v,
		INCA_ERRORS(INCA_X_)
#undef INCA_X_
	};
	size_t i, j, n = sizeof(codes) / sizeof(codes[0]);

	for (i = 0; i < n; i++) {
		ck_assert(codes[i] <= 0);
		ck_assert_str_ne(inca_strerror(codes[i]), "unknown error");
		for (j = 0; j < i; j++) {
			ck_assert_int_ne(codes[i], codes[j]);
			ck_assert_str_ne(inca_strerror(codes[i]), inca_strerror(codes[j]));
		}
	}
	ck_assert_str_eq(inca_strerror(INCA_OK), "success");
	ck_assert_str_eq(inca_strerror(-1000), "unknown error");
	ck_assert_str_eq(inca_strerror(5), "unknown error");
}
END_TEST

START_TEST(test_stats_names)
{
	unsigned n = 0;

	while (inca_stats_name(n) != NULL)
		n++;
	ck_assert_uint_eq(n * sizeof(uint64_t) + sizeof(((struct inca_stats *)0)->nack_reasons),
			  sizeof(struct inca_stats));
	ck_assert_str_eq(inca_stats_name(0), "tx_pkts");
}
END_TEST

static void
clear_env(void)
{
	static const char *const vars[] = {
		"INCA_AGGREGATOR", "INCA_BIND", "INCA_JOB", "INCA_RANK", "INCA_SIZE",
		"INCA_TOKEN", "INCA_WINDOW", "INCA_POOL_SIZE", "INCA_MAX_ELEMS", "INCA_MTU",
		"INCA_TIMEOUT_MS", "INCA_GIVE_UP_MS", "INCA_FLOAT_MODE", "INCA_PROBE_EVERY",
		"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "PMI_RANK", "PMI_SIZE",
	};
	size_t i;

	for (i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		unsetenv(vars[i]);
}

/* The environment overrides the options, field by field. */
START_TEST(test_env)
{
	struct inca_comm_opts o;

	clear_env();
	inca_comm_opts_init(&o);
	o.job = 9;
	o.window = 4;
	setenv("INCA_AGGREGATOR", "10.77.0.1:9999", 1);
	setenv("INCA_JOB", "42", 1);
	setenv("INCA_RANK", "3", 1);
	setenv("INCA_SIZE", "8", 1);
	setenv("INCA_TOKEN", "0xdeadbeef", 1);
	setenv("INCA_TIMEOUT_MS", "7", 1);
	setenv("INCA_GIVE_UP_MS", "1234", 1);
	setenv("INCA_FLOAT_MODE", "bfp", 1);
	setenv("INCA_MAX_ELEMS", "64", 1);
	ck_assert_int_eq(inca_comm_opts_from_env(&o), INCA_OK);
	ck_assert_str_eq(o.aggregator, "10.77.0.1:9999");
	ck_assert_uint_eq(o.job, 42);
	ck_assert_uint_eq(o.rank, 3);
	ck_assert_uint_eq(o.size, 8);
	ck_assert_uint_eq(o.token, 0xdeadbeefu);
	ck_assert_uint_eq(o.timeout_ms, 7);
	ck_assert_uint_eq(o.give_up_ms, 1234);
	ck_assert_int_eq(o.float_mode, INCA_FLOAT_BFP);
	ck_assert_uint_eq(o.max_elems, 64);
	ck_assert_uint_eq(o.window, 4); /* not in the environment: kept */
	ck_assert_ptr_null(o.bind);
}
END_TEST

/* Launchers' rank variables stand in for INCA_RANK / INCA_SIZE. */
START_TEST(test_env_launcher)
{
	struct inca_comm_opts o;

	clear_env();
	inca_comm_opts_init(&o);
	setenv("OMPI_COMM_WORLD_RANK", "5", 1);
	setenv("OMPI_COMM_WORLD_SIZE", "6", 1);
	setenv("PMI_RANK", "1", 1);
	ck_assert_int_eq(inca_comm_opts_from_env(&o), INCA_OK);
	ck_assert_uint_eq(o.rank, 5);
	ck_assert_uint_eq(o.size, 6);
	setenv("INCA_RANK", "2", 1);
	ck_assert_int_eq(inca_comm_opts_from_env(&o), INCA_OK);
	ck_assert_uint_eq(o.rank, 2);
}
END_TEST

START_TEST(test_env_malformed)
{
	static const char *const bad[][2] = {
		{"INCA_JOB", "70000"}, {"INCA_JOB", "12x"}, {"INCA_RANK", "-1"},
		{"INCA_RANK", "65535"}, {"INCA_SIZE", "65536"}, {"INCA_FLOAT_MODE", "fast"},
		{"INCA_MAX_ELEMS", "5000"}, {"INCA_TOKEN", "0x100000000"},
	};
	struct inca_comm_opts o;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		clear_env();
		inca_comm_opts_init(&o);
		setenv(bad[i][0], bad[i][1], 1);
		ck_assert_msg(inca_comm_opts_from_env(&o) == INCA_EINVAL, "%s=%s accepted",
			      bad[i][0], bad[i][1]);
	}
}
END_TEST

/* Bad options are refused before any packet is sent. */
START_TEST(test_create_invalid)
{
	struct inca_comm_opts o, t;
	struct inca_comm *c = (struct inca_comm *)1;

	inca_comm_opts_init(&o);
	o.aggregator = "127.0.0.1";
	o.job = 1;
	o.size = 2;
	o.rank = 1;

	ck_assert_int_eq(inca_comm_create(NULL, &c), INCA_EINVAL);
	ck_assert_int_eq(inca_comm_create(&o, NULL), INCA_EINVAL);
	t = o;
	t.aggregator = NULL;
	ck_assert_int_eq(inca_comm_create(&t, &c), INCA_EINVAL);
	ck_assert_ptr_null(c);
	t = o;
	t.job = 0;
	ck_assert_int_eq(inca_comm_create(&t, &c), INCA_EINVAL);
	t = o;
	t.rank = 2;
	ck_assert_int_eq(inca_comm_create(&t, &c), INCA_EINVAL);
	/* More ranks than one aggregator takes, or than a tree's leaves. */
	t = o;
	t.size = INCA_MAX_WORKERS + 1;
	ck_assert_int_eq(inca_comm_create(&t, &c), INCA_EINVAL);
	t = o;
	t.aggregator = "127.0.0.1,127.0.0.2";
	t.size = 2 * INCA_MAX_WORKERS + 1;
	ck_assert_int_eq(inca_comm_create(&t, &c), INCA_EINVAL);
	/* Stripes: every leaf with as many, at most 8, job ids within range. */
	t = o;
	t.aggregator = "127.0.0.1+127.0.0.2,127.0.0.3";
	ck_assert_int_eq(inca_comm_create(&t, &c), INCA_EINVAL);
	t = o;
	t.aggregator = "1.0.0.1+1.0.0.2+1.0.0.3+1.0.0.4+1.0.0.5+1.0.0.6+1.0.0.7+1.0.0.8+1.0.0.9";
	ck_assert_int_eq(inca_comm_create(&t, &c), INCA_EINVAL);
	t = o;
	t.aggregator = "127.0.0.1+";
	ck_assert_int_eq(inca_comm_create(&t, &c), INCA_EINVAL);
	t = o;
	t.aggregator = "127.0.0.1+127.0.0.2";
	t.job = 65535;
	ck_assert_int_eq(inca_comm_create(&t, &c), INCA_EINVAL);
	ck_assert_ptr_null(c);
	t = o;
	t.aggregator = "127.0.0.1,,127.0.0.3";
	t.size = 6;
	t.rank = 3;
	ck_assert_int_eq(inca_comm_create(&t, &c), INCA_EINVAL);
	ck_assert_ptr_null(c);
	t = o;
	t.max_elems = INCA_MAX_ELEMS + 1;
	ck_assert_int_eq(inca_comm_create(&t, &c), INCA_EINVAL);
	t = o;
	t.mtu = 100;
	ck_assert_int_eq(inca_comm_create(&t, &c), INCA_EINVAL);
	t = o;
	t.float_mode = 7;
	ck_assert_int_eq(inca_comm_create(&t, &c), INCA_EINVAL);
	t = o;
	t.aggregator = "127.0.0.1:99999";
	ck_assert_int_eq(inca_comm_create(&t, &c), INCA_EINVAL);
	t = o;
	t.aggregator = "no-such-host.invalid";
	ck_assert_int_eq(inca_comm_create(&t, &c), INCA_EUNREACH);
	ck_assert_ptr_null(c);
}
END_TEST

/* NULL handles are errors, not crashes; destroy takes NULL. */
START_TEST(test_null_handles)
{
	struct inca_request *req = NULL;
	struct inca_stats st;
	int done;
	int32_t x = 0;

	inca_comm_destroy(NULL);
	ck_assert_int_eq(inca_allreduce(NULL, &x, &x, 1, INCA_DTYPE_INT32, INCA_OP_SUM),
			 INCA_EINVAL);
	ck_assert_int_eq(inca_iallreduce(NULL, &x, &x, 1, 0, 0, &req), INCA_EINVAL);
	ck_assert_int_eq(inca_broadcast(NULL, &x, 4, 0), INCA_EINVAL);
	ck_assert_int_eq(inca_barrier(NULL), INCA_EINVAL);
	ck_assert_int_eq(inca_reduce_scatter(NULL, &x, &x, 1, INCA_DTYPE_INT32, INCA_OP_SUM),
			 INCA_EINVAL);
	ck_assert_int_eq(inca_allgather(NULL, &x, &x, 4), INCA_EINVAL);
	ck_assert_int_eq(inca_reduce(NULL, &x, &x, 1, INCA_DTYPE_INT32, INCA_OP_SUM, 0),
			 INCA_EINVAL);
	ck_assert_int_eq(inca_comm_progress(NULL), INCA_EINVAL);
	ck_assert_int_eq(inca_wait(NULL), INCA_EINVAL);
	ck_assert_int_eq(inca_wait(&req), INCA_EINVAL);
	ck_assert_int_eq(inca_test(&req, &done), INCA_EINVAL);
	inca_comm_stats(NULL, &st);
	inca_comm_set_fallback(NULL, NULL, NULL);
}
END_TEST

/* The bound of the documentation, evaluated. */
START_TEST(test_bfp_bound_formula)
{
	/* N = 4: c = 2, E = 0: s = 28; 4 * 2^-29 + 2^-24 * 1 */
	ck_assert(inca_bfp_error_bound(4, 0, 1.0) == ldexp(1, -27) + ldexp(1, -24));
	/* N = 5 rounds up to c = 3. */
	ck_assert(inca_bfp_error_bound(5, 10, 0.0) == 5 * ldexp(1, 10 + 3 - 31));
	ck_assert(inca_bfp_error_bound(1, 0, 0.0) == ldexp(1, -31));
}
END_TEST

/* The shared library exports the inca_ interface and nothing else. */
START_TEST(test_exports)
{
	void *h = dlopen(LIBINCA_SO, RTLD_NOW | RTLD_LOCAL);

	ck_assert_msg(h != NULL, "dlopen: %s", dlerror());
	ck_assert_ptr_nonnull(dlsym(h, "inca_allreduce"));
	ck_assert_ptr_nonnull(dlsym(h, "inca_comm_create"));
	ck_assert_ptr_nonnull(dlsym(h, "inca_msg_decode"));
	ck_assert_ptr_nonnull(dlsym(h, "inca_comm_opts_init_sized"));
	ck_assert_ptr_nonnull(dlsym(h, "inca_comm_stats_sized"));
	ck_assert_ptr_nonnull(dlsym(h, "inca_comm_info_sized"));
	ck_assert_ptr_nonnull(dlsym(h, "inca_tcp_group_allgather"));
	ck_assert_ptr_nonnull(dlsym(h, "inca_tcp_group_allreduce"));
	ck_assert_ptr_nonnull(dlvsym(h, "inca_reduce_scatter", "INCA_0.1"));
	ck_assert_ptr_nonnull(dlvsym(h, "inca_allgather", "INCA_0.1"));
	ck_assert_ptr_nonnull(dlvsym(h, "inca_reduce", "INCA_0.1"));
	ck_assert_ptr_null(dlsym(h, "li_progress"));
	ck_assert_ptr_null(dlsym(h, "li_encode"));
	ck_assert_ptr_null(dlsym(h, "li_udp_ops"));
	ck_assert_ptr_nonnull(dlvsym(h, "inca_allreduce", "INCA_0.1"));
	dlclose(h);
}
END_TEST

Suite *api_suite(void);

/* A caller compiled with a shorter inca_comm_opts: the library writes no
 * byte beyond it, and creation takes the missing fields as defaults. */
START_TEST(test_opts_sized)
{
	size_t old = offsetof(struct inca_comm_opts, op_timeout_ms) + sizeof(uint32_t);
	unsigned char buf[sizeof(struct inca_comm_opts) + 16];
	struct inca_comm_opts *o = (struct inca_comm_opts *)buf;
	struct inca_comm *c = NULL;
	size_t i;

	memset(buf, 0xAB, sizeof(buf));
	inca_comm_opts_init_sized(o, old);
	ck_assert_uint_eq(o->struct_size, old);
	for (i = old; i < sizeof(buf); i++)
		ck_assert_uint_eq(buf[i], 0xAB);
	/* Not initialised: refused. */
	memset(buf, 0, sizeof(buf));
	o->aggregator = "no-such-host.invalid";
	o->job = 1;
	o->size = 1;
	ck_assert_int_eq(inca_comm_create(o, &c), INCA_EINVAL);
	/* The old size: the fields beyond it (0xAB garbage here) are ignored. */
	memset(buf, 0xAB, sizeof(buf));
	inca_comm_opts_init_sized(o, old);
	o->aggregator = "no-such-host.invalid";
	o->job = 1;
	o->size = 1;
	ck_assert_int_eq(inca_comm_create(o, &c), INCA_EUNREACH);
	ck_assert_ptr_null(c);
}
END_TEST

/* A free TCP port on the loopback for a rendezvous. */
static unsigned
free_port(void)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
	close(fd);
	return ntohs(sa.sin_port);
}

/*
 * Rank r of a TCP group of @n in a child process: an allgather, then an
 * int32 sum and an fp16 max through the group's allreduce, checked; rank
 * @dies exits after the first allgather and the others must then fail.
 * Exit status: 0 as expected, 1 otherwise.
 */
static int
group_child(const char *addr, unsigned r, unsigned n, int dies)
{
	struct inca_tcp_group *g;
	uint32_t mine[2] = {r * 10 + 1, r * 10 + 2}, all[16];
	int32_t v[3], k;
	uint16_t h[2];
	struct inca_fallback_args a;
	unsigned i;

	if (inca_tcp_group_create(addr, r, n, 5000, &g) != INCA_OK)
		return 1;
	if (inca_tcp_group_allgather(g, mine, all, sizeof(mine)) != INCA_OK)
		return 1;
	for (i = 0; i < n; i++)
		if (all[2 * i] != i * 10 + 1 || all[2 * i + 1] != i * 10 + 2)
			return 1;
	if (dies >= 0) {
		if ((int)r == dies)
			_exit(0);
		/* The dead rank's connection closes: an error, not a wait. */
		k = inca_tcp_group_allgather(g, mine, all, sizeof(mine));
		inca_tcp_group_destroy(g);
		return k < 0 ? 0 : 1;
	}
	for (i = 0; i < 3; i++)
		v[i] = (int32_t)(r + i);
	a = (struct inca_fallback_args){v, v, 3, INCA_DTYPE_INT32, INCA_OP_SUM};
	if (inca_tcp_group_allreduce(g, &a) != INCA_OK)
		return 1;
	for (i = 0; i < 3; i++)
		if (v[i] != (int32_t)(n * (n - 1) / 2 + n * i))
			return 1;
	h[0] = inca_fp32_to_fp16((float)r - 0.5f);
	h[1] = inca_fp32_to_fp16(-(float)r);
	a = (struct inca_fallback_args){h, h, 2, INCA_DTYPE_FP16, INCA_OP_MAX};
	if (inca_tcp_group_allreduce(g, &a) != INCA_OK)
		return 1;
	if (inca_fp16_to_fp32(h[0]) != (float)(n - 1) - 0.5f || inca_fp16_to_fp32(h[1]) != 0.0f)
		return 1;
	inca_tcp_group_destroy(g);
	return 0;
}

static void
run_group(unsigned n, int dies)
{
	char addr[32];
	pid_t pid[8];
	unsigned r;
	int st;

	snprintf(addr, sizeof(addr), "127.0.0.1:%u", free_port());
	for (r = 0; r < n; r++) {
		pid[r] = fork();
		ck_assert_int_ge(pid[r], 0);
		if (pid[r] == 0)
			_exit(group_child(addr, r, n, dies));
	}
	for (r = 0; r < n; r++) {
		ck_assert_int_eq(waitpid(pid[r], &st, 0), pid[r]);
		ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "rank %u of %u failed", r, n);
	}
}

START_TEST(test_tcp_group)
{
	struct inca_tcp_group *g = (struct inca_tcp_group *)1;
	char addr[32];

	run_group(1, -1);
	run_group(4, -1);
	/* A rank dies: every other rank's next exchange fails. */
	run_group(3, 1);
	run_group(3, 0);
	ck_assert_int_eq(inca_tcp_group_create("127.0.0.1", 0, 2, 100, &g), INCA_EINVAL);
	ck_assert_ptr_null(g);
	ck_assert_int_eq(inca_tcp_group_create("127.0.0.1:1", 2, 2, 100, &g), INCA_EINVAL);
	/* A rank that never comes: creation fails instead of waiting. */
	snprintf(addr, sizeof(addr), "127.0.0.1:%u", free_port());
	ck_assert_int_eq(inca_tcp_group_create(addr, 0, 2, 200, &g), INCA_ETIMEDOUT);
	ck_assert_int_eq(inca_tcp_group_create(addr, 1, 2, 200, &g), INCA_ETIMEDOUT);
	ck_assert_ptr_null(g);
}
END_TEST

Suite *
api_suite(void)
{
	Suite *s = suite_create("inca_api");
	TCase *tc;

#define TC(name, fn) \
	tc = tcase_create(name); \
	tcase_add_test(tc, fn); \
	tcase_set_timeout(tc, 10); \
	suite_add_tcase(s, tc)

	TC("version", test_version);
	TC("strerror", test_strerror);
	TC("stats_names", test_stats_names);
	TC("env", test_env);
	TC("env_launcher", test_env_launcher);
	TC("env_malformed", test_env_malformed);
	TC("create_invalid", test_create_invalid);
	TC("null_handles", test_null_handles);
	TC("bfp_bound_formula", test_bfp_bound_formula);
	TC("exports", test_exports);
	TC("opts_sized", test_opts_sized);
	TC("tcp_group", test_tcp_group);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(api_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * libinca's kernel UDP transport (lib/udp.c): cutting a UDP GRO train back
 * into datagrams, and UDP GSO / GRO through the kernel's loopback, where
 * a GSO buffer reaches a UDP_GRO socket as one train. No aggregator needed.
 */

#define _GNU_SOURCE
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "li_transport.h"

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif

/* Byte @i of datagram @d: every datagram's bytes differ from its neighbours'. */
static uint8_t
pattern(unsigned d, size_t i)
{
	return (uint8_t)(d * 31 + i * 7 + 1);
}

static void
fill(uint8_t *p, unsigned d, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = pattern(d, i);
}

static void
check_datagram(const struct li_pkt *p, unsigned d, size_t len)
{
	size_t i;

	ck_assert_uint_eq(p->len, len);
	for (i = 0; i < len; i++)
		ck_assert_msg(((const uint8_t *)p->buf)[i] == pattern(d, i),
			      "datagram %u byte %zu differs", d, i);
}

static uint8_t bufs[8][2048];

static void
reset(struct li_pkt *pkts, unsigned n, size_t cap)
{
	unsigned k;

	for (k = 0; k < n; k++) {
		pkts[k].buf = bufs[k];
		pkts[k].len = cap;
	}
}

/* A train of three 100-byte segments and a 37-byte one, taken in two calls. */
START_TEST(test_split_short_last)
{
	uint8_t train[337];
	struct li_pkt pkts[8];
	size_t off = 0;
	unsigned d;

	for (d = 0; d < 4; d++)
		fill(train + d * 100, d, d < 3 ? 100 : 37);
	reset(pkts, 8, sizeof(bufs[0]));
	ck_assert_uint_eq(li_udp_gro_split(train, sizeof(train), 100, &off, pkts, 2), 2);
	ck_assert_uint_eq(off, 200);
	check_datagram(&pkts[0], 0, 100);
	check_datagram(&pkts[1], 1, 100);
	reset(pkts, 8, sizeof(bufs[0]));
	ck_assert_uint_eq(li_udp_gro_split(train, sizeof(train), 100, &off, pkts, 8), 2);
	ck_assert_uint_eq(off, sizeof(train));
	check_datagram(&pkts[0], 2, 100);
	check_datagram(&pkts[1], 3, 37);
	/* Nothing left. */
	ck_assert_uint_eq(li_udp_gro_split(train, sizeof(train), 100, &off, pkts, 8), 0);
}
END_TEST

/* Not a train (segment size 0): one datagram; one larger than its buffer is reported empty. */
START_TEST(test_split_single_and_oversize)
{
	uint8_t train[300];
	struct li_pkt pkts[8];
	size_t off = 0;

	fill(train, 5, sizeof(train));
	reset(pkts, 8, sizeof(bufs[0]));
	ck_assert_uint_eq(li_udp_gro_split(train, sizeof(train), 0, &off, pkts, 8), 1);
	check_datagram(&pkts[0], 5, sizeof(train));

	off = 0;
	fill(train, 0, 150);
	fill(train + 150, 1, 150);
	reset(pkts, 8, 120);
	ck_assert_uint_eq(li_udp_gro_split(train, sizeof(train), 150, &off, pkts, 8), 2);
	ck_assert_uint_eq(pkts[0].len, 0);
	ck_assert_uint_eq(pkts[1].len, 0);
	ck_assert_uint_eq(off, sizeof(train));
}
END_TEST

/* A UDP socket on 127.0.0.1, its address in @a. */
static int
local_socket(struct sockaddr_in *a)
{
	socklen_t al = sizeof(*a);
	int fd = socket(AF_INET, SOCK_DGRAM, 0);

	ck_assert_int_ge(fd, 0);
	memset(a, 0, sizeof(*a));
	a->sin_family = AF_INET;
	a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)a, sizeof(*a)), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)a, &al), 0);
	return fd;
}

/*
 * Five 1000-byte datagrams, a 300-byte one, two 500-byte ones: with GSO
 * two sends (a run with its short last one, then a run of two); without,
 * eight. The receiver sees the same eight datagrams in order either way.
 */
static void
send_mixed(bool gso)
{
	static const size_t lens[8] = {1000, 1000, 1000, 1000, 1000, 300, 500, 500};
	struct li_transport *t;
	struct inca_comm_info info;
	struct sockaddr_in agg;
	struct li_pkt pkts[8];
	uint8_t out[8][1000], in[2048];
	unsigned d;
	int s;

	if (gso)
		unsetenv("INCA_UDP_GSO");
	else
		setenv("INCA_UDP_GSO", "0", 1);
	s = local_socket(&agg);
	ck_assert_int_eq(li_udp_ops.open(&t, &agg, NULL, 1 << 20, 32), INCA_OK);
	for (d = 0; d < 8; d++) {
		fill(out[d], d, lens[d]);
		pkts[d].buf = out[d];
		pkts[d].len = lens[d];
	}
	ck_assert_int_eq(li_udp_ops.send_batch(t, pkts, 8), 8);
	for (d = 0; d < 8; d++) {
		struct li_pkt p = {.buf = in, .len = 0};
		ssize_t n = recv(s, in, sizeof(in), MSG_DONTWAIT);

		ck_assert_int_ge(n, 0);
		p.len = (size_t)n;
		check_datagram(&p, d, lens[d]);
	}
	ck_assert_int_lt(recv(s, in, sizeof(in), MSG_DONTWAIT), 0);
	memset(&info, 0, sizeof(info));
	li_udp_ops.info(t, &info);
	ck_assert_int_eq(info.udp_gso, gso);
	ck_assert_uint_eq(info.gso_sends, gso ? 2 : 0);
	li_udp_ops.close(t);
	close(s);
	unsetenv("INCA_UDP_GSO");
}

START_TEST(test_gso_send)
{
	send_mixed(true);
}
END_TEST

START_TEST(test_gso_off)
{
	send_mixed(false);
}
END_TEST

/*
 * The aggregator's side sends four 1000-byte results and a 300-byte one
 * as one GSO buffer: the transport's UDP_GRO socket gets them as one train
 * and hands them out as five datagrams, over two calls with room for three.
 */
START_TEST(test_gro_receive)
{
	union {
		char buf[CMSG_SPACE(sizeof(uint16_t))];
		struct cmsghdr align;
	} cb;
	struct sockaddr_in agg, me;
	socklen_t ml = sizeof(me);
	struct li_transport *t;
	struct inca_comm_info info;
	uint8_t train[4300];
	struct li_pkt pkts[8];
	struct iovec iov = {.iov_base = train, .iov_len = sizeof(train)};
	struct msghdr h = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cb.buf,
			   .msg_controllen = sizeof(cb.buf)};
	struct cmsghdr *cm;
	uint16_t seg = 1000;
	unsigned d;
	int s, got;

	unsetenv("INCA_UDP_GSO");
	s = local_socket(&agg);
	ck_assert_int_eq(li_udp_ops.open(&t, &agg, NULL, 1 << 20, 32), INCA_OK);
	ck_assert_int_eq(getsockname(li_udp_ops.fd(t), (struct sockaddr *)&me, &ml), 0);
	ck_assert_int_eq(connect(s, (struct sockaddr *)&me, sizeof(me)), 0);
	for (d = 0; d < 5; d++)
		fill(train + d * 1000, d, d < 4 ? 1000 : 300);
	cm = CMSG_FIRSTHDR(&h);
	cm->cmsg_level = IPPROTO_UDP;
	cm->cmsg_type = UDP_SEGMENT;
	cm->cmsg_len = CMSG_LEN(sizeof(seg));
	memcpy(CMSG_DATA(cm), &seg, sizeof(seg));
	ck_assert_int_eq(sendmsg(s, &h, 0), (ssize_t)sizeof(train));

	reset(pkts, 3, sizeof(bufs[0]));
	ck_assert_int_eq(li_udp_ops.recv_batch(t, pkts, 3), 3);
	for (d = 0; d < 3; d++)
		check_datagram(&pkts[d], d, 1000);
	reset(pkts, 8, sizeof(bufs[0]));
	got = li_udp_ops.recv_batch(t, pkts, 8);
	ck_assert_int_eq(got, 2);
	check_datagram(&pkts[0], 3, 1000);
	check_datagram(&pkts[1], 4, 300);
	ck_assert_int_eq(li_udp_ops.recv_batch(t, pkts, 8), 0);
	memset(&info, 0, sizeof(info));
	li_udp_ops.info(t, &info);
	ck_assert_int_eq(info.udp_gro, 1);
	/* All five came in one train, not segmented on the way. */
	ck_assert_uint_eq(info.gro_pkts, 5);
	li_udp_ops.close(t);
	close(s);
}
END_TEST

static Suite *
udp_suite(void)
{
	Suite *s = suite_create("udp");
	TCase *tc;

#define TC(name, fn) \
	tc = tcase_create(name); \
	tcase_add_test(tc, fn); \
	tcase_set_timeout(tc, 30); \
	suite_add_tcase(s, tc)
	TC("split_short_last", test_split_short_last);
	TC("split_single_and_oversize", test_split_single_and_oversize);
	TC("gso_send", test_gso_send);
	TC("gso_off", test_gso_off);
	TC("gro_receive", test_gro_receive);
#undef TC
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(udp_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

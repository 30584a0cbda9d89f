/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * libinca's verbs transport without an RDMA device: the decisions of
 * lib/verbs_logic.c (addresses, the choice of device, port and GID, payload
 * sizes, routing, signalling, receive buffers, the work request of one
 * message) and the fallback to udp, which runs for real here because
 * 127.0.0.1 never has a RoCE GID. What needs a device (queue pair states,
 * posting, completions, the wire) is not tested here: tools/roce-check
 * runs it on RoCE hosts.
 */

#define _GNU_SOURCE
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/socket.h>

#include "li_verbs.h"

static uint32_t
ip(const char *s)
{
	struct in_addr a;

	ck_assert_int_eq(inet_pton(AF_INET, s, &a), 1);
	return a.s_addr;
}

/* ---- addresses ---------------------------------------------------------- */

START_TEST(test_gid_mapped)
{
	static const uint8_t want[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 1, 2, 3};
	static const uint8_t link_local[16] = {0xfe, 0x80, 0, 0, 0, 0, 0, 0,
					       0x02, 0x11, 0x22, 0xff, 0xfe, 0x33, 0x44, 0x55};
	uint8_t gid[16];
	uint32_t back = 0;

	li_vb_gid_from_ipv4(gid, ip("10.1.2.3"));
	ck_assert_mem_eq(gid, want, 16);
	ck_assert(li_vb_gid_to_ipv4(gid, &back));
	ck_assert_uint_eq(back, ip("10.1.2.3"));
	/* A RoCE v2 GID of an IPv6 address is no IPv4 address. */
	ck_assert(!li_vb_gid_to_ipv4(link_local, &back));
}
END_TEST

START_TEST(test_parse_dev)
{
	static const char *const bad[] = {
		"", ":1", "mlx5_0:", "mlx5_0:0", "mlx5_0:256", "mlx5_0:1x", "mlx5_0:-1",
		"mlx5 0", "mlx5/0", "mlx5_0:1:2",
		"a_device_name_of_sixty_four_characters_is_longer_than_sysfs_allows",
	};
	struct li_vb_dev_spec s;
	unsigned i;

	ck_assert_int_eq(li_vb_parse_dev("mlx5_0", &s), 0);
	ck_assert_str_eq(s.name, "mlx5_0");
	ck_assert_uint_eq(s.port, 0);
	ck_assert_int_eq(li_vb_parse_dev("mlx5_bond_0:2", &s), 0);
	ck_assert_str_eq(s.name, "mlx5_bond_0");
	ck_assert_uint_eq(s.port, 2);
	ck_assert_int_eq(li_vb_parse_dev("rocep1s0f1:255", &s), 0);
	ck_assert_uint_eq(s.port, 255);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(li_vb_parse_dev(bad[i], &s) < 0, "INCA_ROCE_DEV=%s accepted", bad[i]);
}
END_TEST

/* ---- device, port and GID ----------------------------------------------- */

static struct li_vb_gid
entry(const char *dev, unsigned port, unsigned index, const char *addr, bool v2, bool active)
{
	struct li_vb_gid e = {.dev = dev, .port = port, .index = index, .roce_v2 = v2,
			      .port_active = active};

	li_vb_gid_from_ipv4(e.gid, ip(addr));
	return e;
}

START_TEST(test_choose_v2_and_address)
{
	struct li_vb_gid tab[4];
	const char *why = NULL;

	/* The RoCE v1 twin of the right address, then the v2 GID of
	 * another address, then the one to take. */
	tab[0] = entry("mlx5_0", 1, 2, "10.0.0.5", false, true);
	tab[1] = entry("mlx5_0", 1, 3, "10.0.0.9", true, true);
	tab[2] = entry("mlx5_0", 1, 5, "10.0.0.5", true, true);
	ck_assert_int_eq(li_vb_choose(tab, 3, NULL, ip("10.0.0.5"), &why), 2);
	/* Without a v2 GID of the address: none, and why. */
	ck_assert_int_eq(li_vb_choose(tab, 2, NULL, ip("10.0.0.5"), &why), -1);
	ck_assert_ptr_nonnull(strstr(why, "local IPv4 address"));
	ck_assert_int_eq(li_vb_choose(tab, 1, NULL, ip("10.0.0.5"), &why), -1);
	ck_assert_ptr_nonnull(strstr(why, "no RoCE v2 GID"));
	ck_assert_int_eq(li_vb_choose(tab, 0, NULL, ip("10.0.0.5"), &why), -1);
}
END_TEST

START_TEST(test_choose_active_first)
{
	struct li_vb_gid tab[3];
	const char *why = NULL;

	/* The same address on a port that is down (first) and one that is up. */
	tab[0] = entry("mlx5_0", 1, 3, "10.0.0.5", true, false);
	tab[1] = entry("mlx5_1", 1, 3, "10.0.0.5", true, true);
	ck_assert_int_eq(li_vb_choose(tab, 2, NULL, ip("10.0.0.5"), &why), 1);
	/* Only a port that is down: still the one that carries the address. */
	ck_assert_int_eq(li_vb_choose(tab, 1, NULL, ip("10.0.0.5"), &why), 0);
}
END_TEST

START_TEST(test_choose_explicit_device)
{
	struct li_vb_gid tab[4];
	struct li_vb_dev_spec s;
	const char *why = NULL;

	tab[0] = entry("mlx5_0", 1, 3, "10.0.0.5", true, true);
	tab[1] = entry("mlx5_1", 1, 3, "10.0.0.5", true, false);
	tab[2] = entry("mlx5_1", 2, 4, "10.0.0.5", true, true);
	tab[3] = entry("mlx5_2", 1, 3, "10.0.0.7", true, true);
	/* INCA_ROCE_DEV wins over table order; its active port first. */
	ck_assert_int_eq(li_vb_parse_dev("mlx5_1", &s), 0);
	ck_assert_int_eq(li_vb_choose(tab, 4, &s, ip("10.0.0.5"), &why), 2);
	/* With a port, that port, even down. */
	ck_assert_int_eq(li_vb_parse_dev("mlx5_1:1", &s), 0);
	ck_assert_int_eq(li_vb_choose(tab, 4, &s, ip("10.0.0.5"), &why), 1);
	/* The named device must still carry the local address. */
	ck_assert_int_eq(li_vb_parse_dev("mlx5_2", &s), 0);
	ck_assert_int_eq(li_vb_choose(tab, 4, &s, ip("10.0.0.5"), &why), -1);
	ck_assert_ptr_nonnull(strstr(why, "local IPv4 address"));
	/* A device (or port) the host does not have. */
	ck_assert_int_eq(li_vb_parse_dev("mlx5_9", &s), 0);
	ck_assert_int_eq(li_vb_choose(tab, 4, &s, ip("10.0.0.5"), &why), -1);
	ck_assert_ptr_nonnull(strstr(why, "INCA_ROCE_DEV"));
	ck_assert_int_eq(li_vb_parse_dev("mlx5_0:2", &s), 0);
	ck_assert_int_eq(li_vb_choose(tab, 4, &s, ip("10.0.0.5"), &why), -1);
	ck_assert_ptr_nonnull(strstr(why, "INCA_ROCE_DEV"));
}
END_TEST

/* ---- sizes -------------------------------------------------------------- */

START_TEST(test_max_elems_mtu)
{
	/* docs/protocol.md, "MTU and payload classes". */
	static const unsigned table[][3] = {
		{1024, 248, 496}, {2048, 504, 1008}, {4096, 1016, 2032}, {256, 56, 112},
	};
	unsigned i, size, n, mtu;

	ck_assert_uint_eq(li_vb_mtu_bytes(1), 256);
	ck_assert_uint_eq(li_vb_mtu_bytes(3), 1024);
	ck_assert_uint_eq(li_vb_mtu_bytes(5), 4096);
	ck_assert_uint_eq(li_vb_mtu_bytes(0), 0);
	ck_assert_uint_eq(li_vb_mtu_bytes(6), 0);
	for (i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
		ck_assert_uint_eq(li_vb_max_elems(table[i][0], 4), table[i][1]);
		ck_assert_uint_eq(li_vb_max_elems(table[i][0], 2), table[i][2]);
	}
	/* Whatever the MTU: the message, padded to 32 bits, fits, and one
	 * element more would not. */
	for (mtu = 100; mtu <= 4096; mtu += 7)
		for (size = 2; size <= 4; size += 2) {
			n = li_vb_max_elems(mtu, size);
			ck_assert_uint_le((32 + n * size + 3) & ~3u, mtu);
			ck_assert_uint_gt((32 + (n + 1) * size + 3) & ~3u, mtu);
		}
	/* 1026 bytes: 497 fp16 would fill it, but pad to 1028. */
	ck_assert_uint_eq(li_vb_max_elems(1026, 2), 496);
	ck_assert_uint_eq(li_vb_max_elems(32, 4), 0);
}
END_TEST

/* ---- routing ------------------------------------------------------------ */

static size_t
message(uint8_t *buf, unsigned type)
{
	struct inca_msg m;

	memset(&m, 0, sizeof(m));
	m.version = INCA_PROTO_VERSION;
	m.type = (uint8_t)type;
	m.job = 7;
	m.count = type == INCA_MSG_CONTRIB ? 4 : 0;
	inca_hdr_encode(&m, buf);
	memset(buf + INCA_HDR_LEN, 0, 16);
	return INCA_HDR_LEN + 16;
}

START_TEST(test_route)
{
	static const unsigned ctrl[] = {INCA_MSG_HELLO, INCA_MSG_JOIN, INCA_MSG_LEAVE,
					INCA_MSG_HEARTBEAT};
	uint8_t buf[64];
	size_t len;
	unsigned i;

	len = message(buf, INCA_MSG_CONTRIB);
	ck_assert_int_eq(li_vb_route(buf, len, true), LI_VB_QP);
	/* Not bound (before JOIN_ACK, or an aggregator without ROCE). */
	ck_assert_int_eq(li_vb_route(buf, len, false), LI_VB_UDP);
	/* Control stays on UDP, bound or not. */
	for (i = 0; i < sizeof(ctrl) / sizeof(ctrl[0]); i++) {
		len = message(buf, ctrl[i]);
		ck_assert_int_eq(li_vb_route(buf, len, true), LI_VB_UDP);
	}
	/* Shorter than a header: nothing to route by. */
	message(buf, INCA_MSG_CONTRIB);
	ck_assert_int_eq(li_vb_route(buf, INCA_HDR_LEN - 1, true), LI_VB_UDP);
}
END_TEST

/* ---- send queue --------------------------------------------------------- */

START_TEST(test_signal_pattern)
{
	uint64_t seq = 0;
	unsigned posts[] = {1, 5, 40, 16, 3, 32, 17};
	unsigned p, i, run = 0, sig;

	/* A post of 5 from 0: its last only. */
	for (i = 0, sig = 0; i < 5; i++)
		sig += li_vb_signaled(i, i, 5);
	ck_assert_uint_eq(sig, 1);
	ck_assert(li_vb_signaled(4, 4, 5));
	/* A post of 40 from 0: every 16th and the last. */
	for (i = 0; i < 40; i++)
		ck_assert_int_eq(li_vb_signaled(i, i, 40), i == 15 || i == 31 || i == 39);
	/* Over posts of any size, a post's last is signalled and never more
	 * than LI_VB_SIGNAL_EVERY - 1 unsignalled requests precede a
	 * signalled one: a completion accounts for every send buffer. */
	for (p = 0; p < sizeof(posts) / sizeof(posts[0]); p++)
		for (i = 0; i < posts[p]; i++, seq++) {
			bool s = li_vb_signaled(seq, i, posts[p]);

			if (i + 1 == posts[p])
				ck_assert(s);
			run = s ? 0 : run + 1;
			ck_assert_uint_lt(run, LI_VB_SIGNAL_EVERY);
		}
}
END_TEST

#if INCA_HAVE_VERBS
START_TEST(test_fill_send)
{
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	struct ibv_ah *ah = (struct ibv_ah *)&wr; /* an address only compared */
	uint8_t small[48], big[600], slot[1024];
	size_t i;

	for (i = 0; i < sizeof(big); i++)
		big[i] = (uint8_t)i;
	memset(small, 0x5a, sizeof(small));
	memset(slot, 0, sizeof(slot));
	/* Fits max_inline: inline from the caller's buffer, no copy, no lkey. */
	li_vb_fill_send(&wr, &sge, small, sizeof(small), slot, 0x1234, 64, ah, 0xabcdef,
			0x11223344, 77, false);
	ck_assert_int_eq(wr.opcode, IBV_WR_SEND);
	ck_assert_int_eq(wr.num_sge, 1);
	ck_assert_ptr_eq(wr.sg_list, &sge);
	ck_assert_uint_eq(wr.send_flags, IBV_SEND_INLINE);
	ck_assert_uint_eq(sge.addr, (uintptr_t)small);
	ck_assert_uint_eq(sge.length, sizeof(small));
	ck_assert_uint_eq(sge.lkey, 0);
	ck_assert_uint_eq(slot[0], 0);
	ck_assert_ptr_eq(wr.wr.ud.ah, ah);
	ck_assert_uint_eq(wr.wr.ud.remote_qpn, 0xabcdef);
	ck_assert_uint_eq(wr.wr.ud.remote_qkey, 0x11223344);
	ck_assert_uint_eq(wr.wr_id, 77);
	ck_assert_ptr_null(wr.next);
	/* Larger: copied into the registered slot, sent from there. */
	li_vb_fill_send(&wr, &sge, big, sizeof(big), slot, 0x1234, 64, ah, 0xabcdef,
			0x11223344, 78, true);
	ck_assert_uint_eq(wr.send_flags, IBV_SEND_SIGNALED);
	ck_assert_uint_eq(sge.addr, (uintptr_t)slot);
	ck_assert_uint_eq(sge.lkey, 0x1234);
	ck_assert_uint_eq(sge.length, sizeof(big));
	ck_assert_mem_eq(slot, big, sizeof(big));
	/* A device without inline data: always the slot. */
	li_vb_fill_send(&wr, &sge, small, sizeof(small), slot, 0x1234, 0, ah, 2, 1, 79, true);
	ck_assert_uint_eq(wr.send_flags, IBV_SEND_SIGNALED);
	ck_assert_uint_eq(sge.addr, (uintptr_t)slot);
}
END_TEST
#endif

/* ---- receive buffers ---------------------------------------------------- */

START_TEST(test_rx_len)
{
	/* byte_len counts the 40-byte GRH. */
	ck_assert_uint_eq(li_vb_rx_len(40 + 1056, 1500), 1056);
	ck_assert_uint_eq(li_vb_rx_len(40 + 1500, 1500), 1500);
	/* Shorter than a GRH: invalid. */
	ck_assert_uint_eq(li_vb_rx_len(39, 1500), 0);
	ck_assert_uint_eq(li_vb_rx_len(0, 1500), 0);
	/* Longer than the caller's buffer: reported empty, never cut. */
	ck_assert_uint_eq(li_vb_rx_len(40 + 1501, 1500), 0);
}
END_TEST

START_TEST(test_rx_from)
{
	uint8_t grh[LI_VB_GRH_LEN];
	uint32_t agg = ip("192.168.7.1"), other = ip("192.168.7.2");

	/* RoCEv2 over IPv4: 20 unspecified bytes, then the IPv4 header. */
	memset(grh, 0xee, sizeof(grh));
	grh[20] = 0x45;
	memcpy(grh + 32, &agg, 4);
	memcpy(grh + 36, &other, 4); /* destination */
	ck_assert(li_vb_rx_from(grh, 0x1c2, agg, 0x1c2));
	/* Another queue pair of the aggregator's host, another host. */
	ck_assert(!li_vb_rx_from(grh, 0x1c3, agg, 0x1c2));
	ck_assert(!li_vb_rx_from(grh, 0x1c2, other, 0x1c2));
	/* An IPv6 (RoCEv2 over IPv6, or IB) GRH is not our aggregator. */
	memset(grh, 0, sizeof(grh));
	grh[0] = 0x60;
	ck_assert(!li_vb_rx_from(grh, 0x1c2, agg, 0x1c2));
}
END_TEST

/* ---- choosing the transport ---------------------------------------------- */

static char logged[4096];

static void
log_fn(void *ctx, int level, const char *msg)
{
	(void)ctx;
	if (level <= INCA_LOG_WARN)
		snprintf(logged + strlen(logged), sizeof(logged) - strlen(logged), "%s\n", msg);
}

START_TEST(test_parse_transport)
{
	struct inca_comm_opts o;

	ck_assert_int_eq(li_transport_parse("udp"), INCA_TRANSPORT_UDP);
	ck_assert_int_eq(li_transport_parse("verbs"), INCA_TRANSPORT_VERBS);
	ck_assert_int_eq(li_transport_parse("rdma"), -1);
	ck_assert_int_eq(li_transport_parse(""), -1);
	inca_comm_opts_init(&o);
	ck_assert_int_eq(o.transport, INCA_TRANSPORT_DEFAULT);
	setenv("INCA_TRANSPORT", "verbs", 1);
	ck_assert_int_eq(inca_comm_opts_from_env(&o), INCA_OK);
	ck_assert_int_eq(o.transport, INCA_TRANSPORT_VERBS);
	setenv("INCA_TRANSPORT", "roce", 1);
	ck_assert_int_eq(inca_comm_opts_from_env(&o), INCA_EINVAL);
	unsetenv("INCA_TRANSPORT");
}
END_TEST

/*
 * verbs asked for where it cannot run: one warning with the reason, and a
 * working udp transport. 127.0.0.1 has no RoCE v2 GID on any host, so this
 * runs the same with or without an RDMA device.
 */
START_TEST(test_fallback_to_udp)
{
	const struct li_transport_ops *ops = NULL;
	struct li_transport *t = NULL;
	struct sockaddr_in agg = {.sin_family = AF_INET};
	socklen_t sl = sizeof(agg);
	uint8_t buf[64], in[64];
	struct li_pkt p;
	int s, ret;

	s = socket(AF_INET, SOCK_DGRAM, 0);
	ck_assert_int_ge(s, 0);
	agg.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(bind(s, (struct sockaddr *)&agg, sizeof(agg)), 0);
	ck_assert_int_eq(getsockname(s, (struct sockaddr *)&agg, &sl), 0);
	logged[0] = '\0';
	inca_set_log_fn(log_fn, NULL, INCA_LOG_WARN);
	ret = li_transport_open(INCA_TRANSPORT_VERBS, &ops, &t, &agg, NULL, 65536, 32);
	inca_set_log_fn(NULL, NULL, 0);
	ck_assert_int_eq(ret, INCA_OK);
	ck_assert_ptr_eq(ops, &li_udp_ops);
	ck_assert_msg(strstr(logged, "INCA_TRANSPORT=verbs: ") != NULL &&
		      strstr(logged, "using udp") != NULL, "log: %s", logged);
	/* One warning, not one per step. */
	ck_assert_ptr_eq(strchr(logged, '\n'), logged + strlen(logged) - 1);
	/* And the udp transport carries messages. */
	p.buf = buf;
	p.len = message(buf, INCA_MSG_HELLO);
	ck_assert_int_eq(ops->send_batch(t, &p, 1), 1);
	ck_assert_int_eq((int)recv(s, in, sizeof(in), 0), (int)p.len);
	ck_assert_mem_eq(in, buf, p.len);
	ops->close(t);
	close(s);
}
END_TEST

static Suite *
verbs_suite(void)
{
	Suite *s = suite_create("verbs");
	TCase *tc;

#define TC(name, fn) \
	tc = tcase_create(name); \
	tcase_add_test(tc, fn); \
	tcase_set_timeout(tc, 30); \
	suite_add_tcase(s, tc)
	TC("gid_mapped", test_gid_mapped);
	TC("parse_dev", test_parse_dev);
	TC("choose_v2_and_address", test_choose_v2_and_address);
	TC("choose_active_first", test_choose_active_first);
	TC("choose_explicit_device", test_choose_explicit_device);
	TC("max_elems_mtu", test_max_elems_mtu);
	TC("route", test_route);
	TC("signal_pattern", test_signal_pattern);
#if INCA_HAVE_VERBS
	TC("fill_send", test_fill_send); /* no work request without libibverbs */
#endif
	TC("rx_len", test_rx_len);
	TC("rx_from", test_rx_from);
	TC("parse_transport", test_parse_transport);
	TC("fallback_to_udp", test_fallback_to_udp);
#undef TC
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(verbs_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

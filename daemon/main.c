/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * incad: the INCA aggregation daemon. Start-up order: command line and
 * configuration (before EAL, so that mistakes cost nothing), EAL, the mbuf
 * pool, RCU, rings, ports, the control thread's rings, jobs, telemetry;
 * then the control thread and the dataplane lcores run until SIGINT or
 * SIGTERM, and everything is undone in reverse order.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_malloc.h>

#include "arbiter.h"
#include "ctrl.h"
#include "dataplane.h"
#include "l2.h"
#include "uplink.h"
#include "kernels.h"

struct incad incad;

int incad_logtype_port;
int incad_logtype_ctrl;
int incad_logtype_dp;
int incad_logtype_cfg;

static void
usage(FILE *f, const char *prog)
{
	fprintf(f,
		"Usage: %s [EAL options] -- -c FILE [--idle adaptive|poll] "
		"[--idle-hot-us US] [--stats-interval SEC] [--help]\n"
		"\n"
		"INCA aggregation daemon: aggregates INCA contributions from workers and\n"
		"sends the results back; in switch mode also forwards ordinary frames\n"
		"between its ports.\n"
		"\n"
		"  -c, --config FILE       configuration file (libconfig; see conf/incad.conf)\n"
		"  --idle adaptive|poll    idle policy of the dataplane lcores (overrides\n"
		"                          idle.policy): adaptive sleeps when there is no\n"
		"                          traffic, poll never sleeps\n"
		"  --idle-hot-us US        adaptive: no sleep until US microseconds after\n"
		"                          the last traffic (overrides idle.hot_us)\n"
		"  --stats-interval SEC    print statistics every SEC seconds (0: never)\n"
		"  -h, --help              this text (EAL is not started)\n"
		"\n"
		"EAL options come before '--', for example:\n"
		"  %s --no-huge -m 256 --no-pci \\\n"
		"      --vdev net_pcap0,rx_pcap=in.pcap,tx_pcap=out.pcap -- -c conf/incad.conf\n"
		"Statistics are printed on SIGINT/SIGTERM; telemetry commands are under /incad/\n"
		"(dpdk-telemetry.py). See docs/incad.md.\n",
		prog, prog);
}

struct cli {
	const char *config;
	int idle;            /* -1: from the file */
	long hot_us;         /* -1: from the file */
	long stats_interval; /* -1: from the file */
};

/* Parse the options after "--". Returns 0, or 1 on a usage error. */
static int
parse_cli(int argc, char **argv, struct cli *cli)
{
	static const struct option opts[] = {
		{"config", required_argument, NULL, 'c'},
		{"idle", required_argument, NULL, 'i'},
		{"idle-hot-us", required_argument, NULL, 'H'},
		{"stats-interval", required_argument, NULL, 's'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	char *end;
	int c;

	cli->config = NULL;
	cli->idle = -1;
	cli->hot_us = -1;
	cli->stats_interval = -1;
	optind = 1;
	while ((c = getopt_long(argc, argv, "c:h", opts, NULL)) != -1) {
		switch (c) {
		case 'c':
			cli->config = optarg;
			break;
		case 'i':
			if (strcmp(optarg, "adaptive") == 0)
				cli->idle = INCAD_IDLE_ADAPTIVE;
			else if (strcmp(optarg, "poll") == 0)
				cli->idle = INCAD_IDLE_POLL;
			else {
				fprintf(stderr, "incad: --idle takes adaptive or poll, not '%s'\n",
					optarg);
				return 1;
			}
			break;
		case 'H':
			errno = 0;
			cli->hot_us = strtol(optarg, &end, 10);
			if (errno != 0 || *end != '\0' || end == optarg || cli->hot_us < 0 ||
			    cli->hot_us > 1000000) {
				fprintf(stderr, "incad: --idle-hot-us takes 0-1000000\n");
				return 1;
			}
			break;
		case 's':
			errno = 0;
			cli->stats_interval = strtol(optarg, &end, 10);
			if (errno != 0 || *end != '\0' || cli->stats_interval < 0 ||
			    cli->stats_interval > 86400) {
				fprintf(stderr,
					"incad: --stats-interval takes seconds (0-86400)\n");
				return 1;
			}
			break;
		default:
			return 1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "incad: unexpected argument '%s'\n", argv[optind]);
		return 1;
	}
	if (cli->config == NULL) {
		fprintf(stderr, "incad: no configuration file (-c FILE)\n");
		return 1;
	}
	return 0;
}

static void
on_signal(int sig __rte_unused)
{
	/* The I/O lcore sets quit once the control thread is done. */
	incad.stopping = true;
}

static void
register_logtypes(void)
{
	incad_logtype_port = rte_log_register_type_and_pick_level("incad.port", RTE_LOG_INFO);
	incad_logtype_ctrl = rte_log_register_type_and_pick_level("incad.ctrl", RTE_LOG_INFO);
	incad_logtype_dp = rte_log_register_type_and_pick_level("incad.dp", RTE_LOG_INFO);
	incad_logtype_cfg = rte_log_register_type_and_pick_level("incad.cfg", RTE_LOG_INFO);
}

static int
pool_create(void)
{
	size_t frame = incad_config_max_frame(&incad.cfg);
	uint16_t room;

	if (frame < RTE_MBUF_DEFAULT_DATAROOM)
		frame = RTE_MBUF_DEFAULT_DATAROOM;
	room = (uint16_t)RTE_ALIGN_CEIL(frame + RTE_PKTMBUF_HEADROOM, RTE_CACHE_LINE_SIZE);
	/* The private area is rounded up to a cache line so that frames
	 * start cache-line aligned, as without one: at 8 bytes off, every
	 * PMD copy (net_pcap, af_packet, memif) takes rte_memcpy's unaligned
	 * path and every 64-byte vector of the checksum and the kernels
	 * straddles two lines. */
	incad.pool = rte_pktmbuf_pool_create("incad_mbufs", incad.cfg.mbufs, 256,
					     RTE_ALIGN_CEIL(sizeof(struct incad_meta),
							    RTE_CACHE_LINE_SIZE),
					     room, rte_socket_id());
	if (incad.pool == NULL)
		return -rte_errno;
	incad.mbuf_bytes = (size_t)incad.cfg.mbufs *
		(incad.pool->header_size + incad.pool->elt_size + incad.pool->trailer_size);
	return 0;
}

/* Dataplane lcores, their rings and the RCU variable. */
static int
lcores_create(unsigned int *main_is_io)
{
	unsigned int w = incad.cfg.workers, avail = rte_lcore_count(), i, lcore;
	char name[RTE_RING_NAMESIZE];
	size_t sz;
	int ret;

	if (avail > w)
		*main_is_io = 0;
	else if (avail == w)
		*main_is_io = 1;
	else {
		INCAD_LOG(cfg, ERR, "%s: workers = %u needs at least %u lcores, EAL has %u "
			  "(use -l)", incad.cfg.path, w, w, avail);
		return -EINVAL;
	}
	incad.nlcores = w;
	incad.lcores = rte_zmalloc("incad_lcores", w * sizeof(*incad.lcores),
				   RTE_CACHE_LINE_SIZE);
	if (incad.lcores == NULL)
		return -ENOMEM;
	/* Dataplane lcore 0 is the main lcore when there is no spare one,
	 * otherwise the first worker lcore. */
	i = 0;
	if (*main_is_io)
		incad.lcores[i++].lcore_id = rte_get_main_lcore();
	RTE_LCORE_FOREACH_WORKER(lcore) {
		if (i == w)
			break;
		incad.lcores[i++].lcore_id = lcore;
	}
	for (i = 0; i < w; i++) {
		struct incad_lcore *lc = &incad.lcores[i];

		lc->idx = i;
		if (i == 0)
			continue;
		snprintf(name, sizeof(name), "incad_rx%u", i);
		lc->rx_ring = rte_ring_create(name, incad.cfg.ring_size, rte_socket_id(),
					      RING_F_SP_ENQ | RING_F_SC_DEQ);
		snprintf(name, sizeof(name), "incad_tx%u", i);
		lc->tx_ring = rte_ring_create(name, incad.cfg.ring_size, rte_socket_id(),
					      RING_F_SP_ENQ | RING_F_SC_DEQ);
		if (lc->rx_ring == NULL || lc->tx_ring == NULL)
			return -rte_errno;
		incad.table_bytes += 2 * rte_ring_get_memsize(incad.cfg.ring_size);
	}
	/* Readers: every dataplane lcore, plus one id the telemetry threads
	 * share. */
	sz = rte_rcu_qsbr_get_memsize(w + 1);
	incad.qs = rte_zmalloc("incad_rcu", sz, RTE_CACHE_LINE_SIZE);
	if (incad.qs == NULL)
		return -ENOMEM;
	ret = rte_rcu_qsbr_init(incad.qs, w + 1);
	if (ret != 0)
		return ret;
	for (i = 0; i <= w; i++)
		rte_rcu_qsbr_thread_register(incad.qs, i);
	incad.tel_tid = w;
	incad.table_bytes += sz;
	return 0;
}

static void
lcores_free(void)
{
	struct rte_mbuf *m = NULL;
	unsigned int i;

	if (incad.lcores == NULL)
		return;
	for (i = 1; i < incad.nlcores; i++) {
		struct incad_lcore *lc = &incad.lcores[i];

		/* What the lcores left in flight when they stopped. */
		while (lc->rx_ring != NULL && rte_ring_dequeue(lc->rx_ring, (void **)&m) == 0) {
			lc->st.drop[INCAD_DROP_SHUTDOWN]++;
			rte_pktmbuf_free(m);
		}
		while (lc->tx_ring != NULL && rte_ring_dequeue(lc->tx_ring, (void **)&m) == 0) {
			lc->st.drop[INCAD_DROP_SHUTDOWN]++;
			rte_pktmbuf_free(m);
		}
	}
}

static void
lcores_destroy(void)
{
	unsigned int i;

	if (incad.lcores == NULL)
		return;
	for (i = 1; i < incad.nlcores; i++) {
		rte_ring_free(incad.lcores[i].rx_ring);
		rte_ring_free(incad.lcores[i].tx_ring);
	}
	rte_free(incad.lcores);
	incad.lcores = NULL;
	rte_free(incad.qs);
	incad.qs = NULL;
}

/* Upper bound of the slot memory the configuration allows. */
static size_t
slot_bytes_max(void)
{
	struct agg_job_params p = {
		.job = 1, .nworkers = 1, .pool_size = 1, .max_elems = incad.cfg.max_elems,
		.dtypes = 1, .ops = 1,
	};
	size_t one, two;

	one = agg_job_footprint(&p);
	p.pool_size = 2;
	two = agg_job_footprint(&p);
	return (two - one) * incad.cfg.max_slots + one * (incad.cfg.njobs + 1);
}

int
main(int argc, char **argv)
{
	struct cli cli;
	unsigned int i, main_is_io = 0;
	int dd = -1, eal_argc, ret, status = EXIT_FAILURE;
	char **eal_argv;

	/* --help needs neither EAL nor a configuration. */
	for (i = 1; i < (unsigned int)argc; i++)
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			usage(stdout, argv[0]);
			return EXIT_SUCCESS;
		}
	for (i = 1; i < (unsigned int)argc; i++)
		if (strcmp(argv[i], "--") == 0) {
			dd = (int)i;
			break;
		}
	/* Without "--" every argument is incad's and EAL runs on defaults. */
	eal_argc = dd < 0 ? 1 : dd;
	eal_argv = argv;
	{
		int app_argc = dd < 0 ? argc : argc - dd;
		char **app_argv = dd < 0 ? argv : argv + dd;

		app_argv[0] = argv[0];
		if (dd >= 0)
			argv[dd] = argv[0];
		if (parse_cli(app_argc, app_argv, &cli) != 0) {
			usage(stderr, argv[0]);
			return 2;
		}
	}
	if (incad_config_load(cli.config, &incad.cfg) != 0)
		return EXIT_FAILURE;
	if (cli.idle >= 0)
		incad.cfg.idle = (enum incad_idle)cli.idle;
	if (cli.hot_us >= 0)
		incad.cfg.idle_hot_us = (uint32_t)cli.hot_us;
	if (cli.stats_interval >= 0)
		incad.cfg.stats_interval = (uint32_t)cli.stats_interval;

	ret = rte_eal_init(eal_argc, eal_argv);
	if (ret < 0) {
		fprintf(stderr, "incad: EAL initialisation failed: %s\n", rte_strerror(rte_errno));
		incad_config_free(&incad.cfg);
		return EXIT_FAILURE;
	}
	register_logtypes();
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	agg_kernels_init();
	incad.hz = rte_get_timer_hz();
	incad.start_tsc = incad_now();

	ret = pool_create();
	if (ret != 0) {
		INCAD_LOG(cfg, ERR, "mbuf pool of %u: %s", incad.cfg.mbufs, rte_strerror(-ret));
		goto out_eal;
	}
	ret = lcores_create(&main_is_io);
	if (ret != 0)
		goto out_lcores;
	ret = incad_ports_init();
	if (ret != 0)
		goto out_ports;
	ret = incad_l2_init();
	if (ret != 0)
		goto out_ports;
	ret = incad_ctrl_thread_init();
	if (ret != 0) {
		INCAD_LOG(cfg, ERR, "control thread's rings: %s", strerror(-ret));
		goto out_ctrl;
	}
	ret = incad_ctrl_init();
	if (ret != 0)
		goto out_ctrl;
	ret = incad_uplink_init();
	if (ret != 0)
		goto out_ctrl;
	ret = incad_tenant_meters_init();
	if (ret != 0) {
		INCAD_LOG(cfg, ERR, "tenant rate meters: %s", strerror(-ret));
		goto out_ctrl;
	}
	ret = incad_arb_init();
	if (ret != 0) {
		INCAD_LOG(cfg, ERR, "arbitration meters: %s", strerror(-ret));
		goto out_ctrl;
	}
	/* Periodic work of the I/O lcore: the tree leaves' uplinks, the
	 * statistics, then the arbitration's rates (eviction is the control
	 * thread's). */
	if (incad_timer_add(incad_uplink_timer) != 0 ||
	    incad_timer_add(incad_stats_timer) != 0 || incad_timer_add(incad_arb_timer) != 0) {
		ret = -ENOSPC;
		goto out_ctrl;
	}
	ret = incad_telemetry_init();
	if (ret != 0)
		INCAD_LOG(cfg, NOTICE, "telemetry commands not registered: %s", strerror(-ret));
	incad_readers_open(true);
	incad.table_bytes += sizeof(incad_jobs) + incad.cfg.max_slots / 8;
	incad.slot_bytes_max = slot_bytes_max();

	printf("incad: %s mode, %u port(s), %u dataplane lcore(s)%s, idle %s, INCA port %u, "
	       "kernels %s\n", incad.cfg.mode == INCAD_MODE_SWITCH ? "switch" : "aggregator",
	       incad.nports, incad.nlcores, main_is_io ? " (main lcore does I/O)" : "",
	       incad.cfg.idle == INCAD_IDLE_POLL ? "poll" : "adaptive", incad.cfg.inca_port,
	       agg_kernels_impl());
	if (incad.cfg.roce)
		printf("incad: RoCEv2 members on UDP port %d: queue pair 0x%06x, Q_Key 0x%08x\n",
		       INCA_ROCE_PORT, incad.cfg.roce_qpn, incad.cfg.roce_qkey);
	incad_footprint_print(stdout);

	ret = incad_ctrl_thread_start();
	if (ret != 0) {
		INCAD_LOG(cfg, ERR, "control thread: %s", strerror(-ret));
		goto out_ctrl;
	}
	for (i = 0; i < incad.nlcores; i++) {
		if (incad.lcores[i].lcore_id == rte_get_main_lcore())
			continue;
		ret = rte_eal_remote_launch(incad_lcore_main, &incad.lcores[i],
					    incad.lcores[i].lcore_id);
		if (ret != 0) {
			INCAD_LOG(cfg, ERR, "cannot launch lcore %u", incad.lcores[i].lcore_id);
			incad.quit = true;
			break;
		}
	}
	if (main_is_io && !incad.quit) {
		incad_lcore_main(&incad.lcores[0]);
	} else {
		while (!incad.quit) {
			rte_delay_us_sleep(100 * 1000);
			incad_stats_periodic(incad_now());
		}
	}
	rte_eal_mp_wait_lcore();
	incad_ctrl_thread_stop();
	lcores_free();
	incad_stats_print(stdout, "final statistics");
	status = EXIT_SUCCESS;

out_ctrl:
	/* Telemetry threads outlive everything below; keep them out. */
	incad_readers_open(false);
	incad_ctrl_thread_stop();
	incad_ctrl_fini();
	incad_ctrl_thread_fini();
	incad_l2_fini();
out_ports:
	incad_ports_fini();
out_lcores:
	lcores_destroy();
	rte_mempool_free(incad.pool);
out_eal:
	rte_eal_cleanup();
	incad_config_free(&incad.cfg);
	if (status != EXIT_SUCCESS)
		fprintf(stderr, "incad: start-up failed\n");
	return status;
}

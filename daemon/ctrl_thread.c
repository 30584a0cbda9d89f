/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * The control thread: HELLO, JOIN, LEAVE and HEARTBEAT, eviction and the
 * RCU grace periods of job changes, off the dataplane lcores (issue 17:
 * a tenant looping JOIN and LEAVE made the I/O lcore create and reset
 * jobs and wait for grace periods, stalling every job's packets).
 *
 * A DPDK control thread (rte_ctrl_thread_create: on the CPUs EAL's lcores
 * do not use), not a polling lcore: on a 2-core host the I/O lcore takes
 * one core and a poller would take the other from the workers. It blocks
 * on an eventfd when there is nothing to do, with a timeout for the
 * 10 ms eviction timer. The I/O lcore signals the eventfd only when the
 * thread has said it is going to sleep ('asleep'), after a burst in which
 * it queued something: one syscall per wake-up, none while the thread is
 * busy, none per message. The handshake is a Dekker pair: the thread
 * stores 'asleep' and then looks at the ring, the I/O lcore enqueues and
 * then looks at 'asleep' (both sequentially consistent), so at least one
 * of them sees the other and no message waits for the timeout.
 *
 * Mbufs: a control message belongs to the I/O lcore until it is enqueued
 * on the rx ring, then to the control thread, which answers in it or
 * frees it; answers are new mbufs the thread owns until it enqueues them
 * on its tx ring, from which the I/O lcore takes them and transmits them
 * (incad_tx(), as the other lcores' frames). What a ring holds at
 * shutdown is freed and counted SHUTDOWN.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_malloc.h>

#include "ctrl.h"
#include "uplink.h"

#define CTRL_BURST 32
#define TX_DRAIN 64
/* The eviction timer's period, as on the I/O lcore before. */
#define TIMER_MS 10
/* A stall of the test hook sleeps in steps this long, watching incad.quit. */
#define STALL_STEP_MS 10

static int efd = -1;
static pthread_t tid;
static bool running;
static uint32_t asleep;   /* the thread is going to block on efd */
static uint32_t stalled;  /* the test hook holds the thread */
static bool queued;       /* I/O lcore: queued since its last kick */
static uint32_t stop;     /* incad_ctrl_thread_stop(): end the loop */
static uint64_t answered; /* messages handled whose answers are in the tx ring */
/* At shutdown the I/O lcore waits this long at most for the last answers. */
#define QUIESCE_MS 1000

static void
efd_signal(void)
{
	uint64_t one = 1;

	/* Only fails when the counter would overflow: it is non-zero then. */
	if (write(efd, &one, sizeof(one)) < 0)
		return;
}

void
incad_ctrl_enqueue(struct incad_lcore *lc, struct rte_mbuf *m)
{
	if (rte_ring_sp_enqueue(incad.ctrl->rx_ring, m) != 0) {
		incad_drop_mbuf(lc, m, INCAD_DROP_CTRL_RING_FULL);
		return;
	}
	lc->st.cnt[INCAD_CNT_CTRL_QUEUED]++;
	queued = true;
}

void
incad_ctrl_kick(struct incad_lcore *lc)
{
	if (!queued)
		return;
	queued = false;
	/* The enqueue is before this load (the thread's store of 'asleep'
	 * before its look at the ring). */
	if (__atomic_load_n(&asleep, __ATOMIC_SEQ_CST) == 0)
		return;
	if (__atomic_exchange_n(&asleep, 0, __ATOMIC_SEQ_CST) == 0)
		return;
	lc->st.cnt[INCAD_CNT_CTRL_WAKEUP]++;
	efd_signal();
}

void
incad_ctrl_wake(void)
{
	if (efd >= 0)
		efd_signal();
}

bool
incad_ctrl_stalled(void)
{
	return __atomic_load_n(&stalled, __ATOMIC_RELAXED) != 0;
}

unsigned int
incad_ctrl_drain_tx(struct incad_lcore *lc)
{
	struct rte_mbuf *b[TX_DRAIN];
	unsigned int k, n;

	n = rte_ring_sc_dequeue_burst(incad.ctrl->tx_ring, (void **)b, TX_DRAIN, NULL);
	for (k = 0; k < n; k++)
		incad_tx(lc, b[k], b[k]->port);
	return n;
}

/* Pass the answers of the burst to the I/O lcore (its drain sends them). */
static void
ctrl_flush(struct incad_lcore *lc)
{
	lc->st.cnt[INCAD_CNT_CTRL_TX_RING] += incad_tx_flush_lcore(lc);
	__atomic_store_n(&answered, lc->st.cnt[INCAD_CNT_CTRL_RX], __ATOMIC_RELEASE);
}

void
incad_ctrl_quiesce(struct incad_lcore *lc)
{
	uint64_t end = incad_now() + incad.hz * QUIESCE_MS / 1000;

	/* What was received before the signal is answered, as it was when
	 * the control plane ran inline (the dpdk tests stop incad once it
	 * has received their frames). Bounded: a thread held by the test
	 * hook is let go by incad.quit. */
	incad_ctrl_wake();
	while (__atomic_load_n(&answered, __ATOMIC_ACQUIRE) < lc->st.cnt[INCAD_CNT_CTRL_QUEUED] &&
	       incad_now() < end) {
		incad_ctrl_drain_tx(lc);
		incad_tx_flush_io(lc);
		rte_delay_us_sleep(100);
	}
	while (incad_ctrl_drain_tx(lc) != 0)
		;
	incad_tx_flush_io(lc);
}

/*
 * The test hook (control.test_stall, /incad/ctrl_stall): hold the thread
 * for the requested time as a slow control plane would be held (a long
 * grace period, a slow log), so that tests can show the dataplane does
 * not wait for it and the ring fills and overflows as counted.
 */
static void
stall_hook(void)
{
	uint32_t ms = __atomic_exchange_n(&incad.ctrl_stall_ms, 0, __ATOMIC_ACQUIRE);
	uint32_t done;

	if (ms == 0)
		return;
	INCAD_LOG(ctrl, NOTICE, "control thread stalled for %u ms (test hook)", ms);
	__atomic_store_n(&stalled, 1, __ATOMIC_RELAXED);
	for (done = 0; done < ms && !incad.quit; done += STALL_STEP_MS)
		rte_delay_us_sleep(1000 * (ms - done < STALL_STEP_MS ? ms - done : STALL_STEP_MS));
	__atomic_store_n(&stalled, 0, __ATOMIC_RELAXED);
	INCAD_LOG(ctrl, NOTICE, "control thread goes on after its stall");
}

/* Block until something is queued, a wake-up or @timeout_ms. */
static void
ctrl_sleep(struct incad_lcore *lc, int timeout_ms)
{
	struct pollfd pfd = {.fd = efd, .events = POLLIN};
	uint64_t v;

	__atomic_store_n(&asleep, 1, __ATOMIC_SEQ_CST);
	if (!rte_ring_empty(lc->rx_ring)) {
		__atomic_store_n(&asleep, 0, __ATOMIC_SEQ_CST);
		return;
	}
	if (poll(&pfd, 1, timeout_ms) > 0 && read(efd, &v, sizeof(v)) < 0)
		v = 0;
	__atomic_store_n(&asleep, 0, __ATOMIC_SEQ_CST);
}

static void *
ctrl_main(void *arg)
{
	struct incad_lcore *lc = arg;
	uint64_t period = incad.hz * TIMER_MS / 1000, next_timer = incad_now() + period, now;
	struct rte_mbuf *b[CTRL_BURST];
	unsigned int i, n;
	int ms;

	INCAD_LOG(ctrl, INFO, "control thread running");
	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
		stall_hook();
		n = rte_ring_sc_dequeue_burst(lc->rx_ring, (void **)b, CTRL_BURST, NULL);
		now = incad_now();
		for (i = 0; i < n; i++)
			incad_ctrl_handle(lc, b[i], now);
		incad_uplink_restarts();
		if (now >= next_timer) {
			incad_ctrl_timer(lc, now);
			next_timer = now + period;
		}
		ctrl_flush(lc);
		if (n != 0)
			continue;
		now = incad_now();
		ms = now >= next_timer ? 0 : (int)((next_timer - now) * 1000 / incad.hz) + 1;
		ctrl_sleep(lc, ms);
	}
	ctrl_flush(lc);
	return NULL;
}

int
incad_ctrl_thread_init(void)
{
	struct incad_lcore *lc;

	lc = rte_zmalloc("incad_ctrl", sizeof(*lc), RTE_CACHE_LINE_SIZE);
	if (lc == NULL)
		return -ENOMEM;
	incad.ctrl = lc;
	lc->idx = incad.nlcores;
	lc->lcore_id = LCORE_ID_ANY;
	lc->rx_ring = rte_ring_create("incad_ctrl_rx", incad.cfg.ctrl_ring_size, rte_socket_id(),
				      RING_F_SP_ENQ | RING_F_SC_DEQ);
	lc->tx_ring = rte_ring_create("incad_ctrl_tx", incad.cfg.ctrl_ring_size, rte_socket_id(),
				      RING_F_SP_ENQ | RING_F_SC_DEQ);
	if (lc->rx_ring == NULL || lc->tx_ring == NULL)
		return -rte_errno;
	incad.table_bytes += 2 * rte_ring_get_memsize(incad.cfg.ctrl_ring_size);
	efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (efd < 0)
		return -errno;
	return 0;
}

int
incad_ctrl_thread_start(void)
{
	int ret;

	ret = rte_ctrl_thread_create(&tid, "incad-ctrl", NULL, ctrl_main, incad.ctrl);
	if (ret != 0)
		return -ret;
	running = true;
	return 0;
}

/* Free what @r holds, counted SHUTDOWN on the control thread's counters. */
static void
ring_drain(struct rte_ring *r)
{
	struct rte_mbuf *m;

	while (r != NULL && rte_ring_dequeue(r, (void **)&m) == 0)
		incad_drop_mbuf(incad.ctrl, m, INCAD_DROP_SHUTDOWN);
}

void
incad_ctrl_thread_stop(void)
{
	if (incad.ctrl == NULL)
		return;
	if (running) {
		__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
		incad_ctrl_wake();
		pthread_join(tid, NULL);
		running = false;
	}
	ring_drain(incad.ctrl->rx_ring);
	ring_drain(incad.ctrl->tx_ring);
}

void
incad_ctrl_thread_fini(void)
{
	if (incad.ctrl == NULL)
		return;
	incad_ctrl_thread_stop();
	rte_ring_free(incad.ctrl->rx_ring);
	rte_ring_free(incad.ctrl->tx_ring);
	if (efd >= 0)
		close(efd);
	efd = -1;
	rte_free(incad.ctrl);
	incad.ctrl = NULL;
}

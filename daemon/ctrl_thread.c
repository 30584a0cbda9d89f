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
 * (incad_tx(), as the other lcores' frames). A data message held behind
 * its job's JOIN or LEAVE (ctrl.h, "Order per job") stays the I/O
 * lcore's, in its hold queue, until released to the dataplane. What a
 * ring or the hold queue holds at shutdown is freed and counted SHUTDOWN.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_malloc.h>

#include "ctrl.h"
#include "uplink.h"

#define CTRL_BURST 32
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
/* A full tx ring is waited for this long (the I/O lcore drains it every loop). */
#define TX_WAIT_US 10000

struct incad_ctrl_fence incad_fences[65536];
uint64_t incad_ctrl_done;
struct incad_ctrl_io incad_ctrl_io;
static uint64_t handled;    /* the control thread's: last message it finished */
/* How long a control message waits at most for the data held before it. */
#define HOLD_WAIT_US 100000

/*
 * The I/O lcore's hold queue (a FIFO; only it touches it) and what it
 * tells the control thread: the 'ctrl_after' of the oldest message held,
 * UINT64_MAX when none is.
 */
static struct rte_mbuf **hold;
static unsigned int hold_size, hold_head, hold_tail;
static uint64_t hold_low = UINT64_MAX;

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
	const struct inca_msg *msg = &incad_meta(m)->msg;
	uint64_t seq = incad_ctrl_io.seq + 1;
	uint8_t type = msg->type;
	uint16_t job = msg->job;

	incad_meta(m)->ctrl_seq = seq;
	if (rte_ring_sp_enqueue(incad.ctrl->rx_ring, m) != 0) {
		incad_drop_mbuf(lc, m, INCAD_DROP_CTRL_RING_FULL);
		return;
	}
	incad_ctrl_io.seq = seq;
	queued = true;
	lc->st.cnt[INCAD_CNT_CTRL_QUEUED]++;
	/* Those that change what the job's data messages see. */
	if (type == INCA_MSG_JOIN || type == INCA_MSG_LEAVE)
		incad_fences[job].ctrl = seq;
}

void
incad_ctrl_hold(struct incad_lcore *lc, struct rte_mbuf *m)
{
	struct incad_meta *meta = incad_meta(m);
	struct incad_ctrl_fence *f = &incad_fences[meta->msg.job];

	if (hold_tail - hold_head == hold_size) {
		incad_drop_mbuf(lc, m, INCAD_DROP_CTRL_HOLD_FULL);
		return;
	}
	/* It waits for its job's last JOIN or LEAVE; the control thread
	 * waits for it before any control message queued after it. */
	meta->ctrl_seq = f->ctrl;
	meta->ctrl_after = incad_ctrl_io.seq;
	if (hold_tail == hold_head)
		__atomic_store_n(&hold_low, meta->ctrl_after, __ATOMIC_SEQ_CST);
	hold[hold_tail++ & (hold_size - 1)] = m;
	f->held++;
	lc->st.cnt[INCAD_CNT_CTRL_HELD]++;
}

unsigned int
incad_ctrl_release(struct incad_lcore *lc, struct rte_mbuf **b, unsigned int n,
		   unsigned int *answers)
{
	uint64_t done = __atomic_load_n(&incad_ctrl_done, __ATOMIC_ACQUIRE);
	struct rte_mbuf *a[CTRL_BURST];
	unsigned int k, i, out = 0;

	/* Every answer up to 'done' is on the ring by now: out they go
	 * first, so that a JOIN_ACK leaves before the RESULT of a CONTRIB
	 * held behind its JOIN. */
	*answers = 0;
	while ((k = rte_ring_sc_dequeue_burst(incad.ctrl->tx_ring, (void **)a, CTRL_BURST,
					      NULL)) != 0) {
		for (i = 0; i < k; i++)
			incad_tx(lc, a[i], a[i]->port);
		*answers += k;
	}
	incad_ctrl_io.done_cache = done;
	while (out < n && hold_head != hold_tail) {
		struct rte_mbuf *m = hold[hold_head & (hold_size - 1)];
		struct incad_meta *meta = incad_meta(m);

		if (meta->ctrl_seq > done)
			break;
		hold_head++;
		incad_fences[meta->msg.job].held--;
		b[out++] = m;
	}
	if (out != 0)
		__atomic_store_n(&hold_low, hold_head == hold_tail ? UINT64_MAX :
				 incad_meta(hold[hold_head & (hold_size - 1)])->ctrl_after,
				 __ATOMIC_SEQ_CST);
	return out;
}

bool
incad_ctrl_idle(void)
{
	return __atomic_load_n(&incad_ctrl_done, __ATOMIC_ACQUIRE) >= incad_ctrl_io.seq &&
	       rte_ring_empty(incad.ctrl->tx_ring) && hold_head == hold_tail;
}

/*
 * Pass the answers to the I/O lcore. It drains the ring every loop, so a
 * full one is waited for, briefly; then what does not fit is a counted
 * drop (TX_RING_FULL: the worker retransmits its request).
 */
static void
ctrl_flush(struct incad_lcore *lc)
{
	unsigned int n = 0, waited = 0, k;

	while (n < lc->ntx) {
		n += rte_ring_sp_enqueue_burst(lc->tx_ring, (void **)lc->tx + n, lc->ntx - n, NULL);
		if (n == lc->ntx || waited >= TX_WAIT_US || incad.quit)
			break;
		rte_delay_us_sleep(10);
		waited += 10;
	}
	lc->st.cnt[INCAD_CNT_CTRL_TX_RING] += n;
	for (k = n; k < lc->ntx; k++)
		incad_drop_mbuf(lc, lc->tx[k], INCAD_DROP_TX_RING_FULL);
	lc->ntx = 0;
	/* Done means answered and on the ring (incad_ctrl_idle()); a view
	 * published by a JOIN is older still (the fence's acquire). */
	__atomic_store_n(&incad_ctrl_done, handled, __ATOMIC_RELEASE);
}

/*
 * Before control message @seq: the data held before it must have been
 * released to the dataplane (the I/O lcore looks at its hold queue every
 * loop, so this is microseconds; bounded, should the lcore be stopping).
 * What was answered so far is published first: the data waits for it.
 */
static void
wait_hold(struct incad_lcore *lc, uint64_t seq)
{
	unsigned int waited;

	if (__atomic_load_n(&hold_low, __ATOMIC_SEQ_CST) >= seq)
		return;
	ctrl_flush(lc);
	/* Sleeping, not spinning: the I/O lcore may be on this CPU too. */
	for (waited = 0; __atomic_load_n(&hold_low, __ATOMIC_SEQ_CST) < seq &&
			 waited < HOLD_WAIT_US && !incad.quit; waited += 10)
		rte_delay_us_sleep(10);
}

void
incad_ctrl_kick(struct incad_lcore *lc)
{
	if (!queued)
		return;
	queued = false;
	/* The enqueue (the ring's tail, a release store) must be visible
	 * before 'asleep' is read, as the thread's store of 'asleep' is
	 * before its look at the ring: a store and a later load of another
	 * location may pass each other without a full fence, and a lost
	 * wake-up would cost the thread's 10 ms timeout. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
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

/* One message from the ring, in arrival order. Takes @m. */
static void
ctrl_input(struct incad_lcore *lc, struct rte_mbuf *m, uint64_t now)
{
	uint64_t seq = incad_meta(m)->ctrl_seq;

	wait_hold(lc, seq);
	incad_ctrl_handle(lc, m, now);
	handled = seq;
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
	for (done = 0; done < ms && !incad.quit && !incad.stopping; done += STALL_STEP_MS)
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

	/* Its short sleeps (a grace period, the hold queue) must stay short. */
	prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
	INCAD_LOG(ctrl, INFO, "control thread running");
	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
		stall_hook();
		n = rte_ring_sc_dequeue_burst(lc->rx_ring, (void **)b, CTRL_BURST, NULL);
		now = incad_now();
		for (i = 0; i < n; i++) {
			ctrl_input(lc, b[i], now);
			/* Never let incad_tx() flush the buffer itself: that
			 * flush would not wait for room (ctrl_flush() does). */
			if (lc->ntx >= RTE_DIM(lc->tx) / 2)
				ctrl_flush(lc);
		}
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
	/* A held message holds an mbuf: at most a quarter of the pool. */
	hold_size = rte_align32prevpow2(incad.cfg.mbufs / 4);
	if (hold_size > 4096)
		hold_size = 4096;
	if (hold_size < 64)
		hold_size = 64;
	hold = rte_zmalloc("incad_ctrl_hold", hold_size * sizeof(*hold), RTE_CACHE_LINE_SIZE);
	if (hold == NULL)
		return -ENOMEM;
	incad.table_bytes += 2 * rte_ring_get_memsize(incad.cfg.ctrl_ring_size) +
			     sizeof(incad_fences) + hold_size * sizeof(*hold);
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
	while (hold != NULL && hold_head != hold_tail)
		incad_drop_mbuf(incad.ctrl, hold[hold_head++ & (hold_size - 1)],
				INCAD_DROP_SHUTDOWN);
}

void
incad_ctrl_thread_fini(void)
{
	if (incad.ctrl == NULL)
		return;
	incad_ctrl_thread_stop();
	rte_ring_free(incad.ctrl->rx_ring);
	rte_ring_free(incad.ctrl->tx_ring);
	rte_free(hold);
	hold = NULL;
	if (efd >= 0)
		close(efd);
	efd = -1;
	rte_free(incad.ctrl);
	incad.ctrl = NULL;
}

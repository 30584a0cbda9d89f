/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * Fuzz target: incad's configuration file (daemon/config.c over
 * libconfig). The input is the file's text; it is written to a memfd and
 * loaded by path with incad_config_load(), as incad does at start-up.
 *
 * Properties held besides memory safety, defined behaviour and no leaks:
 *  - the load either succeeds silently or fails with -EINVAL (-ENOMEM) and
 *    at least one "file:line: message" line on stderr, never both and
 *    never neither;
 *  - a configuration that loads satisfies every rule docs/incad.md states
 *    (ranges, uniqueness, exactly one device per port, windows within
 *    pools, static jobs within their tenant's range and quota, ...), so
 *    the daemon can rely on it without checking again;
 *  - incad_config_free() leaves nothing behind, and may be called twice.
 *
 * Short inputs are also given to incad_parse_ipv4() as a string: an address
 * it accepts formats back (incad_ipv4_str) to one it parses to the same
 * value. With INCA_FUZZ_CONFIG_STRICT=1 it must moreover be what the text
 * says, octet by octet: that check found octets wrapping around an
 * unsigned int (fixed; tests/fuzz/regressions/config/ipv4-octet-overflow*).
 * INCA_FUZZ_CONFIG_STRICT=0 turns it off.
 *
 * Inputs containing "@include" are skipped: libconfig would open the named
 * file, and names such as /dev/zero or /dev/stdin make the parser wait or
 * read forever, which says nothing about incad (its administrator picks
 * the files).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "config.h"
#include "fuzz.h"

static int memfd = -1;
static char path[64];
static bool strict_ipv4;

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *env = getenv("INCA_FUZZ_CONFIG_STRICT");

	(void)argc;
	(void)argv;
	strict_ipv4 = env == NULL || strcmp(env, "0") != 0;
	memfd = memfd_create("inca-fuzz-config", MFD_CLOEXEC);
	if (memfd < 0) {
		perror("memfd_create");
		abort();
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", memfd);
	return 0;
}

/*
 * The value of one dotted component as written: optional blanks and sign
 * (sscanf's %u takes them), then decimal digits. -1 when there is no
 * number, a minus sign on a non-zero value, or a value above 255.
 */
static long
written_octet(const char **sp)
{
	const char *s = *sp;
	bool neg = false;
	long v = 0;
	int digits = 0;

	while (*s == ' ' || (*s >= '\t' && *s <= '\r'))
		s++;
	if (*s == '+' || *s == '-')
		neg = *s++ == '-';
	while (*s >= '0' && *s <= '9') {
		if (v <= 255)
			v = v * 10 + (*s - '0');
		s++;
		digits++;
	}
	*sp = s;
	if (digits == 0 || v > 255 || (neg && v != 0))
		return -1;
	return v;
}

static void
check_ipv4_string(const uint8_t *data, size_t size)
{
	char s[64], out[16];
	uint32_t ip, again;
	const char *p;
	int i;

	if (size >= sizeof(s))
		return;
	memcpy(s, data, size);
	s[size] = '\0';
	if (incad_parse_ipv4(s, &ip) != 0)
		return;
	incad_ipv4_str(ip, out, sizeof(out));
	FUZZ_CHECK(incad_parse_ipv4(out, &again) == 0 && again == ip,
		   "\"%s\" formats as \"%s\", which does not parse back", s, out);
	if (!strict_ipv4)
		return;
	p = s;
	for (i = 0; i < 4; i++) {
		long v = written_octet(&p);

		FUZZ_CHECK(v >= 0 && (uint32_t)v == ((ip >> (24 - 8 * i)) & 0xff),
			   "\"%s\" accepted as %s: component %d is not that octet", s, out, i);
		if (i < 3)
			p++; /* the dot sscanf matched */
	}
}

/* Every line of @msg is "file:line: message". */
static void
check_messages(const char *msg, size_t len)
{
	size_t plen = strlen(path);
	const char *p = msg;

	FUZZ_CHECK(len > 0 && msg[len - 1] == '\n', "a failed load printed nothing");
	/*
	 * Only the first line is held to the format: a message may quote a
	 * value of the file, and a string value may itself hold a newline.
	 */
	FUZZ_CHECK(strncmp(p, path, plen) == 0 && p[plen] == ':', "message without the file: %s",
		   msg);
	p += plen + 1;
	FUZZ_CHECK(*p >= '0' && *p <= '9', "message without a line number: %s", msg);
	while (*p >= '0' && *p <= '9')
		p++;
	FUZZ_CHECK(p[0] == ':' && p[1] == ' ' && p[2] != '\n', "malformed message: %s", msg);
}

static void
check_ports(const struct incad_config *c)
{
	unsigned i, k;

	FUZZ_CHECK(c->nports >= 1 && c->nports <= INCAD_MAX_PORTS, "%u ports", c->nports);
	for (i = 0; i < c->nports; i++) {
		const struct incad_port_conf *p = &c->ports[i];
		int sources = (p->device[0] != '\0') + (p->devargs[0] != '\0') +
			      (p->pci[0] != '\0');

		/* An empty string names no device; it still counts as given. */
		FUZZ_CHECK(sources <= 1, "port %u names %d devices", i, sources);
		FUZZ_CHECK(memchr(p->name, '\0', sizeof(p->name)) != NULL &&
			   memchr(p->device, '\0', sizeof(p->device)) != NULL &&
			   memchr(p->devargs, '\0', sizeof(p->devargs)) != NULL &&
			   memchr(p->pci, '\0', sizeof(p->pci)) != NULL, "unterminated string");
		FUZZ_CHECK(p->ipv4 != 0 && p->prefix_len <= 32, "port %u address", i);
		FUZZ_CHECK(p->rx_queue_size >= 64 && p->tx_queue_size >= 64 &&
			   (p->mtu == 0 || p->mtu >= 68), "port %u sizes", i);
		FUZZ_CHECK(!p->has_mac || !(p->mac[0] & 1), "port %u: multicast MAC", i);
		for (k = 0; k < i; k++) {
			FUZZ_CHECK(strcmp(c->ports[k].name, p->name) != 0, "port name twice");
			FUZZ_CHECK(c->ports[k].ipv4 != p->ipv4, "port address twice");
		}
	}
}

static void
check_tenants(const struct incad_config *c)
{
	unsigned i, k;

	FUZZ_CHECK(c->ntenants <= INCAD_MAX_TENANTS, "%u tenants", c->ntenants);
	for (i = 0; i < c->ntenants; i++) {
		const struct incad_tenant_conf *t = &c->tenants[i];

		FUZZ_CHECK(t->job_min >= 1 && t->job_min <= t->job_max, "tenant %u job_ids", i);
		FUZZ_CHECK(t->slot_quota <= INCAD_MAX_SLOTS, "tenant %u quota", i);
		FUZZ_CHECK(t->nprefixes <= INCAD_MAX_PREFIXES, "tenant %u prefixes", i);
		FUZZ_CHECK(!t->dynamic_jobs || t->has_token, "tenant %u: dynamic, no token", i);
		for (k = 0; k < t->nprefixes; k++)
			FUZZ_CHECK((t->prefixes[k].addr & ~t->prefixes[k].mask) == 0,
				   "tenant %u: prefix %u not masked", i, k);
		for (k = 0; k < i; k++) {
			const struct incad_tenant_conf *o = &c->tenants[k];

			FUZZ_CHECK(strcmp(o->name, t->name) != 0, "tenant name twice");
			FUZZ_CHECK(!o->has_token || !t->has_token || o->token != t->token ||
				   o->job_max < t->job_min || t->job_max < o->job_min,
				   "tenants %u and %u overlap", k, i);
		}
	}
}

static void
check_jobs(const struct incad_config *c)
{
	uint64_t used[INCAD_MAX_TENANTS] = {0}, total = 0;
	unsigned i, k;

	FUZZ_CHECK(c->njobs <= INCAD_MAX_STATIC_JOBS && (c->njobs == 0 || c->jobs != NULL),
		   "%u jobs", c->njobs);
	for (i = 0; i < c->njobs; i++) {
		const struct incad_job_conf *j = &c->jobs[i];
		const struct incad_tenant_conf *t;
		uint32_t full;

		FUZZ_CHECK(j->tenant < c->ntenants, "job %u: tenant %u", j->id, j->tenant);
		t = &c->tenants[j->tenant];
		FUZZ_CHECK(j->id >= t->job_min && j->id <= t->job_max, "job %u outside its tenant",
			   j->id);
		FUZZ_CHECK(j->nworkers >= 1 && j->nworkers <= INCA_MAX_WORKERS, "job %u size",
			   j->id);
		FUZZ_CHECK(j->pool_size >= 1 && j->window >= 1 && j->window <= j->pool_size,
			   "job %u: window %u pool %u", j->id, j->window, j->pool_size);
		FUZZ_CHECK(j->max_elems >= 1 && j->max_elems <= c->max_elems, "job %u max_elems",
			   j->id);
		FUZZ_CHECK(j->dtypes != 0 && (j->dtypes & ~((1u << INCA_DTYPE_COUNT) - 1)) == 0 &&
			   j->ops != 0 &&
			   (j->ops & ~0x7u) == 0, "job %u dtypes 0x%x ops 0x%x", j->id, j->dtypes,
			   j->ops);
		full = j->nworkers == 32 ? UINT32_MAX : (UINT32_C(1) << j->nworkers) - 1;
		FUZZ_CHECK((j->fixed & ~full) == 0, "job %u: fixed rank beyond nworkers", j->id);
		for (k = 0; k < INCA_MAX_WORKERS; k++)
			if (j->fixed & (UINT32_C(1) << k))
				FUZZ_CHECK(j->members[k].rank == k, "job %u: member %u", j->id, k);
		for (k = 0; k < i; k++)
			FUZZ_CHECK(c->jobs[k].id != j->id, "job %u twice", j->id);
		used[j->tenant] += j->pool_size;
		total += j->pool_size;
	}
	for (i = 0; i < c->ntenants; i++)
		FUZZ_CHECK(used[i] <= c->tenants[i].slot_quota, "tenant %u above its quota", i);
	FUZZ_CHECK(total <= c->max_slots, "static jobs above max_slots");
}

static void
check_config(const struct incad_config *c)
{
	FUZZ_CHECK(strcmp(c->path, path) == 0, "path");
	FUZZ_CHECK(c->mode == INCAD_MODE_AGGREGATOR || c->mode == INCAD_MODE_SWITCH, "mode");
	FUZZ_CHECK(c->idle == INCAD_IDLE_ADAPTIVE || c->idle == INCAD_IDLE_POLL, "idle");
	FUZZ_CHECK(c->inca_port >= 1, "port 0");
	FUZZ_CHECK(c->workers >= 1 && c->workers <= INCAD_MAX_LCORES, "workers %u", c->workers);
	FUZZ_CHECK(c->ring_size >= 64 && (c->ring_size & (c->ring_size - 1)) == 0,
		   "ring_size %u", c->ring_size);
	FUZZ_CHECK(c->mbufs >= 511, "mbufs %u", c->mbufs);
	FUZZ_CHECK(c->pool_size >= 1 && c->window >= 1 && c->window <= c->pool_size,
		   "default window %u pool %u", c->window, c->pool_size);
	FUZZ_CHECK(c->max_elems >= 1 && c->max_elems <= INCA_MAX_ELEMS, "max_elems %u",
		   c->max_elems);
	FUZZ_CHECK(c->max_slots >= 1 && c->max_slots <= INCAD_MAX_SLOTS, "max_slots");
	FUZZ_CHECK(c->hb_ms >= 1 && (c->evict_ms == 0 || c->evict_ms > c->hb_ms),
		   "heartbeat %u evict %u", c->hb_ms, c->evict_ms);
	FUZZ_CHECK(c->idle_max_sleep_us >= 1 && c->idle_empty_polls >= 1, "idle values");
	FUZZ_CHECK(c->mac_table_size >= 16 && c->mac_age_s >= 1, "switch values");
	FUZZ_CHECK(incad_config_max_frame(c) <= 14 + 4 + 60 + 8 + INCA_HDR_LEN +
		   INCA_MAX_PAYLOAD_BYTES, "max frame");
	check_ports(c);
	check_tenants(c);
	check_jobs(c);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct incad_config *c;
	FILE *mem, *saved;
	char *msg = NULL;
	size_t msg_len = 0;
	int ret;

	check_ipv4_string(data, size);
	if (memmem(data, size, "@include", 8) != NULL)
		return 0;
	if (ftruncate(memfd, 0) != 0 ||
	    (size > 0 && pwrite(memfd, data, size, 0) != (ssize_t)size))
		abort();

	/* The struct is large; on the heap, ASan sees accesses beyond it. */
	c = malloc(sizeof(*c));
	mem = open_memstream(&msg, &msg_len);
	if (c == NULL || mem == NULL)
		abort();
	/*
	 * config.c reports through the stderr stream: capture it to check the
	 * messages. Sanitizer reports write to file descriptor 2 and are not
	 * affected.
	 */
	saved = stderr;
	stderr = mem;
	ret = incad_config_load(path, c);
	stderr = saved;
	fclose(mem);

	if (ret == 0) {
		FUZZ_CHECK(msg_len == 0, "a load that succeeded printed: %s", msg);
		check_config(c);
	} else {
		FUZZ_CHECK(ret == -EINVAL || ret == -ENOMEM, "load returned %d", ret);
		check_messages(msg, msg_len);
		FUZZ_CHECK(c->jobs == NULL && c->njobs == 0, "a failed load kept its jobs");
	}
	incad_config_free(c);
	FUZZ_CHECK(c->jobs == NULL && c->njobs == 0, "incad_config_free left jobs");
	incad_config_free(c);
	free(c);
	free(msg);
	return 0;
}

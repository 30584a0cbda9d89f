/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * The one module that reads incad's configuration file. Everything is
 * checked here, before EAL starts, so that a mistake costs a line on stderr
 * rather than a half-initialised daemon. Errors are collected, not
 * stopped at: an operator fixing a file sees all of its problems at once.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libconfig.h>

#include "config.h"

struct parser {
	const char *path;
	unsigned int errors;
};

static void __attribute__((format(printf, 3, 4)))
perr(struct parser *p, const config_setting_t *s, const char *fmt, ...)
{
	const char *file = s ? config_setting_source_file(s) : NULL;
	unsigned int line = s ? config_setting_source_line(s) : 0;
	va_list ap;

	fprintf(stderr, "%s:%u: ", file ? file : p->path, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	p->errors++;
}

/* Reject keys a group may not have: a typo must not silently fall back. */
static void
check_keys(struct parser *p, const config_setting_t *g, const char *what,
	   const char *const *allowed)
{
	int i, n = config_setting_length(g);
	const char *const *a;

	for (i = 0; i < n; i++) {
		const config_setting_t *s = config_setting_get_elem(g, i);
		const char *name = config_setting_name(s);

		if (name == NULL)
			continue;
		for (a = allowed; *a != NULL; a++)
			if (strcmp(*a, name) == 0)
				break;
		if (*a == NULL)
			perr(p, s, "unknown key '%s' in %s", name, what);
	}
}

static const config_setting_t *
member_of(struct parser *p, const config_setting_t *g, const char *name, int type,
	  bool required)
{
	const config_setting_t *s = config_setting_get_member(g, name);
	int t;

	if (s == NULL) {
		if (required)
			perr(p, g, "missing key '%s'", name);
		return NULL;
	}
	t = config_setting_type(s);
	if (type == CONFIG_TYPE_INT && (t == CONFIG_TYPE_INT || t == CONFIG_TYPE_INT64))
		return s;
	if (type == CONFIG_TYPE_LIST && (t == CONFIG_TYPE_LIST || t == CONFIG_TYPE_ARRAY))
		return s;
	if (t != type) {
		static const char *const names[] = {
			[CONFIG_TYPE_GROUP] = "a group", [CONFIG_TYPE_INT] = "an integer",
			[CONFIG_TYPE_INT64] = "an integer", [CONFIG_TYPE_FLOAT] = "a number",
			[CONFIG_TYPE_STRING] = "a string", [CONFIG_TYPE_BOOL] = "true or false",
			[CONFIG_TYPE_ARRAY] = "a list", [CONFIG_TYPE_LIST] = "a list",
		};
		perr(p, s, "'%s' must be %s", name, names[type]);
		return NULL;
	}
	return s;
}

static bool
setting_int(struct parser *p, const config_setting_t *s, const char *name, long long min,
	    long long max, long long *out)
{
	long long v;

	if (config_setting_type(s) == CONFIG_TYPE_INT64)
		v = config_setting_get_int64(s);
	else if (config_setting_type(s) == CONFIG_TYPE_INT &&
		 config_setting_get_format(s) == CONFIG_FORMAT_HEX)
		/* libconfig stores 0x80000000..0xffffffff as negative ints;
		 * written in hex they mean the unsigned value (tokens). */
		v = (uint32_t)config_setting_get_int(s);
	else if (config_setting_type(s) == CONFIG_TYPE_INT)
		v = config_setting_get_int(s);
	else {
		perr(p, s, "'%s' must be an integer", name);
		return false;
	}
	if (v < min || v > max) {
		perr(p, s, "'%s' = %lld is out of range [%lld, %lld]", name, v, min, max);
		return false;
	}
	*out = v;
	return true;
}

/* Read an optional integer member into *out, leaving it unchanged if absent. */
static void
get_uint(struct parser *p, const config_setting_t *g, const char *name, long long min,
	 long long max, bool required, void *out, size_t size)
{
	const config_setting_t *s = member_of(p, g, name, CONFIG_TYPE_INT, required);
	long long v;

	if (s == NULL || !setting_int(p, s, name, min, max, &v))
		return;
	switch (size) {
	case 1:
		*(uint8_t *)out = (uint8_t)v;
		break;
	case 2:
		*(uint16_t *)out = (uint16_t)v;
		break;
	default:
		*(uint32_t *)out = (uint32_t)v;
		break;
	}
}

#define GET_UINT(p, g, name, min, max, req, field) \
	get_uint(p, g, name, min, max, req, &(field), sizeof(field))

static const char *
get_string(struct parser *p, const config_setting_t *g, const char *name, bool required,
	   char *buf, size_t len)
{
	const config_setting_t *s = member_of(p, g, name, CONFIG_TYPE_STRING, required);
	const char *v;

	if (s == NULL)
		return NULL;
	v = config_setting_get_string(s);
	if (buf != NULL) {
		if (strlen(v) >= len) {
			perr(p, s, "'%s' is longer than %zu characters", name, len - 1);
			return NULL;
		}
		strcpy(buf, v);
	}
	return v;
}

static void
get_bool(struct parser *p, const config_setting_t *g, const char *name, bool *out)
{
	const config_setting_t *s = member_of(p, g, name, CONFIG_TYPE_BOOL, false);

	if (s != NULL)
		*out = config_setting_get_bool(s);
}

/*
 * Strict dotted quad: four groups of one to three decimal digits, each at
 * most 255, nothing else. sscanf("%u") would accept signs, spaces and
 * values that wrap around an unsigned int (4294967306 reads as 10).
 */
int
incad_parse_ipv4(const char *s, uint32_t *ip)
{
	uint32_t v = 0;
	int i;

	for (i = 0; i < 4; i++) {
		unsigned int octet = 0, digits = 0;

		while (*s >= '0' && *s <= '9' && digits < 4) {
			octet = octet * 10 + (unsigned int)(*s - '0');
			s++;
			digits++;
		}
		if (digits == 0 || digits > 3 || octet > 255)
			return -EINVAL;
		v = v << 8 | octet;
		if (i < 3 && *s++ != '.')
			return -EINVAL;
	}
	if (*s != '\0')
		return -EINVAL;
	*ip = v;
	return 0;
}

const char *
incad_ipv4_str(uint32_t ip, char *buf, size_t len)
{
	snprintf(buf, len, "%u.%u.%u.%u", ip >> 24, (ip >> 16) & 0xff, (ip >> 8) & 0xff,
		 ip & 0xff);
	return buf;
}

/* "a.b.c.d" or "a.b.c.d/len"; @def_len when no length is given. */
static int
parse_prefix(const char *s, unsigned int def_len, uint32_t *ip, uint8_t *len)
{
	char buf[32];
	char *slash, *end;
	unsigned long l = def_len;

	if (strlen(s) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, s);
	slash = strchr(buf, '/');
	if (slash != NULL) {
		*slash = '\0';
		errno = 0;
		l = strtoul(slash + 1, &end, 10);
		if (errno != 0 || *end != '\0' || end == slash + 1 || l > 32)
			return -EINVAL;
	}
	if (incad_parse_ipv4(buf, ip) != 0)
		return -EINVAL;
	*len = (uint8_t)l;
	return 0;
}

static uint32_t
prefix_mask(unsigned int len)
{
	return len == 0 ? 0 : ~0u << (32 - len);
}

static int
hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Strict "xx:xx:xx:xx:xx:xx": one or two hex digits per byte, nothing else. */
static int
parse_mac(const char *s, uint8_t mac[6])
{
	int i;

	for (i = 0; i < 6; i++) {
		int hi = hex_digit(s[0]), lo;

		if (hi < 0)
			return -EINVAL;
		lo = hex_digit(s[1]);
		if (lo >= 0) {
			mac[i] = (uint8_t)(hi << 4 | lo);
			s += 2;
		} else {
			mac[i] = (uint8_t)hi;
			s += 1;
		}
		if (i < 5 && *s++ != ':')
			return -EINVAL;
	}
	if (*s != '\0')
		return -EINVAL;
	/* A multicast address cannot be a port's own. */
	if (mac[0] & 1)
		return -EINVAL;
	return 0;
}

static void
parse_roce(struct parser *p, const config_setting_t *g, struct incad_config *c)
{
	static const char *const keys[] = {"enabled", "qpn", "qkey", NULL};

	check_keys(p, g, "roce", keys);
	get_bool(p, g, "enabled", &c->roce);
	GET_UINT(p, g, "qpn", INCA_ROCE_QPN_MIN, INCA_ROCE_QPN_MAX, false, c->roce_qpn);
	/* Bit 31 marks a controlled Q_Key, which only privileged QPs may send. */
	GET_UINT(p, g, "qkey", 0, 0x7fffffff, false, c->roce_qkey);
}

static void
parse_idle(struct parser *p, const config_setting_t *g, struct incad_config *c)
{
	static const char *const keys[] = {"policy", "max_sleep_us", "empty_polls", "hot_us",
					   NULL};
	const config_setting_t *s;
	const char *v;

	check_keys(p, g, "idle", keys);
	v = get_string(p, g, "policy", false, NULL, 0);
	if (v != NULL) {
		if (strcmp(v, "adaptive") == 0)
			c->idle = INCAD_IDLE_ADAPTIVE;
		else if (strcmp(v, "poll") == 0)
			c->idle = INCAD_IDLE_POLL;
		else {
			s = config_setting_get_member(g, "policy");
			perr(p, s, "idle policy must be \"adaptive\" or \"poll\", not \"%s\"", v);
		}
	}
	GET_UINT(p, g, "max_sleep_us", 1, 1000000, false, c->idle_max_sleep_us);
	GET_UINT(p, g, "empty_polls", 1, 1000000, false, c->idle_empty_polls);
	GET_UINT(p, g, "hot_us", 0, 1000000, false, c->idle_hot_us);
}

static void
parse_ports(struct parser *p, const config_setting_t *l, struct incad_config *c)
{
	static const char *const keys[] = {"name", "device", "devargs", "pci", "ipv4", "mac",
					   "rx_queue_size", "tx_queue_size", "mtu", NULL};
	int i, n = config_setting_length(l);
	unsigned int j;

	if (n == 0)
		perr(p, l, "'ports' must list at least one port");
	if (n > INCAD_MAX_PORTS) {
		perr(p, l, "at most %d ports", INCAD_MAX_PORTS);
		return;
	}
	for (i = 0; i < n; i++) {
		const config_setting_t *g = config_setting_get_elem(l, i);
		struct incad_port_conf *pc = &c->ports[c->nports];
		unsigned int sources = 0;
		const char *v;

		if (config_setting_type(g) != CONFIG_TYPE_GROUP) {
			perr(p, g, "each port must be a group { ... }");
			continue;
		}
		memset(pc, 0, sizeof(*pc));
		pc->line = config_setting_source_line(g);
		pc->rx_queue_size = 1024;
		pc->tx_queue_size = 1024;
		check_keys(p, g, "a port", keys);
		get_string(p, g, "name", true, pc->name, sizeof(pc->name));
		if (get_string(p, g, "device", false, pc->device, sizeof(pc->device)))
			sources++;
		if (get_string(p, g, "devargs", false, pc->devargs, sizeof(pc->devargs)))
			sources++;
		if (get_string(p, g, "pci", false, pc->pci, sizeof(pc->pci)))
			sources++;
		if (sources != 1)
			perr(p, g, "port '%s' needs exactly one of device, devargs or pci",
			     pc->name);
		v = get_string(p, g, "ipv4", true, NULL, 0);
		if (v != NULL && (parse_prefix(v, 32, &pc->ipv4, &pc->prefix_len) != 0 ||
				  pc->ipv4 == 0))
			perr(p, config_setting_get_member(g, "ipv4"),
			     "'%s' is not an IPv4 address (a.b.c.d or a.b.c.d/len)", v);
		v = get_string(p, g, "mac", false, NULL, 0);
		if (v != NULL) {
			if (parse_mac(v, pc->mac) != 0)
				perr(p, config_setting_get_member(g, "mac"),
				     "'%s' is not a unicast MAC address", v);
			else
				pc->has_mac = true;
		}
		GET_UINT(p, g, "rx_queue_size", 64, 32768, false, pc->rx_queue_size);
		GET_UINT(p, g, "tx_queue_size", 64, 32768, false, pc->tx_queue_size);
		GET_UINT(p, g, "mtu", 68, 16000, false, pc->mtu);
		for (j = 0; j < c->nports; j++) {
			if (strcmp(c->ports[j].name, pc->name) == 0)
				perr(p, g, "port name '%s' is used twice", pc->name);
			if (c->ports[j].ipv4 == pc->ipv4 && pc->ipv4 != 0)
				perr(p, g, "port '%s' repeats the address of port '%s'", pc->name,
				     c->ports[j].name);
		}
		c->nports++;
	}
}

static void
parse_sources(struct parser *p, const config_setting_t *l, struct incad_tenant_conf *t)
{
	int i, n = config_setting_length(l);

	if (n > INCAD_MAX_PREFIXES) {
		perr(p, l, "at most %d source prefixes", INCAD_MAX_PREFIXES);
		return;
	}
	for (i = 0; i < n; i++) {
		const config_setting_t *s = config_setting_get_elem(l, i);
		const char *v = config_setting_get_string(s);
		uint32_t ip;
		uint8_t len;

		if (v == NULL || parse_prefix(v, 32, &ip, &len) != 0) {
			perr(p, s, "source prefixes are strings \"a.b.c.d/len\"");
			continue;
		}
		t->prefixes[t->nprefixes].mask = prefix_mask(len);
		t->prefixes[t->nprefixes].addr = ip & prefix_mask(len);
		t->nprefixes++;
	}
}

static void
parse_vlans(struct parser *p, const config_setting_t *l, struct incad_tenant_conf *t)
{
	int i, n = config_setting_length(l);
	long long v;

	if (n > INCAD_MAX_VLANS) {
		perr(p, l, "at most %d VLANs", INCAD_MAX_VLANS);
		return;
	}
	for (i = 0; i < n; i++) {
		if (!setting_int(p, config_setting_get_elem(l, i), "vlans", 0, 4094, &v))
			continue;
		t->vlans[t->nvlans++] = (uint16_t)v;
	}
}

/* job_key = "hex": the key of the tenant's per-job tokens. */
static void
parse_job_key(struct parser *p, const config_setting_t *g, struct incad_tenant_conf *t)
{
	const config_setting_t *s = member_of(p, g, "job_key", CONFIG_TYPE_STRING, false);
	const char *v;
	size_t n, i;

	if (s == NULL)
		return;
	v = config_setting_get_string(s);
	n = strlen(v);
	if (n % 2 != 0 || n / 2 < INCAD_JOB_KEY_MIN || n / 2 > INCAD_JOB_KEY_MAX ||
	    strspn(v, "0123456789abcdefABCDEF") != n) {
		perr(p, s, "'job_key' must be %d to %d bytes in hex (%d to %d hex digits)",
		     INCAD_JOB_KEY_MIN, INCAD_JOB_KEY_MAX, 2 * INCAD_JOB_KEY_MIN,
		     2 * INCAD_JOB_KEY_MAX);
		return;
	}
	for (i = 0; i < n / 2; i++) {
		char byte[3] = {v[2 * i], v[2 * i + 1], 0};

		t->job_key[i] = (uint8_t)strtoul(byte, NULL, 16);
	}
	t->job_key_len = (unsigned int)(n / 2);
}

static void
parse_tenants(struct parser *p, const config_setting_t *l, struct incad_config *c)
{
	static const char *const keys[] = {"name", "token", "job_ids", "slot_quota",
					   "dynamic_jobs", "sources", "vlans", "job_key", "rate_mbps",
					   "burst_kb", "priority", "control_rate", "control_burst",
					   NULL};
	int i, n = config_setting_length(l);
	unsigned int j;

	if (n > INCAD_MAX_TENANTS) {
		perr(p, l, "at most %d tenants", INCAD_MAX_TENANTS);
		return;
	}
	for (i = 0; i < n; i++) {
		const config_setting_t *g = config_setting_get_elem(l, i);
		struct incad_tenant_conf *t = &c->tenants[c->ntenants];
		const config_setting_t *s;

		if (config_setting_type(g) != CONFIG_TYPE_GROUP) {
			perr(p, g, "each tenant must be a group { ... }");
			continue;
		}
		memset(t, 0, sizeof(*t));
		t->job_min = 1;
		t->job_max = 65535;
		t->slot_quota = c->max_slots;
		check_keys(p, g, "a tenant", keys);
		get_string(p, g, "name", true, t->name, sizeof(t->name));
		t->has_token = config_setting_get_member(g, "token") != NULL;
		GET_UINT(p, g, "token", 0, UINT32_MAX, false, t->token);
		s = member_of(p, g, "job_ids", CONFIG_TYPE_LIST, false);
		if (s != NULL) {
			long long lo, hi;

			if (config_setting_length(s) != 2 ||
			    !setting_int(p, config_setting_get_elem(s, 0), "job_ids", 1, 65535,
					 &lo) ||
			    !setting_int(p, config_setting_get_elem(s, 1), "job_ids", 1, 65535,
					 &hi) ||
			    lo > hi)
				perr(p, s, "'job_ids' must be [first, last] with "
					   "1 <= first <= last <= 65535");
			else {
				t->job_min = (uint16_t)lo;
				t->job_max = (uint16_t)hi;
			}
		}
		GET_UINT(p, g, "slot_quota", 0, INCAD_MAX_SLOTS, false, t->slot_quota);
		t->burst_kb = 512;
		GET_UINT(p, g, "rate_mbps", 0, 1000000, false, t->rate_mbps);
		GET_UINT(p, g, "burst_kb", 1, 1048576, false, t->burst_kb);
		GET_UINT(p, g, "priority", 0, INCAD_PRIO_CLASSES - 1, false, t->priority);
		t->ctrl_burst = 64;
		GET_UINT(p, g, "control_rate", 0, 10000000, false, t->ctrl_rate);
		GET_UINT(p, g, "control_burst", 1, 1000000, false, t->ctrl_burst);
		get_bool(p, g, "dynamic_jobs", &t->dynamic_jobs);
		parse_job_key(p, g, t);
		if (t->dynamic_jobs && !t->has_token && t->job_key_len == 0)
			perr(p, g, "tenant '%s': dynamic_jobs needs the tenant's token or a job_key",
			     t->name);
		s = member_of(p, g, "sources", CONFIG_TYPE_LIST, false);
		if (s != NULL)
			parse_sources(p, s, t);
		s = member_of(p, g, "vlans", CONFIG_TYPE_LIST, false);
		if (s != NULL)
			parse_vlans(p, s, t);
		for (j = 0; j < c->ntenants; j++) {
			const struct incad_tenant_conf *o = &c->tenants[j];

			if (strcmp(o->name, t->name) == 0)
				perr(p, g, "tenant name '%s' is used twice", t->name);
			/* A JOIN is matched to a tenant by token and job id: two
			 * tenants may share neither. */
			if (o->has_token && t->has_token && o->token == t->token &&
			    o->job_min <= t->job_max &&
			    t->job_min <= o->job_max)
				perr(p, g, "tenants '%s' and '%s' have the same token and "
					   "overlapping job_ids", o->name, t->name);
		}
		c->ntenants++;
	}
}

static uint16_t
parse_names(struct parser *p, const config_setting_t *l, const char *what,
	    const char *(*name_fn)(unsigned), unsigned int count)
{
	int i, n = config_setting_length(l);
	uint16_t mask = 0;
	unsigned int k;

	for (i = 0; i < n; i++) {
		const config_setting_t *s = config_setting_get_elem(l, i);
		const char *v = config_setting_get_string(s);

		if (v == NULL) {
			perr(p, s, "%s are given as strings", what);
			continue;
		}
		for (k = 0; k < count; k++)
			if (strcmp(v, name_fn(k)) == 0)
				break;
		if (k == count)
			perr(p, s, "unknown %s '%s'", what, v);
		else
			mask |= 1u << k;
	}
	if (n == 0)
		perr(p, l, "the list of %s is empty", what);
	return mask;
}

static void
parse_members(struct parser *p, const config_setting_t *l, struct incad_job_conf *j)
{
	static const char *const keys[] = {"rank", "ipv4", "udp_port", NULL};
	int i, n = config_setting_length(l);

	for (i = 0; i < n; i++) {
		const config_setting_t *g = config_setting_get_elem(l, i);
		struct incad_member_conf mc = {0};
		uint8_t len;
		const char *v;

		if (config_setting_type(g) != CONFIG_TYPE_GROUP) {
			perr(p, g, "each member must be a group { rank = ...; ipv4 = ...; }");
			continue;
		}
		check_keys(p, g, "a member", keys);
		mc.rank = UINT16_MAX;
		GET_UINT(p, g, "rank", 0, INCA_MAX_WORKERS - 1, true, mc.rank);
		v = get_string(p, g, "ipv4", true, NULL, 0);
		if (v != NULL && (parse_prefix(v, 32, &mc.ip, &len) != 0 || len != 32))
			perr(p, config_setting_get_member(g, "ipv4"),
			     "'%s' is not an IPv4 address", v);
		GET_UINT(p, g, "udp_port", 0, 65535, false, mc.udp_port);
		if (mc.rank >= INCA_MAX_WORKERS)
			continue;
		if (mc.rank >= j->nworkers)
			perr(p, g, "rank %u is not below nworkers %u", mc.rank, j->nworkers);
		else if (j->fixed & (1u << mc.rank))
			perr(p, g, "rank %u is listed twice", mc.rank);
		j->fixed |= 1u << mc.rank;
		j->members[mc.rank] = mc;
	}
}

/* A job's 'parent' group: where its partial sums go (a tree's leaf). */
static void
parse_parent(struct parser *p, const config_setting_t *g, const struct incad_config *c,
	     struct incad_job_conf *j)
{
	static const char *const keys[] = {"address", "udp_port", "job", "token", "rank",
					   "nworkers", "via", "mac", NULL};
	char via[INCAD_NAME_LEN] = "";
	const char *v;
	unsigned int k;
	uint8_t len;

	check_keys(p, g, "a job's parent", keys);
	j->has_parent = true;
	j->parent_udp_port = c->inca_port;
	j->parent_job = j->id;
	j->parent_token = j->token;
	j->parent_rank = UINT16_MAX;
	j->parent_via = -1;
	v = get_string(p, g, "address", true, NULL, 0);
	if (v != NULL && (parse_prefix(v, 32, &j->parent_ip, &len) != 0 || len != 32 ||
			  j->parent_ip == 0))
		perr(p, config_setting_get_member(g, "address"), "'%s' is not an IPv4 address",
		     v);
	GET_UINT(p, g, "udp_port", 1, 65535, false, j->parent_udp_port);
	GET_UINT(p, g, "job", 1, 65535, false, j->parent_job);
	GET_UINT(p, g, "token", 0, UINT32_MAX, false, j->parent_token);
	GET_UINT(p, g, "nworkers", 1, INCA_MAX_WORKERS, true, j->parent_nworkers);
	GET_UINT(p, g, "rank", 0, INCA_MAX_WORKERS - 1, true, j->parent_rank);
	if (j->parent_rank < INCA_MAX_WORKERS && j->parent_nworkers > 0 &&
	    j->parent_rank >= j->parent_nworkers)
		perr(p, g, "job %u: parent rank %u is not below the parent's nworkers %u", j->id,
		     j->parent_rank, j->parent_nworkers);
	if (get_string(p, g, "via", false, via, sizeof(via)) != NULL) {
		for (k = 0; k < c->nports; k++)
			if (strcmp(c->ports[k].name, via) == 0)
				break;
		if (k == c->nports)
			perr(p, config_setting_get_member(g, "via"), "no port named '%s'", via);
		j->parent_via = (int)k;
	}
	for (k = 0; k < c->nports && j->parent_via < 0; k++) {
		uint32_t mask = prefix_mask(c->ports[k].prefix_len);

		if ((c->ports[k].ipv4 & mask) == (j->parent_ip & mask))
			j->parent_via = (int)k;
	}
	for (k = 0; k < c->nports; k++)
		if (c->ports[k].ipv4 == j->parent_ip)
			perr(p, g, "job %u: the parent %s is incad's own address", j->id, v);
	if (j->parent_via < 0 && v != NULL)
		perr(p, g, "job %u: no port's subnet holds the parent address %s: name the "
		     "port that reaches it with 'via'", j->id, v);
	v = get_string(p, g, "mac", false, NULL, 0);
	if (v != NULL) {
		if (parse_mac(v, j->parent_mac) != 0)
			perr(p, config_setting_get_member(g, "mac"),
			     "'%s' is not a unicast MAC address", v);
		j->parent_has_mac = true;
	}
}

static void
parse_jobs(struct parser *p, const config_setting_t *l, struct incad_config *c)
{
	static const char *const keys[] = {"id", "tenant", "token", "nworkers", "pool_size",
					   "max_elems", "window", "dtypes", "ops", "members",
					   "parent", "priority", NULL};
	int i, n = config_setting_length(l);
	unsigned int k;

	if (n > INCAD_MAX_STATIC_JOBS) {
		perr(p, l, "at most %d static jobs", INCAD_MAX_STATIC_JOBS);
		return;
	}
	c->jobs = calloc(n > 0 ? n : 1, sizeof(*c->jobs));
	if (c->jobs == NULL) {
		perr(p, l, "out of memory");
		return;
	}
	for (i = 0; i < n; i++) {
		const config_setting_t *g = config_setting_get_elem(l, i);
		struct incad_job_conf *j = &c->jobs[c->njobs];
		char tenant[INCAD_NAME_LEN] = "";
		const config_setting_t *s;

		if (config_setting_type(g) != CONFIG_TYPE_GROUP) {
			perr(p, g, "each job must be a group { ... }");
			continue;
		}
		check_keys(p, g, "a job", keys);
		j->pool_size = c->pool_size;
		j->max_elems = c->max_elems;
		j->window = 0;
		j->dtypes = (1u << INCA_DTYPE_COUNT) - 1;
		j->ops = (1u << INCA_OP_COUNT) - 1;
		GET_UINT(p, g, "id", 1, 65535, true, j->id);
		GET_UINT(p, g, "nworkers", 1, INCA_MAX_WORKERS, true, j->nworkers);
		GET_UINT(p, g, "pool_size", 1, 65535, false, j->pool_size);
		GET_UINT(p, g, "max_elems", 1, c->max_elems, false, j->max_elems);
		GET_UINT(p, g, "window", 1, 65535, false, j->window);
		if (j->window == 0)
			j->window = c->window < j->pool_size ? c->window : j->pool_size;
		if (j->window > j->pool_size)
			perr(p, g, "job %u: window %u is larger than pool_size %u", j->id,
			     j->window, j->pool_size);
		s = member_of(p, g, "dtypes", CONFIG_TYPE_LIST, false);
		if (s != NULL)
			j->dtypes = parse_names(p, s, "dtypes", inca_dtype_name, INCA_DTYPE_COUNT);
		s = member_of(p, g, "ops", CONFIG_TYPE_LIST, false);
		if (s != NULL)
			j->ops = parse_names(p, s, "ops", inca_op_name, INCA_OP_COUNT);
		s = member_of(p, g, "members", CONFIG_TYPE_LIST, false);
		if (s != NULL && j->nworkers > 0)
			parse_members(p, s, j);
		if (get_string(p, g, "tenant", true, tenant, sizeof(tenant)) != NULL) {
			for (k = 0; k < c->ntenants; k++)
				if (strcmp(c->tenants[k].name, tenant) == 0)
					break;
			if (k == c->ntenants)
				perr(p, g, "job %u: no tenant named '%s'", j->id, tenant);
			else if (j->id != 0 && (j->id < c->tenants[k].job_min ||
						j->id > c->tenants[k].job_max))
				perr(p, g, "job %u is outside tenant '%s''s job_ids [%u, %u]",
				     j->id, tenant, c->tenants[k].job_min, c->tenants[k].job_max);
			j->tenant = k;
			if (k < c->ntenants) {
				j->token = c->tenants[k].token;
				j->priority = c->tenants[k].priority;
				if (!c->tenants[k].has_token &&
				    config_setting_get_member(g, "token") == NULL)
					perr(p, g, "job %u needs a token (its tenant has none)",
					     j->id);
			}
		}
		GET_UINT(p, g, "token", 0, UINT32_MAX, false, j->token);
		GET_UINT(p, g, "priority", 0, INCAD_PRIO_CLASSES - 1, false, j->priority);
		s = member_of(p, g, "parent", CONFIG_TYPE_GROUP, false);
		if (s != NULL)
			parse_parent(p, s, c, j);
		for (k = 0; k < c->njobs; k++)
			if (c->jobs[k].id == j->id)
				perr(p, g, "job %u is declared twice", j->id);
		c->njobs++;
	}
}

/*
 * arbitration = { capacity_mbps = N; burst_kb = N; interval_ms = N;
 * policy = "strict" | "wrr"; weights = [w0, w1, ...]; } (weights by
 * priority, wrr only).
 */
static void
parse_arbitration(struct parser *p, const config_setting_t *g, struct incad_config *c)
{
	static const char *const keys[] = {"capacity_mbps", "burst_kb", "interval_ms", "policy",
					   "weights", NULL};
	struct incad_arb_conf *a = &c->arb;
	const config_setting_t *w;
	const char *v;
	int i, n;

	check_keys(p, g, "arbitration", keys);
	GET_UINT(p, g, "capacity_mbps", 1, 1000000, true, a->capacity_mbps);
	GET_UINT(p, g, "burst_kb", 1, 1048576, false, a->burst_kb);
	/* The I/O lcore's timers run every 10 ms: no finer than that. */
	GET_UINT(p, g, "interval_ms", 10, 1000, false, a->interval_ms);
	v = get_string(p, g, "policy", true, NULL, 0);
	if (v != NULL) {
		if (strcmp(v, "strict") == 0)
			a->policy = INCAD_ARB_STRICT;
		else if (strcmp(v, "wrr") == 0)
			a->policy = INCAD_ARB_WRR;
		else
			perr(p, config_setting_get_member(g, "policy"),
			     "arbitration policy must be \"strict\" or \"wrr\", not \"%s\"", v);
	}
	w = member_of(p, g, "weights", CONFIG_TYPE_LIST, false);
	if (w == NULL) {
		if (a->policy == INCAD_ARB_WRR && config_setting_get_member(g, "weights") == NULL)
			perr(p, g, "arbitration policy \"wrr\" needs 'weights' = [w0, w1, ...], "
				   "one per priority from 0");
		return;
	}
	if (a->policy == INCAD_ARB_STRICT)
		perr(p, w, "'weights' only apply to policy \"wrr\"");
	n = config_setting_length(w);
	if (n < 1 || n > INCAD_PRIO_CLASSES) {
		perr(p, w, "'weights' must have 1 to %d entries (priorities 0..%d)",
		     INCAD_PRIO_CLASSES, INCAD_PRIO_CLASSES - 1);
		return;
	}
	for (i = 0; i < n; i++) {
		long long x;

		if (setting_int(p, config_setting_get_elem(w, i), "weights", 1, 1000, &x))
			a->weights[i] = (uint32_t)x;
	}
	a->nweights = (unsigned int)n;
}

/* With wrr, every priority a tenant or a static job uses needs a weight. */
static void
check_weights(struct parser *p, const config_setting_t *root, const struct incad_config *c)
{
	const config_setting_t *g = config_setting_get_member(root, "arbitration");
	unsigned int i;

	if (c->arb.policy != INCAD_ARB_WRR || c->arb.nweights == 0)
		return;
	for (i = 0; i < c->ntenants; i++)
		if (c->tenants[i].priority >= c->arb.nweights)
			perr(p, g, "arbitration: tenant '%s' has priority %u, which 'weights' "
				   "(%u entries) gives no weight", c->tenants[i].name,
			     c->tenants[i].priority, c->arb.nweights);
	for (i = 0; i < c->njobs; i++)
		if (c->jobs[i].priority >= c->arb.nweights)
			perr(p, g, "arbitration: job %u has priority %u, which 'weights' "
				   "(%u entries) gives no weight", c->jobs[i].id,
			     c->jobs[i].priority, c->arb.nweights);
}

/* Checks across sections, once everything is read. */
static void
check_totals(struct parser *p, const config_setting_t *root, struct incad_config *c)
{
	uint64_t used[INCAD_MAX_TENANTS] = {0};
	uint64_t total = 0;
	unsigned int i;

	if (c->window > c->pool_size)
		perr(p, config_setting_get_member(root, "aggregation"),
		     "default window %u is larger than the default pool_size %u", c->window,
		     c->pool_size);
	if (c->evict_ms <= c->hb_ms)
		perr(p, config_setting_get_member(root, "timeouts"),
		     "evict_ms (%u) must be larger than heartbeat_ms (%u)", c->evict_ms,
		     c->hb_ms);
	for (i = 0; i < c->njobs; i++) {
		if (c->jobs[i].tenant < c->ntenants)
			used[c->jobs[i].tenant] += c->jobs[i].pool_size;
		total += c->jobs[i].pool_size;
	}
	for (i = 0; i < c->ntenants; i++)
		if (used[i] > c->tenants[i].slot_quota)
			perr(p, config_setting_get_member(root, "tenants"),
			     "tenant '%s': its static jobs take %llu slots, above its "
			     "slot_quota %u", c->tenants[i].name, (unsigned long long)used[i],
			     c->tenants[i].slot_quota);
	if (total > c->max_slots)
		perr(p, config_setting_get_member(root, "jobs"),
		     "static jobs take %llu slots, above aggregation.max_slots %u",
		     (unsigned long long)total, c->max_slots);
	check_weights(p, root, c);
}

void
incad_config_defaults(struct incad_config *c)
{
	memset(c, 0, sizeof(*c));
	c->mode = INCAD_MODE_AGGREGATOR;
	c->inca_port = INCA_UDP_PORT;
	c->workers = 1;
	c->idle = INCAD_IDLE_ADAPTIVE;
	c->idle_max_sleep_us = 200;
	c->idle_empty_polls = 64;
	c->idle_hot_us = 500;
	c->roce = false;
	c->roce_qpn = 0x494e;       /* "IN" */
	c->roce_qkey = 0x494e4341;  /* "INCA" */
	c->mbufs = 8191;
	c->ring_size = 1024;
	c->pool_size = 64;
	c->max_elems = 1024;
	c->window = 32;
	c->max_slots = 4096;
	c->hb_ms = 1000;
	c->evict_ms = 5000;
	c->ctrl_rate = 1000;
	c->ctrl_burst = 256;
	c->ctrl_ring_size = 1024;
	c->stats_interval = 0;
	c->mac_table_size = 4096;
	c->mac_age_s = 300;
	c->arb.policy = INCAD_ARB_OFF;
	c->arb.burst_kb = 256;
	c->arb.interval_ms = 10;
}

int
incad_config_load(const char *path, struct incad_config *c)
{
	static const char *const root_keys[] = {"mode", "inca_port", "workers", "idle",
						"memory", "aggregation", "timeouts",
						"stats_interval", "switch", "ports", "tenants",
						"jobs", "control", "roce", "arbitration", NULL};
	static const char *const mem_keys[] = {"mbufs", "ring_size", NULL};
	static const char *const agg_keys[] = {"pool_size", "max_elems", "window",
					       "max_slots", "session_seed", NULL};
	static const char *const to_keys[] = {"heartbeat_ms", "evict_ms", NULL};
	static const char *const ctl_keys[] = {"rate", "burst", "ring_size", "test_stall", NULL};
	static const char *const sw_keys[] = {"mac_table_size", "mac_age_s", NULL};
	struct parser p = {.path = path};
	const config_setting_t *root, *g;
	config_t cfg;
	const char *v;
	int ret = 0;

	incad_config_defaults(c);
	if (strlen(path) >= sizeof(c->path)) {
		fprintf(stderr, "%s:0: path too long\n", path);
		return -EINVAL;
	}
	strcpy(c->path, path);

	config_init(&cfg);
	if (config_read_file(&cfg, path) != CONFIG_TRUE) {
		if (config_error_type(&cfg) == CONFIG_ERR_FILE_IO) {
			fprintf(stderr, "%s:0: cannot read the file: %s\n", path,
				strerror(errno ? errno : ENOENT));
			ret = -ENOENT;
		} else {
			fprintf(stderr, "%s:%d: %s\n",
				config_error_file(&cfg) ? config_error_file(&cfg) : path,
				config_error_line(&cfg), config_error_text(&cfg));
			ret = -EINVAL;
		}
		goto out;
	}
	root = config_root_setting(&cfg);
	check_keys(&p, root, "the top level", root_keys);

	v = get_string(&p, root, "mode", false, NULL, 0);
	if (v != NULL) {
		if (strcmp(v, "aggregator") == 0)
			c->mode = INCAD_MODE_AGGREGATOR;
		else if (strcmp(v, "switch") == 0)
			c->mode = INCAD_MODE_SWITCH;
		else
			perr(&p, config_setting_get_member(root, "mode"),
			     "mode must be \"aggregator\" or \"switch\", not \"%s\"", v);
	}
	GET_UINT(&p, root, "inca_port", 1, 65535, false, c->inca_port);
	GET_UINT(&p, root, "workers", 1, INCAD_MAX_LCORES, false, c->workers);
	GET_UINT(&p, root, "stats_interval", 0, 86400, false, c->stats_interval);
	g = member_of(&p, root, "idle", CONFIG_TYPE_GROUP, false);
	if (g != NULL)
		parse_idle(&p, g, c);
	g = member_of(&p, root, "roce", CONFIG_TYPE_GROUP, false);
	if (g != NULL) {
		parse_roce(&p, g, c);
		if (c->roce && c->inca_port == INCA_ROCE_PORT)
			perr(&p, g, "roce: inca_port must not be the RoCEv2 port %d", INCA_ROCE_PORT);
	}
	g = member_of(&p, root, "memory", CONFIG_TYPE_GROUP, false);
	if (g != NULL) {
		check_keys(&p, g, "memory", mem_keys);
		GET_UINT(&p, g, "mbufs", 511, 16 * 1024 * 1024, false, c->mbufs);
		GET_UINT(&p, g, "ring_size", 64, 65536, false, c->ring_size);
		if (c->ring_size & (c->ring_size - 1))
			perr(&p, config_setting_get_member(g, "ring_size"),
			     "ring_size %u is not a power of two", c->ring_size);
	}
	g = member_of(&p, root, "aggregation", CONFIG_TYPE_GROUP, false);
	if (g != NULL) {
		check_keys(&p, g, "aggregation", agg_keys);
		GET_UINT(&p, g, "pool_size", 1, 65535, false, c->pool_size);
		GET_UINT(&p, g, "max_elems", 1, INCA_MAX_ELEMS, false, c->max_elems);
		GET_UINT(&p, g, "window", 1, 65535, false, c->window);
		GET_UINT(&p, g, "max_slots", 1, INCAD_MAX_SLOTS, false, c->max_slots);
		c->has_session_seed = config_setting_get_member(g, "session_seed") != NULL;
		GET_UINT(&p, g, "session_seed", 0, UINT32_MAX, false, c->session_seed);
	}
	g = member_of(&p, root, "timeouts", CONFIG_TYPE_GROUP, false);
	if (g != NULL) {
		check_keys(&p, g, "timeouts", to_keys);
		GET_UINT(&p, g, "heartbeat_ms", 1, 3600000, false, c->hb_ms);
		/* 0 (never evict) would let a silent member hold its job,
		 * and every rank waiting on it, for ever. */
		GET_UINT(&p, g, "evict_ms", 1, 86400000, false, c->evict_ms);
	}
	g = member_of(&p, root, "control", CONFIG_TYPE_GROUP, false);
	if (g != NULL) {
		check_keys(&p, g, "control", ctl_keys);
		GET_UINT(&p, g, "rate", 0, 10000000, false, c->ctrl_rate);
		GET_UINT(&p, g, "burst", 1, 1000000, false, c->ctrl_burst);
		GET_UINT(&p, g, "ring_size", 64, 65536, false, c->ctrl_ring_size);
		if (c->ctrl_ring_size & (c->ctrl_ring_size - 1))
			perr(&p, config_setting_get_member(g, "ring_size"),
			     "ring_size %u is not a power of two", c->ctrl_ring_size);
		get_bool(&p, g, "test_stall", &c->ctrl_test_stall);
	}
	g = member_of(&p, root, "switch", CONFIG_TYPE_GROUP, false);
	if (g != NULL) {
		check_keys(&p, g, "switch", sw_keys);
		GET_UINT(&p, g, "mac_table_size", 16, 1 << 20, false, c->mac_table_size);
		GET_UINT(&p, g, "mac_age_s", 1, 86400, false, c->mac_age_s);
	}
	g = member_of(&p, root, "ports", CONFIG_TYPE_LIST, true);
	if (g != NULL)
		parse_ports(&p, g, c);
	g = member_of(&p, root, "tenants", CONFIG_TYPE_LIST, false);
	if (g != NULL)
		parse_tenants(&p, g, c);
	g = member_of(&p, root, "jobs", CONFIG_TYPE_LIST, false);
	if (g != NULL)
		parse_jobs(&p, g, c);
	g = member_of(&p, root, "arbitration", CONFIG_TYPE_GROUP, false);
	if (g != NULL)
		parse_arbitration(&p, g, c);
	check_totals(&p, root, c);
	if (p.errors > 0)
		ret = -EINVAL;
out:
	config_destroy(&cfg);
	if (ret != 0)
		incad_config_free(c);
	return ret;
}

void
incad_config_free(struct incad_config *c)
{
	free(c->jobs);
	c->jobs = NULL;
	c->njobs = 0;
}

size_t
incad_config_max_frame(const struct incad_config *c)
{
	size_t payload = (size_t)c->max_elems * 4;

	if (payload > INCA_MAX_PAYLOAD_BYTES)
		payload = INCA_MAX_PAYLOAD_BYTES;
	/* Ethernet with one VLAN tag, IPv4 with the longest options, UDP. */
	return 14 + 4 + 60 + 8 + INCA_HDR_LEN + payload;
}

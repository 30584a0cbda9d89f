/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/* The bottom layer: version, error texts, counter names, logging, the clock. */

#define _GNU_SOURCE
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include "li_util.h"

#define STR_(x) #x
#define STR(x) STR_(x)

/* ---- version, errors, logging ------------------------------------------ */

const char *
inca_version_string(void)
{
	return STR(INCA_VERSION_MAJOR) "." STR(INCA_VERSION_MINOR) "." STR(INCA_VERSION_PATCH);
}

const char *
inca_strerror(int err)
{
	switch (err) {
#define INCA_X_(n, v, d) case v: return d;
	INCA_ERRORS(INCA_X_)
#undef INCA_X_
	default:
		return "unknown error";
	}
}

static const char *const stats_names[] = {
#define INCA_X_(n, d) #n,
	INCA_STATS_FIELDS(INCA_X_)
#undef INCA_X_
};

const char *
inca_stats_name(unsigned i)
{
	return i < sizeof(stats_names) / sizeof(stats_names[0]) ? stats_names[i] : NULL;
}

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static inca_log_fn *log_fn;
static void *log_ctx;
static int log_level = INCA_LOG_INFO;

void
inca_set_log_fn(inca_log_fn *fn, void *ctx, int max_level)
{
	pthread_mutex_lock(&log_lock);
	log_fn = fn;
	log_ctx = ctx;
	log_level = max_level;
	pthread_mutex_unlock(&log_lock);
}

void
li_log(int level, const char *fmt, ...)
{
	inca_log_fn *fn;
	void *ctx;
	char line[256];
	va_list ap;

	pthread_mutex_lock(&log_lock);
	fn = log_fn;
	ctx = log_ctx;
	if (level > log_level)
		fn = NULL;
	pthread_mutex_unlock(&log_lock);
	if (fn == NULL)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fn(ctx, level, line);
}

uint64_t
li_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}


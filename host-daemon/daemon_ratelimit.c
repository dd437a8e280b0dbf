/* SPDX-License-Identifier: MIT */
/*
 * Rate-limited log lines: for what a client can make vgpud log at will,
 * once per connection (refusals, hello timeouts, accept errors). Any
 * local user can open thousands of connections a second; logging each
 * grew vgpud's log by 20 MB in 25 s (issue 16). Here each cause gets
 * one line per DAEMON_LOG_WINDOW_MS; the lines after it in that window
 * are counted, and when the window ends the latest of them is logged
 * with how many more there were, so nothing is lost but the repeats:
 *
 *   client pid 7 (uid 65534) refused: ... (and 412 more like it in the
 *   last 1.0 s)
 *
 * A cause is a string with static storage (usually the caller's format,
 * so each call site is its own cause), compared by address. Process-wide
 * like daemon_log itself; the loop calls the tick (vgpud_main.c).
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "daemon.h"

/* Enough for a refusal: its prefix and a VGPU_MESSAGE_MAX sentence. */
#define LOG_LINE_MAX (VGPU_MESSAGE_MAX + 128)

struct log_cause {
	const char *cause;  /* NULL: a free slot */
	int64_t since;	    /* ms: this cause's last line was logged then */
	unsigned long held; /* lines since then not logged */
	char last[LOG_LINE_MAX]; /* the latest of them */
};

/* The last slot is shared by the causes that find the table full (more
 * than ever exist in the code today): they then share one budget. */
static struct log_cause log_causes[DAEMON_LOG_CAUSES];

/* The slot of cause: its own, a free one, or one whose window is over
 * with nothing held (nothing of it is lost), else the shared one. */
static struct log_cause *cause_slot(const char *cause, int64_t now)
{
	struct log_cause *reuse = NULL;
	int i;

	for (i = 0; i < DAEMON_LOG_CAUSES - 1; i++) {
		struct log_cause *s = &log_causes[i];

		if (s->cause == cause)
			return s;
		if (!reuse &&
		    (!s->cause ||
		     (!s->held && now - s->since >= DAEMON_LOG_WINDOW_MS)))
			reuse = s;
	}
	if (!reuse)
		return &log_causes[DAEMON_LOG_CAUSES - 1];
	memset(reuse, 0, sizeof(*reuse));
	reuse->cause = cause;
	reuse->since = now - DAEMON_LOG_WINDOW_MS; /* its first line goes out */
	return reuse;
}

/* The window is over: log the latest line held, with the count. */
static void cause_flush(struct log_cause *s, int64_t now)
{
	if (s->held == 1)
		daemon_log("%s", s->last);
	else
		daemon_log("%s (and %lu more like it in the last %.1f s)",
			   s->last, s->held - 1, (now - s->since) / 1e3);
	s->held = 0;
	s->since = now; /* that was this window's line */
}

void daemon_ratelimit_log(const char *cause, const char *fmt, ...)
{
	int64_t now = daemon_now_ms();
	struct log_cause *s = cause_slot(cause, now);
	char line[LOG_LINE_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (s->held && now - s->since >= DAEMON_LOG_WINDOW_MS)
		cause_flush(s, now); /* the tick has not come round yet */
	if (now - s->since < DAEMON_LOG_WINDOW_MS) {
		s->held++;
		memcpy(s->last, line, sizeof(line));
		return;
	}
	daemon_log("%s", line);
	s->since = now;
}

void daemon_ratelimit_tick(int64_t now)
{
	int i;

	for (i = 0; i < DAEMON_LOG_CAUSES; i++)
		if (log_causes[i].held &&
		    now - log_causes[i].since >= DAEMON_LOG_WINDOW_MS)
			cause_flush(&log_causes[i], now);
}

void daemon_ratelimit_flush(void)
{
	int64_t now = daemon_now_ms();
	int i;

	for (i = 0; i < DAEMON_LOG_CAUSES; i++)
		if (log_causes[i].held)
			cause_flush(&log_causes[i], now);
}

int64_t daemon_ratelimit_deadline(void)
{
	int64_t next = 0;
	int i;

	for (i = 0; i < DAEMON_LOG_CAUSES; i++) {
		int64_t end = log_causes[i].since + DAEMON_LOG_WINDOW_MS;

		if (log_causes[i].held && (!next || end < next))
			next = end;
	}
	return next;
}

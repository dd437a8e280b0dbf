/* SPDX-License-Identifier: MIT */
/*
 * C twins of spin.cu. spinForever loops until *flag != 0, or until the
 * simulator asks the block to stop (teardown), so a stuck simulated vGPU
 * can still be closed cleanly. spinFor sleeps its time on the host's
 * monotonic clock in short naps (a CI machine's cores stay free), and
 * stops early on the same request.
 */
#include <sched.h>
#include <stdint.h>
#include <time.h>

#include "sim_kernel.h"

void sim_spinForever(const struct sim_block *blk, void **params)
{
	const volatile int *flag = *(const volatile int *const *)params[0];

	while (*flag == 0 && *blk->stop == 0)
		sched_yield();
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void sim_spinFor(const struct sim_block *blk, void **params)
{
	volatile unsigned int *count = *(unsigned int *const *)params[0];
	uint64_t ns = *(const uint64_t *)params[1];
	uint64_t end = mono_ns() + ns, now;

	while (*blk->stop == 0 && (now = mono_ns()) < end) {
		uint64_t nap = end - now < 1000000 ? end - now : 1000000;
		struct timespec ts = {0, (long)nap};

		nanosleep(&ts, NULL);
	}
	if (blk->block_idx.x == 0 && blk->block_idx.y == 0 &&
	    blk->block_idx.z == 0)
		*count = *count + 1;
}

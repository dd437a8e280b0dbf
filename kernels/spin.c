/* SPDX-License-Identifier: MIT */
/*
 * C twin of spin.cu: loops until *flag != 0, or until the simulator asks
 * the block to stop (teardown), so a stuck simulated vGPU can still be
 * closed cleanly.
 */
#include <sched.h>

#include "sim_kernel.h"

void sim_spinForever(const struct sim_block *blk, void **params)
{
	const volatile int *flag = *(const volatile int *const *)params[0];

	while (*flag == 0 && *blk->stop == 0)
		sched_yield();
}

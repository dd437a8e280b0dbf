// SPDX-License-Identifier: MIT
/*
 * spinForever: every thread loops until *flag becomes non-zero, which in
 * practice means forever. Used to test the watchdog, killing a stuck
 * vGPU, stream queries that stay NOT_READY, and neighbours' isolation.
 */
extern "C" __global__ void spinForever(volatile int *flag)
{
	while (*flag == 0)
		;
}

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

/*
 * spinAfterTrigger: spinForever, after every block has signalled its
 * completion to dependent launches (programmatic dependent launch,
 * griddepcontrol.launch_dependents, as cudaTriggerProgrammaticLaunchCompletion
 * does). An event riding on the launch completes there, long before the
 * kernel ends: the watchdog must still stop it.
 */
extern "C" __global__ void spinAfterTrigger(volatile int *flag)
{
	asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
	while (*flag == 0)
		;
}

__device__ static unsigned long long global_ns(void)
{
	unsigned long long t;

	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
}

/*
 * spinFor: every thread spins for ns nanoseconds of the global timer, then
 * block 0's thread 0 adds one to *count. A kernel of a known length for
 * the watchdog's tests: a chain of them on one stream comes out at the
 * number of launches only when each ran after the one before (the add is
 * not atomic).
 */
extern "C" __global__ void spinFor(unsigned int *count, unsigned long long ns)
{
	unsigned long long t0 = global_ns();

	while (global_ns() - t0 < ns)
		;
	if (blockIdx.x == 0 && threadIdx.x == 0)
		*(volatile unsigned int *)count =
			*(volatile unsigned int *)count + 1;
}

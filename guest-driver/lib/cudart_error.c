/* SPDX-License-Identifier: MIT */
/*
 * Runtime errors: lookups in the generated table, the mapping from
 * driver results, the per-thread last error and the process's sticky
 * error, and the one-line notice for calls a vGPU does not support.
 * Nothing here talks to the vGPU, so all of it works before the first
 * call that does (and in the unit tests).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cudart.h"

static __thread cudaError_t cudart_last;
static cudaError_t cudart_sticky_err; /* atomic; cudaSuccess if none */

const struct cudart_error_entry *cudart_error_find(cudaError_t code)
{
	unsigned int lo = 0, hi = cudart_error_count;

	/* the table is sorted by code */
	while (lo < hi) {
		unsigned int mid = lo + (hi - lo) / 2;

		if (cudart_error_table[mid].code == code)
			return &cudart_error_table[mid];
		if ((unsigned int)cudart_error_table[mid].code <
		    (unsigned int)code)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

int cudart_error_is_sticky(cudaError_t code)
{
	const struct cudart_error_entry *e = cudart_error_find(code);

	return e && e->sticky;
}

cudaError_t cudart_error_from_cu(CUresult res)
{
	if (res == CUDA_SUCCESS)
		return cudaSuccess;
	return cudart_error_find((cudaError_t)res) ? (cudaError_t)res
						   : cudaErrorUnknown;
}

cudaError_t cudart_ret(cudaError_t err)
{
	if (err == cudaSuccess || err == cudaErrorNotReady)
		return err;
	cudart_last = err;
	if (cudart_error_is_sticky(err)) {
		cudaError_t none = cudaSuccess;

		/* the first one stays */
		__atomic_compare_exchange_n(&cudart_sticky_err, &none, err, 0,
					    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
	}
	return err;
}

cudaError_t cudart_ret_cu(CUresult res)
{
	return cudart_ret(cudart_error_from_cu(res));
}

cudaError_t cudart_sticky(void)
{
	return __atomic_load_n(&cudart_sticky_err, __ATOMIC_ACQUIRE);
}

void cudart_error_reset_thread(void)
{
	cudart_last = cudaSuccess;
}

/* Call names already reported, so each is reported once. */
struct unsupported_seen {
	pthread_mutex_t lock;
	const char **names;
	unsigned int n, cap;
};

static struct unsupported_seen unsupported_seen = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
};

/* True the first time call is seen (or when memory runs out). */
static int unsupported_first(struct unsupported_seen *s, const char *call)
{
	int first = 1;

	pthread_mutex_lock(&s->lock);
	for (unsigned int i = 0; i < s->n; i++)
		if (strcmp(s->names[i], call) == 0) {
			first = 0;
			goto out;
		}
	if (s->n == s->cap) {
		unsigned int cap = s->cap ? s->cap * 2 : 16;
		const char **p = realloc(s->names, cap * sizeof(*p));

		if (!p)
			goto out;
		s->names = p;
		s->cap = cap;
	}
	s->names[s->n++] = call;
out:
	pthread_mutex_unlock(&s->lock);
	return first;
}

cudaError_t cudart_unsupported(const char *call)
{
	if (unsupported_first(&unsupported_seen, call))
		fprintf(stderr,
			"vgpu: %s is not supported on a vGPU "
			"(cudaErrorNotSupported)\n",
			call);
	return cudart_ret(cudaErrorNotSupported);
}

/* The sticky error, if any, stays; otherwise the last error is cleared. */
CUDART_API cudaError_t CUDARTAPI cudaGetLastError(void)
{
	cudaError_t sticky = cudart_sticky();
	cudaError_t err = cudart_last;

	if (sticky != cudaSuccess)
		return sticky;
	cudart_last = cudaSuccess;
	return err;
}

CUDART_API cudaError_t CUDARTAPI cudaPeekAtLastError(void)
{
	cudaError_t sticky = cudart_sticky();

	return sticky != cudaSuccess ? sticky : cudart_last;
}

CUDART_API const char *CUDARTAPI cudaGetErrorName(cudaError_t error)
{
	const struct cudart_error_entry *e = cudart_error_find(error);

	return e ? e->name : "unrecognized error code";
}

CUDART_API const char *CUDARTAPI cudaGetErrorString(cudaError_t error)
{
	const struct cudart_error_entry *e = cudart_error_find(error);

	return e ? e->text : "unrecognized error code";
}

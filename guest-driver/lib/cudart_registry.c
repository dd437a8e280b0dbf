/* SPDX-License-Identifier: MIT */
/*
 * The registration tables: a list of fatbins and two hash tables keyed
 * by host address, behind one read-write lock (launches read, static
 * constructors and destructors write).
 */
#include <stdlib.h>
#include <string.h>

#include "cudart_registry.h"

struct cudart_registry cudart_registry_the = {
	.lock = PTHREAD_RWLOCK_INITIALIZER,
};

static unsigned int bucket(const void *host)
{
	uintptr_t h = (uintptr_t)host;

	h ^= h >> 17;
	h *= 0x9e3779b97f4a7c15ull;
	return (unsigned int)(h >> 56) % CUDART_HASH_BUCKETS;
}

void cudart_registry_init(struct cudart_registry *r)
{
	memset(r, 0, sizeof(*r));
	pthread_rwlock_init(&r->lock, NULL);
}

static void func_free(struct cudart_func *f)
{
	f->magic = 0;
	free(f->name);
	free(f);
}

static void var_free(struct cudart_var *v)
{
	pthread_mutex_destroy(&v->lock);
	free(v->name);
	free(v);
}

void cudart_registry_fini(struct cudart_registry *r)
{
	struct cudart_fatbin *fb;
	CUlibrary lib;
	int loaded;

	while ((fb = r->fatbins))
		cudart_registry_remove_fatbin(r, fb, &lib, &loaded);
	pthread_rwlock_destroy(&r->lock);
}

struct cudart_fatbin *cudart_registry_add_fatbin(struct cudart_registry *r,
						 const void *wrapper)
{
	const struct cudart_fatbin_wrapper *w = wrapper;
	struct cudart_fatbin *fb = calloc(1, sizeof(*fb));

	if (!fb)
		return NULL;
	if (w && w->magic == CUDART_FATBIN_MAGIC)
		fb->image = w->data;
	pthread_mutex_init(&fb->lock, NULL);
	pthread_rwlock_wrlock(&r->lock);
	fb->next = r->fatbins;
	r->fatbins = fb;
	pthread_rwlock_unlock(&r->lock);
	return fb;
}

/* Lock held. */
static int has_fatbin(struct cudart_registry *r, struct cudart_fatbin *fb)
{
	for (struct cudart_fatbin *p = r->fatbins; p; p = p->next)
		if (p == fb)
			return 1;
	return 0;
}

int cudart_registry_has_fatbin(struct cudart_registry *r,
			       struct cudart_fatbin *fb)
{
	int ok;

	pthread_rwlock_rdlock(&r->lock);
	ok = has_fatbin(r, fb);
	pthread_rwlock_unlock(&r->lock);
	return ok;
}

int cudart_registry_add_func(struct cudart_registry *r,
			     struct cudart_fatbin *fb, const void *host,
			     const char *name)
{
	struct cudart_func *f, *p;
	unsigned int b = bucket(host);

	if (!fb || !host || !name || !*name)
		return -1;
	f = calloc(1, sizeof(*f));
	if (f)
		f->name = strdup(name);
	if (!f || !f->name) {
		free(f);
		return -1;
	}
	f->magic = CUDART_FUNC_MAGIC;
	f->host = host;
	f->fb = fb;
	pthread_rwlock_wrlock(&r->lock);
	for (p = r->funcs[b]; p; p = p->next)
		if (p->host == host)
			break;
	if (p || !has_fatbin(r, fb)) {
		pthread_rwlock_unlock(&r->lock);
		func_free(f);
		return p ? 0 : -1;
	}
	f->next = r->funcs[b];
	r->funcs[b] = f;
	pthread_rwlock_unlock(&r->lock);
	return 0;
}

int cudart_registry_add_var(struct cudart_registry *r, struct cudart_fatbin *fb,
			    const void *host, const char *name, size_t size,
			    int constant)
{
	struct cudart_var *v, *p;
	unsigned int b = bucket(host);

	if (!fb || !host || !name || !*name)
		return -1;
	v = calloc(1, sizeof(*v));
	if (v)
		v->name = strdup(name);
	if (!v || !v->name) {
		free(v);
		return -1;
	}
	v->host = host;
	v->size = size;
	v->constant = constant;
	v->fb = fb;
	pthread_mutex_init(&v->lock, NULL);
	pthread_rwlock_wrlock(&r->lock);
	for (p = r->vars[b]; p; p = p->next)
		if (p->host == host)
			break;
	if (p || !has_fatbin(r, fb)) {
		pthread_rwlock_unlock(&r->lock);
		var_free(v);
		return p ? 0 : -1;
	}
	v->next = r->vars[b];
	r->vars[b] = v;
	pthread_rwlock_unlock(&r->lock);
	return 0;
}

struct cudart_func *cudart_registry_func(struct cudart_registry *r,
					 const void *host)
{
	struct cudart_func *f;

	pthread_rwlock_rdlock(&r->lock);
	for (f = r->funcs[bucket(host)]; f; f = f->next)
		if (f->host == host)
			break;
	pthread_rwlock_unlock(&r->lock);
	return f;
}

struct cudart_var *cudart_registry_var(struct cudart_registry *r,
				       const void *host)
{
	struct cudart_var *v;

	pthread_rwlock_rdlock(&r->lock);
	for (v = r->vars[bucket(host)]; v; v = v->next)
		if (v->host == host)
			break;
	pthread_rwlock_unlock(&r->lock);
	return v;
}

int cudart_registry_remove_fatbin(struct cudart_registry *r,
				  struct cudart_fatbin *fb, CUlibrary *lib,
				  int *loaded)
{
	struct cudart_fatbin **pp;

	pthread_rwlock_wrlock(&r->lock);
	for (pp = &r->fatbins; *pp && *pp != fb; pp = &(*pp)->next)
		;
	if (!*pp) {
		pthread_rwlock_unlock(&r->lock);
		return -1;
	}
	*pp = fb->next;
	for (unsigned int b = 0; b < CUDART_HASH_BUCKETS; b++) {
		struct cudart_func **fp = &r->funcs[b];
		struct cudart_var **vp = &r->vars[b];

		while (*fp) {
			struct cudart_func *f = *fp;

			if (f->fb == fb) {
				*fp = f->next;
				func_free(f);
			} else {
				fp = &f->next;
			}
		}
		while (*vp) {
			struct cudart_var *v = *vp;

			if (v->fb == fb) {
				*vp = v->next;
				var_free(v);
			} else {
				vp = &v->next;
			}
		}
	}
	pthread_rwlock_unlock(&r->lock);
	*lib = fb->lib;
	*loaded = fb->loaded;
	pthread_mutex_destroy(&fb->lock);
	free(fb);
	return 0;
}

void cudart_registry_forget_loaded(struct cudart_registry *r)
{
	pthread_rwlock_rdlock(&r->lock);
	for (struct cudart_fatbin *fb = r->fatbins; fb; fb = fb->next) {
		pthread_mutex_lock(&fb->lock);
		fb->loaded = 0;
		fb->lib = NULL;
		pthread_mutex_unlock(&fb->lock);
	}
	for (unsigned int b = 0; b < CUDART_HASH_BUCKETS; b++) {
		for (struct cudart_func *f = r->funcs[b]; f; f = f->next)
			__atomic_store_n(&f->kernel, NULL, __ATOMIC_RELEASE);
		for (struct cudart_var *v = r->vars[b]; v; v = v->next) {
			pthread_mutex_lock(&v->lock);
			v->resolved = 0;
			v->dptr = 0;
			v->bytes = 0;
			pthread_mutex_unlock(&v->lock);
		}
	}
	pthread_rwlock_unlock(&r->lock);
}

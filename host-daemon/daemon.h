/* SPDX-License-Identifier: MIT */
/*
 * vgpud's state: one struct daemon, owned by main() and passed to every
 * module (daemon_admin.c: the admin socket; daemon_clients.c: the client
 * socket; daemon_workers.c: probe, workers, fault domains; mps.c: MPS;
 * plan.c: SM groups, memory and VA windows).
 *
 * vgpud is one thread around one poll loop (vgpud_main.c). Nothing in it
 * blocks for long: connections are read when poll says so, every wait
 * for a worker is a deadline checked by the loop.
 */
#ifndef VGPU_DAEMON_H
#define VGPU_DAEMON_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <vgpu/admin.h>
#include <vgpu/control.h>
#include <vgpu/protocol.h>

#include "mps.h"
#include "plan.h"

/* Deadlines (ms): input from a new connection, a worker's READY */
#define DAEMON_HELLO_TIMEOUT_MS 2000
#define DAEMON_ADMIN_TIMEOUT_MS 2000
#define DAEMON_READY_TIMEOUT_MS 30000
#define DAEMON_READY_WRAPPED_MS 120000 /* under VGPU_WORKER_WRAPPER */
/* a running worker silent this long is replaced (daemon_liveness.c); its
 * stats come every second */
#define DAEMON_WORKER_SILENT_MS		3000
#define DAEMON_WORKER_SILENT_WRAPPED_MS 60000 /* valgrind is slow */
/* a worker's stack limit when vgpud has none (daemon_workers.c) */
#define DAEMON_WORKER_STACK (8ull << 20)
/* VGPU_LIVENESS_MS sets it (0: never), at most an hour */
#define DAEMON_WORKER_SILENT_MAX_MS 3600000

/* SHUTDOWN -> SIGKILL (ms): on destroy, on a domain restart, on exit */
#define DAEMON_DESTROY_KILL_MS 5000
#define DAEMON_DOMAIN_KILL_MS  2000
#define DAEMON_EXIT_KILL_MS    5000

/* Restarts: a vGPU whose worker fails to come up this many times in a
 * row is "failed"; a domain that faults again within STABLE_MS of its
 * last restart waits 1, 2, 4 ... BACKOFF_MAX_MS before the next one. */
#define DAEMON_RETRY_DELAY_MS	     1000
#define DAEMON_MAX_START_FAILURES    3
#define DAEMON_DOMAIN_STABLE_MS	     10000
#define DAEMON_DOMAIN_BACKOFF_MAX_MS 30000

/*
 * Client connections waiting for their hello (accepted, nothing read yet;
 * a hello parked for a swap-in no longer waits). Any local user may
 * connect (issue 16), so one user (SO_PEERCRED uid; root is a user like
 * any other here) may have PER_USER of them: a newer one closes its
 * oldest. A real client says hello as it connects and vgpud reads it as
 * it accepts, so 16 is far more than a user's programs need, even
 * started all at once. All users together may have MAX_HELLO_CONNS
 * (MAX / PER_USER = 16 users at their limit): past it the oldest
 * connection of the user with the most is closed. The newcomer is never
 * the one refused, so silent connections cannot lock out the clients
 * after them, and one user's flood never another user's. Each is a
 * descriptor for up to DAEMON_HELLO_TIMEOUT_MS: 256 stay well inside the
 * usual 1024. docs/DESIGN.md, "Processes and sockets".
 */
#define DAEMON_MAX_HELLO_PER_USER 16
#define DAEMON_MAX_HELLO_CONNS	  256
#define DAEMON_MAX_CLIENTS	  64 /* per vGPU, enforced by the worker */
#define DAEMON_MAX_GROUPS	  64 /* supplementary groups of workers */

/* Log lines a client can cause per connection: one per cause per window,
 * the rest counted (daemon_ratelimit.c); causes tracked apart at once */
#define DAEMON_LOG_WINDOW_MS 1000
#define DAEMON_LOG_CAUSES    64

struct daemon_opts {
	const char *run_dir;
	const char *backend; /* "auto", "cuda" or "sim" */
	const char *worker_user;
	char worker_path[PATH_MAX];
	uint64_t va_base;
	bool no_mps; /* cuda: workers outside MPS (time-sliced, own faults) */
	const char *state_path;	   /* default DIR/state.json */
	uint32_t orphan_timeout_s; /* cfg.orphan_timeout_s of every worker */
	bool keep_workers;  /* SIGTERM leaves the workers for a later vgpud */
	const char *mdev;   /* --mdev auto|on|off: /dev/vgpu-ctl */
	const char *policy; /* --policy: the GPUs' mode (daemon_sched.c) */
};

/* Adopting a running worker after a restart: its ADOPTED message */
#define DAEMON_ADOPT_TIMEOUT_MS 2000
#define DAEMON_ORPHAN_TIMEOUT_S 300 /* default --orphan-timeout */

/*
 * A GPU's shared (MPS) fault domain. Its exclusive vGPUs (outside MPS)
 * are each a fault domain of their own and need no struct: a fault
 * there restarts only that vGPU.
 */
struct daemon_domain {
	bool recovering;      /* stopping its workers, or waiting to restart */
	int64_t restart_at;   /* ms: start them then (backoff); 0 = none */
	int64_t last_restart; /* ms: when they were last started again */
	int backoff_ms;	      /* grows while it keeps faulting */
};

/* A connection that vgpud has accepted and not yet finished with. */
struct daemon_conn {
	struct daemon_conn *next;
	int fd;	     /* -1 once closed; freed by the loop */
	bool admin;  /* admin.sock (else client.sock) */
	bool parked; /* admin: waits for a worker, not for input */
	uid_t uid;   /* SO_PEERCRED */
	pid_t pid;
	uint32_t op;	  /* admin: the request being served */
	int64_t deadline; /* ms (monotonic): input must arrive by then */
};

/* Why vgpud asked a worker to stop, so its exit is read correctly. */
enum daemon_stop {
	DAEMON_STOP_NONE = 0,
	DAEMON_STOP_DESTROY,	  /* vgpu-admin destroy */
	DAEMON_STOP_DOMAIN,	  /* its fault domain restarts */
	DAEMON_STOP_START_FAILED, /* READY said no, or never came */
	DAEMON_STOP_EXIT,	  /* vgpud exits */
	DAEMON_STOP_LIVENESS,	  /* it stopped serving (daemon_liveness.c) */
};

/* One vGPU and its worker. */
struct daemon_vgpu {
	struct daemon_vgpu *next;
	struct vgpu_worker_config cfg; /* the same on every (re)start */
	uint32_t sms;		       /* SMs of its groups (the plan's) */
	uint32_t state;		       /* enum vgpu_admin_state */
	pid_t pid;		       /* worker, 0 when none */
	int ctl_fd;		       /* vgpud's end, -1 when none */
	bool ready;		       /* this incarnation said READY ok */
	bool ever_ready;	       /* false: a create is still pending */
	bool destroying;
	bool fault_reported; /* this incarnation sent VGPU_CTL_FAULT */
	enum daemon_stop stop;
	int64_t ready_deadline; /* 0 = none; ms monotonic */
	int64_t kill_deadline;
	int64_t retry_at;
	uint32_t restarts;
	uint32_t start_failures; /* in a row */
	char start_error[VGPU_MESSAGE_MAX];
	struct vgpu_ctl_stats stats; /* the latest */
	int64_t stats_ms;  /* when they came (0: not watched; liveness) */
	bool stuck_logged; /* its stats' stuck_clients said once (liveness) */
	struct daemon_conn *create_waiter;
	struct daemon_conn *destroy_waiter;
	uint32_t consumer_kind; /* enum vgpu_admin_consumer */
	uint32_t consumer_gid;	/* CONSUMER_GROUP */
	/* Adopted after a vgpud restart: not our child, so its exit comes
	 * through this pidfd (readable when it exits), never SIGCHLD. */
	bool adopted;
	int pidfd; /* -1 when none */
	/* The VM path (daemon_mdev.c): the mdev UUID this vGPU is (state
	 * file); owned: composed for that instance, destroyed with it */
	bool mdev;
	bool mdev_owned;
	uint8_t mdev_uuid[16];
	/* dynamic partitioning (daemon_part.h): load, pending resize */
	struct daemon_vgpu_part *part; /* NULL until first needed */
	/* scheduling (daemon_sched.h): its policy and state */
	struct daemon_sched_vgpu *sched; /* NULL until first needed */
	/* save, restore, migration (daemon_state_ops.h); NULL until used */
	struct daemon_vgpu_state *st;
};

/* What a new vGPU is, beyond its plan grant (daemon_vgpu_init). */
struct daemon_vgpu_spec {
	uint32_t time_limit_ms;
	uint32_t uid;
	uint32_t isolation; /* enum vgpu_isolation */
	uint32_t consumer_kind;
	uint32_t gid;
};

/* Whether v is in its GPU's shared (MPS) domain. */
static inline bool daemon_vgpu_shared(const struct daemon_vgpu *v)
{
	return v->cfg.isolation == 0; /* VGPU_ISOLATION_SHARED */
}

struct daemon {
	struct daemon_opts opts;
	uid_t worker_uid;
	gid_t worker_gid;
	char admin_path[PATH_MAX];
	char client_path[PATH_MAX];
	char state_path[PATH_MAX];
	char workers_dir[PATH_MAX]; /* DIR/workers: the workers' ctl_paths */
	bool state_dirty;	    /* save it at the end of this turn */
	int admin_fd;
	int client_fd;
	int signal_fd;
	uint32_t backend; /* enum vgpu_backend_kind */
	uint32_t ngpus;
	struct vgpu_gpu_info gpus[VGPU_MAX_GPUS];
	struct daemon_domain domains[VGPU_MAX_GPUS];
	struct plan *plan;
	struct mps mps;
	struct daemon_vgpu *vgpus; /* in creation order */
	struct daemon_conn *conns;
	/* SIGTERM/SIGINT seen */
	bool stopping;
	gid_t worker_groups[DAEMON_MAX_GROUPS]; /* supplementary groups */
	int nworker_groups;
	/* VGPU_WORKER_WRAPPER words, NULL-terminated */
	char **wrapper;
	char *wrapper_buf;	  /* the words' storage */
	int ready_timeout_ms;	  /* DAEMON_READY_(WRAPPED_)TIMEOUT_MS */
	int silent_ms;		  /* DAEMON_WORKER_SILENT_(WRAPPED_)MS */
	int64_t loop_woke_ms;	  /* when this turn's poll returned (ms) */
	struct daemon_mdev *mdev; /* the VM path; NULL when off */
	struct daemon_mdev_retry *mdev_retry; /* reopening /dev/vgpu-ctl
						(daemon_mdev.c); NULL: never */
	struct daemon_part *part;   /* dynamic partitioning; NULL until used */
	struct daemon_sched *sched; /* the scheduler (daemon_sched.h) */
	struct daemon_swap *swap;   /* swapping (daemon_swap.h); NULL until
				       used */
};

/* ---- vgpud_main.c ---- */
void daemon_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int64_t daemon_now_ms(void);
/* Close a connection; the loop frees it. */
void daemon_conn_close(struct daemon *d, struct daemon_conn *c);
struct daemon_conn *daemon_conn_new(struct daemon *d, int fd, bool admin);

/* ---- daemon_ratelimit.c ---- */
/*
 * daemon_log for a line a client can cause at will: at most one line of
 * a cause per DAEMON_LOG_WINDOW_MS; the others are counted and, when the
 * window ends, the latest is logged with "(and N more like it in the
 * last T s)". cause: a string with static storage, compared by address
 * (usually the caller's format); lines of a cause share one budget,
 * whoever causes them.
 */
void daemon_ratelimit_log(const char *cause, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Log the lines held back by windows that are over (the loop's tick). */
void daemon_ratelimit_tick(int64_t now);
/* When the first window with lines held back ends (ms); 0: none. */
int64_t daemon_ratelimit_deadline(void);
/* Log every line held back now (vgpud exits). */
void daemon_ratelimit_flush(void);

/* ---- daemon_admin.c ---- */
void daemon_admin_accept(struct daemon *d);
void daemon_admin_input(struct daemon *d, struct daemon_conn *c);
void daemon_admin_timeout(struct daemon *d, struct daemon_conn *c);
/* CREATE as if it had just come in (a create the scheduler parked). */
void daemon_admin_create(struct daemon *d, struct daemon_conn *c,
			 const struct vgpu_admin_request *req);
/* Answer a parked admin request and close its connection. */
void daemon_admin_reply(struct daemon *d, struct daemon_conn *c, int32_t status,
			const struct daemon_vgpu *v, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
/*
 * The same, answered before the state file is written (at the end of the
 * loop's turn, as for the scheduler's own changes): for a resize, whose
 * writing (two fsyncs, about 1 ms) would be most of its time. A vgpud
 * that dies in between finds the worker on groups the file does not
 * name, and adopts it there (daemon_state.c: adopt_groups).
 */
void daemon_admin_reply_unsaved(struct daemon *d, struct daemon_conn *c,
				int32_t status, const struct daemon_vgpu *v,
				const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
/* A response for op with the header filled; NULL when out of memory. */
struct vgpu_admin_response *daemon_admin_response_alloc(uint32_t op,
							int32_t status);
/* A list answer to c (status OK) for the caller to fill; NULL when out of
 * memory, and then c has been answered. */
struct vgpu_admin_response *daemon_admin_response_new(struct daemon *d,
						      struct daemon_conn *c);
/* Send r to c without blocking, free r and close c. */
void daemon_admin_response_send(struct daemon *d, struct daemon_conn *c,
				struct vgpu_admin_response *r);
/* The request's name: NUL-terminated and valid (if not, c is answered). */
bool daemon_admin_name_ok(struct daemon *d, struct daemon_conn *c,
			  const struct vgpu_admin_request *req);
/* The vGPU the request's checked name names, or NULL with c answered. */
struct daemon_vgpu *daemon_admin_find(struct daemon *d, struct daemon_conn *c,
				      const struct vgpu_admin_request *req);
/* The vGPU the request names, or NULL with c answered (a bad name, or no
 * such vGPU). */
struct daemon_vgpu *daemon_admin_vgpu(struct daemon *d, struct daemon_conn *c,
				      const struct vgpu_admin_request *req);
/* The same with what a suspend, resume or migration did (state.result). */
void daemon_admin_reply_result(struct daemon *d, struct daemon_conn *c,
			       int32_t status, const struct daemon_vgpu *v,
			       const struct vgpu_admin_state_result *res,
			       const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));

/* ---- daemon_state.c ---- */
/*
 * Read, check and replay the state file (if there is one) into the plan
 * and d->vgpus: all or nothing. 0 (also when there is none); -1 with
 * "STATE: line L: what" in err, and nothing applied.
 */
int daemon_state_load(struct daemon *d, bool *mps_started, char *err,
		      size_t errlen);
/* Take back the workers of the vGPUs just loaded, or start new ones. */
void daemon_state_adopt(struct daemon *d);
/* Write the state file atomically; logs and returns -1 on failure. */
int daemon_state_save(struct daemon *d);
/* vgpud exits and leaves nothing to adopt. */
void daemon_state_remove(struct daemon *d);

/* ---- daemon_clients.c ---- */
void daemon_client_accept(struct daemon *d);
void daemon_client_input(struct daemon *d, struct daemon_conn *c);
void daemon_client_timeout(struct daemon *d, struct daemon_conn *c);
/* Answer a client's hello with status and a sentence (logged), then close
 * it. Also swap's answer to a hello that waited for its vGPU in vain. */
void daemon_client_refuse(struct daemon *d, struct daemon_conn *c,
			  int32_t status, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* ---- daemon_workers.c ---- */
/* Probe the GPUs with vgpu-worker --probe; fills d->gpus, d->backend. */
int daemon_probe(struct daemon *d, char *err, size_t errlen);
/* Wrapper and groups for workers (VGPU_WORKER_WRAPPER, the user). */
int daemon_workers_init(struct daemon *d, char *err, size_t errlen);
void daemon_workers_fini(struct daemon *d);
struct daemon_vgpu *daemon_vgpu_find(struct daemon *d, const char *name);
/* Start (or restart) v's worker; its READY comes through the loop. */
int daemon_vgpu_start(struct daemon *d, struct daemon_vgpu *v);
/* Ask v's worker to stop, SIGKILL after ms. */
void daemon_vgpu_stop(struct daemon *d, struct daemon_vgpu *v,
		      enum daemon_stop why, int64_t ms);
/* Fill a new vGPU (not in the list, not started) from its grant. */
void daemon_vgpu_init(struct daemon *d, struct daemon_vgpu *v,
		      const struct plan_grant *grant,
		      const struct daemon_vgpu_spec *spec);
/* Append v to d->vgpus (creation order). */
void daemon_vgpu_append(struct daemon *d, struct daemon_vgpu *v);
/*
 * Destroy v: stop its worker and free it once it has exited (waiter, if
 * any, is answered then), or free it now. true when v is already freed.
 */
bool daemon_vgpu_destroy(struct daemon *d, struct daemon_vgpu *v,
			 struct daemon_conn *waiter);
/* Release v's plan and free it (its worker must be gone). */
void daemon_vgpu_free(struct daemon *d, struct daemon_vgpu *v);
void daemon_worker_input(struct daemon *d, struct daemon_vgpu *v);
/* An adopted worker's pidfd became readable: it has exited. */
void daemon_worker_pidfd(struct daemon *d, struct daemon_vgpu *v);
/* Fill v->cfg.ctl_path and the orphan timeout (before the first start). */
void daemon_vgpu_ctl_path(struct daemon *d, struct daemon_vgpu *v);
/* Restart after vgpud's restart found v's worker gone. */
void daemon_vgpu_gone(struct daemon *d, struct daemon_vgpu *v);
/* Signal v's worker (through its pidfd when adopted). */
void daemon_vgpu_kill(struct daemon_vgpu *v, int sig);

/* ---- daemon_liveness.c ---------------------------------------------- */

/* Stats came from v's worker. */
void daemon_liveness_stats(struct daemon_vgpu *v);
/* Replace the workers that stopped serving. */
void daemon_liveness_check(struct daemon *d, int64_t now);
/* When v's check is next due (ms), or 0. */
int64_t daemon_liveness_deadline(const struct daemon *d,
				 const struct daemon_vgpu *v);
/* "shared" / "exclusive" */
const char *daemon_isolation_name(uint32_t isolation);
void daemon_workers_reap(struct daemon *d);
void daemon_workers_timers(struct daemon *d, int64_t now);
int64_t daemon_workers_next_deadline(struct daemon *d);
/* true while some worker is still alive */
bool daemon_workers_alive(struct daemon *d);

#endif /* VGPU_DAEMON_H */

/* SPDX-License-Identifier: MIT */
/*
 * vgpud_mdev BUILD RUN_DIR TMP: vgpud's VM path end to end without the
 * module. This program plays vgpu_mdev.ko (fakemod.c, behind
 * fakectl_shim.so preloaded into vgpud) and the guest: it creates
 * instances, opens channels and runs descriptors through their rings in
 * the BAR2 memfd vgpud handed over, drives vgpu-admin create --mdev and
 * destroy through a fake sysfs, faults a worker, and restarts vgpud to
 * see EXISTS re-attach an instance with the same BAR2. Then the device
 * lost under vgpud (reopened from its tick, the instance re-attached),
 * --mdev off (never opened), and --mdev auto with the module loaded
 * after vgpud (quiet retries, then attached) on a GPU whose 12 GiB, not
 * its SMs, bound what each type offers. Prints TAP.
 */
#include <cuda.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fakemod.h"
#include "mdev_uuid.h"
#include "tring.h"

#define STRIDE ((uint64_t)VGPU_PCI_CHANNEL_STRIDE)
#define WAIT   35000

static int tap_n, tap_failed;
static struct fm mod;
static const char *build, *run_dir, *tmp;
static char sock[300], sysfs[300], vlog[300];
static pid_t vgpud = -1;

static void tap(bool ok, const char *fmt, ...)
{
	va_list ap;

	tap_n++;
	if (!ok)
		tap_failed++;
	printf("%sok %d - ", ok ? "" : "not ", tap_n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

static void diag(const char *text)
{
	const char *p = text;

	while (p && *p) {
		const char *nl = strchr(p, '\n');
		int len = nl ? (int)(nl - p) : (int)strlen(p);

		printf("# %.*s\n", len, p);
		p = nl ? nl + 1 : NULL;
	}
}

/* ---- processes -------------------------------------------------------- */

static bool child_done(struct fm *m, void *arg)
{
	int *st = arg;
	pid_t pid = (pid_t)st[0];

	(void)m;
	return waitpid(pid, &st[1], WNOHANG) == pid;
}

/* Run argv with output into out (serving the module meanwhile): its
 * exit status, or -1. */
static int run(char *out, size_t len, char *const argv[])
{
	char path[400];
	int st[2] = {0, 0}, fd;
	ssize_t n;
	pid_t pid;

	snprintf(path, sizeof(path), "%s/cmd.out", tmp);
	pid = fork();
	if (pid == 0) {
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		dup2(fd, 1);
		dup2(fd, 2);
		execv(argv[0], argv);
		_exit(127);
	}
	st[0] = pid;
	if (!fm_wait(&mod, child_done, st, 90000)) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		return -1;
	}
	fd = open(path, O_RDONLY);
	n = fd < 0 ? 0 : read(fd, out, len - 1);
	out[n > 0 ? n : 0] = 0;
	if (fd >= 0)
		close(fd);
	return WIFEXITED(st[1]) ? WEXITSTATUS(st[1]) : -1;
}

/* vgpu-admin --run-dir RUN ARGS... */
static int admin(char *out, size_t len, const char *a1, const char *a2,
		 const char *a3, const char *a4, const char *a5)
{
	char bin[400], *argv[10];
	int n = 0;

	snprintf(bin, sizeof(bin), "%s/bin/vgpu-admin", build);
	argv[n++] = bin;
	argv[n++] = "--run-dir";
	argv[n++] = (char *)run_dir;
	argv[n++] = (char *)a1;
	if (a2)
		argv[n++] = (char *)a2;
	if (a3)
		argv[n++] = (char *)a3;
	if (a4)
		argv[n++] = (char *)a4;
	if (a5)
		argv[n++] = (char *)a5;
	argv[n] = NULL;
	return run(out, len, argv);
}

/* vgpud on the simulator (64 SMs, memory GiB) with --mdev mode and the
 * shim; does not wait for it. */
static void spawn_vgpud(const char *mode, const char *memory, bool keep)
{
	char bin[400], shim[400];
	int fd;

	snprintf(bin, sizeof(bin), "%s/bin/vgpud", build);
	snprintf(shim, sizeof(shim), "%s/tests/mdev/fakectl_shim.so", build);
	vgpud = fork();
	if (vgpud == 0) {
		fd = open(vlog, O_WRONLY | O_CREAT | O_APPEND, 0644);
		dup2(fd, 1);
		dup2(fd, 2);
		setenv("LD_PRELOAD", shim, 1);
		setenv("VGPU_FAKE_CTL", sock, 1);
		setenv("VGPU_SIM_SMS", "64", 1);
		setenv("VGPU_SIM_MEMORY", memory, 1);
		/* a worker stopped on purpose must not be replaced before
		 * the channel's own 10 s timeout (daemon_liveness.c) */
		setenv("VGPU_LIVENESS_MS", "60000", 1);
		execl(bin, bin, "--run-dir", run_dir, "--backend", "sim",
		      "--worker-user", "vgpu", "--mdev", mode,
		      keep ? "--keep-workers" : NULL, (char *)NULL);
		_exit(127);
	}
}

static int start_vgpud(bool keep)
{
	spawn_vgpud("on", "64G", keep);
	return fm_accept(&mod, 30000);
}

static bool pid_gone(struct fm *m, void *arg)
{
	pid_t *p = arg;

	(void)m;
	return waitpid(*p, NULL, WNOHANG) == *p;
}

/* SIGTERM (or SIGKILL) vgpud; true when it is gone in time. */
static bool stop_vgpud(int sig)
{
	bool gone;

	kill(vgpud, sig);
	gone = fm_wait(&mod, pid_gone, &vgpud, 30000);
	if (!gone) {
		kill(vgpud, SIGKILL);
		waitpid(vgpud, NULL, 0);
	}
	fm_daemon_gone(&mod);
	vgpud = -1;
	return gone;
}

/* ---- predicates ------------------------------------------------------- */

static bool answered(struct fm *m, void *arg)
{
	struct fm_inst *in = arg;

	(void)m;
	return !in->used || !in->pending;
}

static bool composed_twice(struct fm *m, void *arg)
{
	struct fm_inst *in = arg;

	(void)m;
	return in->composes >= 2;
}

static bool composed_thrice(struct fm *m, void *arg)
{
	struct fm_inst *in = arg;

	(void)m;
	return in->composes >= 3;
}

static bool types_read(struct fm *m, void *arg)
{
	(void)arg;
	return m->get_types >= FM_TYPES && m->avail_sets >= FM_TYPES;
}

struct avail_want {
	int type;
	uint32_t n;
};

static bool avail_is(struct fm *m, void *arg)
{
	struct avail_want *w = arg;

	return m->avail[w->type] == w->n;
}

struct chan_want {
	struct fm_inst *in;
	uint32_t ch, state;
};

static bool chan_is(struct fm *m, void *arg)
{
	struct chan_want *w = arg;

	(void)m;
	return w->in->chan[w->ch].state == w->state;
}

struct dev_want {
	struct fm_inst *in;
	uint32_t state;
};

static bool dev_is(struct fm *m, void *arg)
{
	struct dev_want *w = arg;

	(void)m;
	return w->in->dev_state == w->state;
}

static bool wait_chan(struct fm_inst *in, uint32_t ch, uint32_t state)
{
	struct chan_want w = {in, ch, state};

	return fm_wait(&mod, chan_is, &w, WAIT);
}

static bool wait_avail(const char *type, uint32_t n)
{
	struct avail_want w = {fm_type_index(&mod, type), n};

	return fm_wait(&mod, avail_is, &w, WAIT);
}

/* vgpu-admin list shows (or not) a vGPU; out gets the listing. */
static bool listed(const char *name, char *out, size_t len)
{
	char key[80];

	admin(out, len, "list", NULL, NULL, NULL, NULL);
	snprintf(key, sizeof(key), "\n%s ", name);
	return strstr(out, key) != NULL;
}

static bool gone_from_list(const char *name)
{
	char out[8192];
	int i;

	for (i = 0; i < 100; i++) {
		if (!listed(name, out, sizeof(out)))
			return true;
		fm_wait(&mod, NULL, NULL, 100);
	}
	return false;
}

/* "pid": N of vgpu-admin show NAME --json */
static int worker_pid(const char *name)
{
	char out[8192], *p;

	admin(out, sizeof(out), "show", name, "--json", NULL, NULL);
	p = strstr(out, "\"pid\": ");
	return p ? atoi(p + 7) : -1;
}

static int count_fds(pid_t pid)
{
	char path[64];
	struct dirent *e;
	DIR *d;
	int n = 0;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	d = opendir(path);
	while (d && (e = readdir(d)))
		n += e->d_name[0] != '.';
	if (d)
		closedir(d);
	return n;
}

/* A guest's NOP on channel ch through the instance's BAR2 (bar2 fd). */
static bool guest_nop(struct fm_inst *in, int bar2, uint32_t ch)
{
	struct vgpu_sqe sqe = {.opcode = VGPU_OP_NOP};
	struct vgpu_cqe cqe;
	struct tring r;
	bool ok;

	if (tring_open(&r, bar2, ch * STRIDE, STRIDE, in->chan[ch].doorbell,
		       in->chan[ch].complete))
		return false;
	ok = tring_call(&r, &sqe, &cqe) == CUDA_SUCCESS;
	tring_close(&r);
	return ok;
}

static bool same_file(int a, int b)
{
	struct stat x, y;

	return a >= 0 && b >= 0 && !fstat(a, &x) && !fstat(b, &y) &&
	       x.st_dev == y.st_dev && x.st_ino == y.st_ino;
}

struct sets_want {
	struct fm_inst *in;
	unsigned int sets;
};

static bool bar2_set_again(struct fm *m, void *arg)
{
	struct sets_want *w = arg;

	(void)m;
	return w->in->bar2_sets > w->sets && w->in->bar2 >= 0;
}

static bool einval_above(struct fm *m, void *arg)
{
	return m->chan_state_einval > *(unsigned int *)arg;
}

/* A memfd as the module wants BAR2: size, seals (mdev_ctl.h). */
static bool bar2_sealed(int fd, uint64_t size)
{
	const int want = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;
	int seals = fcntl(fd, F_GET_SEALS);
	struct stat st;

	return !fstat(fd, &st) && (uint64_t)st.st_size == size && seals >= 0 &&
	       (seals & want) == want;
}

/* Whether len bytes at off of fd are all zero. */
static bool zero_at(int fd, uint64_t off, size_t len)
{
	static uint8_t buf[4096];
	size_t i;

	if (len > sizeof(buf) ||
	    pread(fd, buf, len, (off_t)off) != (ssize_t)len)
		return false;
	for (i = 0; i < len; i++)
		if (buf[i])
			return false;
	return true;
}

/* Lines of vgpud's log holding text. */
static int log_count(const char *text)
{
	char line[1024];
	FILE *f = fopen(vlog, "r");
	int n = 0;

	while (f && fgets(line, sizeof(line), f))
		n += strstr(line, text) != NULL;
	if (f)
		fclose(f);
	return n;
}

/* ---- the scenario ----------------------------------------------------- */

static struct fm_inst *create(const char *type, uint8_t uuid[16])
{
	struct fm_inst *in;

	mdev_uuid_random(uuid);
	in = fm_create(&mod, fm_type_index(&mod, type), uuid);
	if (in)
		fm_wait(&mod, answered, in, WAIT);
	return in;
}

static void test_catalogue_instance(void)
{
	struct fm_inst *in;
	uint8_t u1[16];
	char name[32], out[8192], uu[MDEV_UUID_TEXT];
	struct vgpu_sqe sqe;
	struct vgpu_cqe cqe;
	struct tring r;
	struct sets_want sets;
	struct stat st;
	uint64_t p = 0;
	int seals, before, after, rc, prev;

	tap(fm_wait(&mod, types_read, NULL, WAIT),
	    "vgpud says HELLO, reads the %d types and publishes them",
	    FM_TYPES);
	tap(wait_avail("8sm-4g", 8) && wait_avail("16sm-8g", 4) &&
		    wait_avail("32sm-16g", 2) && wait_avail("64sm-32g", 1) &&
		    wait_avail("16sm-8g-excl", 4) && wait_avail("custom", 0),
	    "available: 8, 4, 2, 1 of 8/16/32/64 SMs on 64 SMs; custom 0");
	tap(strstr(mod.desc[2], "16 SMs") &&
		    strstr(mod.desc[2], "4 free on GPU 0"),
	    "description: \"%s\"", mod.desc[2]);

	in = create("8sm-4g", u1);
	mdev_uuid_format(u1, uu);
	snprintf(name, sizeof(name), "mdev-%.8s", uu);
	tap(in && in->used && !in->pending && in->status == 0 &&
		    in->comp.sm_count == 8 &&
		    in->comp.memory == 4 * (1ull << 30) &&
		    in->comp.isolation == VGPU_MDEV_SHARED &&
		    !strcmp(in->comp.vgpu_name, name),
	    "CREATE of 8sm-4g: CREATE_DONE with vGPU %s, 8 SMs, 4 GiB, shared",
	    in ? in->comp.vgpu_name : "-");
	if (!in || !in->used || in->bar2 < 0)
		return;
	seals = fcntl(in->bar2, F_GET_SEALS);
	tap(!fstat(in->bar2, &st) && (uint64_t)st.st_size == 4 * STRIDE &&
		    st.st_blocks == 0 && (seals & F_SEAL_SHRINK) &&
		    (seals & F_SEAL_GROW),
	    "BAR2: a sparse memfd of 4 channels, sealed against resizing");
	tap(wait_avail("8sm-4g", 7) && wait_avail("64sm-32g", 0),
	    "available follows: 7 of 8sm-4g, 0 of 64sm-32g");
	tap(listed(name, out, sizeof(out)) && strstr(out, uu),
	    "vgpu-admin list shows %s with its mdev UUID", name);

	before = count_fds(vgpud);
	fm_vfio_open(&mod, in);
	fm_guest_open(&mod, in, 0);
	tap(wait_chan(in, 0, VGPU_CHAN_OPEN) && in->chan[0].doorbell >= 0,
	    "CHANNEL_OPEN: CHANNEL_SETUP with two eventfds, then OPEN");
	rc = tring_open(&r, in->bar2, 0, STRIDE, in->chan[0].doorbell,
			in->chan[0].complete);
	if (!rc) {
		memset(&sqe, 0, sizeof(sqe));
		sqe.opcode = VGPU_OP_NOP;
		rc = tring_call(&r, &sqe, &cqe);
		p = rc ? 0 : tring_alloc(&r, 1 << 20);
		memset(tring_data(&r, 0), 0x5a, 4096);
		rc = p ? tring_copy(&r, VGPU_OP_MEMCPY_HTOD, p, 0, 4096) : -1;
		if (!rc)
			rc = tring_copy(&r, VGPU_OP_MEMCPY_DTOH, p, 8192, 4096);
		rc = rc ||
		     memcmp(tring_data(&r, 0), tring_data(&r, 8192), 4096);
		tring_close(&r);
	}
	tap(rc == 0, "the guest's ring in BAR2: NOP, MEM_ALLOC, HTOD, DTOH");

	admin(out, sizeof(out), "show", name, "--json", NULL, NULL);
	tap(strstr(out, "\"open\": true") && strstr(out, uu),
	    "vgpu-admin show --json: mdev open by a VM");
	rc = admin(out, sizeof(out), "destroy", name, NULL, NULL, NULL);
	tap(rc == 1 && strstr(out, "a VM has it open"),
	    "vgpu-admin destroy refuses while a VM has it open");
	if (rc != 1)
		diag(out);

	fm_guest_close(&mod, in, 0);
	tap(wait_chan(in, 0, VGPU_CHAN_FREE), "CHANNEL_CLOSE: FREE again");
	fm_guest_open(&mod, in, 1);
	wait_chan(in, 1, VGPU_CHAN_OPEN);
	prev = fcntl(in->bar2, F_DUPFD_CLOEXEC, 0);
	sets.in = in;
	sets.sets = in->bar2_sets;
	fm_vfio_close(&mod, in);
	tap(wait_chan(in, 1, VGPU_CHAN_FREE) && in->chan[1].doorbell < 0,
	    "VFIO close: its open channel goes FREE");
	tap(fm_wait(&mod, bar2_set_again, &sets, WAIT) &&
		    !same_file(prev, in->bar2) &&
		    bar2_sealed(in->bar2, 4 * STRIDE),
	    "VFIO close: vgpud gives the module a fresh BAR2 memfd "
	    "(SET_BAR2), of BAR2's size, sealed");
	fm_wait(&mod, NULL, NULL, 300);
	after = count_fds(vgpud);
	tap(before == after,
	    "vgpud holds no more descriptors than before the "
	    "channels (%d, %d)",
	    before, after);

	fm_event(&mod, VGPU_MDEV_EV_CHANNEL_OPEN, NULL, 0, 999);
	fm_wait(&mod, NULL, NULL, 300);
	tap(kill(vgpud, 0) == 0, "CHANNEL_OPEN of an unknown instance: "
				 "vgpud goes on");
	tap(fm_vfio_open(&mod, in), "the next VFIO user opens it");

	/* a worker fault: device ERROR, its channel FAILED, then READY */
	fm_guest_open(&mod, in, 2);
	wait_chan(in, 2, VGPU_CHAN_OPEN);
	kill(worker_pid(name), SIGKILL);
	{
		struct dev_want err = {in, VGPU_DEVICE_ERROR};
		struct dev_want ready = {in, VGPU_DEVICE_READY};

		tap(fm_wait(&mod, dev_is, &err, WAIT) &&
			    in->chan[2].state == VGPU_CHAN_FAILED,
		    "worker killed: DEVICE_STATE ERROR, its channel FAILED");
		tap(fm_wait(&mod, dev_is, &ready, WAIT),
		    "worker restarted: DEVICE_STATE READY");
	}
	fm_guest_close(&mod, in, 2);
	tap(wait_chan(in, 2, VGPU_CHAN_FREE), "the failed channel closes");
	fm_guest_open(&mod, in, 2);
	tap(wait_chan(in, 2, VGPU_CHAN_OPEN) && guest_nop(in, in->bar2, 2),
	    "a new channel on the restarted worker serves a NOP (its ring "
	    "in the new memfd)");
	tap(zero_at(prev, 2 * STRIDE, 4096),
	    "the past VFIO user's memfd saw nothing of it");
	close(prev);
	fm_guest_close(&mod, in, 2);
	wait_chan(in, 2, VGPU_CHAN_FREE);

	fm_remove(&mod, in);
	tap(gone_from_list(name) && wait_avail("8sm-4g", 8),
	    "REMOVE: vGPU %s destroyed, 8 of 8sm-4g available again", name);
}

/*
 * What vgpud answers when the module's view and its own differ: an OPEN
 * it cannot take, a CLOSE of a channel the worker has not let go; and
 * the log lines a VM can cause are rate-limited.
 */
static void test_channel_answers(void)
{
	struct fm_inst *in;
	uint8_t u[16];
	char name[VGPU_NAME_MAX];
	unsigned int einval;
	int pid, before, after, i;

	in = create("8sm-4g", u);
	if (!in || !in->used || !fm_vfio_open(&mod, in))
		return;
	snprintf(name, sizeof(name), "%s", in->comp.vgpu_name);

	fm_guest_open(&mod, in, 0);
	wait_chan(in, 0, VGPU_CHAN_OPEN);
	in->chan[0].state = VGPU_CHAN_OPENING; /* as if the module asked */
	fm_event(&mod, VGPU_MDEV_EV_CHANNEL_OPEN, in, 0, 0);
	tap(wait_chan(in, 0, VGPU_CHAN_FAILED) && in->chan[0].error == EBUSY,
	    "CHANNEL_OPEN of a channel vgpud has open: answered FAILED "
	    "(EBUSY), not left OPENING");
	fm_guest_close(&mod, in, 0);
	tap(wait_chan(in, 0, VGPU_CHAN_FREE),
	    "... and a CLOSE makes it FREE once the worker let go");
	einval = mod.chan_state_einval;
	fm_event(&mod, VGPU_MDEV_EV_CHANNEL_OPEN, in, 9, 0);
	tap(fm_wait(&mod, einval_above, &einval, WAIT),
	    "CHANNEL_OPEN of channel 9 (it has 4): answered FAILED");

	pid = worker_pid(name);
	kill(pid, SIGSTOP);
	fm_guest_open(&mod, in, 1);
	tap(wait_chan(in, 1, VGPU_CHAN_FAILED) &&
		    in->chan[1].error == ETIMEDOUT,
	    "a worker that does not answer: the channel FAILED (ETIMEDOUT)");
	fm_guest_close(&mod, in, 1);
	fm_wait(&mod, NULL, NULL, 500);
	tap(in->chan[1].state == VGPU_CHAN_CLOSING,
	    "CLOSE of that FAILED channel while the worker still holds it: "
	    "CLOSING, not FREE (state %u)",
	    in->chan[1].state);
	kill(pid, SIGCONT);
	tap(wait_chan(in, 1, VGPU_CHAN_FREE),
	    "... FREE once the worker let go of it");

	before = log_count("): reset");
	for (i = 0; i < 200; i++) {
		fm_event(&mod, VGPU_MDEV_EV_RESET, in, 0, 0);
		if (i % 20 == 19) /* vgpud answers each with ioctls */
			fm_wait(&mod, NULL, NULL, 50);
	}
	fm_wait(&mod, NULL, NULL, 1000);
	after = log_count("): reset");
	tap(after - before <= 10, /* MDEV_LOG_BURST */
	    "200 RESETs of one instance: %d log lines (rate-limited)",
	    after - before);
	fm_guest_open(&mod, in, 2);
	tap(wait_chan(in, 2, VGPU_CHAN_OPEN) && guest_nop(in, in->bar2, 2),
	    "... and its channels work after them");
	fm_guest_close(&mod, in, 2);
	wait_chan(in, 2, VGPU_CHAN_FREE);
	fm_vfio_close(&mod, in);
	fm_remove(&mod, in);
	tap(gone_from_list(name), "REMOVE destroys it");
}

static void test_custom(void)
{
	struct fm_inst *in;
	uint8_t u[16];
	char uu[MDEV_UUID_TEXT], bp[400], out[8192];
	FILE *f;
	int rc;

	in = create("custom", u);
	tap(in && !in->used && in->status == -ENOENT &&
		    strstr(in->message, "vgpu-admin create"),
	    "custom instance without a bound vGPU: fails (ENOENT), saying "
	    "how to bind one");

	snprintf(bp, sizeof(bp), "%s/bp.yaml", tmp);
	f = fopen(bp, "w");
	fprintf(f, "version: 1\nname: vm-bp\nsms: 24\nmemory: 512M\n");
	fclose(f);
	mdev_uuid_random(u);
	mdev_uuid_format(u, uu);
	rc = admin(out, sizeof(out), "create", "-f", bp, "--mdev", uu);
	in = fm_find_uuid(&mod, u);
	if (in)
		fm_wait(&mod, answered, in, WAIT);
	tap(rc == 0 && strstr(out, uu) && in && in->used && !in->pending &&
		    !strcmp(in->comp.vgpu_name, "vm-bp") &&
		    in->comp.sm_count == 24,
	    "vgpu-admin create -f BP --mdev UUID: vGPU vm-bp, its custom "
	    "instance created through sysfs (24 SMs)");
	if (rc)
		diag(out);
	tap(listed("vm-bp", out, sizeof(out)) && strstr(out, uu),
	    "vgpu-admin list shows vm-bp with its UUID");
	rc = admin(out, sizeof(out), "destroy", "vm-bp", NULL, NULL, NULL);
	tap(rc == 0 && !fm_find_uuid(&mod, u) && gone_from_list("vm-bp"),
	    "vgpu-admin destroy: the instance removed through sysfs, then the "
	    "vGPU");
	if (rc)
		diag(out);

	rc = admin(out, sizeof(out), "create", "-f", bp, "--mdev", NULL);
	tap(rc == 0 && strstr(out, "\nmdev "), "create --mdev without a UUID: "
					       "vgpud makes one up");
	admin(out, sizeof(out), "destroy", "vm-bp", NULL, NULL, NULL);
}

static void test_restart(void)
{
	struct fm_inst *in;
	uint8_t u[16];
	char name[VGPU_NAME_MAX], uu[MDEV_UUID_TEXT];
	int old;

	in = create("16sm-8g-excl", u);
	if (!in || !in->used)
		return;
	snprintf(name, sizeof(name), "%s", in->comp.vgpu_name);
	mdev_uuid_format(u, uu);
	fm_vfio_open(&mod, in);
	fm_guest_open(&mod, in, 0);
	tap(wait_chan(in, 0, VGPU_CHAN_OPEN) && guest_nop(in, in->bar2, 0) &&
		    in->comp.isolation == VGPU_MDEV_EXCLUSIVE,
	    "an exclusive instance serves a NOP");
	old = fcntl(in->bar2, F_DUPFD_CLOEXEC, 0);
	tap(stop_vgpud(SIGKILL) && in->dev_state == VGPU_DEVICE_ERROR &&
		    in->chan[0].state == VGPU_CHAN_FAILED,
	    "vgpud killed: the module marks the device ERROR");
	tap(start_vgpud(false) == 0 &&
		    fm_wait(&mod, composed_twice, in, WAIT) &&
		    in->dev_state == VGPU_DEVICE_READY &&
		    !strcmp(in->comp.vgpu_name, name),
	    "vgpud back: EXISTS re-attaches vGPU %s (CREATE_DONE again)", name);
	tap(same_file(old, in->bar2),
	    "... with the BAR2 memfd the VM has mapped (GET_BAR2)");
	fm_guest_close(&mod, in, 0);
	wait_chan(in, 0, VGPU_CHAN_FREE);
	fm_guest_open(&mod, in, 0);
	tap(wait_chan(in, 0, VGPU_CHAN_OPEN) && guest_nop(in, old, 0),
	    "the old mapping's channel serves a NOP again");
	fm_guest_close(&mod, in, 0);
	wait_chan(in, 0, VGPU_CHAN_FREE);

	/* closed while no vgpud ran: the module has no memfd to give */
	stop_vgpud(SIGKILL);
	fm_vfio_close(&mod, in);
	tap(start_vgpud(false) == 0 &&
		    fm_wait(&mod, composed_thrice, in, WAIT) &&
		    in->dev_state == VGPU_DEVICE_READY && in->bar2 >= 0 &&
		    !same_file(old, in->bar2) &&
		    bar2_sealed(in->bar2, 4 * STRIDE),
	    "EXISTS of an instance closed meanwhile (GET_BAR2: ENODATA): "
	    "CREATE_DONE with a fresh memfd");
	close(old);
	tap(fm_vfio_open(&mod, in), "the next VFIO user opens it");
	fm_guest_open(&mod, in, 0);
	tap(wait_chan(in, 0, VGPU_CHAN_OPEN) && guest_nop(in, in->bar2, 0),
	    "... and its channel serves a NOP in the fresh memfd");
	fm_guest_close(&mod, in, 0);
	wait_chan(in, 0, VGPU_CHAN_FREE);
	fm_remove(&mod, in);
	tap(gone_from_list(name), "REMOVE destroys it");
}

/* CPU time vgpud itself used so far, in clock ticks (utime + stime). */
static long cpu_ticks(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long ut = 0, st = 0;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY);
	n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	p = strrchr(buf, ')'); /* the name may hold spaces */
	if (!p || sscanf(p + 2,
			 "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u "
			 "%*u %lu %lu",
			 &ut, &st) != 2)
		return -1;
	return (long)(ut + st);
}

/* vgpud answers on its admin socket (it is past its start-up). */
static bool vgpud_serves(void)
{
	char out[8192];
	int i;

	for (i = 0; i < 300; i++) {
		if (admin(out, sizeof(out), "list", NULL, NULL, NULL, NULL) ==
		    0)
			return true;
		fm_wait(&mod, NULL, NULL, 100);
	}
	return false;
}

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * The device fails under a running vgpud (the module hangs up: here the
 * fake closes vgpud's connections): vgpud opens it again from its tick
 * and re-attaches the instance as after a restart (EXISTS).
 */
static void test_lost(void)
{
	struct dev_want ready;
	struct fm_inst *in;
	char name[VGPU_NAME_MAX];
	int64_t t0;
	uint8_t u[16];
	int lost, again;
	double secs;
	bool ok;

	in = create("8sm-4g", u);
	tap(in && in->used && in->status == 0,
	    "an 8sm-4g instance before the device is lost");
	if (!in || !in->used)
		return;
	snprintf(name, sizeof(name), "%s", in->comp.vgpu_name);
	lost = log_count("mdev: lost /dev/vgpu-ctl");
	again = log_count("attached (again, after it was lost)");
	fm_daemon_gone(&mod);
	t0 = mono_ms();
	ok = fm_accept(&mod, 10000) == 0;
	secs = (mono_ms() - t0) / 1000.0;
	tap(ok && log_count("mdev: lost /dev/vgpu-ctl") == lost + 1,
	    "/dev/vgpu-ctl lost under vgpud: it logs so and opens the device "
	    "again (after %.1f s; it tries every 2 s)",
	    secs);
	ready.in = in;
	ready.state = VGPU_DEVICE_READY;
	tap(fm_wait(&mod, composed_twice, in, WAIT) &&
		    fm_wait(&mod, dev_is, &ready, WAIT) &&
		    !strcmp(in->comp.vgpu_name, name),
	    "... HELLO; EXISTS re-attaches vGPU %s (CREATE_DONE again, "
	    "READY)",
	    name);
	tap(log_count("attached (again, after it was lost)") == again + 1,
	    "... and the log says once: VM path on: /dev/vgpu-ctl attached "
	    "(again, after it was lost)");
	fm_remove(&mod, in);
	tap(gone_from_list(name), "REMOVE destroys it");
}

/* --mdev off: the device is there and never opened. */
static void test_off(void)
{
	spawn_vgpud("off", "64G", false);
	tap(vgpud_serves() && fm_accept(&mod, 4500) < 0 &&
		    log_count("VM path off (--mdev off)") >= 1,
	    "--mdev off: vgpud serves and never opens /dev/vgpu-ctl (4.5 s, "
	    "two retry periods)");
	stop_vgpud(SIGTERM);
}

/*
 * --mdev auto with no module at start: quiet retries (one log line, no
 * busy loop), then the module appears and vgpud attaches as at start-up.
 * Its GPU has 12 GiB (11.4 usable) and 64 SMs, so what a type offers is
 * bound by memory, not SMs, and follows creates and removes.
 */
static void test_late_memory(void)
{
	struct fm_inst *a, *b, *c;
	uint8_t ua[16], ub[16], uc[16];
	const char *absent = "no /dev/vgpu-ctl (vgpu_mdev.ko is not loaded): "
			     "VM path off until it is loaded";
	long cpu0, cpu1;
	int64_t t0;
	double secs;
	bool up, ok;

	fm_unlisten(&mod);
	spawn_vgpud("auto", "12G", false);
	up = vgpud_serves();
	tap(up && log_count(absent) == 1,
	    "--mdev auto without the module: vgpud starts and says \"%s\"",
	    absent);
	cpu0 = cpu_ticks(vgpud);
	fm_wait(&mod, NULL, NULL, 4000);
	cpu1 = cpu_ticks(vgpud);
	tap(up && cpu0 >= 0 && cpu1 - cpu0 < 40 && log_count(absent) == 1,
	    "4 s of retries: %ld ticks of CPU (no busy loop), the log line "
	    "once",
	    cpu1 - cpu0);
	mod.get_types = mod.avail_sets = 0;
	if (fm_listen(&mod)) {
		tap(0, "the fake module listens again");
		return;
	}
	t0 = mono_ms();
	ok = fm_accept(&mod, 10000) == 0;
	secs = (mono_ms() - t0) / 1000.0;
	tap(ok && fm_wait(&mod, types_read, NULL, WAIT) &&
		    log_count("VM path on: /dev/vgpu-ctl attached (module "
			      "loaded after vgpud)") == 1,
	    "module loaded later: vgpud attaches within %.1f s, reads the "
	    "types, publishes them, and logs it once",
	    secs);
	tap(wait_avail("8sm-4g", 2) && wait_avail("16sm-8g", 1) &&
		    wait_avail("32sm-16g", 0) && wait_avail("64sm-32g", 0) &&
		    strstr(mod.desc[1], "2 free on GPU 0"),
	    "12 GiB: 8sm-4g offers 2 (its SMs would allow 8), 16sm-8g 1, "
	    "32sm-16g 0: bound by memory (\"%s\")",
	    mod.desc[1]);
	a = create("8sm-4g", ua);
	tap(a && a->used && a->status == 0 && wait_avail("8sm-4g", 1) &&
		    wait_avail("16sm-8g", 0),
	    "one 8sm-4g created: 8sm-4g offers 1, 16sm-8g 0 (56 SMs free)");
	b = create("8sm-4g", ub);
	tap(b && b->used && b->status == 0 && wait_avail("8sm-4g", 0) &&
		    strstr(mod.desc[1], "none free now"),
	    "a second: nothing offered with 48 SMs free (\"%s\")", mod.desc[1]);
	c = create("8sm-4g", uc);
	tap(c && !c->used && c->status < 0,
	    "a third 8sm-4g is refused (status %d: %s)", c ? c->status : 0,
	    c ? c->message : "-");
	if (a && a->used)
		fm_remove(&mod, a);
	tap(wait_avail("8sm-4g", 1) && wait_avail("16sm-8g", 0),
	    "one removed: 8sm-4g offers 1 again, 16sm-8g still 0");
	if (b && b->used)
		fm_remove(&mod, b);
	tap(wait_avail("8sm-4g", 2) && wait_avail("16sm-8g", 1),
	    "both removed: 2 and 1 again");
	tap(stop_vgpud(SIGTERM), "vgpud stops on SIGTERM");
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: vgpud_mdev BUILD RUN_DIR TMP\n");
		return 2;
	}
	build = argv[1];
	run_dir = argv[2];
	tmp = argv[3];
	signal(SIGPIPE, SIG_IGN);
	snprintf(sock, sizeof(sock), "%s/fakectl.sock", tmp);
	snprintf(sysfs, sizeof(sysfs), "%s/sys", tmp);
	snprintf(vlog, sizeof(vlog), "%s/vgpud.log", tmp);
	setenv("VGPU_SYSFS_ROOT", sysfs, 1);
	if (fm_init(&mod, sock, sysfs)) {
		perror("fm_init");
		return 1;
	}
	tap(start_vgpud(false) == 0, "vgpud --mdev on opens the (fake) "
				     "/dev/vgpu-ctl");
	if (vgpud < 0 || mod.io < 0) {
		printf("1..%d\n", tap_n);
		return 1;
	}
	test_catalogue_instance();
	test_channel_answers();
	test_custom();
	test_restart();
	test_lost();
	tap(stop_vgpud(SIGTERM), "vgpud stops on SIGTERM");
	test_off();
	test_late_memory();
	printf("1..%d\n", tap_n);
	return tap_failed ? 1 : 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * vgpu-admin's save, restore and migration commands (admin.h 1.3):
 *
 *   suspend NAME [--to FILE]   save the vGPU's state, free its GPU share
 *   resume NAME [--gpu N] [--from FILE]
 *                              bring it back (same device pointers)
 *   migrate NAME --gpu N       move a running vGPU to another GPU
 *
 * The state file is opened here, with the caller's rights and working
 * directory, and passed to vgpud with the request (SCM_RIGHTS). suspend
 * writes a new file next to FILE and renames it over FILE only once the
 * suspend has succeeded, so a refused suspend leaves FILE as it was.
 * Progress (bytes done of total) goes to stderr while vgpud reports it.
 * The JSON objects are documented in docs/vgpu-admin.1 and stay stable.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "admin_cli.h"
#include "plan.h"

/* No packet from vgpud for this long: give up waiting */
#define STATE_SILENCE_MS 180000

const char admin_usage_suspend[] =
	"usage: vgpu-admin [--run-dir DIR] suspend NAME [--to FILE] [--json]\n"
	"\n"
	"Suspend the running vGPU NAME: at a kernel boundary its worker saves\n"
	"its state (allocations, their memory, its programs' libraries and\n"
	"module variables) to FILE, or to host memory without --to, and gives\n"
	"its SMs and memory back: other vGPUs may use them. Its programs stay\n"
	"connected; their CUDA calls wait until it is resumed. New programs\n"
	"are refused meanwhile. FILE (mode 0600) has a versioned header and a\n"
	"checksum per record; it is replaced only when the suspend succeeds.\n"
	"Progress goes to stderr.\n";

const char admin_usage_resume[] =
	"usage: vgpu-admin [--run-dir DIR] resume NAME [--gpu N] "
	"[--from FILE] [--json]\n"
	"\n"
	"Resume the suspended vGPU NAME on GPU N (default: the first GPU with\n"
	"room) from the state its suspend saved, or from FILE: the same "
	"device\n"
	"pointers, its programs go on. The file is checked whole first: a\n"
	"truncated or corrupted file, another version, another vGPU's state\n"
	"or another state of this vGPU is refused with the reason, and the\n"
	"vGPU stays suspended as it was.\n";

const char admin_usage_migrate[] =
	"usage: vgpu-admin [--run-dir DIR] migrate NAME --gpu N [--json]\n"
	"\n"
	"Move the running vGPU NAME to GPU N: its memory is copied there and\n"
	"mapped at the same addresses, its programs go on (their calls wait\n"
	"for the switch, at a kernel boundary). Refused when GPU N lacks the\n"
	"SMs or the memory.\n";

int admin_save_interval(const char *v, struct vgpu_admin_request *req)
{
	double s;
	char *end;

	if (!v || !*v)
		return -1;
	s = strtod(v, &end);
	if (*end || !isfinite(s) || s < 0 || s > 86400.0 || (s > 0 && s < 0.1))
		return -1;
	req->first = (uint32_t)llround(s * 1000.0);
	if (req->first)
		req->flags |= VGPU_ADMIN_CREATE_RECOVERY;
	return 0;
}

/* ---- the call: a request with a descriptor, progress, the answer ------- */

static const char *gib(uint64_t n, char *buf, size_t len)
{
	if (n >= (1ull << 30))
		snprintf(buf, len, "%.2f GiB", n / (double)(1ull << 30));
	else
		snprintf(buf, len, "%.1f MiB", n / (double)(1ull << 20));
	return buf;
}

/* One progress packet on stderr: a line rewritten on a terminal, else a
 * line every few seconds. */
static void show_progress(const char *what, const struct vgpu_admin_progress *p,
			  int *shown)
{
	static struct timespec last;
	struct timespec now;
	char a[32], b[32];
	int tty = isatty(2);

	clock_gettime(CLOCK_MONOTONIC, &now);
	if (!tty && *shown &&
	    (now.tv_sec - last.tv_sec) * 1000 +
			    (now.tv_nsec - last.tv_nsec) / 1000000 <
		    2000 &&
	    p->done < p->total)
		return;
	last = now;
	fprintf(stderr, "%svgpu-admin: %s: %s of %s (%.0f%%)%s",
		tty ? "\r" : "", what, gib(p->done, a, sizeof(a)),
		gib(p->total, b, sizeof(b)),
		p->total ? 100.0 * (double)p->done / (double)p->total : 100.0,
		tty ? "   " : "\n");
	fflush(stderr);
	*shown = 1;
}

/* Connect to vgpud's admin socket; -1 with the reason printed. */
static int connect_admin(const struct admin_ctx *ctx)
{
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	int fd, r;

	r = snprintf(addr.sun_path, sizeof(addr.sun_path), "%s/admin.sock",
		     ctx->run_dir);
	if (r < 0 || (size_t)r >= sizeof(addr.sun_path)) {
		fprintf(stderr, "vgpu-admin: run directory '%s' is too long\n",
			ctx->run_dir);
		return -1;
	}
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
		fprintf(stderr,
			"vgpu-admin: cannot reach vgpud at %s: %s (is vgpud "
			"running? the admin socket is for root only)\n",
			addr.sun_path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

/*
 * Send req (with file attached when >= 0), show progress packets, and
 * return the answer in resp: ADMIN_EXIT_OK (whatever its status) or
 * ADMIN_EXIT_UNREACHABLE.
 */
static int state_call(const struct admin_ctx *ctx,
		      const struct vgpu_admin_request *req, int file,
		      const char *what, struct vgpu_admin_response *resp)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} ctl;
	struct iovec iov = {.iov_base = (void *)req, .iov_len = sizeof(*req)};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	struct pollfd pfd;
	int fd, r, shown = 0;
	ssize_t n;

	fd = connect_admin(ctx);
	if (fd < 0)
		return ADMIN_EXIT_UNREACHABLE;
	if (file >= 0) {
		memset(&ctl, 0, sizeof(ctl));
		mh.msg_control = ctl.buf;
		mh.msg_controllen = sizeof(ctl.buf);
		CMSG_FIRSTHDR(&mh)->cmsg_level = SOL_SOCKET;
		CMSG_FIRSTHDR(&mh)->cmsg_type = SCM_RIGHTS;
		CMSG_FIRSTHDR(&mh)->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(CMSG_FIRSTHDR(&mh)), &file, sizeof(int));
	}
	if (sendmsg(fd, &mh, MSG_NOSIGNAL) != (ssize_t)sizeof(*req) &&
	    errno != EPIPE) {
		fprintf(stderr, "vgpu-admin: sending to vgpud: %s\n",
			strerror(errno));
		close(fd);
		return ADMIN_EXIT_UNREACHABLE;
	}
	for (;;) {
		pfd.fd = fd;
		pfd.events = POLLIN;
		do {
			r = poll(&pfd, 1, STATE_SILENCE_MS);
		} while (r < 0 && errno == EINTR);
		if (r <= 0) {
			fprintf(stderr,
				"vgpu-admin: vgpud said nothing for %d s\n",
				STATE_SILENCE_MS / 1000);
			break;
		}
		n = recv(fd, resp, sizeof(*resp), MSG_TRUNC);
		if (n != (ssize_t)sizeof(*resp) ||
		    resp->magic != VGPU_ADMIN_MAGIC) {
			fprintf(stderr, "vgpu-admin: vgpud %s\n",
				n == 0 ? "closed the connection without an "
					 "answer"
				       : "sent a reply of the wrong size "
					 "(another vgpu version?)");
			break;
		}
		if (resp->status == VGPU_ADMIN_IN_PROGRESS) {
			show_progress(what, &resp->state.progress, &shown);
			continue;
		}
		if (shown && isatty(2))
			fputc('\n', stderr);
		resp->message[sizeof(resp->message) - 1] = '\0';
		close(fd);
		return ADMIN_EXIT_OK;
	}
	if (shown && isatty(2))
		fputc('\n', stderr);
	close(fd);
	return ADMIN_EXIT_UNREACHABLE;
}

/* The outcome: the sentence, or the JSON object. */
static int state_print(const struct admin_ctx *ctx, const char *key,
		       const struct vgpu_admin_response *resp)
{
	const struct vgpu_admin_state_result *res = &resp->state.result;
	const char *m =
		resp->message[0] ? resp->message : "vgpud refused the request";

	if (resp->status != VGPU_ADMIN_OK) {
		fprintf(stderr, "vgpu-admin: %s\n", m);
		return json_fail(ctx, ADMIN_EXIT_REFUSED, m);
	}
	if (!ctx->json) {
		printf("%s\n", m);
		return ADMIN_EXIT_OK;
	}
	json_print(json_pack(
		"{s:o, s:{s:I, s:I, s:b, s:I, s:f, s:f, s:f, s:f, s:f, s:f, "
		"s:f}, s:s}",
		key, resp->count ? entry_json(&resp->state.entry) : json_null(),
		"result", "from_gpu", (json_int_t)res->from_gpu, "to_gpu",
		(json_int_t)res->to_gpu, "peer", (int)res->peer, "bytes",
		(json_int_t)res->bytes, "quiesce_ms", res->quiesce_ns / 1e6,
		"prepare_ms", res->prepare_ns / 1e6, "copy_ms",
		res->copy_ns / 1e6, "remap_ms", res->remap_ns / 1e6,
		"blackout_ms", res->blackout_ns / 1e6, "total_ms",
		res->total_ns / 1e6, "seconds", res->total_ns / 1e9, "message",
		resp->message));
	return ADMIN_EXIT_OK;
}

/* NAME and the options of these commands. */
struct state_args {
	const char *name, *to, *from;
	uint32_t gpu;
};

static int state_args(const struct admin_ctx *ctx, const char *cmd, int argc,
		      char **argv, struct state_args *a)
{
	int i;

	memset(a, 0, sizeof(*a));
	a->gpu = VGPU_ADMIN_GPU_ANY;
	for (i = 0; i < argc; i++) {
		const char *arg = argv[i], *v = NULL;
		size_t len = 0;

		if ((!strncmp(arg, "--to", 4) && (len = 4)) ||
		    (!strncmp(arg, "--from", 6) && (len = 6)) ||
		    (!strncmp(arg, "--gpu", 5) && (len = 5))) {
			if (arg[len] == '=')
				v = arg + len + 1;
			else if (arg[len] == '\0' && i + 1 < argc)
				v = argv[++i];
			else if (arg[len] != '\0')
				return usage_error(ctx, cmd,
						   "%s: unknown option '%s'",
						   cmd, arg);
			if (!v || !*v)
				return usage_error(ctx, cmd,
						   "%s: %.*s needs a value",
						   cmd, (int)len, arg);
			if (len == 4 && !strcmp(cmd, "suspend"))
				a->to = v;
			else if (len == 6 && !strcmp(cmd, "resume"))
				a->from = v;
			else if (len == 5 && strcmp(cmd, "suspend")) {
				if (parse_uint(v, VGPU_MAX_GPUS - 1, &a->gpu))
					return usage_error(
						ctx, cmd,
						"--gpu needs a GPU number (0, "
						"1, ...), got '%s'",
						v);
			} else
				return usage_error(ctx, cmd, "%s takes no %.*s",
						   cmd, (int)len, arg);
		} else if (arg[0] == '-') {
			return usage_error(ctx, cmd, "%s: unknown option '%s'",
					   cmd, arg);
		} else if (!a->name) {
			a->name = arg;
		} else {
			return usage_error(ctx, cmd,
					   "%s: unexpected argument '%s'", cmd,
					   arg);
		}
	}
	if (!a->name)
		return usage_error(ctx, cmd, "%s: NAME is missing", cmd);
	if (strlen(a->name) >= VGPU_NAME_MAX)
		return usage_error(ctx, cmd, "%s: the name is too long", cmd);
	return 0;
}

/* "FILE is not a regular file (a directory)" and the like; 0 if it is. */
static int regular_file(int fd, const char *path)
{
	struct stat sb;

	if (fstat(fd, &sb) < 0) {
		fprintf(stderr, "vgpu-admin: %s: %s\n", path, strerror(errno));
		return -1;
	}
	if (!S_ISREG(sb.st_mode)) {
		fprintf(stderr,
			"vgpu-admin: %s is not a regular file (a %s): a "
			"state file is a plain file\n",
			path,
			S_ISDIR(sb.st_mode)    ? "directory"
			: S_ISCHR(sb.st_mode)  ? "character device"
			: S_ISBLK(sb.st_mode)  ? "block device"
			: S_ISFIFO(sb.st_mode) ? "pipe"
					       : "special file");
		return -1;
	}
	return 0;
}

int cmd_suspend(const struct admin_ctx *ctx, int argc, char **argv)
{
	struct vgpu_admin_response *resp;
	struct vgpu_admin_request req;
	struct state_args a;
	char tmp[4096], what[VGPU_NAME_MAX + 16];
	int rc, fd = -1;

	rc = state_args(ctx, "suspend", argc, argv, &a);
	if (rc)
		return rc;
	request_init(&req, VGPU_ADMIN_SUSPEND);
	snprintf(req.name, sizeof(req.name), "%s", a.name);
	req.flags = VGPU_ADMIN_PROGRESS;
	if (a.to) {
		struct stat sb;

		/* a directory or a device named as the target: refused
		 * before anything is written */
		if (stat(a.to, &sb) == 0 && !S_ISREG(sb.st_mode)) {
			fd = open(a.to, O_RDONLY | O_CLOEXEC);
			rc = fd >= 0 ? regular_file(fd, a.to) : -1;
			if (fd < 0)
				fprintf(stderr, "vgpu-admin: %s: %s\n", a.to,
					strerror(errno));
			if (fd >= 0)
				close(fd);
			return json_fail(ctx, ADMIN_EXIT_REFUSED,
					 "not a regular file");
		}
		snprintf(tmp, sizeof(tmp), "%s.tmp-%d", a.to, (int)getpid());
		fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (fd < 0) {
			fprintf(stderr, "vgpu-admin: cannot create %s: %s\n",
				tmp, strerror(errno));
			return json_fail(ctx, ADMIN_EXIT_REFUSED,
					 "cannot create the state file");
		}
		req.flags |= VGPU_ADMIN_STATE_FILE;
	}
	resp = response_alloc();
	if (!resp) {
		rc = ADMIN_EXIT_REFUSED;
		goto out;
	}
	snprintf(what, sizeof(what), "saving %s", a.name);
	rc = state_call(ctx, &req, fd, what, resp);
	if (rc != ADMIN_EXIT_OK) {
		rc = json_fail(ctx, rc, "cannot reach vgpud");
		goto out;
	}
	if (a.to && resp->status == VGPU_ADMIN_OK && rename(tmp, a.to) < 0) {
		fprintf(stderr,
			"vgpu-admin: the state is saved in %s, but renaming it "
			"to %s failed: %s\n",
			tmp, a.to, strerror(errno));
		a.to = NULL; /* keep the file we have */
	}
	rc = state_print(ctx, "suspended", resp);
out:
	if (fd >= 0) {
		close(fd);
		if (a.to && (!resp || resp->status != VGPU_ADMIN_OK))
			unlink(tmp);
	}
	free(resp);
	return rc;
}

int cmd_resume(const struct admin_ctx *ctx, int argc, char **argv)
{
	struct vgpu_admin_response *resp;
	struct vgpu_admin_request req;
	struct state_args a;
	char what[VGPU_NAME_MAX + 16];
	int rc, fd = -1;

	rc = state_args(ctx, "resume", argc, argv, &a);
	if (rc)
		return rc;
	request_init(&req, VGPU_ADMIN_RESUME);
	snprintf(req.name, sizeof(req.name), "%s", a.name);
	req.gpu = a.gpu;
	req.flags = VGPU_ADMIN_PROGRESS;
	if (a.from) {
		fd = open(a.from, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			fprintf(stderr, "vgpu-admin: cannot open %s: %s\n",
				a.from, strerror(errno));
			return json_fail(ctx, ADMIN_EXIT_REFUSED,
					 "cannot open the state file");
		}
		if (regular_file(fd, a.from)) {
			close(fd);
			return json_fail(ctx, ADMIN_EXIT_REFUSED,
					 "not a regular file");
		}
		req.flags |= VGPU_ADMIN_STATE_FILE;
	}
	resp = response_alloc();
	if (!resp) {
		if (fd >= 0)
			close(fd);
		return ADMIN_EXIT_REFUSED;
	}
	snprintf(what, sizeof(what), "restoring %s", a.name);
	rc = state_call(ctx, &req, fd, what, resp);
	if (fd >= 0)
		close(fd);
	rc = rc == ADMIN_EXIT_OK ? state_print(ctx, "resumed", resp)
				 : json_fail(ctx, rc, "cannot reach vgpud");
	free(resp);
	return rc;
}

int cmd_migrate(const struct admin_ctx *ctx, int argc, char **argv)
{
	struct vgpu_admin_response *resp;
	struct vgpu_admin_request req;
	struct state_args a;
	char what[VGPU_NAME_MAX + 16];
	int rc;

	rc = state_args(ctx, "migrate", argc, argv, &a);
	if (rc)
		return rc;
	if (a.gpu == VGPU_ADMIN_GPU_ANY)
		return usage_error(ctx, "migrate",
				   "migrate: --gpu N is required");
	request_init(&req, VGPU_ADMIN_MIGRATE);
	snprintf(req.name, sizeof(req.name), "%s", a.name);
	req.gpu = a.gpu;
	req.flags = VGPU_ADMIN_PROGRESS;
	resp = response_alloc();
	if (!resp)
		return ADMIN_EXIT_REFUSED;
	snprintf(what, sizeof(what), "moving %s", a.name);
	rc = state_call(ctx, &req, -1, what, resp);
	rc = rc == ADMIN_EXIT_OK ? state_print(ctx, "migrated", resp)
				 : json_fail(ctx, rc, "cannot reach vgpud");
	free(resp);
	return rc;
}

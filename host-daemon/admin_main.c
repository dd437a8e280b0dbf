/* SPDX-License-Identifier: MIT */
/*
 * vgpu-admin: the command line for vgpud's admin socket (include/vgpu/
 * admin.h) and for blueprint files (host-daemon/blueprint.h). One request
 * per connection; tables and sentences for people, --json for scripts
 * (the objects are documented in docs/vgpu-admin.1 and stay stable), and
 * exit codes scripts can rely on:
 *   0 done, 1 refused or invalid, 2 usage error, 3 vgpud cannot be reached.
 */
#include <errno.h>
#include <grp.h>
#include <jansson.h>
#include <math.h>
#include <poll.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <vgpu/admin.h>
#include <vgpu/mdev_ctl.h>

#include "admin_cli.h"
#include "admin_mdev.h"
#include "admin_swap.h"
#include "blueprint.h"
#include "mdev_uuid.h"
#include "plan.h"

#define ADMIN_DEFAULT_RUN_DIR  "/run/vgpu"
#define ADMIN_REPLY_TIMEOUT_MS 180000 /* create waits for the worker */
#define ADMIN_MAX_LIST	       4096
/* sysfs writes for mdev instances: the create waits for vgpud's answer */
#define ADMIN_MDEV_CREATE_S (VGPU_MDEV_CREATE_TIMEOUT_S + 10)
#define ADMIN_MDEV_REMOVE_S 30
#define ADMIN_MDEV_GONE_MS  10000 /* vgpud destroys the vGPU on REMOVE */

static const char usage_main[] =
	"usage: vgpu-admin [--run-dir DIR] [--json] COMMAND [ARGS]\n"
	"\n"
	"Manage the virtual GPUs of this host through vgpud.\n"
	"\n"
	"Commands:\n"
	"  gpus             the GPUs: SMs, SM groups, what is free, fault\n"
	"                   domains\n"
	"  validate FILE... check blueprints (and, if vgpud runs, whether\n"
	"                   they fit now); creates nothing\n"
	"  create -f FILE [--mdev [UUID]]\n"
	"                   compose a vGPU from a blueprint (and an mdev\n"
	"                   instance for a VM)\n"
	"  create NAME --sms N --memory SIZE [...]\n"
	"                   compose a vGPU from free SM groups and memory\n"
	"  show NAME        one vGPU: its SMs, memory, clients, domain\n"
	"  list             every vGPU\n"
	"  destroy NAME     stop a vGPU's worker and free what it holds\n"
	"  resize NAME --sms N\n"
	"                   grow or shrink a running vGPU (its programs go "
	"on)\n"
	"  move NAME --slice GROUPS\n"
	"                   move a running vGPU onto other SM groups\n"
	"  top              live load, power and energy per vGPU\n"
	"  policy [NAME | --gpu N] [...]\n"
	"                   scheduling: a GPU's policy (static, fair,\n"
	"                   priority), a vGPU's weight, min/max SMs and\n"
	"                   priority, who holds and lends what, and\n"
	"                   swapping idle vGPUs out (--swap)\n"
	"  suspend NAME [--to FILE]\n"
	"                   save a vGPU's state, free its SMs and memory\n"
	"  resume NAME [--gpu N] [--from FILE]\n"
	"                   bring it back (the same device pointers)\n"
	"  migrate NAME --gpu N\n"
	"                   move a running vGPU to another GPU\n"
	"\n"
	"Options:\n"
	"  --run-dir DIR    vgpud's run directory (default /run/vgpu);\n"
	"                   vgpu-admin talks to DIR/admin.sock (root only)\n"
	"  --json           print one JSON object (see vgpu-admin(1))\n"
	"  --help           this text; COMMAND --help for a command's\n"
	"\n"
	"Exit status:\n"
	"  0  done\n"
	"  1  refused by vgpud, or a blueprint is invalid or does not fit\n"
	"     (the reason is printed on stderr)\n"
	"  2  usage error\n"
	"  3  vgpud cannot be reached (not running, or another --run-dir)\n";

#define EXIT_TEXT                                                              \
	"\nExit status: 0 done, 1 refused (reason on stderr), 2 usage "        \
	"error,\n"                                                             \
	"3 vgpud cannot be reached. --json prints one JSON object (an\n"       \
	"\"error\" object when it fails).\n"

static const char usage_create[] =
	"usage: vgpu-admin [--run-dir DIR] create NAME --sms N --memory SIZE\n"
	"                  [--user USER | --group GROUP] [--gpu N]\n"
	"                  [--time-limit SECONDS] [--save-interval SECONDS]\n"
	"                  [--isolation shared|exclusive]\n"
	"                  [--min-sms N] [--max-sms N] [--weight W]\n"
	"                  [--priority low|normal|high]\n"
	"                  [--swap allowed|never|gpu] [--json]\n"
	"       vgpu-admin [--run-dir DIR] create -f FILE [--json]\n"
	"       ... create ... --mdev [UUID]\n"
	"\n"
	"Create the vGPU NAME ([A-Za-z0-9_.-], at most 63 characters), or\n"
	"the one the blueprint FILE describes (blueprints/README.md).\n"
	"\n"
	"  --sms N              SMs of the slice; rounded up to whole SM\n"
	"                       groups (8 SMs on an H100), or given the SMs\n"
	"                       the split left over when they fit better\n"
	"                       (12 on an H100); the real count is printed\n"
	"  --memory SIZE        memory quota: bytes, or a number with a K, M,\n"
	"                       G or T suffix (binary: 1G = 2^30 bytes)\n"
	"  --user USER          the only user whose programs may use it: a\n"
	"                       name or a numeric uid (default: you)\n"
	"  --group GROUP        instead: every member of this group (name\n"
	"                       or gid) may use it\n"
	"  --time-limit SECONDS longest a kernel may run before the vGPU is\n"
	"                       reset (default 10; 0 = no limit)\n"
	"  --gpu N              the physical GPU (default: the first with\n"
	"                       room)\n"
	"  --isolation KIND     shared (default): an MPS client, running\n"
	"                       concurrently with the GPU's other shared\n"
	"                       vGPUs, but sharing their fate on a fatal\n"
	"                       fault; exclusive: outside MPS, its own fault\n"
	"                       domain, time-sliced against the rest\n"
	"  --save-interval SECONDS\n"
	"                       take a save point of its memory this often;\n"
	"                       after a fault of its shared domain it comes\n"
	"                       back with that memory (default 0: none)\n"
	"  --min-sms N, --max-sms N, --weight W, --priority P\n"
	"                       its scheduling policy (vgpu-admin policy\n"
	"                       --help; default: one SM group, the whole\n"
	"                       GPU, its size in groups, normal)\n"
	"  --swap MODE          allowed: vgpud may swap it out to DIR/swap\n"
	"                       when it is idle and room is needed; never;\n"
	"                       gpu (default): as its GPU says (vgpu-admin\n"
	"                       policy --gpu N --swap on|off)\n"
	"  -f FILE              take all of these from a blueprint\n"
	"  --mdev [UUID]        for a VM: bind the vGPU to the mdev UUID\n"
	"                       (default: a new one) and create the\n"
	"                       instance of vgpu_mdev.ko's custom type with\n"
	"                       it; prints the UUID. Give the VM that mdev\n"
	"                       (libvirt: <hostdev type='mdev'>)\n" EXIT_TEXT;

static const char usage_list[] =
	"usage: vgpu-admin [--run-dir DIR] list [--json]\n"
	"\n"
	"Show every vGPU: NAME GPU BACKEND SMS GROUPS MEMORY USED CLIENTS\n"
	"USER STATE RESTARTS PID ISOLATION. BACKEND \"sim (simulated)\" means\n"
	"the CPU simulator: none of its figures are GPU figures. GROUPS\n"
	"\"left\" is the slice of SMs the split left over. USER is a user,\n"
	"or group:NAME when every member of a group may use it. STATE is\n"
	"starting, running, restarting (its fault domain is being\n"
	"restarted), failed (restarting gave up; destroy and re-create it)\n"
	"or stopping. MDEV (shown when a vGPU is for a VM) is its mdev UUID,\n"
	"with \"(open)\" while a VM holds it, \"(no instance)\" while bound\n"
	"but not created.\n" EXIT_TEXT;

static const char usage_destroy[] =
	"usage: vgpu-admin [--run-dir DIR] destroy NAME [--json]\n"
	"\n"
	"Stop the vGPU's worker (its clients see their connection close)\n"
	"and return its SM groups and memory. A vGPU that is an mdev\n"
	"instance: the instance is removed first (refused while a VM has it\n"
	"open).\n" EXIT_TEXT;

static const char usage_show[] =
	"usage: vgpu-admin [--run-dir DIR] show NAME [--json]\n"
	"\n"
	"Everything about one vGPU: its SMs and which SM groups, memory\n"
	"quota and use, clients, who may use it, its isolation and fault\n"
	"domain (and what that means), state, restarts, worker pid, VA\n"
	"window and kernel time limit.\n" EXIT_TEXT;

static const char usage_gpus[] =
	"usage: vgpu-admin [--run-dir DIR] gpus [--json]\n"
	"\n"
	"Every GPU vgpud manages: name, SMs, minSmPartitionSize and\n"
	"smCoscheduledAlignment, SM groups in all and free, the SMs the\n"
	"split leaves over and what is done with them, memory (total, kept\n"
	"for the driver, free), the backend, and the fault domains: the\n"
	"shared (MPS) domain and each exclusive vGPU.\n" EXIT_TEXT;

static const char usage_validate[] =
	"usage: vgpu-admin [--run-dir DIR] validate FILE... [--json]\n"
	"\n"
	"Check blueprint files: the format (errors name the file, line and\n"
	"field), the user or group, and, when vgpud can be reached, whether\n"
	"the vGPU fits now (\"fits: 16 SMs (groups 2,3) on GPU 0\" or what\n"
	"is free instead). Creates nothing. Exit 0 only if every file is\n"
	"valid (and fits, when vgpud was asked); 1 otherwise.\n" EXIT_TEXT;

static const char domain_note[] =
	"a fault domain is what one fatal GPU fault stops: the shared (MPS) "
	"vGPUs of a GPU run concurrently but restart together; an exclusive "
	"vGPU runs outside MPS, time-sliced, and restarts alone";

/* A message about reaching vgpud, unless the command wants quiet. */
static void say(const struct admin_ctx *ctx, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void say(const struct admin_ctx *ctx, const char *fmt, ...)
{
	va_list ap;

	if (ctx->quiet)
		return;
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
}

void request_init(struct vgpu_admin_request *req, uint32_t op)
{
	memset(req, 0, sizeof(*req));
	req->magic = VGPU_ADMIN_MAGIC;
	req->major = VGPU_ADMIN_MAJOR;
	req->minor = VGPU_ADMIN_MINOR;
	req->op = op;
}

/* Print obj (consumed) on stdout, in a stable key order. */
void json_print(json_t *obj)
{
	if (!obj) {
		fprintf(stderr, "vgpu-admin: out of memory\n");
		return;
	}
	json_dumpf(obj, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	fputc('\n', stdout);
	json_decref(obj);
}

/* --json: the error object for an exit code other than 0. */
int json_fail(const struct admin_ctx *ctx, int code, const char *msg)
{
	if (ctx->json)
		json_print(json_pack("{s:{s:i, s:s}}", "error", "exit", code,
				     "message", msg ? msg : ""));
	return code;
}

/* A usage error: what was wrong, and where the help is. Exit code 2. */
int usage_error(const struct admin_ctx *ctx, const char *cmd, const char *fmt,
		...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr,
		"vgpu-admin: %s\nvgpu-admin: see 'vgpu-admin%s%s "
		"--help'\n",
		msg, cmd ? " " : "", cmd ? cmd : "");
	return json_fail(ctx, ADMIN_EXIT_USAGE, msg);
}
/* "4G" -> 4 << 30. Plain bytes or K/M/G/T (binary), optional "iB"/"B". */
static int parse_size(const char *s, uint64_t *out)
{
	unsigned long long v;
	unsigned shift = 0;
	char *end;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -1;
	switch (*end) {
	case 'k':
	case 'K':
		shift = 10;
		break;
	case 'm':
	case 'M':
		shift = 20;
		break;
	case 'g':
	case 'G':
		shift = 30;
		break;
	case 't':
	case 'T':
		shift = 40;
		break;
	case '\0':
		break;
	default:
		return -1;
	}
	if (shift) {
		end++;
		if (strcmp(end, "") && strcmp(end, "B") && strcmp(end, "iB"))
			return -1;
		if (v > (UINT64_MAX >> shift))
			return -1;
	}
	*out = (uint64_t)v << shift;
	return 0;
}

/* A decimal number in [min, max]. */
int parse_uint(const char *s, unsigned long long max, uint32_t *out)
{
	unsigned long long v;
	char *end;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v > max)
		return -1;
	*out = (uint32_t)v;
	return 0;
}

/* USER: a login name, or a numeric uid. */
static int parse_user(const char *s, uint32_t *uid)
{
	struct passwd *pw = getpwnam(s);

	if (pw) {
		*uid = pw->pw_uid;
		return 0;
	}
	return parse_uint(s, UINT32_MAX - 1, uid);
}

static const char *user_name(uint32_t uid, char *buf, size_t len)
{
	struct passwd *pw = getpwuid(uid);

	if (pw)
		snprintf(buf, len, "%s", pw->pw_name);
	else
		snprintf(buf, len, "%u", uid);
	return buf;
}

/* "0,1" or "0-4,7": runs of three or more groups as a range. */
static const char *groups_text(const struct vgpu_admin_entry *e, char *buf,
			       size_t len)
{
	uint32_t i = 0, n = e->ngroups < VGPU_MAX_SM_GROUPS
				    ? e->ngroups
				    : VGPU_MAX_SM_GROUPS;
	size_t off = 0;

	buf[0] = '\0';
	while (i < n && off < len) {
		uint32_t j = i;

		while (j + 1 < n && e->groups[j + 1] == e->groups[j] + 1)
			j++;
		if (j - i >= 2) {
			off += snprintf(buf + off, len - off, "%s%u-%u",
					off ? "," : "", e->groups[i],
					e->groups[j]);
			i = j + 1;
		} else {
			off += snprintf(buf + off, len - off, "%s%u",
					off ? "," : "", e->groups[i]);
			i++;
		}
	}
	if (n == 0)
		snprintf(buf, len, "-");
	else if (e->leftover)
		snprintf(buf, len, "%u (leftover)", e->groups[0]);
	return buf;
}

const char *state_text(uint32_t state)
{
	switch (state) {
	case VGPU_ADMIN_STATE_STARTING:
		return "starting";
	case VGPU_ADMIN_STATE_RUNNING:
		return "running";
	case VGPU_ADMIN_STATE_RESTARTING:
		return "restarting";
	case VGPU_ADMIN_STATE_FAILED:
		return "failed";
	case VGPU_ADMIN_STATE_STOPPING:
		return "stopping";
	case VGPU_ADMIN_STATE_SUSPENDED:
		return "suspended";
	case VGPU_ADMIN_STATE_SWAPPED:
		return "swapped";
	}
	return "unknown";
}

const char *backend_text(uint32_t backend)
{
	switch (backend) {
	case VGPU_BACKEND_CUDA:
		return "cuda";
	case VGPU_BACKEND_SIM:
		return "sim (simulated)";
	}
	return "unknown";
}

/*
 * One request, one response over a fresh connection. Returns an exit
 * code: ADMIN_EXIT_OK with *resp filled (whatever its status), or
 * ADMIN_EXIT_UNREACHABLE with the reason printed.
 */
int admin_call(const struct admin_ctx *ctx,
	       const struct vgpu_admin_request *req,
	       struct vgpu_admin_response *resp)
{
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	struct pollfd pfd;
	ssize_t n;
	const char *run_dir = ctx->run_dir;
	int fd, r;

	r = snprintf(addr.sun_path, sizeof(addr.sun_path), "%s/admin.sock",
		     run_dir);
	if (r < 0 || (size_t)r >= sizeof(addr.sun_path)) {
		say(ctx,
		    "vgpu-admin: run directory '%s' is too long "
		    "for a socket path\n",
		    run_dir);
		return ADMIN_EXIT_USAGE;
	}
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		say(ctx, "vgpu-admin: socket: %s\n", strerror(errno));
		return ADMIN_EXIT_UNREACHABLE;
	}
	if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
		int e = errno;

		say(ctx, "vgpu-admin: cannot reach vgpud at %s: %s\n",
		    addr.sun_path, strerror(e));
		if (e == EACCES || e == EPERM)
			say(ctx, "vgpu-admin: the admin socket is for "
				 "root only; run vgpu-admin as root\n");
		else
			say(ctx,
			    "vgpu-admin: is vgpud running? Start it with "
			    "'vgpud --run-dir %s' (as root)\n",
			    run_dir);
		close(fd);
		return ADMIN_EXIT_UNREACHABLE;
	}
	/* a refusal may already be queued when the send fails: read on */
	if (send(fd, req, sizeof(*req), MSG_NOSIGNAL) != sizeof(*req) &&
	    errno != EPIPE) {
		say(ctx, "vgpu-admin: sending to vgpud at %s: %s\n",
		    addr.sun_path, strerror(errno));
		close(fd);
		return ADMIN_EXIT_UNREACHABLE;
	}
	pfd.fd = fd;
	pfd.events = POLLIN;
	do {
		r = poll(&pfd, 1, ADMIN_REPLY_TIMEOUT_MS);
	} while (r < 0 && errno == EINTR);
	if (r <= 0) {
		say(ctx, "vgpu-admin: vgpud at %s did not answer within %d s\n",
		    addr.sun_path, ADMIN_REPLY_TIMEOUT_MS / 1000);
		close(fd);
		return ADMIN_EXIT_UNREACHABLE;
	}
	n = recv(fd, resp, sizeof(*resp), MSG_TRUNC);
	close(fd);
	if (n != (ssize_t)sizeof(*resp) || resp->magic != VGPU_ADMIN_MAGIC) {
		if (n == 0)
			say(ctx,
			    "vgpu-admin: vgpud at %s closed the "
			    "connection without an answer\n",
			    addr.sun_path);
		else
			say(ctx,
			    "vgpu-admin: vgpud at %s sent a reply of %zd "
			    "bytes (expected %zu) or with a bad magic; is "
			    "it the same vgpu version?\n",
			    addr.sun_path, n, sizeof(*resp));
		return ADMIN_EXIT_UNREACHABLE;
	}
	resp->message[sizeof(resp->message) - 1] = '\0';
	return ADMIN_EXIT_OK;
}

/* Value of option argv[*i] ("--opt VALUE" or "--opt=VALUE"). */
static const char *opt_value(int argc, char **argv, int *i, const char *opt)
{
	size_t len = strlen(opt);

	if (strncmp(argv[*i], opt, len) != 0)
		return NULL;
	if (argv[*i][len] == '=')
		return argv[*i] + len + 1;
	if (argv[*i][len] != '\0' || *i + 1 >= argc)
		return NULL;
	return argv[++*i];
}

static bool is_opt(const char *arg, const char *opt)
{
	size_t len = strlen(opt);

	return strncmp(arg, opt, len) == 0 &&
	       (arg[len] == '\0' || arg[len] == '=');
}

/* GROUP: a group name, or a numeric gid. */
static int parse_group(const char *s, uint32_t *gid)
{
	struct group *gr = getgrnam(s);

	if (gr) {
		*gid = gr->gr_gid;
		return 0;
	}
	return parse_uint(s, UINT32_MAX - 1, gid);
}

static const char *group_name(uint32_t gid, char *buf, size_t len)
{
	struct group *gr = getgrgid(gid);

	if (gr)
		snprintf(buf, len, "%s", gr->gr_name);
	else
		snprintf(buf, len, "%u", gid);
	return buf;
}

/* "root", or "group:gpu-users" for a group consumer. */
static const char *consumer_text(const struct vgpu_admin_entry *e, char *buf,
				 size_t len)
{
	char name[64];

	if (e->consumer_kind == VGPU_ADMIN_CONSUMER_GROUP)
		snprintf(buf, len, "group:%s",
			 group_name(e->gid, name, sizeof(name)));
	else
		user_name(e->uid, buf, len);
	return buf;
}

static const char *isolation_text(uint32_t isolation)
{
	return isolation == VGPU_ISOLATION_EXCLUSIVE ? "exclusive" : "shared";
}

/* The domain a vGPU is in, as a name and as a sentence. */
static void domain_text(const struct vgpu_admin_entry *e, char *name,
			size_t nlen, char *means, size_t mlen)
{
	if (e->isolation == VGPU_ISOLATION_EXCLUSIVE) {
		snprintf(name, nlen, "its own fault domain on GPU %u", e->gpu);
		snprintf(means, mlen,
			 "it runs outside MPS: no other vGPU's fault can stop "
			 "its work, and a fault in it restarts only it; it is "
			 "time-sliced against the rest of the GPU");
	} else {
		snprintf(name, nlen, "the shared (MPS) domain of GPU %u",
			 e->gpu);
		snprintf(means, mlen,
			 "it runs concurrently with the GPU's other shared "
			 "vGPUs on its own SMs, but a fatal fault in any of "
			 "them stops and restarts all of them (exclusive vGPUs "
			 "are not affected)");
	}
}

/* Print vgpud's refusal; exit code 1. */
static int refused(const struct admin_ctx *ctx,
		   const struct vgpu_admin_response *resp)
{
	const char *m =
		resp->message[0] ? resp->message : "vgpud refused the request";

	fprintf(stderr, "vgpu-admin: %s\n", m);
	return json_fail(ctx, ADMIN_EXIT_REFUSED, m);
}

/* One call with the usual answers to failure; 0 with resp filled. */
int call_ok(const struct admin_ctx *ctx, const struct vgpu_admin_request *req,
	    struct vgpu_admin_response *resp)
{
	int rc = admin_call(ctx, req, resp);

	if (rc != ADMIN_EXIT_OK)
		return json_fail(ctx, rc, "cannot reach vgpud");
	if (resp->status != VGPU_ADMIN_OK)
		return refused(ctx, resp);
	return ADMIN_EXIT_OK;
}

struct vgpu_admin_response *response_alloc(void)
{
	struct vgpu_admin_response *r = calloc(1, sizeof(*r));

	if (!r)
		fprintf(stderr, "vgpu-admin: out of memory\n");
	return r;
}

/* A vGPU as its stable JSON object (documented in vgpu-admin(1)). */
json_t *entry_json(const struct vgpu_admin_entry *e)
{
	char user[64], dom[96], means[320];
	json_t *groups = json_array(), *j;
	uint32_t i;

	for (i = 0; i < e->ngroups && i < VGPU_MAX_SM_GROUPS; i++)
		json_array_append_new(groups, json_integer(e->groups[i]));
	domain_text(e, dom, sizeof(dom), means, sizeof(means));
	if (e->consumer_kind == VGPU_ADMIN_CONSUMER_GROUP)
		group_name(e->gid, user, sizeof(user));
	else
		user_name(e->uid, user, sizeof(user));
	j = json_pack(
		"{s:s, s:I, s:s, s:s, s:b, s:I, s:o, s:b, s:I, s:I, s:I, s:I, "
		"s:I, s:{s:s, s:I, s:s}, s:s, s:s, s:s, s:s, s:I, s:I, s:I}",
		"name", e->name, "gpu", (json_int_t)e->gpu, "gpu_name",
		e->gpu_name, "backend",
		e->backend == VGPU_BACKEND_CUDA ? "cuda" : "sim", "simulated",
		e->backend != VGPU_BACKEND_CUDA, "sms", (json_int_t)e->sms,
		"groups", groups, "leftover_slice", e->leftover != 0,
		"memory_quota", (json_int_t)e->memory_quota, "memory_used",
		(json_int_t)e->memory_used, "va_base", (json_int_t)e->va_base,
		"va_size", (json_int_t)PLAN_VA_WINDOW, "clients",
		(json_int_t)e->clients, "consumer", "kind",
		e->consumer_kind == VGPU_ADMIN_CONSUMER_GROUP ? "group"
							      : "user",
		"id",
		(json_int_t)(e->consumer_kind == VGPU_ADMIN_CONSUMER_GROUP
				     ? e->gid
				     : e->uid),
		"name", user, "isolation", isolation_text(e->isolation),
		"domain", dom, "domain_means", means, "state",
		state_text(e->state), "restarts", (json_int_t)e->restarts,
		"pid", (json_int_t)e->pid, "time_limit_ms",
		(json_int_t)e->time_limit_ms);
	/* 1.3: periodic save points (0: none) */
	if (j) {
		json_object_set_new(j, "save_interval_ms",
				    json_integer(e->save_interval_ms));
		json_object_set_new(j, "save_points",
				    json_integer(e->save_points));
		json_object_set_new(j, "save_last_kib",
				    json_integer(e->save_last_kib));
	}
	return j;
}

/* ---- mdev bindings (the VM path) ----------------------------------- */

/*
 * MDEVS: the mdev bindings of vGPU name ("": all) into *out (freed by
 * the caller), their count, or -exit code. A vgpud older than admin 1.2
 * has none to tell: 0.
 */
static int mdevs_get(const struct admin_ctx *ctx, const char *name,
		     struct vgpu_admin_mdev **out)
{
	struct vgpu_admin_request req;
	struct vgpu_admin_response *resp = response_alloc();
	struct vgpu_admin_mdev *all = calloc(ADMIN_MAX_LIST, sizeof(*all));
	uint32_t n = 0, i, pages = 0;
	int rc = 0;

	*out = NULL;
	if (!resp || !all) {
		rc = -ADMIN_EXIT_REFUSED;
		goto out;
	}
	for (;;) {
		request_init(&req, VGPU_ADMIN_MDEVS);
		snprintf(req.name, sizeof(req.name), "%s", name);
		req.first = n;
		rc = admin_call(ctx, &req, resp);
		if (rc != ADMIN_EXIT_OK) {
			rc = -json_fail(ctx, rc, "cannot reach vgpud");
			goto out;
		}
		if (resp->status != VGPU_ADMIN_OK && resp->minor < 2)
			break; /* no VM path in that vgpud */
		if (resp->status != VGPU_ADMIN_OK) {
			rc = -refused(ctx, resp);
			goto out;
		}
		if (resp->count > VGPU_ADMIN_LIST_MAX)
			resp->count = VGPU_ADMIN_LIST_MAX;
		for (i = 0; i < resp->count && n < ADMIN_MAX_LIST; i++) {
			all[n] = resp->mdevs[i];
			all[n].name[VGPU_NAME_MAX - 1] = '\0';
			all[n].type[sizeof(all[n].type) - 1] = '\0';
			n++;
		}
		if (resp->count == 0 || n >= resp->total ||
		    n >= ADMIN_MAX_LIST || ++pages > ADMIN_MAX_LIST)
			break;
	}
	*out = all;
	all = NULL;
	rc = (int)n;
out:
	free(all);
	free(resp);
	return rc;
}

/* The binding of vGPU name among n of them, or NULL. */
static const struct vgpu_admin_mdev *mdev_of(const struct vgpu_admin_mdev *m,
					     int n, const char *name)
{
	int i;

	for (i = 0; i < n; i++)
		if (!strncmp(m[i].name, name, VGPU_NAME_MAX))
			return &m[i];
	return NULL;
}

/* "UUID (open)", "UUID (no instance)", "UUID" or "-" (list's MDEV). */
static const char *mdev_text(const struct vgpu_admin_mdev *m, char *buf,
			     size_t len)
{
	char u[MDEV_UUID_TEXT];

	if (!m) {
		snprintf(buf, len, "-");
		return buf;
	}
	mdev_uuid_format(m->uuid, u);
	snprintf(buf, len, "%s%s", u,
		 !(m->flags & VGPU_ADMIN_MDEV_CREATED) ? " (no instance)"
		 : m->flags & VGPU_ADMIN_MDEV_OPEN     ? " (open)"
						       : "");
	return buf;
}

/* The "mdev" member of a vGPU's JSON object: null or its binding. */
static json_t *mdev_json(const struct vgpu_admin_mdev *m)
{
	char u[MDEV_UUID_TEXT];

	if (!m)
		return json_null();
	mdev_uuid_format(m->uuid, u);
	return json_pack("{s:s, s:s, s:b, s:I, s:b, s:b, s:b}", "uuid", u,
			 "type", m->type, "created",
			 (m->flags & VGPU_ADMIN_MDEV_CREATED) != 0, "instance",
			 (json_int_t)m->instance, "open",
			 (m->flags & VGPU_ADMIN_MDEV_OPEN) != 0, "ready",
			 (m->flags & VGPU_ADMIN_MDEV_READY) != 0, "owned",
			 (m->flags & VGPU_ADMIN_MDEV_OWNED) != 0);
}

/* entry_json with its "mdev" member. */
static json_t *entry_json_m(const struct vgpu_admin_entry *e,
			    const struct vgpu_admin_mdev *m)
{
	json_t *j = entry_json(e);

	if (j)
		json_object_set_new(j, "mdev", mdev_json(m));
	return j;
}

/* "created vGPU a: 16 SMs (groups 0,1) on GPU 0 (...), 1.0 GiB, ..." */
static void print_created(const struct vgpu_admin_entry *e, uint32_t asked)
{
	char size[32], groups[256], user[80];

	printf("created vGPU %.*s: %u SMs (groups %s) on GPU %u (%.*s), %s, "
	       "user %s, %s",
	       VGPU_NAME_MAX - 1, e->name, e->sms,
	       groups_text(e, groups, sizeof(groups)), e->gpu,
	       (int)sizeof(e->gpu_name) - 1, e->gpu_name,
	       plan_format_size(e->memory_quota, size, sizeof(size)),
	       consumer_text(e, user, sizeof(user)),
	       isolation_text(e->isolation));
	if (e->leftover && e->sms != asked)
		printf("; asked for %u SMs: given the slice of %u SMs the "
		       "split left over",
		       asked, e->sms);
	else if (e->sms != asked)
		printf("; asked for %u SMs, rounded up to whole groups of %u",
		       asked, e->min_partition);
	if (e->backend == VGPU_BACKEND_SIM)
		printf(" [simulated GPU, not a real one]");
	printf("\n");
}

/* A line for people, left out under --json. */
static void out(const struct admin_ctx *ctx, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void out(const struct admin_ctx *ctx, const char *fmt, ...)
{
	va_list ap;

	if (ctx->json)
		return;
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
}

/* ---- blueprints --------------------------------------------------------- */

/* SMs per group of a GPU, for a blueprint's `slices` (vgpud asked). */
static uint32_t slices_to_sms(const struct admin_ctx *ctx, uint32_t slices,
			      int32_t gpu, int *rc)
{
	struct vgpu_admin_request req;
	struct vgpu_admin_response *resp = response_alloc();
	uint32_t g = gpu < 0 ? 0 : (uint32_t)gpu, per;

	*rc = ADMIN_EXIT_REFUSED;
	if (!resp)
		return 0;
	request_init(&req, VGPU_ADMIN_GPUS);
	*rc = admin_call(ctx, &req, resp);
	if (*rc != ADMIN_EXIT_OK || resp->status != VGPU_ADMIN_OK ||
	    g >= resp->count || g >= VGPU_MAX_GPUS) {
		if (*rc == ADMIN_EXIT_OK)
			*rc = ADMIN_EXIT_REFUSED;
		free(resp);
		return 0;
	}
	per = resp->gpus[g].min_partition;
	free(resp);
	return slices * per;
}

/*
 * A parsed blueprint as a CREATE (or PLAN_CHECK) request: the consumer
 * resolved on this host, slices turned into SMs. 0, or an exit code with
 * the reason in err.
 */
static int blueprint_request(const struct admin_ctx *ctx,
			     const struct blueprint *bp, uint32_t op,
			     struct vgpu_admin_request *req, char *err,
			     size_t errlen)
{
	int rc = ADMIN_EXIT_OK;

	request_init(req, op);
	snprintf(req->name, sizeof(req->name), "%s", bp->name);
	req->gpu = bp->gpu < 0 ? VGPU_ADMIN_GPU_ANY : (uint32_t)bp->gpu;
	req->memory = bp->memory;
	req->time_limit_ms = bp->kernel_time_limit_ms;
	req->isolation = bp->isolation;
	if (bp->save_interval_ms) { /* recovery: {save_interval: ...} */
		req->flags |= VGPU_ADMIN_CREATE_RECOVERY;
		req->first = bp->save_interval_ms;
	}
	req->uid = VGPU_ADMIN_UID_PEER;
	if (bp->consumer_kind == BLUEPRINT_CONSUMER_USER &&
	    parse_user(bp->consumer, &req->uid)) {
		snprintf(err, errlen,
			 "blueprint %s: consumer user '%s' does not exist on "
			 "this host",
			 bp->name, bp->consumer);
		return ADMIN_EXIT_REFUSED;
	}
	if (bp->consumer_kind == BLUEPRINT_CONSUMER_GROUP) {
		req->consumer_kind = VGPU_ADMIN_CONSUMER_GROUP;
		if (parse_group(bp->consumer, &req->gid)) {
			snprintf(err, errlen,
				 "blueprint %s: consumer group '%s' does not "
				 "exist on this host",
				 bp->name, bp->consumer);
			return ADMIN_EXIT_REFUSED;
		}
	}
	req->sms = bp->sms;
	admin_policy_from_blueprint(bp, req);
	if (bp->swap == BLUEPRINT_SWAP_ALLOWED)
		req->flags |= VGPU_ADMIN_CREATE_SWAP_ALLOW;
	else if (bp->swap == BLUEPRINT_SWAP_NEVER)
		req->flags |= VGPU_ADMIN_CREATE_SWAP_NEVER;
	if (bp->slices) {
		req->sms = slices_to_sms(ctx, bp->slices, bp->gpu, &rc);
		if (!req->sms) {
			snprintf(err, errlen,
				 "blueprint %s: %u slices: cannot ask vgpud "
				 "how many SMs a slice of GPU %d has",
				 bp->name, bp->slices,
				 bp->gpu < 0 ? 0 : bp->gpu);
			return rc;
		}
	}
	return ADMIN_EXIT_OK;
}

/* ---- create ------------------------------------------------------------- */

/* Take back a vGPU whose mdev instance could not be made. */
static void create_undo(const struct admin_ctx *ctx, const char *name)
{
	struct vgpu_admin_request req;
	struct vgpu_admin_response *resp = response_alloc();

	if (!resp)
		return;
	request_init(&req, VGPU_ADMIN_DESTROY);
	snprintf(req.name, sizeof(req.name), "%s", name);
	if (admin_call(ctx, &req, resp) != ADMIN_EXIT_OK ||
	    (resp->status != VGPU_ADMIN_OK &&
	     resp->status != VGPU_ADMIN_NO_SUCH_VGPU))
		fprintf(stderr,
			"vgpu-admin: and vGPU %s could not be destroyed (%s); "
			"run 'vgpu-admin destroy %s'\n",
			name, resp->message, name);
	free(resp);
}

/*
 * The mdev instance of a vGPU just bound to uuid: echo UUID into the
 * create file of its type (the custom type), which returns once vgpud
 * has answered the module. On failure the vGPU is destroyed again.
 */
static int create_instance(const struct admin_ctx *ctx, const char *name,
			   const uint8_t uuid[16], struct vgpu_admin_mdev **m)
{
	char u[MDEV_UUID_TEXT], dir[1024], err[1200], msg[1400];
	const char *type = "custom";
	int n;

	mdev_uuid_format(uuid, u);
	n = mdevs_get(ctx, name, m);
	if (n < 0)
		return -n;
	if (n >= 1 && (*m)[0].type[0])
		type = (*m)[0].type;
	if (admin_mdev_exists(u)) {
		out(ctx, "mdev %s exists already: vgpud makes it vGPU %s\n", u,
		    name);
		return ADMIN_EXIT_OK;
	}
	if (admin_mdev_type_dir(type, dir, sizeof(dir), err, sizeof(err)) ||
	    admin_mdev_create(dir, u, ADMIN_MDEV_CREATE_S, err, sizeof(err))) {
		snprintf(msg, sizeof(msg),
			 "vGPU %s: its mdev instance %s could not be created: "
			 "%s",
			 name, u, err);
		fprintf(stderr, "vgpu-admin: %s; destroying the vGPU again\n",
			msg);
		create_undo(ctx, name);
		return json_fail(ctx, ADMIN_EXIT_REFUSED, msg);
	}
	free(*m);
	n = mdevs_get(ctx, name, m); /* now with its instance */
	return n < 0 ? -n : ADMIN_EXIT_OK;
}

static int create_send(const struct admin_ctx *ctx,
		       const struct vgpu_admin_request *req)
{
	struct vgpu_admin_response *resp = response_alloc();
	struct vgpu_admin_mdev *m = NULL;
	char u[MDEV_UUID_TEXT];
	int rc;

	if (!resp)
		return ADMIN_EXIT_REFUSED;
	rc = call_ok(ctx, req, resp);
	if (rc == ADMIN_EXIT_OK && resp->count >= 1 &&
	    (req->flags & VGPU_ADMIN_CREATE_MDEV))
		rc = create_instance(ctx, req->name, resp->mdev_uuid, &m);
	if (rc == ADMIN_EXIT_OK && resp->count >= 1) {
		if (ctx->json && (req->flags & VGPU_ADMIN_CREATE_MDEV))
			json_print(
				json_pack("{s:o}", "created",
					  entry_json_m(&resp->entries[0], m)));
		else if (ctx->json)
			json_print(json_pack("{s:o}", "created",
					     entry_json(&resp->entries[0])));
		else
			print_created(&resp->entries[0], req->sms);
		if (!ctx->json && (req->flags & VGPU_ADMIN_CREATE_MDEV)) {
			mdev_uuid_format(resp->mdev_uuid, u);
			printf("mdev %s\n", u);
		}
	} else if (rc == ADMIN_EXIT_OK) {
		out(ctx, "%s\n", resp->message);
	}
	free(m);
	free(resp);
	return rc;
}

static int cmd_create_file(const struct admin_ctx *ctx, const char *file,
			   const struct vgpu_admin_request *mdev)
{
	struct vgpu_admin_request req;
	struct blueprint bp;
	char err[512];
	int rc;

	if (blueprint_parse_file(file, &bp, err, sizeof(err))) {
		fprintf(stderr, "vgpu-admin: %s\n", err);
		return json_fail(ctx, ADMIN_EXIT_REFUSED, err);
	}
	rc = blueprint_request(ctx, &bp, VGPU_ADMIN_CREATE, &req, err,
			       sizeof(err));
	if (rc) {
		fprintf(stderr, "vgpu-admin: %s\n", err);
		return json_fail(ctx, rc, err);
	}
	req.flags |= mdev->flags;
	memcpy(req.mdev_uuid, mdev->mdev_uuid, sizeof(req.mdev_uuid));
	return create_send(ctx, &req);
}

static int cmd_create(const struct admin_ctx *ctx, int argc, char **argv)
{
	struct vgpu_admin_request req;
	const char *name = NULL, *file = NULL, *v;
	bool have_sms = false, have_mem = false, have_user = false;
	char err[256];
	int i, pr;

	request_init(&req, VGPU_ADMIN_CREATE);
	req.gpu = VGPU_ADMIN_GPU_ANY;
	req.uid = VGPU_ADMIN_UID_PEER;
	req.time_limit_ms = VGPU_ADMIN_TIME_DEFAULT;
	for (i = 0; i < argc; i++) {
		const char *arg = argv[i];

		if (!strcmp(arg, "-f") || is_opt(arg, "--file")) {
			v = !strcmp(arg, "-f")
				    ? (i + 1 < argc ? argv[++i] : NULL)
				    : opt_value(argc, argv, &i, "--file");
			if (!v || !*v)
				return usage_error(ctx, "create",
						   "-f needs a blueprint file");
			file = v;
		} else if (is_opt(arg, "--sms")) {
			v = opt_value(argc, argv, &i, "--sms");
			if (!v || parse_uint(v, 1u << 20, &req.sms) ||
			    req.sms == 0)
				return usage_error(ctx, "create",
						   "--sms needs a positive "
						   "number of SMs, got '%s'",
						   v ? v : "");
			have_sms = true;
		} else if (is_opt(arg, "--memory")) {
			v = opt_value(argc, argv, &i, "--memory");
			if (!v || parse_size(v, &req.memory) || !req.memory)
				return usage_error(ctx, "create",
						   "--memory needs a size like "
						   "4G or 512M, got '%s'",
						   v ? v : "");
			have_mem = true;
		} else if (is_opt(arg, "--user")) {
			v = opt_value(argc, argv, &i, "--user");
			if (!v || parse_user(v, &req.uid))
				return usage_error(ctx, "create",
						   "--user: no user named '%s' "
						   "(give a name or a uid)",
						   v ? v : "");
			have_user = true;
		} else if (is_opt(arg, "--group")) {
			v = opt_value(argc, argv, &i, "--group");
			if (!v || parse_group(v, &req.gid))
				return usage_error(
					ctx, "create",
					"--group: no group named "
					"'%s' (give a name or a gid)",
					v ? v : "");
			req.consumer_kind = VGPU_ADMIN_CONSUMER_GROUP;
		} else if (is_opt(arg, "--isolation")) {
			v = opt_value(argc, argv, &i, "--isolation");
			if (v && !strcmp(v, "shared"))
				req.isolation = VGPU_ISOLATION_SHARED;
			else if (v && !strcmp(v, "exclusive"))
				req.isolation = VGPU_ISOLATION_EXCLUSIVE;
			else
				return usage_error(ctx, "create",
						   "--isolation must be shared "
						   "or exclusive, got '%s'",
						   v ? v : "");
		} else if (is_opt(arg, "--time-limit")) {
			double s;
			char *end;

			v = opt_value(argc, argv, &i, "--time-limit");
			s = v ? strtod(v, &end) : -1;
			if (!v || !*v || *end || !isfinite(s) || s < 0 ||
			    s > 604800.0)
				return usage_error(ctx, "create",
						   "--time-limit needs seconds "
						   "(0 = none, at most a "
						   "week), got '%s'",
						   v ? v : "");
			req.time_limit_ms = (uint32_t)llround(s * 1000.0);
			if (s > 0 && req.time_limit_ms == 0)
				req.time_limit_ms = 1;
		} else if (is_opt(arg, "--mdev")) {
			/* --mdev, --mdev UUID or --mdev=UUID */
			uint8_t next[16];

			req.flags |= VGPU_ADMIN_CREATE_MDEV;
			v = NULL;
			if (!strncmp(arg, "--mdev=", 7))
				v = arg + 7;
			else if (i + 1 < argc &&
				 !mdev_uuid_parse(argv[i + 1], next))
				v = argv[++i];
			if (v && (mdev_uuid_parse(v, req.mdev_uuid) ||
				  mdev_uuid_is_zero(req.mdev_uuid)))
				return usage_error(ctx, "create",
						   "--mdev: '%s' is not a "
						   "UUID (like %s)",
						   v,
						   "8a1c9e4e-3b0f-4f5e-9d7a-"
						   "2f2b6a7c9e10");
		} else if (is_opt(arg, "--gpu")) {
			v = opt_value(argc, argv, &i, "--gpu");
			if (!v || parse_uint(v, VGPU_MAX_GPUS - 1, &req.gpu))
				return usage_error(ctx, "create",
						   "--gpu needs a GPU number "
						   "(0, 1, ...), got '%s'",
						   v ? v : "");
		} else if (is_opt(arg, "--save-interval")) {
			v = opt_value(argc, argv, &i, "--save-interval");
			if (admin_save_interval(v, &req))
				return usage_error(ctx, "create",
						   "--save-interval needs "
						   "seconds from 0.1 to 86400 "
						   "(0 = none), got '%s'",
						   v ? v : "");
		} else if (is_opt(arg, "--swap")) {
			v = opt_value(argc, argv, &i, "--swap");
			pr = admin_swap_create_option(ctx, v, &req);
			if (pr)
				return pr;
		} else if ((pr = admin_policy_option(ctx, "create", argc, argv,
						     &i, &req)) != 0) {
			if (pr < 0)
				return -pr;
		} else if (arg[0] == '-') {
			return usage_error(ctx, "create",
					   "create: unknown option '%s'", arg);
		} else if (!name) {
			name = arg;
		} else {
			return usage_error(ctx, "create",
					   "create: unexpected argument '%s'",
					   arg);
		}
	}
	if (file) {
		if (name || have_sms || have_mem || have_user ||
		    req.consumer_kind || req.isolation ||
		    req.gpu != VGPU_ADMIN_GPU_ANY ||
		    (req.flags & VGPU_ADMIN_CREATE_POLICY) ||
		    (req.flags & VGPU_ADMIN_CREATE_RECOVERY) ||
		    (req.flags & (VGPU_ADMIN_CREATE_SWAP_ALLOW |
				  VGPU_ADMIN_CREATE_SWAP_NEVER)) ||
		    req.time_limit_ms != VGPU_ADMIN_TIME_DEFAULT)
			return usage_error(ctx, "create",
					   "create -f FILE takes everything "
					   "from the blueprint; no NAME or "
					   "other options beside it (but "
					   "--mdev)");
		return cmd_create_file(ctx, file, &req);
	}
	if (have_user && req.consumer_kind == VGPU_ADMIN_CONSUMER_GROUP)
		return usage_error(ctx, "create",
				   "create: --user and --group exclude each "
				   "other");
	if (!name)
		return usage_error(ctx, "create", "create: NAME is missing");
	if (!plan_name_valid(name, err, sizeof(err)))
		return usage_error(ctx, "create", "create: %s", err);
	if (!have_sms || !have_mem)
		return usage_error(ctx, "create", "create: %s is required",
				   have_sms ? "--memory" : "--sms");
	snprintf(req.name, sizeof(req.name), "%s", name);
	return create_send(ctx, &req);
}

/* ---- validate ----------------------------------------------------------- */

static int cmd_validate(struct admin_ctx *ctx, int argc, char **argv)
{
	struct vgpu_admin_response *resp;
	struct vgpu_admin_request req;
	json_t *results = json_array();
	bool reachable = true;
	int i, rc = ADMIN_EXIT_OK;

	if (argc == 0) {
		json_decref(results);
		return usage_error(ctx, "validate",
				   "validate needs at least one FILE");
	}
	resp = response_alloc();
	if (!resp) {
		json_decref(results);
		return ADMIN_EXIT_REFUSED;
	}
	for (i = 0; i < argc; i++) {
		struct blueprint bp;
		char err[512], line[640], groups[256];
		json_t *r = json_pack("{s:s}", "file", argv[i]);
		int crc;

		if (blueprint_parse_file(argv[i], &bp, err, sizeof(err))) {
			out(ctx, "%s: invalid: %s\n", argv[i], err);
			json_object_set_new(r, "valid", json_false());
			json_object_set_new(r, "error", json_string(err));
			json_array_append_new(results, r);
			rc = ADMIN_EXIT_REFUSED;
			continue;
		}
		json_object_set_new(r, "name", json_string(bp.name));
		/* asking vgpud: quietly, it may simply not run here */
		ctx->quiet = true;
		crc = reachable ? blueprint_request(ctx, &bp,
						    VGPU_ADMIN_PLAN_CHECK, &req,
						    err, sizeof(err))
				: ADMIN_EXIT_UNREACHABLE;
		if (crc == ADMIN_EXIT_REFUSED) {
			ctx->quiet = false;
			out(ctx, "%s: invalid: %s\n", argv[i], err);
			json_object_set_new(r, "valid", json_false());
			json_object_set_new(r, "error", json_string(err));
			json_array_append_new(results, r);
			rc = ADMIN_EXIT_REFUSED;
			continue;
		}
		if (crc == ADMIN_EXIT_OK)
			crc = admin_call(ctx, &req, resp);
		ctx->quiet = false;
		json_object_set_new(r, "valid", json_true());
		json_object_set_new(r, "error", json_null());
		if (crc != ADMIN_EXIT_OK) {
			reachable = false;
			out(ctx,
			    "%s: valid (blueprint %s); not checked against "
			    "vgpud (it cannot be reached at %s)\n",
			    argv[i], bp.name, ctx->run_dir);
			json_object_set_new(r, "checked", json_false());
		} else if (resp->status != VGPU_ADMIN_OK) {
			out(ctx, "%s: valid, but does not fit now: %s\n",
			    argv[i], resp->message);
			json_object_set_new(r, "checked", json_true());
			json_object_set_new(r, "fits", json_false());
			json_object_set_new(r, "message",
					    json_string(resp->message));
			rc = ADMIN_EXIT_REFUSED;
		} else {
			const struct vgpu_admin_entry *e = &resp->entries[0];

			snprintf(line, sizeof(line),
				 "fits: %u SMs (groups %s) on GPU %u", e->sms,
				 groups_text(e, groups, sizeof(groups)),
				 e->gpu);
			out(ctx, "%s: valid; %s\n", argv[i], line);
			json_object_set_new(r, "checked", json_true());
			json_object_set_new(r, "fits", json_true());
			json_object_set_new(r, "message", json_string(line));
			json_object_set_new(r, "plan", entry_json(e));
		}
		json_array_append_new(results, r);
	}
	free(resp);
	if (ctx->json) {
		fflush(stdout);
		json_print(json_pack("{s:o, s:b}", "results", results, "valid",
				     rc == ADMIN_EXIT_OK));
	} else {
		json_decref(results);
	}
	return rc;
}

/* ---- show, destroy ------------------------------------------------------ */

/* NAME as the only argument of show and destroy; 0 or an exit code. */
static int one_name(const struct admin_ctx *ctx, const char *cmd, int argc,
		    char **argv, struct vgpu_admin_request *req, uint32_t op)
{
	char err[256];

	if (argc != 1)
		return usage_error(ctx, cmd, "%s takes exactly one NAME", cmd);
	if (!plan_name_valid(argv[0], err, sizeof(err)))
		return usage_error(ctx, cmd, "%s: %s", cmd, err);
	request_init(req, op);
	snprintf(req->name, sizeof(req->name), "%s", argv[0]);
	return ADMIN_EXIT_OK;
}

static void print_show(const struct vgpu_admin_entry *e,
		       const struct vgpu_admin_mdev *m)
{
	char a[32], b[32], groups[256], user[80], dom[96], means[320];

	domain_text(e, dom, sizeof(dom), means, sizeof(means));
	printf("vGPU %s\n", e->name);
	printf("  state          %s", state_text(e->state));
	if (e->pid > 0)
		printf(" (worker pid %d)", e->pid);
	printf(", %u restart%s\n", e->restarts, e->restarts == 1 ? "" : "s");
	printf("  GPU            %u: %s%s\n", e->gpu, e->gpu_name,
	       e->backend == VGPU_BACKEND_SIM ? " [simulated, not a GPU]" : "");
	if (e->leftover)
		printf("  SMs            %u: the slice the split left over "
		       "(group %u), held alone\n",
		       e->sms, e->groups[0]);
	else
		printf("  SMs            %u: SM group%s %s (groups of %u)\n",
		       e->sms, e->ngroups == 1 ? "" : "s",
		       groups_text(e, groups, sizeof(groups)),
		       e->min_partition);
	printf("  memory         %s quota, %s used\n",
	       plan_format_size(e->memory_quota, a, sizeof(a)),
	       plan_format_size(e->memory_used, b, sizeof(b)));
	printf("  clients        %u\n", e->clients);
	if (e->consumer_kind == VGPU_ADMIN_CONSUMER_GROUP)
		printf("  used by        members of group %s (gid %u)\n",
		       group_name(e->gid, user, sizeof(user)), e->gid);
	else
		printf("  used by        user %s (uid %u)\n",
		       user_name(e->uid, user, sizeof(user)), e->uid);
	printf("  isolation      %s: %s\n", isolation_text(e->isolation), dom);
	printf("                 %s\n", means);
	printf("  VA window      0x%llx - 0x%llx (%s)\n",
	       (unsigned long long)e->va_base,
	       (unsigned long long)(e->va_base + PLAN_VA_WINDOW),
	       plan_format_size(PLAN_VA_WINDOW, a, sizeof(a)));
	if (e->time_limit_ms)
		printf("  kernel limit   %.3g s (longer kernels reset the "
		       "vGPU)\n",
		       e->time_limit_ms / 1000.0);
	else
		printf("  kernel limit   none\n");
	if (e->save_interval_ms)
		printf("  save points    every %.3g s (after a fault of its "
		       "domain its memory comes back from the last): %u "
		       "taken, the last copied %u KiB\n",
		       e->save_interval_ms / 1000.0, e->save_points,
		       e->save_last_kib);
	if (m) {
		char u[MDEV_UUID_TEXT];

		mdev_uuid_format(m->uuid, u);
		if (m->flags & VGPU_ADMIN_MDEV_CREATED)
			printf("  mdev           %s: instance %u of type %s, "
			       "%s, device %s\n",
			       u, m->instance, m->type[0] ? m->type : "?",
			       m->flags & VGPU_ADMIN_MDEV_OPEN ? "open by a VM"
							       : "not open",
			       m->flags & VGPU_ADMIN_MDEV_READY ? "ready"
								: "in error");
		else
			printf("  mdev           %s: bound, no instance yet\n",
			       u);
	}
}

static int cmd_show(const struct admin_ctx *ctx, int argc, char **argv)
{
	struct vgpu_admin_request req;
	struct vgpu_admin_response *resp;
	int rc = one_name(ctx, "show", argc, argv, &req, VGPU_ADMIN_SHOW);
	struct vgpu_admin_mdev *m = NULL;
	int n = 0;

	if (rc)
		return rc;
	resp = response_alloc();
	if (!resp)
		return ADMIN_EXIT_REFUSED;
	rc = call_ok(ctx, &req, resp);
	if (rc == ADMIN_EXIT_OK && resp->count >= 1)
		n = mdevs_get(ctx, req.name, &m);
	if (n < 0)
		rc = -n;
	if (rc == ADMIN_EXIT_OK && resp->count >= 1) {
		const struct vgpu_admin_mdev *mine =
			mdev_of(m, n, resp->entries[0].name);

		if (ctx->json) {
			json_t *o = entry_json_m(&resp->entries[0], mine);

			admin_policy_show(ctx, req.name, o);
			admin_swap_show(ctx, req.name, o);
			json_print(o);
		} else {
			print_show(&resp->entries[0], mine);
			admin_policy_show(ctx, req.name, NULL);
			admin_swap_show(ctx, req.name, NULL);
		}
	}
	free(m);
	free(resp);
	return rc;
}

/*
 * destroy of a vGPU that is an mdev instance: remove the instance first
 * (vgpud refuses to destroy it under one). Refused while a VM has it
 * open: the removal would wait for the VM. *removed says it was done.
 */
static int destroy_instance(const struct admin_ctx *ctx, const char *name,
			    bool *removed)
{
	struct vgpu_admin_mdev *m = NULL;
	char u[MDEV_UUID_TEXT], err[700], msg[900];
	int n, rc = ADMIN_EXIT_OK;

	*removed = false;
	n = mdevs_get(ctx, name, &m);
	if (n < 0)
		return -n;
	if (n < 1 || !(m[0].flags & VGPU_ADMIN_MDEV_CREATED))
		goto out;
	mdev_uuid_format(m[0].uuid, u);
	if (m[0].flags & VGPU_ADMIN_MDEV_OPEN) {
		snprintf(msg, sizeof(msg),
			 "vGPU %s is mdev %s and a VM has it open: shut the "
			 "VM down (or detach the device) first",
			 name, u);
		rc = ADMIN_EXIT_REFUSED;
	} else if (admin_mdev_remove(u, ADMIN_MDEV_REMOVE_S, err,
				     sizeof(err))) {
		snprintf(msg, sizeof(msg), "vGPU %s: removing mdev %s: %s",
			 name, u, err);
		rc = ADMIN_EXIT_REFUSED;
	} else {
		*removed = true;
	}
	if (rc) {
		fprintf(stderr, "vgpu-admin: %s\n", msg);
		rc = json_fail(ctx, rc, msg);
	}
out:
	free(m);
	return rc;
}

static int cmd_destroy(const struct admin_ctx *ctx, int argc, char **argv)
{
	struct vgpu_admin_request req;
	struct vgpu_admin_response *resp;
	int rc = one_name(ctx, "destroy", argc, argv, &req, VGPU_ADMIN_DESTROY);
	int waited = 0;
	bool removed;

	if (rc)
		return rc;
	rc = destroy_instance(ctx, req.name, &removed);
	if (rc)
		return rc;
	resp = response_alloc();
	if (!resp)
		return ADMIN_EXIT_REFUSED;
	/* vgpud destroys the vGPU of a removed instance itself */
	for (;;) {
		rc = admin_call(ctx, &req, resp);
		if (rc != ADMIN_EXIT_OK || !removed ||
		    resp->status != VGPU_ADMIN_BUSY ||
		    waited >= ADMIN_MDEV_GONE_MS)
			break;
		usleep(100000);
		waited += 100;
	}
	if (rc == ADMIN_EXIT_OK && removed &&
	    resp->status == VGPU_ADMIN_NO_SUCH_VGPU) {
		resp->status = VGPU_ADMIN_OK;
		snprintf(resp->message, sizeof(resp->message),
			 "destroyed vGPU %s (and its mdev instance)", req.name);
	}
	if (rc != ADMIN_EXIT_OK)
		rc = json_fail(ctx, rc, "cannot reach vgpud");
	else if (resp->status != VGPU_ADMIN_OK)
		rc = refused(ctx, resp);
	if (rc == ADMIN_EXIT_OK) {
		if (ctx->json)
			json_print(json_pack("{s:s, s:s}", "destroyed",
					     req.name, "message",
					     resp->message));
		else
			printf("%s\n", resp->message);
	}
	free(resp);
	return rc;
}

/* ---- list --------------------------------------------------------------- */

/* Every vGPU into *all (paging through LIST); its count, or -exit. */
static int list_all(const struct admin_ctx *ctx,
		    struct vgpu_admin_entry **all_out)
{
	struct vgpu_admin_request req;
	struct vgpu_admin_response *resp = response_alloc();
	struct vgpu_admin_entry *all = calloc(ADMIN_MAX_LIST, sizeof(*all));
	uint32_t n = 0, i, pages = 0;
	int rc;

	*all_out = NULL;
	if (!resp || !all) {
		free(resp);
		free(all);
		return -ADMIN_EXIT_REFUSED;
	}
	for (;;) {
		request_init(&req, VGPU_ADMIN_LIST);
		req.first = n;
		rc = call_ok(ctx, &req, resp);
		if (rc != ADMIN_EXIT_OK) {
			free(resp);
			free(all);
			return -rc;
		}
		if (resp->count > VGPU_ADMIN_LIST_MAX)
			resp->count = VGPU_ADMIN_LIST_MAX;
		for (i = 0; i < resp->count && n < ADMIN_MAX_LIST; i++) {
			all[n] = resp->entries[i];
			all[n].name[VGPU_NAME_MAX - 1] = '\0';
			all[n].gpu_name[sizeof(all[n].gpu_name) - 1] = '\0';
			n++;
		}
		if (resp->count == 0 || n >= resp->total ||
		    n >= ADMIN_MAX_LIST || ++pages > ADMIN_MAX_LIST)
			break;
	}
	free(resp);
	*all_out = all;
	return (int)n;
}

enum list_col {
	COL_NAME,
	COL_GPU,
	COL_BACKEND,
	COL_SMS,
	COL_GROUPS,
	COL_MEMORY,
	COL_USED,
	COL_CLIENTS,
	COL_USER,
	COL_STATE,
	COL_RESTARTS,
	COL_PID,
	COL_ISOLATION,
	COL_MDEV,
	COL_COUNT
};

static const char *const col_names[COL_COUNT] = {
	"NAME",	    "GPU",  "BACKEND",	 "SMS",	 "GROUPS",
	"MEMORY",   "USED", "CLIENTS",	 "USER", "STATE",
	"RESTARTS", "PID",  "ISOLATION", "MDEV"};

#define COL_TEXT 72

/* One row of the list table, as text. */
static void list_row(const struct vgpu_admin_entry *e,
		     const struct vgpu_admin_mdev *m,
		     char cells[COL_COUNT][COL_TEXT])
{
	snprintf(cells[COL_NAME], COL_TEXT, "%.*s", VGPU_NAME_MAX - 1, e->name);
	snprintf(cells[COL_GPU], COL_TEXT, "%u", e->gpu);
	snprintf(cells[COL_BACKEND], COL_TEXT, "%s", backend_text(e->backend));
	snprintf(cells[COL_SMS], COL_TEXT, "%u", e->sms);
	groups_text(e, cells[COL_GROUPS], COL_TEXT);
	plan_format_size(e->memory_quota, cells[COL_MEMORY], COL_TEXT);
	plan_format_size(e->memory_used, cells[COL_USED], COL_TEXT);
	snprintf(cells[COL_CLIENTS], COL_TEXT, "%u", e->clients);
	consumer_text(e, cells[COL_USER], COL_TEXT);
	snprintf(cells[COL_STATE], COL_TEXT, "%s", state_text(e->state));
	snprintf(cells[COL_RESTARTS], COL_TEXT, "%u", e->restarts);
	if (e->pid > 0)
		snprintf(cells[COL_PID], COL_TEXT, "%d", e->pid);
	else
		snprintf(cells[COL_PID], COL_TEXT, "-");
	snprintf(cells[COL_ISOLATION], COL_TEXT, "%s",
		 isolation_text(e->isolation));
	mdev_text(m, cells[COL_MDEV], COL_TEXT);
}

/* The first ncols columns of a row (MDEV only when some vGPU has one). */
static void print_row(char cells[COL_COUNT][COL_TEXT],
		      const int width[COL_COUNT], int ncols)
{
	int c;

	for (c = 0; c < ncols - 1; c++)
		printf("%-*s  ", width[c], cells[c]);
	printf("%s\n", cells[ncols - 1]);
}

static int cmd_list(const struct admin_ctx *ctx, int argc, char **argv)
{
	struct vgpu_admin_entry *all = NULL;
	struct vgpu_admin_mdev *m = NULL;
	char(*cells)[COL_COUNT][COL_TEXT] = NULL;
	char header[COL_COUNT][COL_TEXT];
	int width[COL_COUNT], n, nm, i, c;

	if (argc != 0)
		return usage_error(ctx, "list",
				   "list takes no arguments, got '%s'",
				   argv[0]);
	n = list_all(ctx, &all);
	if (n < 0)
		return -n;
	nm = mdevs_get(ctx, "", &m);
	if (nm < 0) {
		free(all);
		return -nm;
	}
	if (ctx->json) {
		json_t *list = json_array();

		for (i = 0; i < n; i++)
			json_array_append_new(
				list,
				entry_json_m(&all[i],
					     mdev_of(m, nm, all[i].name)));
		json_print(json_pack("{s:o}", "vgpus", list));
		free(m);
		free(all);
		return ADMIN_EXIT_OK;
	}
	cells = calloc(n ? n : 1, sizeof(*cells));
	if (!cells) {
		free(m);
		free(all);
		fprintf(stderr, "vgpu-admin: out of memory\n");
		return ADMIN_EXIT_REFUSED;
	}
	for (c = 0; c < COL_COUNT; c++) {
		snprintf(header[c], COL_TEXT, "%s", col_names[c]);
		width[c] = (int)strlen(col_names[c]);
	}
	for (i = 0; i < n; i++) {
		list_row(&all[i], mdev_of(m, nm, all[i].name), cells[i]);
		for (c = 0; c < COL_COUNT; c++)
			if ((int)strlen(cells[i][c]) > width[c])
				width[c] = (int)strlen(cells[i][c]);
	}
	print_row(header, width, nm > 0 ? COL_COUNT : COL_MDEV);
	for (i = 0; i < n; i++)
		print_row(cells[i], width, nm > 0 ? COL_COUNT : COL_MDEV);
	free(cells);
	free(m);
	free(all);
	return ADMIN_EXIT_OK;
}

/* ---- gpus --------------------------------------------------------------- */

/* What is done with the SMs the split leaves over, as a sentence. */
static void leftover_text(const struct vgpu_admin_gpu *g, char *buf, size_t len)
{
	if (!g->leftover_sms)
		snprintf(buf, len, "none: the split into groups uses every SM");
	else
		snprintf(buf, len,
			 "%u SMs left over by the split: one more slice of "
			 "%u SMs, usable by one vGPU on its own (%s)",
			 g->leftover_sms, g->leftover_sms,
			 g->leftover_free ? "free" : "in use");
}

static json_t *gpu_json(const struct vgpu_admin_gpu *g,
			const struct vgpu_admin_entry *all, int n)
{
	json_t *shared = json_array(), *excl = json_array(), *sizes;
	char left[192];
	int i;

	sizes = json_array();
	for (i = 0; i < (int)g->ngroups && i < VGPU_MAX_SM_GROUPS; i++)
		json_array_append_new(sizes, json_integer(g->group_sms[i]));
	for (i = 0; i < n; i++) {
		if (all[i].gpu != g->index)
			continue;
		json_array_append_new(
			all[i].isolation == VGPU_ISOLATION_EXCLUSIVE ? excl
								     : shared,
			json_string(all[i].name));
	}
	leftover_text(g, left, sizeof(left));
	return json_pack(
		"{s:I, s:s, s:s, s:b, s:I, s:I, s:I, s:{s:I, s:I, s:o}, "
		"s:{s:I, s:b, s:s}, s:{s:I, s:I, s:I, s:I}, s:{s:o, s:o, s:s}}",
		"index", (json_int_t)g->index, "name", g->name, "backend",
		g->backend == VGPU_BACKEND_CUDA ? "cuda" : "sim", "simulated",
		g->backend != VGPU_BACKEND_CUDA, "sms", (json_int_t)g->sm_count,
		"min_partition", (json_int_t)g->min_partition, "alignment",
		(json_int_t)g->alignment, "groups", "total",
		(json_int_t)g->ngroups, "free", (json_int_t)g->groups_free,
		"sms", sizes, "leftover", "sms", (json_int_t)g->leftover_sms,
		"free", g->leftover_free != 0, "use", left, "memory", "total",
		(json_int_t)g->memory_total, "reserved",
		(json_int_t)g->memory_reserved, "used",
		(json_int_t)g->memory_used, "free",
		(json_int_t)(g->memory_total - g->memory_reserved -
			     g->memory_used),
		"domains", "shared", shared, "exclusive", excl, "means",
		domain_note);
}

static void print_gpu(const struct vgpu_admin_gpu *g,
		      const struct vgpu_admin_entry *all, int n)
{
	char a[32], b[32], c[32], left[192];
	const char *sep;
	unsigned nshared = 0;
	bool uniform = true;
	int i;

	for (i = 0; i < (int)g->ngroups && i < VGPU_MAX_SM_GROUPS; i++)
		if (g->group_sms[i] != g->group_sms[0])
			uniform = false;
	printf("GPU %u: %s%s\n", g->index, g->name,
	       g->backend == VGPU_BACKEND_SIM ? " [simulated, not a GPU]" : "");
	printf("  SMs             %u (minSmPartitionSize %u, "
	       "smCoscheduledAlignment %u)\n",
	       g->sm_count, g->min_partition, g->alignment);
	if (uniform && g->ngroups)
		printf("  SM groups       %u of %u SMs, %u free\n", g->ngroups,
		       g->group_sms[0], g->groups_free);
	else
		printf("  SM groups       %u, %u free\n", g->ngroups,
		       g->groups_free);
	leftover_text(g, left, sizeof(left));
	printf("  leftover        %s\n", left);
	printf("  memory          %s total, %s reserved for the driver, %s "
	       "free\n",
	       plan_format_size(g->memory_total, a, sizeof(a)),
	       plan_format_size(g->memory_reserved, b, sizeof(b)),
	       plan_format_size(g->memory_total - g->memory_reserved -
					g->memory_used,
				c, sizeof(c)));
	printf("  backend         %s\n", backend_text(g->backend));
	for (i = 0; i < n; i++)
		if (all[i].gpu == g->index &&
		    all[i].isolation != VGPU_ISOLATION_EXCLUSIVE)
			nshared++;
	printf("  fault domains   shared (MPS): %u vGPU%s", nshared,
	       nshared == 1 ? "" : "s");
	sep = ": ";
	for (i = 0; i < n; i++) {
		if (all[i].gpu != g->index ||
		    all[i].isolation == VGPU_ISOLATION_EXCLUSIVE)
			continue;
		printf("%s%s", sep, all[i].name);
		sep = ", ";
	}
	printf("\n");
	for (i = 0; i < n; i++)
		if (all[i].gpu == g->index &&
		    all[i].isolation == VGPU_ISOLATION_EXCLUSIVE)
			printf("                  exclusive: %s (its own "
			       "domain)\n",
			       all[i].name);
	printf("  (%s)\n", domain_note);
}

static int cmd_gpus(const struct admin_ctx *ctx, int argc, char **argv)
{
	struct vgpu_admin_request req;
	struct vgpu_admin_response *resp;
	struct vgpu_admin_entry *all = NULL;
	uint32_t i;
	int rc, n;

	if (argc != 0)
		return usage_error(ctx, "gpus",
				   "gpus takes no arguments, got '%s'",
				   argv[0]);
	resp = response_alloc();
	if (!resp)
		return ADMIN_EXIT_REFUSED;
	request_init(&req, VGPU_ADMIN_GPUS);
	rc = call_ok(ctx, &req, resp);
	if (rc != ADMIN_EXIT_OK) {
		free(resp);
		return rc;
	}
	n = list_all(ctx, &all);
	if (n < 0) {
		free(resp);
		return -n;
	}
	if (resp->count > VGPU_MAX_GPUS)
		resp->count = VGPU_MAX_GPUS;
	for (i = 0; i < resp->count; i++)
		resp->gpus[i].name[sizeof(resp->gpus[i].name) - 1] = '\0';
	if (ctx->json) {
		json_t *list = json_array();

		for (i = 0; i < resp->count; i++)
			json_array_append_new(list,
					      gpu_json(&resp->gpus[i], all, n));
		json_print(json_pack("{s:o}", "gpus", list));
	} else {
		for (i = 0; i < resp->count; i++)
			print_gpu(&resp->gpus[i], all, n);
	}
	free(all);
	free(resp);
	return ADMIN_EXIT_OK;
}

/* ---- main --------------------------------------------------------------- */

static const struct {
	const char *name;
	const char *usage;
} commands[] = {
	{"gpus", usage_gpus},
	{"validate", usage_validate},
	{"create", usage_create},
	{"show", usage_show},
	{"list", usage_list},
	{"destroy", usage_destroy},
	{"resize", admin_usage_resize},
	{"move", admin_usage_move},
	{"top", admin_usage_top},
	{"policy", admin_usage_policy},
	{"suspend", admin_usage_suspend},
	{"resume", admin_usage_resume},
	{"migrate", admin_usage_migrate},
};

int main(int argc, char **argv)
{
	struct admin_ctx ctx = {.run_dir = ADMIN_DEFAULT_RUN_DIR};
	char *rest[256];
	const char *cmd, *usage = NULL;
	int i = 1, n = 0, j;

	while (i < argc && argv[i][0] == '-') {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			fputs(usage_main, stdout);
			return ADMIN_EXIT_OK;
		} else if (!strcmp(argv[i], "--json")) {
			ctx.json = true;
			i++;
		} else if (is_opt(argv[i], "--run-dir")) {
			ctx.run_dir = opt_value(argc, argv, &i, "--run-dir");
			if (!ctx.run_dir || !*ctx.run_dir)
				return usage_error(&ctx, NULL,
						   "--run-dir needs a "
						   "directory");
			i++;
		} else {
			return usage_error(&ctx, NULL, "unknown option '%s'",
					   argv[i]);
		}
	}
	if (i >= argc)
		return usage_error(&ctx, NULL, "no command given");
	cmd = argv[i++];
	if (!strcmp(cmd, "help")) {
		fputs(usage_main, stdout);
		return ADMIN_EXIT_OK;
	}
	for (j = 0; j < (int)(sizeof(commands) / sizeof(commands[0])); j++)
		if (!strcmp(cmd, commands[j].name))
			usage = commands[j].usage;
	if (!usage)
		return usage_error(&ctx, NULL, "unknown command '%s'", cmd);
	/* --json and --help anywhere after the command */
	for (; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			fputs(usage, stdout);
			return ADMIN_EXIT_OK;
		}
		if (!strcmp(argv[i], "--json")) {
			ctx.json = true;
			continue;
		}
		if (n >= (int)(sizeof(rest) / sizeof(rest[0])) - 1)
			return usage_error(&ctx, cmd, "too many arguments");
		rest[n++] = argv[i];
	}
	rest[n] = NULL;
	if (!strcmp(cmd, "gpus"))
		return cmd_gpus(&ctx, n, rest);
	if (!strcmp(cmd, "validate"))
		return cmd_validate(&ctx, n, rest);
	if (!strcmp(cmd, "create"))
		return cmd_create(&ctx, n, rest);
	if (!strcmp(cmd, "show"))
		return cmd_show(&ctx, n, rest);
	if (!strcmp(cmd, "list"))
		return cmd_list(&ctx, n, rest);
	if (!strcmp(cmd, "resize"))
		return cmd_resize(&ctx, n, rest);
	if (!strcmp(cmd, "move"))
		return cmd_move(&ctx, n, rest);
	if (!strcmp(cmd, "top"))
		return cmd_top(&ctx, n, rest);
	if (!strcmp(cmd, "policy"))
		return cmd_policy(&ctx, n, rest);
	if (!strcmp(cmd, "suspend"))
		return cmd_suspend(&ctx, n, rest);
	if (!strcmp(cmd, "resume"))
		return cmd_resume(&ctx, n, rest);
	if (!strcmp(cmd, "migrate"))
		return cmd_migrate(&ctx, n, rest);
	return cmd_destroy(&ctx, n, rest);
}

/* SPDX-License-Identifier: MIT */
/*
 * vgpu-admin: the command line for vgpud's admin socket (include/vgpu/
 * admin.h). One request per connection; output for people, errors on
 * stderr, and exit codes scripts can rely on:
 *   0 done, 1 vgpud refused, 2 usage error, 3 vgpud cannot be reached.
 */
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <vgpu/admin.h>

#include "plan.h"

#define ADMIN_EXIT_OK	       0
#define ADMIN_EXIT_REFUSED     1
#define ADMIN_EXIT_USAGE       2
#define ADMIN_EXIT_UNREACHABLE 3

#define ADMIN_DEFAULT_RUN_DIR  "/run/vgpu"
#define ADMIN_REPLY_TIMEOUT_MS 180000 /* create waits for the worker */
#define ADMIN_MAX_LIST	       4096

static const char usage_main[] =
	"usage: vgpu-admin [--run-dir DIR] COMMAND [ARGS]\n"
	"\n"
	"Manage the virtual GPUs of this host through vgpud.\n"
	"\n"
	"Commands:\n"
	"  create NAME --sms N --memory SIZE [--user USER]\n"
	"         [--time-limit SECONDS] [--gpu N]\n"
	"                   compose a vGPU from free SM groups and memory\n"
	"  list             show every vGPU\n"
	"  destroy NAME     stop a vGPU's worker and free what it holds\n"
	"\n"
	"Options:\n"
	"  --run-dir DIR    vgpud's run directory (default /run/vgpu);\n"
	"                   vgpu-admin talks to DIR/admin.sock (root only)\n"
	"  --help           this text; COMMAND --help for a command's\n"
	"\n"
	"Exit status:\n"
	"  0  done\n"
	"  1  vgpud refused the request (its reason is printed on stderr)\n"
	"  2  usage error\n"
	"  3  vgpud cannot be reached (not running, or another --run-dir)\n";

static const char usage_create[] =
	"usage: vgpu-admin [--run-dir DIR] create NAME --sms N --memory SIZE\n"
	"                  [--user USER] [--time-limit SECONDS] [--gpu N]\n"
	"\n"
	"Create the vGPU NAME ([A-Za-z0-9_.-], at most 63 characters).\n"
	"\n"
	"  --sms N              SMs of the slice; rounded up to whole SM\n"
	"                       groups (8 SMs on an H100); the real count is\n"
	"                       printed\n"
	"  --memory SIZE        memory quota: bytes, or a number with a K, M,\n"
	"                       G or T suffix (binary: 1G = 2^30 bytes)\n"
	"  --user USER          the only user whose programs may use it: a\n"
	"                       name or a numeric uid (default: you)\n"
	"  --time-limit SECONDS longest a kernel may run before the vGPU is\n"
	"                       reset (default 10; 0 = no limit)\n"
	"  --gpu N              the physical GPU (default: the first with\n"
	"                       room)\n"
	"\n"
	"Exit status: 0 created, 1 vgpud refused (reason on stderr),\n"
	"2 usage error, 3 vgpud cannot be reached.\n";

static const char usage_list[] =
	"usage: vgpu-admin [--run-dir DIR] list\n"
	"\n"
	"Show every vGPU: NAME GPU BACKEND SMS GROUPS MEMORY USED CLIENTS\n"
	"USER STATE RESTARTS PID. BACKEND \"sim (simulated)\" means the CPU\n"
	"simulator: none of its figures are GPU figures. STATE is starting,\n"
	"running, restarting (its GPU's shared fault domain is being\n"
	"restarted), failed (restarting gave up; destroy and re-create it)\n"
	"or stopping.\n"
	"\n"
	"Exit status: 0 done, 1 vgpud refused, 2 usage error, 3 vgpud cannot\n"
	"be reached.\n";

static const char usage_destroy[] =
	"usage: vgpu-admin [--run-dir DIR] destroy NAME\n"
	"\n"
	"Stop the vGPU's worker (its clients see their connection close)\n"
	"and return its SM groups and memory.\n"
	"\n"
	"Exit status: 0 destroyed, 1 vgpud refused (reason on stderr),\n"
	"2 usage error, 3 vgpud cannot be reached.\n";

/* A usage error: what was wrong, and where the help is. Exit code 2. */
static int usage_error(const char *usage, const char *fmt, const char *arg)
{
	const char *cmd = usage == usage_create	   ? " create"
			  : usage == usage_list	   ? " list"
			  : usage == usage_destroy ? " destroy"
						   : "";

	fprintf(stderr, "vgpu-admin: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nvgpu-admin: see 'vgpu-admin%s --help'\n", cmd);
	return ADMIN_EXIT_USAGE;
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
static int parse_uint(const char *s, unsigned long long max, uint32_t *out)
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
	return buf;
}

static const char *state_text(uint32_t state)
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
	}
	return "unknown";
}

static const char *backend_text(uint32_t backend)
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
static int admin_call(const char *run_dir, const struct vgpu_admin_request *req,
		      struct vgpu_admin_response *resp)
{
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	struct pollfd pfd;
	ssize_t n;
	int fd, r;

	r = snprintf(addr.sun_path, sizeof(addr.sun_path), "%s/admin.sock",
		     run_dir);
	if (r < 0 || (size_t)r >= sizeof(addr.sun_path)) {
		fprintf(stderr,
			"vgpu-admin: run directory '%s' is too long "
			"for a socket path\n",
			run_dir);
		return ADMIN_EXIT_USAGE;
	}
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		fprintf(stderr, "vgpu-admin: socket: %s\n", strerror(errno));
		return ADMIN_EXIT_UNREACHABLE;
	}
	if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
		int e = errno;

		fprintf(stderr, "vgpu-admin: cannot reach vgpud at %s: %s\n",
			addr.sun_path, strerror(e));
		if (e == EACCES || e == EPERM)
			fprintf(stderr, "vgpu-admin: the admin socket is for "
					"root only; run vgpu-admin as root\n");
		else
			fprintf(stderr,
				"vgpu-admin: is vgpud running? Start it with "
				"'vgpud --run-dir %s' (as root)\n",
				run_dir);
		close(fd);
		return ADMIN_EXIT_UNREACHABLE;
	}
	/* a refusal may already be queued when the send fails: read on */
	if (send(fd, req, sizeof(*req), MSG_NOSIGNAL) != sizeof(*req) &&
	    errno != EPIPE) {
		fprintf(stderr, "vgpu-admin: sending to vgpud at %s: %s\n",
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
		fprintf(stderr,
			"vgpu-admin: vgpud at %s did not answer within %d s\n",
			addr.sun_path, ADMIN_REPLY_TIMEOUT_MS / 1000);
		close(fd);
		return ADMIN_EXIT_UNREACHABLE;
	}
	n = recv(fd, resp, sizeof(*resp), MSG_TRUNC);
	close(fd);
	if (n != (ssize_t)sizeof(*resp) || resp->magic != VGPU_ADMIN_MAGIC) {
		if (n == 0)
			fprintf(stderr,
				"vgpu-admin: vgpud at %s closed the "
				"connection without an answer\n",
				addr.sun_path);
		else
			fprintf(stderr,
				"vgpu-admin: vgpud at %s sent a reply of %zd "
				"bytes (expected %zu) or with a bad magic; is "
				"it the same vgpu version?\n",
				addr.sun_path, n, sizeof(*resp));
		return ADMIN_EXIT_UNREACHABLE;
	}
	resp->message[sizeof(resp->message) - 1] = '\0';
	return ADMIN_EXIT_OK;
}

static void request_init(struct vgpu_admin_request *req, uint32_t op)
{
	memset(req, 0, sizeof(*req));
	req->magic = VGPU_ADMIN_MAGIC;
	req->major = VGPU_ADMIN_MAJOR;
	req->minor = VGPU_ADMIN_MINOR;
	req->op = op;
}

/* Print vgpud's refusal; exit code 1. */
static int refused(const struct vgpu_admin_response *resp)
{
	fprintf(stderr, "vgpu-admin: %s\n",
		resp->message[0] ? resp->message : "vgpud refused the request");
	return ADMIN_EXIT_REFUSED;
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

static bool wants_help(int argc, char **argv)
{
	int i;

	for (i = 0; i < argc; i++)
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
			return true;
	return false;
}

static int cmd_create(const char *run_dir, int argc, char **argv)
{
	struct vgpu_admin_request req;
	struct vgpu_admin_response *resp;
	const struct vgpu_admin_entry *e;
	const char *name = NULL, *v;
	char err[256], size[32], groups[256], user[64];
	bool have_sms = false, have_mem = false;
	uint32_t asked;
	int i, rc;

	if (wants_help(argc, argv)) {
		fputs(usage_create, stdout);
		return ADMIN_EXIT_OK;
	}
	request_init(&req, VGPU_ADMIN_CREATE);
	req.gpu = VGPU_ADMIN_GPU_ANY;
	req.uid = VGPU_ADMIN_UID_PEER;
	req.time_limit_ms = VGPU_ADMIN_TIME_DEFAULT;
	for (i = 0; i < argc; i++) {
		const char *arg = argv[i];

		if (is_opt(arg, "--sms")) {
			v = opt_value(argc, argv, &i, "--sms");
			if (!v || parse_uint(v, 1u << 20, &req.sms) ||
			    req.sms == 0)
				return usage_error(usage_create,
						   "--sms needs a positive "
						   "number of SMs, got '%s'",
						   v ? v : "");
			have_sms = true;
		} else if (is_opt(arg, "--memory")) {
			v = opt_value(argc, argv, &i, "--memory");
			if (!v || parse_size(v, &req.memory) || !req.memory)
				return usage_error(usage_create,
						   "--memory needs a size like "
						   "4G or 512M, got '%s'",
						   v ? v : "");
			have_mem = true;
		} else if (is_opt(arg, "--user")) {
			v = opt_value(argc, argv, &i, "--user");
			if (!v || parse_user(v, &req.uid))
				return usage_error(usage_create,
						   "--user: no user named '%s' "
						   "(give a name or a uid)",
						   v ? v : "");
		} else if (is_opt(arg, "--time-limit")) {
			double s;
			char *end;

			v = opt_value(argc, argv, &i, "--time-limit");
			s = v ? strtod(v, &end) : -1;
			if (!v || !*v || *end || !isfinite(s) || s < 0 ||
			    s > 4000000.0)
				return usage_error(usage_create,
						   "--time-limit needs seconds "
						   "(0 = none), got '%s'",
						   v ? v : "");
			req.time_limit_ms = (uint32_t)llround(s * 1000.0);
			if (s > 0 && req.time_limit_ms == 0)
				req.time_limit_ms = 1;
		} else if (is_opt(arg, "--gpu")) {
			v = opt_value(argc, argv, &i, "--gpu");
			if (!v || parse_uint(v, VGPU_MAX_GPUS - 1, &req.gpu))
				return usage_error(usage_create,
						   "--gpu needs a GPU number "
						   "(0, 1, ...), got '%s'",
						   v ? v : "");
		} else if (arg[0] == '-' && arg[1] == '-') {
			return usage_error(usage_create,
					   "create: unknown option '%s'", arg);
		} else if (!name) {
			name = arg;
		} else {
			return usage_error(usage_create,
					   "create: unexpected argument '%s'",
					   arg);
		}
	}
	if (!name)
		return usage_error(usage_create, "create: NAME is missing%s",
				   "");
	if (!plan_name_valid(name, err, sizeof(err)))
		return usage_error(usage_create, "create: %s", err);
	if (!have_sms || !have_mem)
		return usage_error(usage_create, "create: %s is required",
				   have_sms ? "--memory" : "--sms");
	snprintf(req.name, sizeof(req.name), "%s", name);
	asked = req.sms;

	resp = calloc(1, sizeof(*resp));
	if (!resp) {
		fprintf(stderr, "vgpu-admin: out of memory\n");
		return ADMIN_EXIT_REFUSED;
	}
	rc = admin_call(run_dir, &req, resp);
	if (rc == ADMIN_EXIT_OK && resp->status != VGPU_ADMIN_OK)
		rc = refused(resp);
	if (rc == ADMIN_EXIT_OK && resp->count >= 1) {
		e = &resp->entries[0];
		printf("created vGPU %.*s: %u SMs (groups %s) on GPU %u "
		       "(%.*s), %s, user %s",
		       VGPU_NAME_MAX - 1, e->name, e->sms,
		       groups_text(e, groups, sizeof(groups)), e->gpu,
		       (int)sizeof(e->gpu_name) - 1, e->gpu_name,
		       plan_format_size(e->memory_quota, size, sizeof(size)),
		       user_name(e->uid, user, sizeof(user)));
		if (e->sms != asked)
			printf("; asked for %u SMs, rounded up to whole "
			       "groups of %u",
			       asked, e->min_partition);
		if (e->backend == VGPU_BACKEND_SIM)
			printf(" [simulated GPU, not a real one]");
		printf("\n");
	} else if (rc == ADMIN_EXIT_OK) {
		printf("%s\n", resp->message);
	}
	free(resp);
	return rc;
}

static int cmd_destroy(const char *run_dir, int argc, char **argv)
{
	struct vgpu_admin_request req;
	struct vgpu_admin_response *resp;
	char err[256];
	int rc;

	if (wants_help(argc, argv)) {
		fputs(usage_destroy, stdout);
		return ADMIN_EXIT_OK;
	}
	if (argc != 1)
		return usage_error(usage_destroy,
				   "destroy takes exactly one NAME%s", "");
	if (!plan_name_valid(argv[0], err, sizeof(err)))
		return usage_error(usage_destroy, "destroy: %s", err);
	request_init(&req, VGPU_ADMIN_DESTROY);
	snprintf(req.name, sizeof(req.name), "%s", argv[0]);

	resp = calloc(1, sizeof(*resp));
	if (!resp) {
		fprintf(stderr, "vgpu-admin: out of memory\n");
		return ADMIN_EXIT_REFUSED;
	}
	rc = admin_call(run_dir, &req, resp);
	if (rc == ADMIN_EXIT_OK && resp->status != VGPU_ADMIN_OK)
		rc = refused(resp);
	else if (rc == ADMIN_EXIT_OK)
		printf("%s\n", resp->message);
	free(resp);
	return rc;
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
	COL_COUNT
};

static const char *const col_names[COL_COUNT] = {
	"NAME", "GPU",	   "BACKEND", "SMS",   "GROUPS",   "MEMORY",
	"USED", "CLIENTS", "USER",    "STATE", "RESTARTS", "PID"};

#define COL_TEXT 72

/* One row of the list table, as text. */
static void list_row(const struct vgpu_admin_entry *e,
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
	user_name(e->uid, cells[COL_USER], COL_TEXT);
	snprintf(cells[COL_STATE], COL_TEXT, "%s", state_text(e->state));
	snprintf(cells[COL_RESTARTS], COL_TEXT, "%u", e->restarts);
	if (e->pid > 0)
		snprintf(cells[COL_PID], COL_TEXT, "%d", e->pid);
	else
		snprintf(cells[COL_PID], COL_TEXT, "-");
}

static void print_row(char cells[COL_COUNT][COL_TEXT],
		      const int width[COL_COUNT])
{
	int c;

	for (c = 0; c < COL_COUNT - 1; c++)
		printf("%-*s  ", width[c], cells[c]);
	printf("%s\n", cells[COL_COUNT - 1]);
}

static int cmd_list(const char *run_dir, int argc, char **argv)
{
	struct vgpu_admin_request req;
	struct vgpu_admin_response *resp;
	struct vgpu_admin_entry *all = NULL;
	char(*cells)[COL_COUNT][COL_TEXT] = NULL;
	char header[COL_COUNT][COL_TEXT];
	int width[COL_COUNT];
	uint32_t n = 0, i, pages = 0;
	int c, rc = ADMIN_EXIT_OK;

	if (wants_help(argc, argv)) {
		fputs(usage_list, stdout);
		return ADMIN_EXIT_OK;
	}
	if (argc != 0)
		return usage_error(usage_list,
				   "list takes no arguments, got "
				   "'%s'",
				   argv[0]);
	resp = calloc(1, sizeof(*resp));
	all = calloc(ADMIN_MAX_LIST, sizeof(*all));
	if (!resp || !all) {
		fprintf(stderr, "vgpu-admin: out of memory\n");
		rc = ADMIN_EXIT_REFUSED;
		goto out;
	}
	/* page through: the daemon sends VGPU_ADMIN_LIST_MAX at a time */
	for (;;) {
		request_init(&req, VGPU_ADMIN_LIST);
		req.first = n;
		rc = admin_call(run_dir, &req, resp);
		if (rc != ADMIN_EXIT_OK)
			goto out;
		if (resp->status != VGPU_ADMIN_OK) {
			rc = refused(resp);
			goto out;
		}
		if (resp->count > VGPU_ADMIN_LIST_MAX)
			resp->count = VGPU_ADMIN_LIST_MAX;
		for (i = 0; i < resp->count && n < ADMIN_MAX_LIST; i++)
			all[n++] = resp->entries[i];
		if (resp->count == 0 || n >= resp->total ||
		    n >= ADMIN_MAX_LIST || ++pages > ADMIN_MAX_LIST)
			break;
	}

	cells = calloc(n ? n : 1, sizeof(*cells));
	if (!cells) {
		fprintf(stderr, "vgpu-admin: out of memory\n");
		rc = ADMIN_EXIT_REFUSED;
		goto out;
	}
	for (c = 0; c < COL_COUNT; c++) {
		snprintf(header[c], COL_TEXT, "%s", col_names[c]);
		width[c] = (int)strlen(col_names[c]);
	}
	for (i = 0; i < n; i++) {
		list_row(&all[i], cells[i]);
		for (c = 0; c < COL_COUNT; c++)
			if ((int)strlen(cells[i][c]) > width[c])
				width[c] = (int)strlen(cells[i][c]);
	}
	print_row(header, width);
	for (i = 0; i < n; i++)
		print_row(cells[i], width);
out:
	free(cells);
	free(all);
	free(resp);
	return rc;
}

int main(int argc, char **argv)
{
	const char *run_dir = ADMIN_DEFAULT_RUN_DIR;
	const char *cmd;
	int i = 1;

	while (i < argc && argv[i][0] == '-') {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			fputs(usage_main, stdout);
			return ADMIN_EXIT_OK;
		} else if (is_opt(argv[i], "--run-dir")) {
			run_dir = opt_value(argc, argv, &i, "--run-dir");
			if (!run_dir || !*run_dir)
				return usage_error(usage_main,
						   "--run-dir needs a "
						   "directory%s",
						   "");
			i++;
		} else {
			return usage_error(usage_main, "unknown option '%s'",
					   argv[i]);
		}
	}
	if (i >= argc)
		return usage_error(usage_main, "no command given%s", "");
	cmd = argv[i++];
	if (!strcmp(cmd, "create"))
		return cmd_create(run_dir, argc - i, argv + i);
	if (!strcmp(cmd, "list"))
		return cmd_list(run_dir, argc - i, argv + i);
	if (!strcmp(cmd, "destroy"))
		return cmd_destroy(run_dir, argc - i, argv + i);
	if (!strcmp(cmd, "help")) {
		fputs(usage_main, stdout);
		return ADMIN_EXIT_OK;
	}
	return usage_error(usage_main, "unknown command '%s'", cmd);
}

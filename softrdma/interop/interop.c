/* SPDX-License-Identifier: MIT */
/*
 * Interoperability: rdma-core's own programs (Debian's ibverbs-utils and
 * rdmacm-utils), unmodified, on the drop-in libibverbs.so.1/librdmacm.so.1
 * (LD_LIBRARY_PATH), servers and clients in separate processes.
 *
 *	interop <dropin dir> devinfo	ibv_devinfo (-v) and ibv_devices list softrdma0
 *	interop <dropin dir> rping	rping -s / rping -c -V, several sizes and counts, IPv4, IPv6
 *	interop <dropin dir> rdma-server	rdma_server / rdma_client (synchronous rdma_cm)
 *	interop <dropin dir> demo <demo-2proc.sh> <server> <client> <prefix> <n>
 *		a README two-process demo: our echo programs, built against
 *		rdma-core, on the drop-in libraries; the run passes when the
 *		script ends with "== done" and n lines start with prefix (one
 *		per checked client run). Under valgrind the programs run under
 *		valgrind too (SOFTRDMA_TEST_VALGRIND)
 *
 * Exits 77 (skipped) when the programs are not installed. Each run has its
 * own rendezvous directory (SOFTRDMA_DIR), so runs do not see each other.
 * SOFTRDMA_INTEROP_PRELOAD names a sanitizer runtime for sanitized builds of
 * the drop-in libraries (rdma-core's programs are not instrumented).
 */
#define _GNU_SOURCE	/* execvpe */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cmocka.h>

#define RUN_TIMEOUT_MS	30000
#define READY_TIMEOUT_MS 10000

extern char **environ;

static const char *dropin_dir;
static char rdv_dir[64];

struct proc {
	pid_t pid;
	char out_path[128];	/* stdout and stderr go to this file */
	char *text;		/* its contents, after proc_finish() */
	int status;		/* exit status, or 128 + signal */
};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static bool in_path(const char *prog)
{
	const char *path = getenv("PATH");
	char buf[4096];

	while (path && *path) {
		const char *end = strchr(path, ':');
		size_t len = end ? (size_t)(end - path) : strlen(path);

		snprintf(buf, sizeof(buf), "%.*s/%s", (int)len, path, prog);
		if (access(buf, X_OK) == 0)
			return true;
		path = end ? end + 1 : NULL;
	}
	return false;
}

static bool under_valgrind(void)
{
	const char *preload = getenv("LD_PRELOAD");

	return preload && strstr(preload, "vgpreload");
}

/*
 * Our environment, with the drop-in folder, the rendezvous directory and,
 * for rdma-core's uninstrumented programs, the sanitizer runtime.
 */
static char **child_env(bool uninstrumented)
{
	const char *preload = uninstrumented ? getenv("SOFTRDMA_INTEROP_PRELOAD") : NULL;
	const char *vg = getenv("SOFTRDMA_TEST_VALGRIND");
	static char ld[4096], dir[128], pre[4096], wrap[4096];
	size_t n = 0, i;
	char **env;

	for (i = 0; environ[i]; i++)
		;
	env = calloc(i + 8, sizeof(*env));
	assert_non_null(env);
	for (i = 0; environ[i]; i++) {
		if (!strncmp(environ[i], "LD_LIBRARY_PATH=", 16) ||
		    !strncmp(environ[i], "SOFTRDMA_DIR=", 13) ||
		    !strncmp(environ[i], "LD_PRELOAD=", 11) ||
		    !strncmp(environ[i], "ASAN_OPTIONS=", 13))
			continue;
		env[n++] = environ[i];
	}
	snprintf(ld, sizeof(ld), "LD_LIBRARY_PATH=%s", dropin_dir);
	snprintf(dir, sizeof(dir), "SOFTRDMA_DIR=%s", rdv_dir);
	env[n++] = ld;
	env[n++] = dir;
	if (preload && *preload) {
		snprintf(pre, sizeof(pre), "LD_PRELOAD=%s", preload);
		env[n++] = pre;
		/* rdma-core's programs own their leaks; ours are checked by our tests. */
		env[n++] = (char *)"ASAN_OPTIONS=detect_leaks=0:abort_on_error=1";
	}
	if (!uninstrumented && under_valgrind() && vg) {
		snprintf(wrap, sizeof(wrap), "SOFTRDMA_DEMO_WRAP=%s", vg);
		env[n++] = wrap;
	}
	env[n] = NULL;
	return env;
}

/*
 * Output goes to a file, not a pipe: a server that prints more than a pipe
 * holds while the test waits for its client would block for ever.
 */
static void proc_start_env(struct proc *p, char *const argv[], bool uninstrumented)
{
	static unsigned int seq;
	char **env = child_env(uninstrumented);
	int fd;

	memset(p, 0, sizeof(*p));
	snprintf(p->out_path, sizeof(p->out_path), "%s/out-%u", rdv_dir, seq++);
	fd = open(p->out_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	p->pid = fork();
	assert_true(p->pid >= 0);
	if (p->pid == 0) {
		dup2(fd, STDOUT_FILENO);
		dup2(fd, STDERR_FILENO);
		execvpe(argv[0], argv, env);
		_exit(127);
	}
	free(env);
	close(fd);
}

static void proc_start(struct proc *p, char *const argv[])
{
	proc_start_env(p, argv, true);
}

static char *slurp(const char *path)
{
	struct stat st;
	char *text;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	text = calloc(1, (size_t)st.st_size + 1);
	assert_non_null(text);
	n = read(fd, text, (size_t)st.st_size);
	assert_int_equal(n, st.st_size);
	close(fd);
	return text;
}

/* Wait for the process to exit (kill it after timeout_ms) and take its output. */
static int proc_finish(struct proc *p, int timeout_ms)
{
	uint64_t deadline = now_ms() + (uint64_t)timeout_ms;
	int status;

	while (waitpid(p->pid, &status, WNOHANG) == 0) {
		if (now_ms() >= deadline) {
			kill(p->pid, SIGKILL);
			waitpid(p->pid, &status, 0);
			break;
		}
		usleep(2000);
	}
	p->status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	free(p->text);
	p->text = slurp(p->out_path);
	if (p->status)
		fprintf(stderr, "%s: exit status %d; output:\n%s\n", p->out_path, p->status,
			p->text);
	return p->status;
}

static unsigned int count_lines(const char *text, const char *prefix)
{
	unsigned int n = 0;
	const char *line = text;

	while (line && *line) {
		if (!strncmp(line, prefix, strlen(prefix)))
			n++;
		line = strchr(line, '\n');
		if (line)
			line++;
	}
	return n;
}

/* Wait until a listener on port is published in the rendezvous directory. */
static void wait_listener(unsigned int port)
{
	uint64_t deadline = now_ms() + READY_TIMEOUT_MS;
	char suffix[16];

	snprintf(suffix, sizeof(suffix), "-%u", port);
	while (now_ms() < deadline) {
		DIR *d = opendir(rdv_dir);
		struct dirent *ent;
		bool found = false;

		assert_non_null(d);
		while ((ent = readdir(d))) {
			size_t len = strlen(ent->d_name), slen = strlen(suffix);

			if (len > slen && !strcmp(ent->d_name + len - slen, suffix))
				found = true;
		}
		closedir(d);
		if (found)
			return;
		usleep(2000);
	}
	fail_msg("no listener on port %u appeared in %s", port, rdv_dir);
}

static void test_devinfo(void **state)
{
	struct proc p;
	char *plain[] = { "ibv_devinfo", NULL };
	char *verbose[] = { "ibv_devinfo", "-v", NULL };
	char *devices[] = { "ibv_devices", NULL };

	(void)state;
	proc_start(&p, plain);
	assert_int_equal(proc_finish(&p, RUN_TIMEOUT_MS), 0);
	assert_non_null(strstr(p.text, "hca_id:\tsoftrdma0\n"));
	assert_non_null(strstr(p.text, "transport:\t\t\tInfiniBand (0)"));
	assert_non_null(strstr(p.text, "state:\t\t\tPORT_ACTIVE (4)"));
	assert_non_null(strstr(p.text, "link_layer:\t\tEthernet"));
	free(p.text);
	proc_start(&p, verbose);
	assert_int_equal(proc_finish(&p, RUN_TIMEOUT_MS), 0);
	assert_non_null(strstr(p.text, "max_qp_rd_atom:\t\t\t16"));
	assert_non_null(strstr(p.text, "MEM_WINDOW_TYPE_2B"));
	assert_non_null(strstr(p.text, "GID[  0]:\t\t::ffff:127.0.0.1, RoCE v2"));
	assert_non_null(strstr(p.text, "GID[  1]:\t\t::1, RoCE v2"));
	free(p.text);
	if (in_path("ibv_devices")) {
		proc_start(&p, devices);
		assert_int_equal(proc_finish(&p, RUN_TIMEOUT_MS), 0);
		assert_non_null(strstr(p.text, "softrdma0"));
		assert_non_null(strstr(p.text, "02000000deadbeef"));
		free(p.text);
	}
}

/* rping server and client with data verification: both exit 0, count pings each. */
static void rping_run(const char *addr, unsigned int port, unsigned int size, unsigned int count)
{
	char p[8], s[16], c[16];
	char *server[] = { "rping", "-s", "-a", (char *)addr, "-p", p, "-V", "-v", "-S", s,
			   "-C", c, NULL };
	char *client[] = { "rping", "-c", "-a", (char *)addr, "-p", p, "-V", "-v", "-S", s,
			   "-C", c, NULL };
	struct proc sp, cp;

	snprintf(p, sizeof(p), "%u", port);
	snprintf(s, sizeof(s), "%u", size);
	snprintf(c, sizeof(c), "%u", count);
	proc_start(&sp, server);
	wait_listener(port);
	proc_start(&cp, client);
	assert_int_equal(proc_finish(&cp, RUN_TIMEOUT_MS), 0);
	assert_int_equal(proc_finish(&sp, RUN_TIMEOUT_MS), 0);
	assert_int_equal(count_lines(cp.text, "ping data: rdma-ping-"), count);
	assert_int_equal(count_lines(sp.text, "server ping data: rdma-ping-"), count);
	assert_null(strstr(cp.text, "mismatch"));
	free(cp.text);
	free(sp.text);
}

static void test_rping(void **state)
{
	static const struct {
		unsigned int size, count;
	} runs[] = { { 64, 10 }, { 100, 1 }, { 1000, 100 }, { 4096, 50 }, { 65000, 20 } };
	unsigned int i;

	(void)state;
	for (i = 0; i < sizeof(runs) / sizeof(runs[0]); i++)
		rping_run("127.0.0.1", 17174 + i, runs[i].size, runs[i].count);
	rping_run("::1", 17184, 2000, 10);
}

static void test_rdma_server(void **state)
{
	char *server[] = { "rdma_server", "-p", "17471", NULL };
	char *client[] = { "rdma_client", "-s", "127.0.0.1", "-p", "17471", NULL };
	struct proc sp, cp;
	int i;

	(void)state;
	for (i = 0; i < 3; i++) {
		proc_start(&sp, server);
		wait_listener(17471);
		proc_start(&cp, client);
		assert_int_equal(proc_finish(&cp, RUN_TIMEOUT_MS), 0);
		assert_int_equal(proc_finish(&sp, RUN_TIMEOUT_MS), 0);
		assert_non_null(strstr(cp.text, "rdma_client: end 0"));
		assert_non_null(strstr(sp.text, "rdma_server: end 0"));
		free(cp.text);
		free(sp.text);
	}
}

static int make_dir(void **state)
{
	(void)state;
	strcpy(rdv_dir, "/tmp/softrdma-interop.XXXXXX");
	return mkdtemp(rdv_dir) ? 0 : -1;
}

static int remove_dir(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", rdv_dir);
	return system(cmd) == 0 ? 0 : -1;
}

static char *demo_argv[6];
static const char *demo_prefix;
static unsigned int demo_count;

/* A two-process demo: the script runs both programs and checks each call. */
static void test_demo(void **state)
{
	struct proc p;

	(void)state;
	proc_start_env(&p, demo_argv, false);
	assert_int_equal(proc_finish(&p, under_valgrind() ? 10 * RUN_TIMEOUT_MS : RUN_TIMEOUT_MS),
			 0);
	assert_int_equal(count_lines(p.text, demo_prefix), demo_count);
	assert_non_null(strstr(p.text, "\n== done"));
	free(p.text);
}

/* 77 (meson's "skipped") when an rdma-core program is not installed. */
static bool missing(const char *prog)
{
	if (in_path(prog))
		return false;
	printf("%s is not installed (Debian: ibverbs-utils, rdmacm-utils): skipped\n", prog);
	return true;
}

int main(int argc, char **argv)
{
	const struct CMUnitTest devinfo[] = { cmocka_unit_test(test_devinfo) };
	const struct CMUnitTest rping[] = { cmocka_unit_test(test_rping) };
	const struct CMUnitTest rdma_server[] = { cmocka_unit_test(test_rdma_server) };
	const struct CMUnitTest demo[] = { cmocka_unit_test(test_demo) };

	if (argc == 8 && !strcmp(argv[2], "demo")) {
		dropin_dir = argv[1];
		demo_prefix = argv[6];
		demo_count = (unsigned int)strtoul(argv[7], NULL, 10);
		demo_argv[0] = (char *)"sh";
		demo_argv[1] = argv[3];
		demo_argv[2] = argv[1];
		demo_argv[3] = argv[4];
		demo_argv[4] = argv[5];
		return cmocka_run_group_tests_name("demo", demo, make_dir, remove_dir);
	}
	if (argc != 3) {
		fprintf(stderr, "usage: %s <drop-in folder> devinfo|rping|rdma-server\n"
			"       %s <drop-in folder> demo <script> <server> <client> <prefix> <n>\n",
			argv[0], argv[0]);
		return 2;
	}
	dropin_dir = argv[1];
	if (!strcmp(argv[2], "devinfo"))
		return missing("ibv_devinfo") ? 77 :
			cmocka_run_group_tests_name("devinfo", devinfo, make_dir, remove_dir);
	if (!strcmp(argv[2], "rping"))
		return missing("rping") ? 77 :
			cmocka_run_group_tests_name("rping", rping, make_dir, remove_dir);
	if (!strcmp(argv[2], "rdma-server"))
		return missing("rdma_server") || missing("rdma_client") ? 77 :
			cmocka_run_group_tests_name("rdma-server", rdma_server, make_dir,
						    remove_dir);
	fprintf(stderr, "no scenario %s\n", argv[2]);
	return 2;
}

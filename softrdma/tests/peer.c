/* SPDX-License-Identifier: MIT */
/* Two-process test helpers (see peer.h). */
#define _GNU_SOURCE	/* pipe2, execvpe */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>

#include "harness.h"
#include "peer.h"

static char dir[64];

void peer_setup_dir(void)
{
	strcpy(dir, "/tmp/softrdma-test.XXXXXX");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		exit(1);
	}
	setenv("SOFTRDMA_DIR", dir, 1);
}

void peer_cleanup_dir(void)
{
	char cmd[128];

	/* Stale sockets of killed peers are still there: remove the lot. */
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
}

bool peer_under_valgrind(void)
{
	const char *preload = getenv("LD_PRELOAD");

	return preload && strstr(preload, "vgpreload");
}

int peer_timeout_ms(int ms)
{
	return peer_under_valgrind() ? ms * 10 : ms;
}

extern char **environ;

struct peer_cmd {
	char *argv[64];
	char **envp;
	char *vg;
};

/*
 * The command line and environment of the peer, made before fork(): the
 * child of a threaded process may only dup2() and exec. Under valgrind the
 * peer runs under the command in SOFTRDMA_TEST_VALGRIND, without our
 * LD_PRELOAD (valgrind sets up the preloads of its own guest).
 */
static void peer_cmd(struct peer_cmd *c, const char *argv0, const char *role)
{
	const char *vg = getenv("SOFTRDMA_TEST_VALGRIND");
	char *tok, *save;
	int n = 0, e = 0, i;

	memset(c, 0, sizeof(*c));
	for (i = 0; environ[i]; i++)
		;
	c->envp = calloc((size_t)i + 1, sizeof(*c->envp));
	assert_non_null(c->envp);
	for (i = 0; environ[i]; i++) {
		if (peer_under_valgrind() && vg && strncmp(environ[i], "LD_PRELOAD=", 11) == 0)
			continue;
		c->envp[e++] = environ[i];
	}
	if (peer_under_valgrind() && vg && *vg) {
		c->vg = strdup(vg);
		assert_non_null(c->vg);
		for (tok = strtok_r(c->vg, " ", &save); tok && n < 60;
		     tok = strtok_r(NULL, " ", &save))
			c->argv[n++] = tok;
	}
	c->argv[n++] = (char *)argv0;
	c->argv[n++] = (char *)"--peer";
	c->argv[n++] = (char *)role;
	c->argv[n] = NULL;
}

void peer_start(struct peer *p, const char *argv0, const char *role)
{
	struct peer_cmd c;
	int up[2], down[2];

	memset(p, 0, sizeof(*p));
	peer_cmd(&c, argv0, role);
	assert_int_equal(pipe2(up, O_CLOEXEC), 0);
	assert_int_equal(pipe2(down, O_CLOEXEC), 0);
	p->pid = fork();
	assert_true(p->pid >= 0);
	if (p->pid == 0) {
		dup2(down[0], STDIN_FILENO);
		dup2(up[1], STDOUT_FILENO);
		execvpe(c.argv[0], c.argv, c.envp);
		_exit(127);
	}
	free(c.envp);
	free(c.vg);
	close(up[1]);
	close(down[0]);
	p->from = up[0];
	p->to = down[1];
}

const char *peer_read(struct peer *p, int timeout_ms)
{
	uint64_t deadline = h_now_ms() + (uint64_t)peer_timeout_ms(timeout_ms);

	for (;;) {
		char *nl = memchr(p->buf, '\n', p->len);
		struct pollfd pfd = { .fd = p->from, .events = POLLIN };
		uint64_t now = h_now_ms();
		ssize_t n;

		if (nl) {
			size_t len = (size_t)(nl - p->buf);

			memcpy(p->line, p->buf, len);
			p->line[len] = '\0';
			p->len -= len + 1;
			memmove(p->buf, nl + 1, p->len);
			return p->line;
		}
		if (now >= deadline || p->len == sizeof(p->buf))
			return NULL;
		if (poll(&pfd, 1, (int)(deadline - now)) != 1)
			continue;
		n = read(p->from, p->buf + p->len, sizeof(p->buf) - p->len);
		if (n <= 0)
			return NULL;
		p->len += (size_t)n;
	}
}

const char *peer_expect(struct peer *p, const char *prefix)
{
	const char *line = peer_read(p, H_TIMEOUT_MS);
	size_t len = strlen(prefix);

	if (!line)
		fail_msg("the peer said nothing (expected \"%s\")", prefix);
	if (strncmp(line, prefix, len) != 0)
		fail_msg("the peer said \"%s\" (expected \"%s\")", line, prefix);
	return line + len;
}

void peer_send(struct peer *p, const char *fmt, ...)
{
	char line[512];
	va_list ap;
	int len;

	va_start(ap, fmt);
	len = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	assert_true(len > 0 && len < (int)sizeof(line) - 1);
	line[len++] = '\n';
	assert_int_equal(write(p->to, line, (size_t)len), len);
}

int peer_wait(struct peer *p, int timeout_ms)
{
	uint64_t deadline = h_now_ms() + (uint64_t)peer_timeout_ms(timeout_ms);
	int status;

	while (waitpid(p->pid, &status, WNOHANG) == 0) {
		struct timespec ts = { 0, 2000000 };

		if (h_now_ms() >= deadline) {
			peer_kill(p);
			return -1;
		}
		nanosleep(&ts, NULL);
	}
	close(p->from);
	close(p->to);
	p->pid = 0;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

void peer_stop(struct peer *p)
{
	int status;

	assert_int_equal(kill(p->pid, SIGSTOP), 0);
	/* Every thread of it has stopped once the stop is reported (or it died). */
	assert_int_equal(waitpid(p->pid, &status, WUNTRACED), p->pid);
	assert_true(WIFSTOPPED(status));
}

void peer_kill(struct peer *p)
{
	if (!p->pid)
		return;
	kill(p->pid, SIGKILL);
	waitpid(p->pid, NULL, 0);
	close(p->from);
	close(p->to);
	p->pid = 0;
}

void peer_say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

const char *peer_hear(void)
{
	static char line[512];
	size_t len;

	if (!fgets(line, sizeof(line), stdin))
		return "";
	len = strlen(line);
	if (len && line[len - 1] == '\n')
		line[len - 1] = '\0';
	return line;
}

/* SPDX-License-Identifier: MIT */
/*
 * The fabric an e2e program runs on (E2E_FABRIC, harness.h): a stepping
 * thread for STEP mode, and for proc the harness server in a process of its
 * own. That process is this same program, spawned again with
 * E2E_HARNESS_CHILD set: a constructor catches it before main() and serves
 * until the test says stop, sharing struct harness_shared through a memfd
 * (and, for the whole run, the DDP server's counters through another).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <softrdma.h>

#include "ddp.h"
#include "harness_fabric.h"

#define CHILD_ENV "E2E_HARNESS_CHILD"

extern char **environ;

static enum harness_fabric fabric;
static enum softrdma_mode run_mode = SOFTRDMA_MODE_THREAD;
static pthread_t stepper;
static atomic_bool stepper_stop;
static unsigned long stepped;	/* units the stepper ran: the log shows it worked */
static char rdv_dir[64];
static int ddp_fd = -1;		/* E2E_FABRIC=proc: the shared struct ddp_tally */

enum harness_fabric harness_fabric(void)
{
	return fabric;
}

bool harness_white_box_skip(void)
{
	if (harness_fabric() == HARNESS_FABRIC_THREAD)
		return false;
	/* Each test sets the modes it needs and steps the fabric itself. */
	fprintf(stderr, "skipped with E2E_FABRIC=%s: white box, both sides in this "
		"process, the fabric stepped by the test\n", harness_fabric_name());
	return true;
}

const char *harness_fabric_name(void)
{
	static const char *const names[] = { "thread", "step", "proc" };

	return run_mode == SOFTRDMA_MODE_ASYNC ? "async" : names[fabric];
}

enum softrdma_mode harness_run_mode(void)
{
	return run_mode;
}

/* Step one unit at a time, so that the pollers interleave with every one. */
static void *stepper_main(void *arg)
{
	(void)arg;
	while (!atomic_load(&stepper_stop)) {
		/* A test may switch to THREAD for a while: then wait, not spin. */
		int n = softrdma_progress_wait(1, 20);

		if (n > 0)
			stepped += (unsigned long)n;
		else if (softrdma_get_mode() != SOFTRDMA_MODE_STEP)
			poll(NULL, 0, 5);
	}
	return NULL;
}

static void stepper_end(void)
{
	atomic_store(&stepper_stop, true);
	pthread_join(stepper, NULL);
	fprintf(stderr, "E2E_FABRIC=step: the harness stepped %lu units\n", stepped);
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static void rdv_dir_remove(void)
{
	nftw(rdv_dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
}

static void *map_shared(int fd, size_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

	return p == MAP_FAILED ? NULL : p;
}

/* A shared mapping of @size zeroed bytes; its fd (inherited by children) in *@fd. */
static void *shared_new(size_t size, int *fd)
{
	void *p;

	*fd = memfd_create("e2e-harness", 0);	/* inherited: no MFD_CLOEXEC */
	if (*fd < 0)
		return NULL;
	if (ftruncate(*fd, (off_t)size) == 0 && (p = map_shared(*fd, size)))
		return p;
	close(*fd);
	*fd = -1;
	return NULL;
}

/* The server process: serve until told to stop, then leave. Never returns. */
static void child_main(const char *spec)
{
	static struct harness_server hs;
	struct harness_shared *sh;
	unsigned int max_requests, inline_size;
	int fd, dfd, rc;

	/* A test that dies leaves no server behind. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (sscanf(spec, "%d %d %u %u", &fd, &dfd, &max_requests, &inline_size) != 4)
		_exit(2);
	sh = map_shared(fd, sizeof(*sh));
	ddp_counters_p = map_shared(dfd, sizeof(*ddp_counters_p));
	if (!sh || !ddp_counters_p)
		_exit(2);
	close(fd);
	close(dfd);
	rc = harness_server_listen(&hs, sh, max_requests, inline_size);
	if (rc) {
		atomic_store(&sh->ready, rc);
		_exit(1);
	}
	memcpy(&sh->addr, &hs.addr, sizeof(hs.addr));
	atomic_store(&sh->ready, 1);
	harness_thread(&hs);
	harness_server_destroy(&hs);
	exit(0);
}

__attribute__((constructor)) static void harness_fabric_init(void)
{
	const char *f = getenv("E2E_FABRIC"), *child = getenv(CHILD_ENV);

	if (child)
		child_main(child);
	if (!f || !*f || strcmp(f, "thread") == 0) {
		fabric = HARNESS_FABRIC_THREAD;
	} else if (strcmp(f, "async") == 0) {
		/* The same fabric as thread but for when work runs: never in the post. */
		fabric = HARNESS_FABRIC_THREAD;
		run_mode = SOFTRDMA_MODE_ASYNC;
		softrdma_set_mode(run_mode);
	} else if (strcmp(f, "step") == 0) {
		fabric = HARNESS_FABRIC_STEP;
		softrdma_set_mode(SOFTRDMA_MODE_STEP);
		if (pthread_create(&stepper, NULL, stepper_main, NULL))
			abort();
		atexit(stepper_end);
	} else if (strcmp(f, "proc") == 0) {
		fabric = HARNESS_FABRIC_PROC;
		/* The socket backend needs a rendezvous directory, before the fabric starts. */
		if (!getenv("SOFTRDMA_DIR")) {
			snprintf(rdv_dir, sizeof(rdv_dir), "/tmp/e2e-rdv-XXXXXX");
			if (!mkdtemp(rdv_dir) || setenv("SOFTRDMA_DIR", rdv_dir, 1))
				abort();
			atexit(rdv_dir_remove);
		}
		ddp_counters_p = shared_new(sizeof(*ddp_counters_p), &ddp_fd);
		if (!ddp_counters_p)
			abort();
	} else {
		fprintf(stderr, "E2E_FABRIC=%s: expected thread, async, step or proc\n", f);
		exit(2);
	}
}

/*
 * environ plus @var, for the child; with E2E_SERVER_PROFILE set, the child's
 * device takes that profile instead of SOFTRDMA_PROFILE's.
 */
static char **child_env(char *var)
{
	static char profile[64];
	const char *sp = getenv("E2E_SERVER_PROFILE");
	size_t n = 0, i, k = 0;
	char **env;

	while (environ[n])
		n++;
	env = calloc(n + 3, sizeof(*env));
	if (!env)
		return NULL;
	for (i = 0; i < n; i++)
		if (!sp || strncmp(environ[i], "SOFTRDMA_PROFILE=", 17) != 0)
			env[k++] = environ[i];
	if (sp) {
		snprintf(profile, sizeof(profile), "SOFTRDMA_PROFILE=%s", sp);
		env[k++] = profile;
	}
	env[k] = var;
	return env;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int wait_ready(struct harness_server *hs)
{
	int64_t deadline = now_ms() + 10000;
	int status;

	while (atomic_load(&hs->sh->ready) == 0) {
		if (waitpid(hs->child, &status, WNOHANG) == hs->child) {
			hs->child = 0;
			return -ECHILD;
		}
		if (now_ms() > deadline)
			return -ETIMEDOUT;
		poll(NULL, 0, 2);
	}
	return atomic_load(&hs->sh->ready) < 0 ? atomic_load(&hs->sh->ready) : 0;
}

int harness_proc_start(struct harness_server *hs, uint32_t max_requests, uint32_t inline_size)
{
	char exe[PATH_MAX], var[96];
	char *argv[] = { "e2e-harness-server", NULL };
	char **env;
	ssize_t n;
	int fd, rc;

	/* Under valgrind this is the test, not valgrind: it intercepts the readlink. */
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return -errno;
	exe[n] = '\0';
	hs->sh = shared_new(sizeof(*hs->sh), &fd);
	if (!hs->sh) {
		hs->sh = &hs->own;
		return -ENOMEM;
	}
	atomic_store(&hs->sh->mode, atomic_load(&hs->own.mode));
	snprintf(var, sizeof(var), CHILD_ENV "=%d %d %u %u", fd, ddp_fd, max_requests,
		 inline_size);
	env = child_env(var);
	rc = env ? -posix_spawn(&hs->child, exe, NULL, NULL, argv, env) : -ENOMEM;
	free(env);
	close(fd);
	if (!rc)
		rc = wait_ready(hs);
	if (rc) {
		harness_proc_stop(hs);
		return rc;
	}
	memcpy(&hs->addr, &hs->sh->addr, sizeof(hs->addr));
	return 0;
}

void harness_proc_stop(struct harness_server *hs)
{
	int64_t deadline = now_ms() + 10000;
	int status;

	if (hs->child) {
		atomic_store(&hs->sh->stop, true);
		while (waitpid(hs->child, &status, WNOHANG) == 0) {
			if (now_ms() > deadline) {
				fprintf(stderr, "harness: the server process did not stop; killed\n");
				kill(hs->child, SIGKILL);
				waitpid(hs->child, &status, 0);
				break;
			}
			poll(NULL, 0, 2);
		}
		hs->child = 0;
	}
	if (hs->sh != &hs->own) {
		munmap(hs->sh, sizeof(*hs->sh));
		hs->sh = &hs->own;
	}
}

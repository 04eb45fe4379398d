/* SPDX-License-Identifier: MIT */
/*
 * softrdma conformance: fork(). A child starts with a fabric of its own, as
 * a child of an rdma-core program may open devices and make ids afresh
 * while what the parent opened stays the parent's. Here the parent has a
 * context, its progress thread and a published listener when it forks two
 * children (as Python's multiprocessing does in rdma-core's own rdma_cm
 * tests); one child listens, the other connects to it across processes and
 * sends; then the parent's objects, thread and listener are still its own.
 *
 * The children check with CHILD_CHECK, not cmocka: a failure ends the
 * child with the line number as its exit status. A child holds copies of
 * the parent's objects, which it may neither use nor free (undefined, as on
 * hardware), and which a leak check at its exit would report: a child that
 * succeeded says so on a pipe and ends with _exit(), as multiprocessing's
 * children do (LeakSanitizer does not run then), or with SIGKILL under
 * valgrind (which checks at _exit() too).
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <rdma/rdma_verbs.h>

#include "harness.h"
#include "peer.h"

#define MSG "sent by one child to its sibling"

#define CHILD_CHECK(cond) do { \
	if (!(cond)) { \
		fprintf(stderr, "child %d: %s:%d: %s\n", (int)getpid(), __FILE__, __LINE__, \
			#cond); \
		_exit(__LINE__ & 0x7f); \
	} \
} while (0)

static int done_fd = -1;

/* Success: tell the parent, then end (see above for valgrind). */
static void child_done(void)
{
	char ok = 'k';

	CHILD_CHECK(write(done_fd, &ok, 1) == 1);
	if (peer_under_valgrind())
		raise(SIGKILL);
	_exit(0);
}

/*
 * Under ASan (gcc 12's) a thread that a forked child of a threaded process
 * starts may hang at its start, in the allocator's lock that ASan's own
 * thread set-up takes, whatever the parent's threads were doing; glibc's
 * malloc, valgrind and TSan do not. So under ASan, skip.
 */
#if defined(__SANITIZE_ADDRESS__)
#define TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TEST_ASAN 1
#endif
#endif

/* TSan refuses threads started after a multithreaded fork() unless told otherwise. */
#if defined(__SANITIZE_THREAD__)
#define TEST_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TEST_TSAN 1
#endif
#endif
#ifdef TEST_TSAN
const char *__tsan_default_options(void);
const char *__tsan_default_options(void)
{
	return "die_after_fork=0";
}
#endif

/* The next event of ch, which must be @want; acked. */
static struct rdma_cm_id *child_event(struct rdma_event_channel *ch, enum rdma_cm_event_type want)
{
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;

	CHILD_CHECK(rdma_get_cm_event(ch, &ev) == 0);
	if (ev->event != want)
		fprintf(stderr, "child %d: %s (status %d), not %s\n", (int)getpid(),
			rdma_event_str(ev->event), ev->status, rdma_event_str(want));
	CHILD_CHECK(ev->event == want);
	id = ev->id;
	CHILD_CHECK(rdma_ack_cm_event(ev) == 0);
	return id;
}

static void child_qp(struct rdma_cm_id *id)
{
	struct ibv_qp_init_attr qa = {
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
			 .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};

	CHILD_CHECK(rdma_create_qp(id, NULL, &qa) == 0);
}

/* One completion of cq within 5 s. */
static void child_wc(struct ibv_cq *cq, enum ibv_wc_opcode opcode)
{
	struct timespec start, now;
	struct ibv_wc wc;
	int n;

	clock_gettime(CLOCK_MONOTONIC, &start);
	while ((n = ibv_poll_cq(cq, 1, &wc)) == 0) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		CHILD_CHECK(now.tv_sec - start.tv_sec < 5 * (peer_under_valgrind() ? 10 : 1));
		poll(NULL, 0, 1);
	}
	CHILD_CHECK(n == 1);
	CHILD_CHECK(wc.status == IBV_WC_SUCCESS);
	CHILD_CHECK(wc.opcode == opcode);
}

/* Listen, say the port, take one connection and its message, see it end. */
static void child_server(int port_out)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct sockaddr_in sin = h_loopback(0);
	struct rdma_cm_id *listen, *id;
	static char buf[64];
	struct ibv_mr *mr;
	uint16_t port;

	CHILD_CHECK(ch);
	CHILD_CHECK(rdma_create_id(ch, &listen, NULL, RDMA_PS_TCP) == 0);
	CHILD_CHECK(rdma_bind_addr(listen, (struct sockaddr *)&sin) == 0);
	CHILD_CHECK(rdma_listen(listen, 1) == 0);
	port = ntohs(rdma_get_src_port(listen));
	CHILD_CHECK(write(port_out, &port, sizeof(port)) == sizeof(port));
	id = child_event(ch, RDMA_CM_EVENT_CONNECT_REQUEST);
	child_qp(id);
	mr = ibv_reg_mr(id->pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	CHILD_CHECK(mr);
	CHILD_CHECK(rdma_post_recv(id, NULL, buf, sizeof(buf), mr) == 0);
	CHILD_CHECK(rdma_accept(id, NULL) == 0);
	child_event(ch, RDMA_CM_EVENT_ESTABLISHED);
	child_wc(id->recv_cq, IBV_WC_RECV);
	CHILD_CHECK(strcmp(buf, MSG) == 0);
	child_event(ch, RDMA_CM_EVENT_DISCONNECTED);
	rdma_destroy_qp(id);
	CHILD_CHECK(ibv_dereg_mr(mr) == 0);
	CHILD_CHECK(rdma_destroy_id(id) == 0);
	CHILD_CHECK(rdma_destroy_id(listen) == 0);
	rdma_destroy_event_channel(ch);
	child_done();
}

/* Connect to the sibling's port, send, disconnect. */
static void child_client(int port_in)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	static char buf[64] = MSG;
	struct sockaddr_in sin;
	struct rdma_cm_id *id;
	struct ibv_mr *mr;
	uint16_t port;

	CHILD_CHECK(ch);
	CHILD_CHECK(read(port_in, &port, sizeof(port)) == sizeof(port));
	sin = h_loopback(port);
	CHILD_CHECK(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) == 0);
	CHILD_CHECK(rdma_resolve_addr(id, NULL, (struct sockaddr *)&sin, 1000) == 0);
	child_event(ch, RDMA_CM_EVENT_ADDR_RESOLVED);
	CHILD_CHECK(rdma_resolve_route(id, 1000) == 0);
	child_event(ch, RDMA_CM_EVENT_ROUTE_RESOLVED);
	child_qp(id);
	mr = ibv_reg_mr(id->pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	CHILD_CHECK(mr);
	CHILD_CHECK(rdma_connect(id, NULL) == 0);
	child_event(ch, RDMA_CM_EVENT_ESTABLISHED);
	CHILD_CHECK(rdma_post_send(id, NULL, buf, sizeof(MSG), mr, IBV_SEND_SIGNALED) == 0);
	child_wc(id->send_cq, IBV_WC_SEND);
	CHILD_CHECK(rdma_disconnect(id) == 0);
	child_event(ch, RDMA_CM_EVENT_DISCONNECTED);
	rdma_destroy_qp(id);
	CHILD_CHECK(ibv_dereg_mr(mr) == 0);
	CHILD_CHECK(rdma_destroy_id(id) == 0);
	rdma_destroy_event_channel(ch);
	child_done();
}

static pid_t fork_child(void (*fn)(int), int fd)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		alarm(peer_under_valgrind() ? 100 : 10);
		fn(fd);
	}
	return pid;
}

/* The child ended as child_done() ends it, having said so on the pipe. */
static void child_succeeded(pid_t pid, int done_in)
{
	int status;
	char ok = 0;

	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (WIFSIGNALED(status) && WTERMSIG(status) != SIGKILL)
		fprintf(stderr, "child %d: signal %d\n", (int)pid, WTERMSIG(status));
	if (peer_under_valgrind())
		assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	else
		assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_int_equal(read(done_in, &ok, 1), 1);
	assert_int_equal(ok, 'k');
}

static void test_children_connect_across_processes(void **state)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct sockaddr_in sin = h_loopback(0);
	struct rdma_cm_id *listen;
	static uint8_t *buf[2];
	struct ibv_mr *mr[2];
	struct ibv_wc wc;
	struct h_pair p;
	struct h_opts o;
	char rdv[256];
	struct stat st;
	int fds[2], done[2];
	pid_t server, client;

	(void)state;
	/* The parent: a pair with its progress thread, and a listener other processes see. */
	h_opts_default(&o);
	h_pair_open_bufs(&p, &o, buf, 64, IBV_ACCESS_LOCAL_WRITE, mr);
	assert_non_null(ch);
	assert_int_equal(rdma_create_id(ch, &listen, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(rdma_bind_addr(listen, (struct sockaddr *)&sin), 0);
	assert_int_equal(rdma_listen(listen, 1), 0);
	snprintf(rdv, sizeof(rdv), "%s/tcp-127.0.0.1-%u", getenv("SOFTRDMA_DIR"),
		 ntohs(rdma_get_src_port(listen)));
	assert_int_equal(stat(rdv, &st), 0);

	assert_int_equal(pipe(fds), 0);
	assert_int_equal(pipe(done), 0);
	done_fd = done[1];
	server = fork_child(child_server, fds[1]);
	client = fork_child(child_client, fds[0]);
	close(fds[0]);
	close(fds[1]);
	child_succeeded(server, done[0]);
	child_succeeded(client, done[0]);
	close(done[0]);
	close(done[1]);

	/* Ours still: the listener is published, the pair works. */
	assert_int_equal(stat(rdv, &st), 0);
	assert_int_equal(h_post_recv(p.qp[1], 1, buf[1], 64, mr[1]->lkey), 0);
	assert_int_equal(h_post(p.qp[0], 2, IBV_WR_SEND, buf[0], 8, mr[0]->lkey,
				IBV_SEND_SIGNALED, 0, 0), 0);
	assert_int_equal(h_poll(p.cq[0], &wc, 1), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(h_poll(p.cq[1], &wc, 1), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(rdma_destroy_id(listen), 0);
	rdma_destroy_event_channel(ch);
	h_pair_close_bufs(&p, buf, mr);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_children_connect_across_processes),
	};
	int failed;

#ifdef TEST_ASAN
	puts("under ASan, whose threads started in a forked child may hang at their start: skipped");
	return 77;
#endif
	peer_setup_dir();
	failed = cmocka_run_group_tests_name("thread", tests, h_group_thread, NULL);
	peer_cleanup_dir();
	return failed;
}

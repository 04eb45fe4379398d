/* SPDX-License-Identifier: MIT */
/*
 * rpcrdma-stat: the counters of a process that serves them
 * (rpcrdma_stat_serve(), or RPCRDMA_STAT_SOCKET in its environment), one
 * row per client and server poller, like vmstat: once, or every -i
 * seconds, the later rows counting what happened during the interval
 * (gauges, the memory columns, stay absolute). Exit 0, or 1 when the
 * socket cannot be read.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define STAT_MAX_SOURCES 256
#define STAT_NFIELDS 26

/* The counters as the library names them, with the columns they print as. */
static const struct {
	const char *name;
	const char *column;
	bool gauge;		/* a level, not a count: never a difference */
	unsigned int shift;	/* printed in units of 1 << shift */
} fields[STAT_NFIELDS] = {
	{ "calls", "calls", false, 0 },
	{ "replies", "replies", false, 0 },
	{ "rdma_errors", "rdmaerr", false, 0 },
	{ "dropped", "drop", false, 0 },
	{ "read_chunks", "rdchunk", false, 0 },
	{ "write_chunks", "wrchunk", false, 0 },
	{ "reply_chunks", "rpchunk", false, 0 },
	{ "bounce_bytes", "bounceK", false, 10 },
	{ "flushes", "flush", false, 0 },
	{ "wc_errors", "wcerr", false, 0 },
	{ "credit_stalls", "cstall", false, 0 },
	{ "sq_waits", "sqwait", false, 0 },
	{ "retransmits", "retx", false, 0 },
	{ "timeouts", "tmout", false, 0 },
	{ "connects", "conn", false, 0 },
	{ "disconnects", "disc", false, 0 },
	{ "registered_bytes", "regK", true, 10 },
	{ "heap_bytes", "heapK", true, 10 },
	{ "conn_visits", "visits", false, 0 },
	{ "conn_rejects", "reject", false, 0 },
	{ "keepalives", "kalive", false, 0 },
	{ "keepalive_closes", "kaclose", false, 0 },
	{ "idle_closes", "idlecls", false, 0 },
	{ "credit_overruns", "overrun", false, 0 },
	{ "reply_overflows", "rpover", false, 0 },
	{ "idle_evictions", "evict", false, 0 },
};

struct source {
	char name[96];
	unsigned long long v[STAT_NFIELDS];
};

struct sample {
	struct source src[STAT_MAX_SOURCES];
	unsigned int n;
};

static volatile sig_atomic_t interrupted;

static void on_sigint(int sig)
{
	(void)sig;
	interrupted = 1;
}

/* Read the whole answer of the socket at @path into a NUL-terminated buffer. */
static char *fetch(const char *path)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	size_t cap = 8192, len = 0;
	char *buf = NULL, *grown;
	ssize_t r;
	int fd;

	if (strlen(path) >= sizeof(sun.sun_path)) {
		errno = ENAMETOOLONG;
		return NULL;
	}
	strcpy(sun.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sun, sizeof(sun)))
		goto fail;
	buf = malloc(cap);
	while (buf) {
		if (cap - len < 1024) {
			grown = cap < (64u << 20) ? realloc(buf, cap * 2) : NULL;
			if (!grown)
				goto fail;
			buf = grown;
			cap *= 2;
		}
		r = read(fd, buf + len, cap - len - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			goto fail;
		if (r == 0)
			break;
		len += (size_t)r;
	}
	close(fd);
	if (buf)
		buf[len] = '\0';
	return buf;
fail:
	if (fd >= 0)
		close(fd);
	free(buf);
	return NULL;
}

/* One "name k=v ..." line into @s; false if it is not one. */
static bool parse_line(char *line, struct source *s)
{
	char *save, *tok = strtok_r(line, " ", &save);
	unsigned int i;

	if (!tok)
		return false;
	memset(s, 0, sizeof(*s));
	snprintf(s->name, sizeof(s->name), "%s", tok);
	while ((tok = strtok_r(NULL, " ", &save))) {
		char *eq = strchr(tok, '=');

		if (!eq)
			return false;
		*eq = '\0';
		for (i = 0; i < STAT_NFIELDS; i++)
			if (strcmp(tok, fields[i].name) == 0)
				s->v[i] = strtoull(eq + 1, NULL, 10);
	}
	return true;
}

static int parse(char *text, struct sample *out)
{
	char *save, *line = strtok_r(text, "\n", &save);

	out->n = 0;
	if (!line || strcmp(line, "rpcrdma-stat 1") != 0)
		return -1;
	while ((line = strtok_r(NULL, "\n", &save))) {
		if (strcmp(line, "end") == 0)
			return 0;
		if (out->n < STAT_MAX_SOURCES && parse_line(line, &out->src[out->n]))
			out->n++;
	}
	return -1;		/* cut short */
}

static void header(size_t width)
{
	unsigned int i;

	printf("%-*s", (int)width, "source");
	for (i = 0; i < STAT_NFIELDS; i++)
		printf(" %8s", fields[i].column);
	printf("\n");
}

static const struct source *find(const struct sample *s, const char *name)
{
	unsigned int i;

	for (i = 0; i < s->n; i++)
		if (strcmp(s->src[i].name, name) == 0)
			return &s->src[i];
	return NULL;
}

/* A row: since start, or since @prev (the same source in the last sample). */
static void row(const struct source *s, const struct source *prev, size_t width)
{
	unsigned int i;

	printf("%-*s", (int)width, s->name);
	for (i = 0; i < STAT_NFIELDS; i++) {
		unsigned long long v = s->v[i];

		if (prev && !fields[i].gauge)
			v = v >= prev->v[i] ? v - prev->v[i] : 0;
		printf(" %8llu", v >> fields[i].shift);
	}
	printf("\n");
}

static void usage(const char *prog)
{
	fprintf(stderr,
		"usage: %s [-i seconds] [-c count] SOCKET\n"
		"  the counters a process serves at SOCKET (rpcrdma_stat_serve(),\n"
		"  RPCRDMA_STAT_SOCKET); with -i, every interval, the counts of each\n"
		"  interval after the first row (the K columns are KiB)\n", prog);
}

int main(int argc, char **argv)
{
	static struct sample cur, prev;
	double interval = 0;
	long count = 1, done;
	char *end;
	int opt;

	while ((opt = getopt(argc, argv, "i:c:h")) != -1) {
		switch (opt) {
		case 'i':
			interval = strtod(optarg, &end);
			if (*end || interval < 0.01 || interval > 86400)
				goto usage;
			if (count == 1)
				count = 0;
			break;
		case 'c':
			count = strtol(optarg, &end, 10);
			if (*end || count < 1)
				goto usage;
			break;
		default:
			goto usage;
		}
	}
	if (optind != argc - 1)
		goto usage;
	signal(SIGINT, on_sigint);
	for (done = 0; !interrupted && (!count || done < count); done++) {
		char *text = fetch(argv[optind]);
		size_t width = 6;
		unsigned int i;

		if (!text || parse(text, &cur)) {
			fprintf(stderr, "rpcrdma-stat: %s: %s\n", argv[optind],
				text ? "not an rpcrdma-stat answer" : strerror(errno));
			free(text);
			return 1;
		}
		free(text);
		for (i = 0; i < cur.n; i++)
			if (strlen(cur.src[i].name) > width)
				width = strlen(cur.src[i].name);
		if (done == 0)
			header(width);
		for (i = 0; i < cur.n; i++)
			row(&cur.src[i], done ? find(&prev, cur.src[i].name) : NULL, width);
		fflush(stdout);
		prev = cur;
		if (interval > 0 && (!count || done + 1 < count)) {
			struct timespec ts = { (time_t)interval,
					       (long)((interval - (double)(time_t)interval) * 1e9) };

			while (nanosleep(&ts, &ts) && errno == EINTR && !interrupted)
				;
		}
	}
	return 0;
usage:
	usage(argv[0]);
	return 2;
}

/* SPDX-License-Identifier: MIT */
/*
 * rdma-core's provider libraries load next to the drop-in libibverbs.so.1
 * (run with LD_LIBRARY_PATH=<drop-ins>) and find softrdma0 is not theirs.
 * pyverbs links libmlx5.so.1 and libefa.so.1; they need the provider
 * interface (IBVERBS_PRIVATE_34) to load at all, and their device checks
 * read the ops pointer after softrdma0's ibv_device, which must be NULL.
 *
 *	interop-providers [library...]	(default: libmlx5.so.1 libefa.so.1
 *					libmlx4.so.1 libmana.so.1)
 *
 * Every library must load with all its symbols bound (RTLD_NOW); one that
 * is not installed is skipped, and all missing is exit 77.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <infiniband/verbs.h>

static int failures;

static void check(bool ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "FAIL: %s\n", what);
		failures++;
	}
}

/* Our own device list must be the drop-in's: one device, softrdma0. */
static struct ibv_device *softrdma0(void)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_device *dev;

	if (!list || !list[0] || strcmp(ibv_get_device_name(list[0]), "softrdma0")) {
		fprintf(stderr, "FAIL: not running on the drop-in libibverbs.so.1\n");
		return NULL;
	}
	dev = list[0];
	ibv_free_device_list(list);	/* softrdma0 itself lives as long as the library */
	return dev;
}

/* mlx5dv: not an mlx5 device, and opening it as one is refused. */
static void check_mlx5(void *lib, struct ibv_device *dev)
{
	bool (*is_supported)(struct ibv_device *) = (bool (*)(struct ibv_device *))
		dlsym(lib, "mlx5dv_is_supported");
	struct ibv_context *(*open_dev)(struct ibv_device *, void *) =
		(struct ibv_context *(*)(struct ibv_device *, void *))
		dlsym(lib, "mlx5dv_open_device");

	check(is_supported && open_dev, "libmlx5 exports mlx5dv_is_supported, _open_device");
	if (!is_supported || !open_dev)
		return;
	check(!is_supported(dev), "mlx5dv_is_supported(softrdma0) is false");
	errno = 0;
	check(!open_dev(dev, NULL) && errno == EOPNOTSUPP,
	      "mlx5dv_open_device(softrdma0) is NULL with EOPNOTSUPP");
}

/* efadv: querying softrdma0 as an EFA device is refused. */
static void check_efa(void *lib, struct ibv_device *dev)
{
	int (*query)(struct ibv_context *, void *, uint32_t) =
		(int (*)(struct ibv_context *, void *, uint32_t))dlsym(lib, "efadv_query_device");
	struct ibv_context *ctx;
	char attr[256];

	check(query != NULL, "libefa exports efadv_query_device");
	if (!query)
		return;
	ctx = ibv_open_device(dev);
	check(ctx != NULL, "softrdma0 opens");
	if (!ctx)
		return;
	memset(attr, 0, sizeof(attr));
	check(query(ctx, attr, 32) == EOPNOTSUPP, "efadv_query_device(softrdma0) is EOPNOTSUPP");
	check(ibv_close_device(ctx) == 0, "softrdma0 closes");
}

int main(int argc, char **argv)
{
	static const char *const all[] = { "libmlx5.so.1", "libefa.so.1", "libmlx4.so.1",
					   "libmana.so.1" };
	const char *const *libs = argc > 1 ? (const char *const *)argv + 1 : all;
	int n = argc > 1 ? argc - 1 : (int)(sizeof(all) / sizeof(all[0]));
	struct ibv_device *dev = softrdma0();
	int i, loaded = 0;

	if (!dev)
		return 1;
	for (i = 0; i < n; i++) {
		void *lib;

		/* Every symbol bound now: one the drop-in lacks fails here. */
		lib = dlopen(libs[i], RTLD_NOW | RTLD_LOCAL);
		if (!lib) {
			const char *err = dlerror();

			/* Not installed: nothing to check. */
			if (err && strstr(err, "cannot open shared object file")) {
				printf("%s: not installed\n", libs[i]);
				continue;
			}
			fprintf(stderr, "FAIL: %s does not load: %s\n", libs[i], err);
			failures++;
			continue;
		}
		loaded++;
		printf("%s: loads\n", libs[i]);
		if (!strcmp(libs[i], "libmlx5.so.1"))
			check_mlx5(lib, dev);
		else if (!strcmp(libs[i], "libefa.so.1"))
			check_efa(lib, dev);
		dlclose(lib);
	}
	if (!loaded && !failures) {
		printf("no provider library is installed: skipped\n");
		return 77;
	}
	return failures ? 1 : 0;
}

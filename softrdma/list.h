/* SPDX-License-Identifier: MIT */
/* The library's lists (kernel names and argument order), shared with softrdma. */
#include "../lib/base/list.h"

/* SPDX-License-Identifier: MIT */
/*
 * The key table: MRs and MWs share one index space, as on rxe and mlx5. A key
 * is index << 8 | key byte; the byte of an index changes with each owner so a
 * stale key from a freed object never reaches the next one.
 */
#include <stdlib.h>
#include <string.h>

#include "soft.h"

static bool keys_grow_locked(void)
{
	uint32_t n = fab.nkeys ? fab.nkeys * 2 : 256;
	struct soft_key_slot *keys;
	uint32_t i;

	if (n > SOFT_MAX_KEYS)
		n = SOFT_MAX_KEYS;
	if (n <= fab.nkeys)
		return false;
	keys = realloc(fab.keys, n * sizeof(*keys));
	if (!keys)
		return false;
	memset(keys + fab.nkeys, 0, (n - fab.nkeys) * sizeof(*keys));
	for (i = fab.nkeys; i < n; i++)
		keys[i].next_key = (uint8_t)(i * 0x35 + 0x11);
	fab.keys = keys;
	fab.nkeys = n;
	return true;
}

uint32_t key_alloc_locked(enum soft_key_kind kind, void *obj, uint8_t *key)
{
	uint32_t i, idx;

	for (;;) {
		for (i = 0; i < fab.nkeys; i++) {
			idx = (fab.key_hint + i) % fab.nkeys;
			if (idx == 0 || fab.keys[idx].kind != SOFT_KEY_FREE)
				continue;
			fab.keys[idx].kind = kind;
			fab.keys[idx].obj = obj;
			*key = fab.keys[idx].next_key++;
			fab.key_hint = idx + 1;
			return idx;
		}
		if (!keys_grow_locked())
			return 0;
	}
}

void key_free_locked(uint32_t index)
{
	fab.keys[index].kind = SOFT_KEY_FREE;
	fab.keys[index].obj = NULL;
}

void *key_lookup_locked(uint32_t key, enum soft_key_kind kind)
{
	uint32_t idx = key >> 8;

	if (idx == 0 || idx >= fab.nkeys || fab.keys[idx].kind != kind)
		return NULL;
	return fab.keys[idx].obj;
}

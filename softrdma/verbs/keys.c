/* SPDX-License-Identifier: MIT */
/*
 * The key table: MRs and MWs share one index space, as on rxe and mlx5. A key
 * is index << 8 | key byte; the byte of an index changes with each owner so a
 * stale key from a freed object never reaches the next one.
 */
#include <stdlib.h>
#include <string.h>

#include "soft.h"

/* One more chunk of slots; the ones before it stay where they are. */
static bool keys_grow_locked(void)
{
	struct soft_key_slot *chunk;
	uint32_t i;

	if (fab.nkeys >= SOFT_MAX_KEYS)
		return false;
	chunk = calloc(SOFT_KEY_CHUNK, sizeof(*chunk));
	if (!chunk)
		return false;
	for (i = 0; i < SOFT_KEY_CHUNK; i++)
		chunk[i].next_key = (uint8_t)((fab.nkeys + i) * 0x35 + 0x11);
	fab.key_chunks[fab.nkeys / SOFT_KEY_CHUNK] = chunk;
	fab.nkeys += SOFT_KEY_CHUNK;
	return true;
}

uint32_t key_alloc_locked(enum soft_key_kind kind, void *obj, uint8_t *key)
{
	uint32_t i, idx;

	for (;;) {
		for (i = 0; i < fab.nkeys; i++) {
			struct soft_key_slot *slot;

			idx = (fab.key_hint + i) % fab.nkeys;
			slot = key_slot(idx);
			if (idx == 0 || slot->kind != SOFT_KEY_FREE)
				continue;
			slot->kind = kind;
			slot->obj = obj;
			*key = slot->next_key++;
			fab.key_hint = idx + 1;
			return idx;
		}
		if (!keys_grow_locked())
			return 0;
	}
}

void key_free_locked(uint32_t index)
{
	key_slot(index)->kind = SOFT_KEY_FREE;
	key_slot(index)->obj = NULL;
}

void *key_lookup_locked(uint32_t key, enum soft_key_kind kind)
{
	uint32_t idx = key >> 8;

	if (idx == 0 || idx >= fab.nkeys || key_slot(idx)->kind != kind)
		return NULL;
	return key_slot(idx)->obj;
}

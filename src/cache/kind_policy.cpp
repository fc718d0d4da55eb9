#include "cache/kind_policy.h"

namespace strata::cache {

const KindPolicy& policy(CacheKind k) {
  static const KindPolicy sliding_window{"sliding_window", Storage::slot, Checkpoint::copy_slot_state,
                                         Rollback::undo_records};
  static const KindPolicy compressed{"compressed", Storage::blocks, Checkpoint::share_blocks, Rollback::truncate};
  static const KindPolicy indexer_keys{"indexer_keys", Storage::blocks, Checkpoint::share_blocks, Rollback::truncate};
  static const KindPolicy compressor_state{"compressor_state", Storage::slot, Checkpoint::copy_slot_state,
                                           Rollback::undo_records};
  static const KindPolicy linear_state{"linear_state", Storage::slot, Checkpoint::copy_slot_state,
                                       Rollback::draft_slots};
  static const KindPolicy full_attention{"full_attention", Storage::blocks, Checkpoint::share_blocks,
                                         Rollback::truncate};
  static const KindPolicy mla_latent{"mla_latent", Storage::blocks, Checkpoint::share_blocks, Rollback::truncate};
  switch (k) {
    case CacheKind::sliding_window: return sliding_window;
    case CacheKind::compressed: return compressed;
    case CacheKind::indexer_keys: return indexer_keys;
    case CacheKind::compressor_state: return compressor_state;
    case CacheKind::linear_state: return linear_state;
    case CacheKind::full_attention: return full_attention;
    case CacheKind::mla_latent: return mla_latent;
  }
  return sliding_window;
}

}  // namespace strata::cache

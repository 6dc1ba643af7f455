// cuda/flash2_bwd.cu — placeholder (being written): FlashAttention-2 backward.
#include "cuda/variants.hpp"

namespace fcuda {

TileConfig flash2_bwd_tiles(const sim::Problem& p) {
    TileConfig c;
    c.variant = "flash2";
    c.loop_order = "kv_outer";
    c.block_rows = 64;
    c.block_cols = p.head_dim == 128 ? 64 : 128;
    return c;
}

void flash2_backward(const sim::Problem&, const Tensors&, Workspace&, cudaStream_t) {
    throw std::runtime_error("flash2 backward: not built yet");
}

}  // namespace fcuda

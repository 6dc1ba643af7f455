// sim/mask.hpp — which keys a query sees. Shared by the reference, the simulator's tile loops
// and (through the same rule) the CUDA kernels.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>

#include "sim/generator.hpp"
#include "sim/problem.hpp"

namespace sim {

// [block mask] Block-sparse attention. The key blocks are T = ceil(N / mask_block_cols); every query
// block keeps the same number of them, round(density x T) (at least 1 when the density is above 0,
// none at 0). Query block bi keeps key block bj when (a bj + b) mod T < kept: a permutation of the
// key blocks, a (coprime to T) and b drawn from the seed and bi, so each query block keeps its own
// scattered set and the kept fraction is exactly kept / T. A mask whose blocks are not yet known
// (0 x 0, before simulate() sets them to the tiles) masks nothing.
inline bool mask_blocks_known(const Problem& p) {
    return p.block_sparse() && p.mask_block_rows > 0 && p.mask_block_cols > 0;
}
inline int64_t mask_key_blocks(const Problem& p) {
    return p.mask_block_cols > 0 ? (p.seq + p.mask_block_cols - 1) / p.mask_block_cols : 0;
}
inline int64_t mask_kept_blocks(const Problem& p) {
    const int64_t t = mask_key_blocks(p);
    if (!p.block_sparse()) return t;
    if (p.block_density <= 0.0) return 0;
    return std::clamp<int64_t>(std::llround(p.block_density * static_cast<double>(t)), 1, t);
}
inline bool block_kept(const Problem& p, int64_t bi, int64_t bj) {
    const int64_t t = mask_key_blocks(p), kept = mask_kept_blocks(p);
    if (kept >= t) return true;
    if (kept == 0) return false;
    const uint64_t h = mix64(mix64(p.seed ^ 0x6d61736bULL) + static_cast<uint64_t>(bi));
    int64_t a = 1 + static_cast<int64_t>((h >> 32) % static_cast<uint64_t>(t - 1));  // 1 .. t - 1
    while (std::gcd(a, t) != 1) a = a % (t - 1) + 1;                                 // a = 1 always qualifies
    const int64_t b = static_cast<int64_t>((h & 0xffffffffULL) % static_cast<uint64_t>(t));
    return (a * bj + b) % t < kept;
}
// Whether a tile of queries [r0, r1) x keys [c0, c1) meets a kept block (any: some key in it is
// visible as far as the block mask goes) and whether every block it meets is kept.
inline bool tile_meets_kept_block(const Problem& p, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
    for (int64_t bi = r0 / p.mask_block_rows; bi <= (r1 - 1) / p.mask_block_rows; ++bi)
        for (int64_t bj = c0 / p.mask_block_cols; bj <= (c1 - 1) / p.mask_block_cols; ++bj)
            if (block_kept(p, bi, bj)) return true;
    return false;
}
inline bool tile_all_blocks_kept(const Problem& p, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
    for (int64_t bi = r0 / p.mask_block_rows; bi <= (r1 - 1) / p.mask_block_rows; ++bi)
        for (int64_t bj = c0 / p.mask_block_cols; bj <= (c1 - 1) / p.mask_block_cols; ++bj)
            if (!block_kept(p, bi, bj)) return false;
    return true;
}

// Query n sees key k when: no mask; causal: k <= n; window W (> 0): n - W < k <= n; and, with a
// left padding of P keys, k >= P in every case; and, block-sparse, when its block is kept.
inline bool key_visible(const Problem& p, int64_t n, int64_t k) {
    if (k < p.pad_left) return false;
    if (mask_blocks_known(p) && !block_kept(p, n / p.mask_block_rows, k / p.mask_block_cols)) return false;
    if (p.window > 0) return k <= n && k > n - p.window;
    if (p.causal) return k <= n;
    return true;
}

// A tile of queries [r0, r1) x keys [c0, c1) is wholly masked (skipped by flash: no load, no
// compute) when no query in it sees any key in it.
inline bool tile_masked(const Problem& p, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
    if (c1 - 1 < p.pad_left) return true;                                                // every key is padding
    if (mask_blocks_known(p) && !tile_meets_kept_block(p, r0, r1, c0, c1)) return true;  // every block dropped
    if (p.window <= 0 && !p.causal) return false;
    if (c0 > r1 - 1) return true;                              // every key is in every query's future
    if (p.window > 0 && c1 - 1 <= r0 - p.window) return true;  // every key is older than every window
    return false;
}

// True when the tile needs no element-wise mask (every query sees every key in it).
inline bool tile_unmasked(const Problem& p, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
    if (c0 < p.pad_left) return false;  // some key is padding
    if (mask_blocks_known(p) && !tile_all_blocks_kept(p, r0, r1, c0, c1)) return false;
    if (p.window <= 0 && !p.causal) return true;
    if (c1 - 1 > r0) return false;   // some key after the first query
    if (p.window > 0) return false;  // conservative for windows
    return true;
}

}  // namespace sim

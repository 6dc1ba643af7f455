// sim/mask.hpp — which keys a query sees. Shared by the reference, the simulator's tile loops
// and (through the same rule) the CUDA kernels.
#pragma once
#include <cstdint>

#include "sim/problem.hpp"

namespace sim {

// Query n sees key k when: no mask; causal: k <= n; window W (> 0): n - W < k <= n; and, with a
// left padding of P keys, k >= P in every case.
inline bool key_visible(const Problem& p, int64_t n, int64_t k) {
    if (k < p.pad_left) return false;
    if (p.window > 0) return k <= n && k > n - p.window;
    if (p.causal) return k <= n;
    return true;
}

// A tile of queries [r0, r1) x keys [c0, c1) is wholly masked (skipped by flash: no load, no
// compute) when no query in it sees any key in it.
inline bool tile_masked(const Problem& p, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
    if (c1 - 1 < p.pad_left) return true;  // every key is padding
    if (p.window <= 0 && !p.causal) return false;
    if (c0 > r1 - 1) return true;                              // every key is in every query's future
    if (p.window > 0 && c1 - 1 <= r0 - p.window) return true;  // every key is older than every window
    return false;
}

// True when the tile needs no element-wise mask (every query sees every key in it).
inline bool tile_unmasked(const Problem& p, int64_t r0, int64_t /*r1*/, int64_t c0, int64_t c1) {
    if (c0 < p.pad_left) return false;  // some key is padding
    if (p.window <= 0 && !p.causal) return true;
    if (c1 - 1 > r0) return false;   // some key after the first query
    if (p.window > 0) return false;  // conservative for windows
    return true;
}

}  // namespace sim

// sim/program.hpp — internal to the simulator: an algorithm as a list of kernels, each a grid of
// thread blocks per head whose body walks that block's steps (and, given data, computes them).
// Forward bodies live in sim/forward.cpp, backward bodies in sim/backward.cpp, shared helpers in
// sim/program.cpp; sim/simulate.cpp walks them.
#pragma once
#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "sim/mask.hpp"
#include "sim/walker.hpp"

namespace sim::detail {

// Per-head views of the inputs and outputs (numerics only).
struct HeadData {
    MapF Q, K, V, dO;  // dO has 0 rows when there is no backward pass
    float* O = nullptr;
    float* dQ = nullptr;
    float* dK = nullptr;
    float* dV = nullptr;
};

// One head's program: its tilings and, with numerics, the state kernels hand to each other in HBM.
struct Ctx {
    const Problem& p;
    Tiling t;   // forward tiles
    Tiling tb;  // backward tiles
    int64_t sram = 0;
    int64_t launch = -1;    // the kernel being walked: its KernelDef::launch
    HeadData* h = nullptr;  // null: count only
    SoftmaxRecord* rec = nullptr;
    // standard: the N x N matrices, as stored (rounded to the dtype)
    MatF S, P, dP, dS;
    // flash1: O (float32), l, m as Algorithm 1 leaves them in HBM; flash2: LSE; both backward: D, dQ
    MatF O32, dQacc;
    VecF l, m, lse, D;
    Ctx(const Problem& prob, const Tiling& fwd, const Tiling& bwd, int64_t sram_bytes)
        : p(prob), t(fwd), tb(bwd), sram(sram_bytes) {}
};

using Body = void (*)(Ctx&, int64_t block, Walker&);
// Blocks with equal keys (>= 0) walk identical loops (same steps, bytes, FLOPs); -1: no such promise.
using BlockKey = int64_t (*)(const Ctx&, int64_t block);

struct KernelDef {
    KernelInfo info;
    Body body = nullptr;
    bool counted = true;  // false: run for numerics only (the forward of a backward-only pass)
    BlockKey key = nullptr;
    int64_t launch = -1;  // one of several launches of the same body (flash1's K/V block j), else -1
};

// The units of the static grid order (GridOrder::static_units) of a kernel whose block b of a head
// is query block b, over `heads` heads; a block is named head * nb + b. Without pairs (unmasked) unit
// u is one block, nb - 1 - u mod nb of head u / nb (a head's heavy blocks first, as the kernel takes
// them). With pairs (causal) a unit is two blocks: a head's p-th heaviest and p-th lightest, nb - 1 -
// p then p. At even nb that is every block, nb / 2 units a head. At odd nb each head keeps a middle
// block m = (nb - 1) / 2: the heads go in twos, a two's nb units being the two middle blocks (head
// 2g's, then 2g + 1's), then head 2g's m pairs, then head 2g + 1's; an odd last head has its middle
// block alone, then its pairs (cuda/units.hpp, as flash2h runs them). lone_middles: each head's
// middle block a unit alone after its pairs (flash2h until 2026-12-05: the rows recorded then).
// G persistent blocks: block s runs units s, s + G, s + 2G, ...
struct StaticUnits {
    int64_t nb = 0, heads = 0;
    bool pairs = false;
    bool lone_middles = false;
    bool odd_twos() const { return pairs && !lone_middles && nb % 2 == 1; }
    int64_t per_head() const { return pairs ? (nb + 1) / 2 : nb; }  // lone middles: a head's units
    int64_t count() const {
        if (!odd_twos()) return heads * per_head();
        return (heads / 2) * nb + (heads % 2) * (nb / 2 + 1);
    }
    // the unit's blocks in the order it runs them; returns how many (1 or 2)
    int blocks(int64_t u, int64_t out[2]) const {
        if (odd_twos()) {
            const int64_t g = u / nb, r = u % nb, m = nb / 2;
            if (r == 0) {  // the middle blocks of heads 2g and 2g + 1
                out[0] = 2 * g * nb + m;
                if (2 * g + 1 >= heads) return 1;
                out[1] = (2 * g + 1) * nb + m;
                return 2;
            }
            const int64_t h = r <= m ? 2 * g : 2 * g + 1, q = r <= m ? r - 1 : r - 1 - m;
            out[0] = h * nb + (nb - 1 - q);
            out[1] = h * nb + q;
            return 2;
        }
        const int64_t ph = per_head(), h = u / ph, q = u % ph;
        out[0] = h * nb + (nb - 1 - q);
        if (!pairs || nb - 1 - q == q) return 1;
        out[1] = h * nb + q;
        return 2;
    }
};

// Greedy list scheduling (sim/timing.cpp): block g, taking dur(g), starts on the slot that is free
// first; the time the last block ends. With `at` > 0, also the time the first `at` blocks end (*at_end).
double list_makespan(int64_t total, int64_t slots, const std::function<double(int64_t)>& dur, int64_t at = 0,
                     double* at_end = nullptr);
// The same over a list of durations in launch order.
double list_makespan(const std::vector<double>& durations, int64_t slots);

// The static order's makespan: G = min(slots, units) slots, slot s running units s, s + G, ... one
// after another, block g taking dur(g); the longest slot's sum (sim/timing.cpp).
double makespan_in_turn(const StaticUnits& su, int64_t slots, const std::function<double(int64_t)>& dur);

inline bool has_mask(const Problem& p) { return p.causal || p.window > 0 || p.pad_left > 0 || p.block_sparse(); }
inline int64_t key_rows(const Ctx& ctx, int64_t i) { return ctx.t.rows(i); }
inline int64_t key_rows_unmasked(const Ctx& ctx, int64_t i) { return has_mask(ctx.p) ? -1 : ctx.t.rows(i); }
inline int64_t key_bwd_rows(const Ctx& ctx, int64_t i) { return ctx.tb.rows(i); }
inline int64_t key_bwd_cols(const Ctx& ctx, int64_t j) { return ctx.tb.cols(j); }
inline int64_t key_bwd_cols_unmasked(const Ctx& ctx, int64_t j) { return has_mask(ctx.p) ? -1 : ctx.tb.cols(j); }
// The inner loop of a thread block that holds K_j, V_j (Algorithm 1's forward, and the backward of
// flash1 and flash2): a step for each query block i whose tile (i, j) is not fully masked, K_j and
// V_j loaded in the first such step and kept; body(i, r0, r) counts and computes the rest of it.
template <typename F>
void over_query_blocks(const Problem& p, const Tiling& t, int64_t j, Walker& w, F&& body) {
    const int64_t d = p.head_dim, e = p.elem_bytes(), c0 = t.c0(j), cc = t.cols(j);
    bool kv_loaded = false;
    for (int64_t i = 0; i < t.tr; ++i) {
        const int64_t r0 = t.r0(i), r = t.rows(i);
        if (tile_masked(p, r0, r0 + r, c0, c0 + cc)) continue;
        w.begin_step();
        if (!kv_loaded) {
            w.load(Tensor::K, j, -1, c0, 0, cc, d, cc * d * e);
            w.load(Tensor::V, j, -1, c0, 0, cc, d, cc * d * e);
            kv_loaded = true;
        }
        body(i, r0, r);
    }
}

// A row kernel's form when a whole row does not fit in SRAM: one row a block, walked twice (pass 0,
// then pass 1) in chunks of `chunk` columns; step(pass, q, k0, cc) fills the step of chunk q,
// columns k0 .. k0 + cc.
template <typename F>
void two_pass_row(Walker& w, int64_t n, int64_t chunk, F&& step) {
    for (int pass = 0; pass < 2; ++pass)
        for (int64_t k0 = 0, q = 0; k0 < n; k0 += chunk, ++q) {
            const int64_t cc = std::min(n, k0 + chunk) - k0;
            w.begin_step();
            step(pass, q, k0, cc);
        }
}

// Block keys of standard's row kernels: the rows in group g (0 in the one-row, two-pass form).
int64_t key_softmax_rows(const Ctx& ctx, int64_t g);  // the softmax P = softmax(S)
int64_t key_ds_rows(const Ctx& ctx, int64_t g);       // the backward's dS = P o (dP - D)

// The forward kernels of an algorithm (sim/forward.cpp) and its backward kernels (sim/backward.cpp).
std::vector<KernelDef> forward_kernels(const Ctx& ctx, Algo a);
std::vector<KernelDef> backward_kernels(const Ctx& ctx, Algo a);

// Row-group sizes of standard attention's row-wise kernels (softmax: one row of S in float32 per row;
// dS: rows of P and dP). A chunk, when a row does not fit, is a whole number of B_c-wide segments.
struct RowKernelShape {
    bool whole_rows = true;
    int64_t group_rows = 0;  // whole_rows: rows per block
    int64_t chunk = 0;       // !whole_rows: elements per step
    int64_t blocks = 0;
};
RowKernelShape row_kernel_shape(int64_t n, int64_t sram, int64_t floats_per_elem, int64_t seg_cols);

void apply_mask(const Problem& p, MatF& s, int64_t r0, int64_t c0);

// Standard attention's GEMMs whose first operand `stored` is an N x N matrix stored in HBM (P or dS,
// counted as tensor stored_t) and whose second `input` is an (N, d) input (tensor input_t); the
// (tile, d) result accumulates in SRAM as float32 (tensor out).
//   by rows:    acc = sum_j stored_ij input_j,   one block per row tile i     (O = P V, dQ = dS K)
//   by columns: acc = sum_i stored_ij^T input_i, one block per column tile j  (dV = P^T dO, dK = dS^T Q)
// Each step loads a tile of each and accumulates; the caller stores the result. Returns the
// accumulator (empty when counting only).
MatF stored_gemm_rows(Ctx& ctx, const Tiling& t, int64_t i, Walker& w, Tensor stored_t, const MatF& stored,
                      Tensor input_t, const MapF& input, Tensor out);
MatF stored_gemm_cols(Ctx& ctx, const Tiling& t, int64_t j, Walker& w, Tensor stored_t, const MatF& stored,
                      Tensor input_t, const MapF& input, Tensor out);

}  // namespace sim::detail

namespace sim::detail {

// The L2 walk (sim/l2.cpp): the counted kernels' blocks, over `heads_walked` heads, in launch order,
// kernel_slots[k] at a time, round-robin one step each, through an LRU cache. When only some heads are walked
// (a sample), the cache and the slots shrink in proportion, so each head sees the share of L2 and
// the company it would have with all heads running.
struct L2Replay {
    L2Stats stats;
    std::vector<std::vector<BlockTime>> kernel_blocks;  // per kernel: the walked blocks, launch order
    std::vector<std::vector<StepCost>> timeline;        // steps of the first blocks of kernel timeline_kernel
};
L2Replay replay_l2(const Ctx& proto, const std::vector<KernelDef>& kernels, const Machine& m, int64_t heads_walked,
                   int64_t heads_total, const std::vector<int64_t>& kernel_slots, const std::vector<SlotRates>& rates,
                   int timeline_blocks, int timeline_steps, int64_t seg_cols, size_t timeline_kernel = 0);

// The timing model's last stage (sim/timing.cpp): blocks scheduled on slots, kernel after kernel.
// kernel_blocks[k] holds the times of the first heads_known heads' blocks (launch order); the rest
// of the B*H heads repeat the last known head's.
void schedule(Timing& out, const std::vector<KernelInfo>& kernels,
              const std::vector<std::vector<BlockTime>>& kernel_blocks, int64_t heads_known, int64_t heads_total,
              const std::vector<int64_t>& kernel_slots, int blocks_per_sm,
              const std::vector<std::vector<StepCost>>& timeline, double flops);

}  // namespace sim::detail

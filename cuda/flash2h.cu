// cuda/flash2h.cu — FlashAttention-2's loop order on Hopper's own machinery (sm_90a only):
// wgmma (warpgroup tensor-core instructions reading shared memory directly), TMA (one thread
// copies whole tiles, the hardware swizzles them), mbarriers, and a producer warp.
//
// Same algorithm and same HBM traffic as flash2.cu; what changes is who moves the bytes and how
// the tensor cores are fed:
//   * warpgroup 0 (the producer; one of its threads) issues TMA copies of Q_i once and of K_j, V_j into a 2-stage ring
//     (FLASHSIM_FLASH2H_STAGES=deep: 4 stages at d = 64, 3 at d = 128);
//     mbarriers say when a stage is full (transaction bytes arrived) and when it is free again
//     (every consumer warp has finished reading it);
//   * warpgroups 1 and 2 are the consumers of 64 query rows each (B_r = 128). Per K/V block:
//     S = Q_i K_j^T with wgmma (both operands in shared memory), online softmax in registers
//     (base 2, scale * log2(e) folded in, O rescaled once per block), P converted to 16-bit in
//     registers and O += P V_j with wgmma (P from registers, V from shared memory, transposed).
//   * "overlapped" schedule (default at d = 128): the warpgroup issues S_{j+1} = Q K_{j+1}^T
//     together with O += P_j V_j, then computes the softmax of block j+1 while the tensor cores
//     finish P_j V_j, so exponentials and matrix products overlap. "plain" (default at d = 64,
//     where it measured faster): S, softmax, P V one after another. FLASHSIM_FLASH2H picks one.
//   The two consumer warpgroups are not synchronised with each other, so one's softmax also
//   overlaps the other's matrix products, by chance; with turns (ping-pong, default at d = 128;
//   FLASHSIM_FLASH2H_PINGPONG=on|off) they take turns to issue their products (named barriers), so
//   that one's softmax runs while the other's products do, by design.
//   * three consumer warpgroups (B_r = 192, 512 threads, 160 registers a consumer thread; the
//     default at d = 64, FLASHSIM_FLASH2H_WG=2|3 to choose), so that while one is
//     in its softmax two can keep the tensor cores busy (at d = 64 a block's exponentials take
//     about as long as its products). Every row meets the same 128-key blocks in the same order:
//     O and LSE are bit-identical to two warpgroups'.
//
// Key blocks: B_c = 128, or 176 at d = 128 without a mask (the default there: S 64 x 176 a warpgroup,
//   K_j and V_j 44 KiB a stage; FLASHSIM_FLASH2H_BC=128|176).
// Launch shape: by default the static order (causal only up to N = 12,160 at d = 128 and N = 4,224
//   at d = 64, where causal takes the counter) and the tiles grid otherwise (grid_mode); persistent grid (FLASHSIM_FLASH2H_GRID=static|persistent): min(SMs,
//   units) thread blocks, each looping over work units (a unit: one query block, or causal a head's
//   p-th heaviest and p-th lightest blocks, and at odd T_r two heads' middle blocks, so that units
//   cost about the same: cuda/units.hpp), in turn (static) or
//   the next one from a counter in the workspace (persistent); the producer loads the next tile's Q_i,
//   K_j, V_j while the consumers finish the current one. tiles: grid (T_r = ceil(N / 128),
//   B * H), one tile a block, a head's heavy causal blocks (large i) first (FLASHSIM_FLASH2H_ORDER=heavy:
//   block-major, every head's heaviest block first; grid_place). 384 threads: warpgroup 0 produces (24
//   registers a thread after setmaxnreg), warpgroups 1-2 consume (240). Three consumer warpgroups:
//   B_r = 192, 512 threads, consumers 160 registers. One thread block per SM.
// SRAM (dynamic shared memory, 128-byte swizzled panels 64 elements wide), e = 2 bytes:
//   Q_i  (128, d)               d=128: 32 KiB   d=64: 16 KiB
//   K_j  2 stages x (128, d)    d=128: 64 KiB   d=64: 32 KiB
//   V_j  2 stages x (128, d)    d=128: 64 KiB   d=64: 32 KiB
//   total (+1 KiB alignment)    d=128: 161 KiB  d=64: 81 KiB (three warpgroups: Q_i 24 KiB, 89 KiB)
//   B_c = 176 (d = 128, no mask): K_j, V_j 2 stages x (176, 128) each, 88 KiB each: 209 KiB
//   Registers per consumer thread: O (64 x d / 128 fp32), S (B_c / 2 fp32), P (B_c / 4 x 32-bit).
// HBM traffic (per head): the simulator's flash2 with B_r = B_c = 128: read Q once, K and V once
//   per query block (2 T_r N d e; causal about half), write O once and LSE (4 N bytes).
// Rows beyond N (last query block) and keys beyond N (last K/V block) come from TMA as zeros;
//   those keys are masked to -inf, those rows are not stored.
// Run/check: flashsim bench --variant flash2h --seq 4096 --head-dim 128 ; ctest -L gpu
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <mutex>
#include <set>
#include <string>

#include "cuda/hopper.cuh"
#include "cuda/mma.cuh"
#include "cuda/numbers.hpp"
#include "cuda/units.hpp"
#include "cuda/variants.hpp"
#include "sim/tail_plan.hpp"

namespace fcuda {
namespace {

using namespace hopper;

// Warpgroup 0 produces (one thread issues the copies; it gives most of its registers back),
// NC warpgroups consume, 64 query rows each (B_r = 64 NC). NC = 2: 240 registers a consumer
// thread (2 x 128 x 240 + 128 x 24 <= 65536); NC = 3 (d = 64 only): 160 (3 x 128 x 160 + 128 x 24).
constexpr int BC = 128, PRODUCER_REGS = 24;
// K_j / V_j ring stages: 2, or (FLASHSIM_FLASH2H_STAGES=deep, the default schedule only) 4 at d = 64
// and 3 at d = 128 (225 KiB of shared memory)
template <int D>
constexpr int fwd_deep_stages() {
    return D == 64 ? 4 : 3;
}

// BCK: keys a K_j / V_j block (B_c): 128, or 176 (FLASHSIM_FLASH2H_BC=176: d = 128, unmasked)
template <int D, int NC, int STAGES = 2, int BCK = BC>
struct Sizes {
    static_assert(NC == 2 || (NC == 3 && D == 64), "three consumer warpgroups only at d = 64 (registers)");
    static constexpr int BR = 64 * NC;
    static constexpr int CONSUMER_WARPS = 4 * NC;
    static constexpr int THREADS = 128 * (NC + 1);
    static constexpr int CONSUMER_REGS = NC == 2 ? 240 : 160;
    static constexpr int PANELS = D / 64;
    static constexpr int Q_BYTES = BR * D * 2;
    static constexpr int KV_BYTES = BCK * D * 2;
    static constexpr int SMEM = Q_BYTES + 2 * STAGES * KV_BYTES + 1024;  // + room to align to 1024
};

// The softmax's exponentials: EXP_FTZ (default) one ex2.approx.ftz a score; EXP_IEEE exp2f
// (ex2.approx without ftz: ptxas adds a range check and two scalings around each MUFU.EX2, the
// kernel's first form); EXP_POLY a quarter of them (every fourth group of 8 key columns) by
// poly_exp2 on the FMA units, the rest as EXP_FTZ (FLASHSIM_FLASH2H_EXP=ftz|ieee|poly).
enum ExpMode { EXP_FTZ = 0, EXP_IEEE = 1, EXP_POLY = 2 };

// The persistent grids' work units (PERSIST): cuda/units.hpp (one query block, or causal two of
// about T_r + 1 key blocks together, a head's heaviest with its lightest and at odd T_r two heads'
// middle blocks).
using FwdTile = units::Tile;
__host__ __device__ constexpr int persistent_units(bool causal, int T_r, int BH) {
    return units::count(causal, T_r, BH);
}

// The tiles a thread block runs, shared by its producer and its consumers: units from u0 on
// (PERSIST: the next from the counter or u + G), below u_end, each of tiles_of(u) tiles.
template <bool CAUSAL, bool PERSIST, int BR, int BC>
struct FwdSchedule {
    int N, T_r, u0, G, u_end, heavy, BH;
    unsigned* next_unit;
    // u_full >= 0 (the last round split along the keys): the whole units end there
    __device__ __forceinline__ FwdSchedule(int N_, int heavy_, int BH_, unsigned* next_unit_, int u_full = -1)
        : N(N_),
          T_r((N_ + BR - 1) / BR),
          u0(PERSIST ? static_cast<int>(blockIdx.x) : 0),
          G(PERSIST ? static_cast<int>(gridDim.x) : 1),
          u_end(!PERSIST      ? 1
                : u_full >= 0 ? u_full
                              : persistent_units(CAUSAL, T_r, BH_)),
          heavy(heavy_),
          BH(BH_),
          next_unit(next_unit_) {}
    __device__ __forceinline__ int tiles_of(int u) const { return PERSIST ? units::tiles(CAUSAL, u, T_r, BH) : 1; }
    __device__ __forceinline__ FwdTile tile_at(int u, int half) const {
        if constexpr (PERSIST) {
            return units::tile(CAUSAL, u, half, T_r);
        } else {
            const GridPlace place = grid_place(heavy);
            return {static_cast<int>(gridDim.x) - 1 - place.block, place.head};  // a head's heavy causal blocks first
        }
    }
    __device__ __forceinline__ int next_of(int u) const {  // the producer's next unit after u
        if (!PERSIST) return u_end;
        if (next_unit == nullptr) return u + G;
        const unsigned f = atomicAdd(next_unit, 1u);
        if (f == static_cast<unsigned>(u_end - 1)) *next_unit = 0u;  // the launch's last request
        return G + static_cast<int>(f);
    }
    __device__ __forceinline__ int key_blocks(int i) const {  // K/V blocks query block i visits
        const int all = (N + BC - 1) / BC;
        return CAUSAL ? min(all, (min(i * BR + BR, N) - 1) / BC + 1) : all;
    }
};

// Where the tiles sit in shared memory and the mbarriers that guard them: Q_i's (full, and empty
// once every consumer warp's last S of the tile is done), and per ring stage K_j's and V_j's.
template <int STAGES>
struct FwdRing {
    uint32_t sQ, sK, sV, barQ, emptyQ;
    uint64_t* bars;
    __device__ __forceinline__ uint32_t fullK(int s) const { return smem_addr(&bars[2 + s]); }
    __device__ __forceinline__ uint32_t fullV(int s) const { return smem_addr(&bars[2 + STAGES + s]); }
    __device__ __forceinline__ uint32_t emptyK(int s) const { return smem_addr(&bars[2 + 2 * STAGES + s]); }
    __device__ __forceinline__ uint32_t emptyV(int s) const { return smem_addr(&bars[2 + 3 * STAGES + s]); }
};

// The producer (one thread): Q_i of each tile once the consumers are done with the last one's,
// and K_j, V_j into the ring as its stages free. With the counter, the tile's code (2 u + half)
// rides to the consumers on Q_i's barrier, and -1 after the last.
template <class Z, int BC, int STAGES, bool PERSIST, bool TAIL, class Sched>
__device__ __forceinline__ void fwd_produce(const CUtensorMap* tmQ, const CUtensorMap* tmK, const CUtensorMap* tmV,
                                            const Sched& sc, const FwdRing<STAGES>& rg, int* tile_code,
                                            const sim::tail::Plan& tp) {
    constexpr int BR = Z::BR;
    tma_prefetch_map(tmK);
    tma_prefetch_map(tmV);
    int n = 0, it = 0;  // tiles begun, ring slots used
    // tile tl's Q_i (code: the counter grid's word) and its key blocks j0 .. j0 + nj - 1
    auto load = [&](const FwdTile tl, int j0, int nj, int code) {
        const int bh = tl.bh;
        if (n > 0) mbar_wait(rg.emptyQ, (n - 1) & 1);  // the last tile's S products are done
        if (PERSIST && sc.next_unit != nullptr) {      // the word rides on the Q_i barrier's phase
            mbar_arrive_expect_tx(rg.barQ, Z::Q_BYTES + 4);
            st_async_u32(own_cluster_addr(smem_addr(tile_code)), static_cast<uint32_t>(code),
                         own_cluster_addr(rg.barQ));
        } else {
            mbar_arrive_expect_tx(rg.barQ, Z::Q_BYTES);
        }
        for (int p = 0; p < Z::PANELS; ++p) tma_load_3d(rg.sQ + p * BR * 128, tmQ, rg.barQ, 64 * p, tl.i * BR, bh);
        for (int j = j0; j < j0 + nj; ++j, ++it) {
            const int s = it % STAGES;
            const uint32_t ph = (it / STAGES) & 1;
            if (it >= STAGES) mbar_wait(rg.emptyK(s), ph ^ 1);
            mbar_arrive_expect_tx(rg.fullK(s), Z::KV_BYTES);
            for (int p = 0; p < Z::PANELS; ++p)
                tma_load_3d(rg.sK + s * Z::KV_BYTES + p * BC * 128, tmK, rg.fullK(s), 64 * p, j * BC, bh);
            if (it >= STAGES) mbar_wait(rg.emptyV(s), ph ^ 1);
            mbar_arrive_expect_tx(rg.fullV(s), Z::KV_BYTES);
            for (int p = 0; p < Z::PANELS; ++p)
                tma_load_3d(rg.sV + s * Z::KV_BYTES + p * BC * 128, tmV, rg.fullV(s), 64 * p, j * BC, bh);
        }
        ++n;
    };
    for (int u = sc.u0; u < sc.u_end;) {
        const int u_next = sc.next_of(u);  // asked now, used after this unit's tiles
        for (int half = 0; half < sc.tiles_of(u); ++half) {
            const FwdTile tl = sc.tile_at(u, half);
            load(tl, 0, sc.key_blocks(tl.i), 2 * u + half);
        }
        u = u_next;
    }
    if constexpr (TAIL) {  // this block's pieces of the last round's units
        sim::tail::Piece pc{};
        for (int k = 0; sim::tail::piece(tp, static_cast<int>(blockIdx.x), k, pc); ++k)
            load(sc.tile_at(pc.u, 0), pc.j0, pc.nj, 0);
    }
    if (PERSIST && sc.next_unit != nullptr) {  // no more: the consumers learn it from the Q_i barrier's next phase
        mbar_wait(rg.emptyQ, (n - 1) & 1);
        mbar_arrive_expect_tx(rg.barQ, 4);
        st_async_u32(own_cluster_addr(smem_addr(tile_code)), ~0u, own_cluster_addr(rg.barQ));  // -1
    }
}

// A consumer thread's row sums l (its part of each of its two rows) summed over the quad.
__device__ __forceinline__ void quad_sum(float (&l)[2]) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        l[h] += __shfl_xor_sync(0xffffffffu, l[h], 1);
        l[h] += __shfl_xor_sync(0xffffffffu, l[h], 2);
    }
}

// The epilogue of a consumer thread's two rows r0, r0 + 8: l summed over the quad (SUMMED: already),
// O / l stored, LSE = scale m + ln l (rows beyond N are not stored).
template <typename T, int D, int NO, bool SUMMED = false>
__device__ __forceinline__ void fwd_store(T* __restrict__ O, float* __restrict__ LSE, const float (&o)[NO],
                                          float (&l)[2], const float (&m)[2], int r0, int t, int bh, int N,
                                          float scale) {
    T* Oh = O + static_cast<size_t>(bh) * N * D;
    if constexpr (!SUMMED) quad_sum(l);
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        const float inv = l[h] > 0.0f ? 1.0f / l[h] : 0.0f;
        const int row = r0 + 8 * h;
        if (row < N) {
            T* orow = Oh + static_cast<size_t>(row) * D;
#pragma unroll
            for (int nb = 0; nb < D / 8; ++nb)
                *reinterpret_cast<uint32_t*>(orow + nb * 8 + 2 * t) =
                    pack2<T>(o[nb * 4 + 2 * h] * inv, o[nb * 4 + 2 * h + 1] * inv);
            if (LSE != nullptr && t == 0) LSE[static_cast<size_t>(bh) * N + row] = m[h] * scale + logf(l[h]);
        }
    }
}

// The last round split along the keys (TAIL): where a piece's partial results wait, and a unit's
// count of pieces done (a warpgroup's rows each; the last to finish sets it back to zero).
struct TailArgs {
    sim::tail::Plan plan;
    float* part;      // slot s, warpgroup w: (NO + 4) x 128 floats, element-major: O's NO, m, m', l, l'
    unsigned* count;  // left-over unit tu, warpgroup w: tu * NC + w
};

// One warpgroup's piece of a left-over unit: its unnormalised O, running max m and row sums l left in
// its slot (each thread its own registers, so each reads back only what its peers in the unit's other
// pieces wrote in the same places); then the unit's count. The warpgroup that counts the unit's last
// piece merges the others into its registers (O and l rescaled to the largest m) and returns true to
// store the rows; the rest return false. bar: a named barrier of the warpgroup's 128 threads.
template <int NC, int NO>
__device__ __forceinline__ bool tail_merge(const TailArgs& ta, int slot, int tu, int wg, int bar, float (&o)[NO],
                                           float (&m)[2], float (&l)[2], float scale_log2, int* last_flag) {
    const int tid = static_cast<int>(threadIdx.x % 128);
    quad_sum(l);
    constexpr int STRIDE = (NO + 4) * 128;
    float* mine = ta.part + (static_cast<size_t>(slot) * NC + wg) * STRIDE + tid;
#pragma unroll
    for (int k = 0; k < NO; ++k) __stcg(mine + k * 128, o[k]);
    __stcg(mine + NO * 128, m[0]);
    __stcg(mine + (NO + 1) * 128, m[1]);
    __stcg(mine + (NO + 2) * 128, l[0]);
    __stcg(mine + (NO + 3) * 128, l[1]);
    __threadfence();  // this thread's partials visible to every block before the count says so
    named_sync(bar, 128);
    if (tid == 0) {
        unsigned* c = ta.count + tu * NC + wg;
        const bool last = atomicAdd(c, 1u) + 1u == static_cast<unsigned>(sim::tail::sharers(ta.plan, tu));
        if (last) atomicExch(c, 0u);  // every piece is in: zero for the next launch
        *last_flag = last ? 1 : 0;
    }
    named_sync(bar, 128);
    if (*static_cast<volatile int*>(last_flag) == 0) return false;
    __threadfence();
    const long long f0 = static_cast<long long>(tu) * ta.plan.T_c;
    const int b_first = sim::tail::block_of(ta.plan, f0), b_last = sim::tail::block_of(ta.plan, f0 + ta.plan.T_c - 1);
    for (int b = b_first; b <= b_last; ++b) {
        const int s = sim::tail::slot(ta.plan, b, tu);
        if (s == slot) continue;
        const float* other = ta.part + (static_cast<size_t>(s) * NC + wg) * STRIDE + tid;
        float a[2], ao[2];
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const float mo = __ldcg(other + (NO + h) * 128), lo = __ldcg(other + (NO + 2 + h) * 128);
            const float mx = fmaxf(m[h], mo);
            a[h] = m[h] == -INFINITY ? 0.0f : exp2f((m[h] - mx) * scale_log2);
            ao[h] = mo == -INFINITY ? 0.0f : exp2f((mo - mx) * scale_log2);
            l[h] = l[h] * a[h] + lo * ao[h];
            m[h] = mx;
        }
#pragma unroll
        for (int k = 0; k < NO; ++k) o[k] = o[k] * a[(k >> 1) & 1] + __ldcg(other + k * 128) * ao[(k >> 1) & 1];
    }
    return true;
}

// PERSIST: one thread block an SM (grid G = min(SMs, units)); block b starts with unit b and then
// takes the next unit from a counter (next_unit: units G, G + 1, ... in the order blocks ask, as
// the hardware hands out the blocks of a grid), or, without one (next_unit null), units b + G,
// b + 2G, ... in turn. In turn, the consumers walk the same units as the producer; with the
// counter the producer thread tells them through a shared-memory word (2 u + half, or -1: no more)
// that it stores through the async proxy as 4 of the Q_i barrier's transaction bytes (st.async,
// which needs the grid launched in clusters of two blocks or more: of two here, each block storing
// into its own shared memory), so the barrier alone orders it (a plain store, which the mbarriers
// order just as well, drew compute-sanitizer racecheck's reports: it does not follow mbarriers;
// neither does it for a bulk copy's bytes; cuda/NOTES.md). It loads
// the next tile's Q_i once the consumers' last S of the current one is done (the emptyQ barrier),
// and its K_j, V_j as the ring frees, while the consumers finish the current tile's last P V and
// store its O: a tile's start (Q_i's and K_0's latency, the block's launch) overlaps the one
// before. The counter is zero at launch and set back to zero by the block whose request is the
// launch's last (the requests number exactly `units`: one a unit past the first G, one a block
// to learn there are no more). Otherwise one tile a thread block (grid_place).
template <typename T, int D, bool CAUSAL, bool OVERLAP, int NC, int STAGES, int EXP = EXP_FTZ, bool PERSIST = false,
          bool PP = false, int BC = fcuda::BC, bool TAIL = false>
__global__ void __launch_bounds__(128 * (NC + 1), 1)
    flash2h_fwd_kernel(const __grid_constant__ CUtensorMap tmQ, const __grid_constant__ CUtensorMap tmK,
                       const __grid_constant__ CUtensorMap tmV, T* __restrict__ O, float* __restrict__ LSE, int N,
                       float scale, float scale_log2, int heavy, int BH, unsigned* __restrict__ next_unit,
                       const TailArgs tail) {
    using Z = Sizes<D, NC, STAGES, BC>;
    static_assert(Z::SMEM + 128 <= sim::geometry::kMaxSmemPerBlock,
                  "more shared memory than a block may have (227 KiB)");
    static_assert(BC == 128 || (BC == 176 && D == 128 && NC == 2),
                  "B_c = 176 only at d = 128 with two consumer warpgroups");
    static_assert(!TAIL || (PERSIST && !CAUSAL && D == 128 && NC == 2),
                  "the last round split along the keys: the static order, no mask, d = 128 (tail_bytes)");
    constexpr int NS = BC / 2, KS = BC / 16, NB = BC / 8;  // S accumulators a thread, P's k-steps, S's column blocks
    constexpr int BR = Z::BR;
    extern __shared__ unsigned char smem_raw[];
    __shared__ __align__(8) uint64_t bars[2 + 4 * STAGES];
    const uint32_t base = (smem_addr(smem_raw) + 1023u) & ~1023u;  // swizzle atoms need 1024-byte alignment
    const uint32_t sQ = base, sK = sQ + Z::Q_BYTES, sV = sK + STAGES * Z::KV_BYTES;
    const FwdRing<STAGES> rg{sQ, sK, sV, smem_addr(&bars[0]), smem_addr(&bars[1]), bars};

    __shared__ int tile_code;  // with the counter, the producer's word to the consumers: 2 u + half, or -1 (no more)
    __shared__ int tail_last[NC];  // TAIL: whether a warpgroup's piece was its unit's last
    const FwdSchedule<CAUSAL, PERSIST, BR, BC> sc(N, heavy, BH, next_unit, TAIL ? tail.plan.u_full : -1);
    const int u0 = sc.u0, G = sc.G, u_end = sc.u_end;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;

    if (threadIdx.x == 0) {
        mbar_init(rg.barQ, 1);
        mbar_init(rg.emptyQ, Z::CONSUMER_WARPS);
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(rg.fullK(s), 1);
            mbar_init(rg.fullV(s), 1);
            mbar_init(rg.emptyK(s), Z::CONSUMER_WARPS);
            mbar_init(rg.emptyV(s), Z::CONSUMER_WARPS);
        }
        mbar_fence_init();
    }
    __syncthreads();

    if (warp < 4) {  // ---- producer warpgroup: one thread issues every copy
        setmaxnreg_dec<PRODUCER_REGS>();
        if (warp == 0 && lane == 0)
            fwd_produce<Z, BC, STAGES, PERSIST, TAIL>(&tmQ, &tmK, &tmV, sc, rg, &tile_code, tail.plan);
        return;
    }

    // ---- consumers: warpgroup wg owns query rows q0 + 64 wg .. + 63; this thread rows r0, r0 + 8
    setmaxnreg_inc<Z::CONSUMER_REGS>();
    const int wg = warp / 4 - 1;
    const int g = lane / 4, t = lane % 4;
    // the current tile: its rows, key blocks, head, and its first ring slot (it0)
    int r0 = 0, wg_first_row = 0, T_c = 0, bh = 0, it0 = 0;
    constexpr int NO = D / 2;  // O accumulator registers a thread
    float o[NO];
    float s_acc[NS];
#pragma unroll
    for (int k = 0; k < NS; ++k) s_acc[k] = 0.0f;
    float m[2], l[2];
    uint32_t pa[KS][4];

    auto descQ = [&](int kk) { return desc_sw128(sQ + (kk / 4) * BR * 128 + wg * 64 * 128 + (kk % 4) * 32, 16); };
    auto descK = [&](int s, int kk) {
        return desc_sw128(sK + s * Z::KV_BYTES + (kk / 4) * BC * 128 + (kk % 4) * 32, 16);
    };
    auto descV = [&](int s, int kk) { return desc_sw128(sV + s * Z::KV_BYTES + kk * 16 * 128, BC * 128); };

    // S = Q_i K_j^T, issued (not waited for)
    auto issue_s = [&](int s) {
#pragma unroll
        for (int kk = 0; kk < D / 16; ++kk) wgmma_ss<T, BC>(s_acc, descQ(kk), descK(s, kk), kk > 0 ? 1 : 0);
        wgmma_commit();
    };
    // O += P V_j, issued
    auto issue_pv = [&](int s) {
#pragma unroll
        for (int kk = 0; kk < BC / 16; ++kk) wgmma_rs<T, D>(o, pa[kk], descV(s, kk), 1);
        wgmma_commit();
    };
    // masks, running max, exponentials, row sums of block j (in s_acc, in place); returns the
    // rescale factor of O for each of the two rows
    auto softmax = [&](int j, float(&alpha)[2]) {
        const int c0 = j * BC;
        if (c0 + BC > N || (CAUSAL && c0 + BC - 1 > wg_first_row)) {
#pragma unroll
            for (int nb = 0; nb < NB; ++nb)
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    const int col = c0 + nb * 8 + 2 * t + (e & 1);
                    const int row = r0 + (e >> 1) * 8;
                    if (col >= N || (CAUSAL && col > row)) s_acc[nb * 4 + e] = -INFINITY;
                }
        }
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            float mx = -INFINITY;
#pragma unroll
            for (int nb = 0; nb < NB; ++nb) mx = fmaxf(mx, fmaxf(s_acc[nb * 4 + 2 * h], s_acc[nb * 4 + 2 * h + 1]));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
            const float m_new = fmaxf(m[h], mx);
            const float shift = m_new == -INFINITY ? 0.0f : m_new * scale_log2;  // a row with no key yet
            alpha[h] = EXP == EXP_IEEE ? exp2f(m[h] * scale_log2 - shift) : fast_exp2(m[h] * scale_log2 - shift);
            m[h] = m_new;
            float sum = 0.0f;
#pragma unroll
            for (int nb = 0; nb < NB; ++nb)
#pragma unroll
                for (int e = 0; e < 2; ++e) {
                    const float x = fmaf(s_acc[nb * 4 + 2 * h + e], scale_log2, -shift);
                    const float p = EXP == EXP_IEEE                  ? exp2f(x)
                                    : EXP == EXP_POLY && nb % 4 == 3 ? poly_exp2(x)
                                                                     : fast_exp2(x);
                    s_acc[nb * 4 + 2 * h + e] = p;
                    sum += p;
                }
            l[h] = l[h] * alpha[h] + sum;  // this thread's part of the row; the quad adds up at the end
        }
    };
    // P of block j in 16 bits, laid out as wgmma's A fragments (same places as S's accumulators)
    auto to_p = [&]() {
#pragma unroll
        for (int kk = 0; kk < KS; ++kk) {
            pa[kk][0] = pack2<T>(s_acc[8 * kk + 0], s_acc[8 * kk + 1]);
            pa[kk][1] = pack2<T>(s_acc[8 * kk + 2], s_acc[8 * kk + 3]);
            pa[kk][2] = pack2<T>(s_acc[8 * kk + 4], s_acc[8 * kk + 5]);
            pa[kk][3] = pack2<T>(s_acc[8 * kk + 6], s_acc[8 * kk + 7]);
        }
    };
    auto rescale_o = [&](const float(&alpha)[2]) {
#pragma unroll
        for (int nb = 0; nb < D / 8; ++nb) {
            o[nb * 4 + 0] *= alpha[0];
            o[nb * 4 + 1] *= alpha[0];
            o[nb * 4 + 2] *= alpha[1];
            o[nb * 4 + 3] *= alpha[1];
        }
    };
    auto release = [&](uint32_t bar) {
        __syncwarp();
        if (lane == 0) mbar_arrive(bar);
    };
    // PP (ping-pong): the consumer warpgroups take turns to issue their products, 0, 1, (2,) 0, ...:
    // warpgroup wg waits at named barrier 1 + wg until the one before it has issued, and once its
    // own products are issued lets the next one go. So one warpgroup's products queue on the tensor
    // cores while the other runs its softmax, instead of both reaching the tensor cores together
    // and both waiting. Each barrier counts 256 threads: the waiting warpgroup and its predecessor.
    // The last warpgroup opens the first turn; its last opening is taken by warpgroup 0 at exit.
    auto turn_wait = [&]() {
        if constexpr (PP) named_sync(1 + wg, 256);
    };
    auto turn_pass = [&]() {
        if constexpr (PP) named_arrive(1 + (wg + 1) % NC, 256);
    };
    if constexpr (PP) {
        if (wg == NC - 1) named_arrive(1, 256);
    }

    // S_j = Q K_j^T to completion, K_j's stage released
    auto s_block = [&](int j) {
        const int s = (it0 + j) % STAGES;
        mbar_wait(rg.fullK(s), ((it0 + j) / STAGES) & 1);
        fence_regs(s_acc);
        wgmma_fence();
        turn_wait();
        issue_s(s);
        turn_pass();
        wgmma_wait<0>();
        fence_regs(s_acc);
        release(rg.emptyK(s));
    };
    // O += P_j V_j to completion, V_j's stage released
    auto pv_block = [&](int j) {
        const int s = (it0 + j) % STAGES;
        mbar_wait(rg.fullV(s), ((it0 + j) / STAGES) & 1);
        fence_regs(o);
        wgmma_fence();
        turn_wait();
        issue_pv(s);
        turn_pass();
        wgmma_wait<0>();
        fence_regs(o);
        release(rg.emptyV(s));
    };

    // Q_i is no longer read by this warp (its last S is done): with the persistent grid the
    // producer may load the next tile's once every consumer warp has said so
    auto q_done = [&]() {
        if constexpr (PERSIST) release(rg.emptyQ);
    };
    int walk_u = u0, walk_half = 0, walk_piece = 0;                // the static order's next unit and tile; TAIL: piece
    for (int n = 0;; ++n) {                                        // tiles begun
        int code = 0, j0 = 0, nj = -1, slot = -1;                  // TAIL's pieces: key blocks j0 .. j0 + nj - 1, slot
        if (PERSIST && next_unit == nullptr && walk_u >= u_end) {  // TAIL: this block's pieces of the last round
            sim::tail::Piece pc{};
            if (!TAIL || !sim::tail::piece(tail.plan, static_cast<int>(blockIdx.x), walk_piece++, pc)) break;
            code = 2 * pc.u;
            j0 = pc.j0;
            nj = pc.nj;
            slot = pc.slot;
        } else if (PERSIST && next_unit == nullptr) {  // in turn: this block's units, walked as the producer walks them
            code = 2 * walk_u + walk_half;
            if (++walk_half == sc.tiles_of(walk_u)) {
                walk_half = 0;
                walk_u += G;
            }
        }
        mbar_wait(rg.barQ, n & 1);
        if (PERSIST && next_unit != nullptr) {  // from the counter: the producer's word
            code = *static_cast<volatile int*>(&tile_code);
            if (code < 0) break;
        }
        const FwdTile tl = sc.tile_at(code >> 1, code & 1);
        const int q0 = tl.i * BR;
        T_c = nj >= 0 ? nj : sc.key_blocks(tl.i);  // the key blocks this tile walks, from j0 on
        bh = tl.bh;
        r0 = q0 + wg * 64 + (warp % 4) * 16 + g;
        wg_first_row = q0 + wg * 64;
#pragma unroll
        for (int k = 0; k < NO; ++k) o[k] = 0.0f;
        m[0] = m[1] = -INFINITY;
        l[0] = l[1] = 0.0f;

        if constexpr (!OVERLAP) {
            for (int j = 0; j < T_c; ++j) {
                s_block(j);
                if (j + 1 == T_c) q_done();
                float alpha[2];
                softmax(j0 + j, alpha);
                rescale_o(alpha);
                to_p();
                pv_block(j);
            }
        } else {
            // block 0: S, softmax, P (O is still zero: nothing to rescale)
            s_block(0);
            if (T_c == 1) q_done();
            {
                float alpha[2];
                softmax(j0, alpha);
            }
            to_p();
            // block j: S_{j+1} = Q K_{j+1}^T and O += P_j V_j in flight together; the softmax of
            // block j+1 runs while P_j V_j finishes; then O is rescaled and P_{j+1} takes P_j's place
            for (int j = 0; j + 1 < T_c; ++j) {
                const int s = (it0 + j) % STAGES, s1 = (it0 + j + 1) % STAGES;
                mbar_wait(rg.fullK(s1), ((it0 + j + 1) / STAGES) & 1);
                mbar_wait(rg.fullV(s), ((it0 + j) / STAGES) & 1);
                fence_regs(s_acc);
                fence_regs(o);
                wgmma_fence();
                turn_wait();
                issue_s(s1);
                issue_pv(s);
                turn_pass();
                wgmma_wait<1>();  // S_{j+1} is done; P_j V_j may still run
                fence_regs(s_acc);
                release(rg.emptyK(s1));
                if (j + 2 == T_c) q_done();
                float alpha[2];
                softmax(j0 + j + 1, alpha);
                wgmma_wait<0>();
                fence_regs(o);
                release(rg.emptyV(s));
                rescale_o(alpha);
                to_p();
            }
            pv_block(T_c - 1);  // the last block: O += P V only
        }

        if (TAIL && slot >= 0) {  // a piece of a left-over unit: left for, or merged by, the last of its pieces
            if (tail_merge<NC>(tail, slot, (code >> 1) - u_end, wg, 1 + NC + wg, o, m, l, scale_log2, &tail_last[wg]))
                fwd_store<T, D, NO, true>(O, LSE, o, l, m, r0, t, bh, N, scale);
        } else {
            fwd_store<T, D>(O, LSE, o, l, m, r0, t, bh, N, scale);  // l over the quad, O / l, LSE
        }
        it0 += T_c;
        if (!PERSIST) break;
    }
    if constexpr (PP) {
        if (wg == 0) named_sync(1, 256);  // the last warpgroup's last opening
    }
}

// ---- host side ---------------------------------------------------------------------------------

// The schedule: FLASHSIM_FLASH2H=overlapped|plain; by default overlapped at d = 128 and plain at
// d = 64, the faster of the two at each head dim on the H200 (cuda/NOTES.md, flash2h v1).
bool overlapped(int64_t d) {
    const char* e = sim::knob("FLASHSIM_FLASH2H");
    if (e == nullptr) return d == 128;
    return std::string(e) != "plain";
}

// FLASHSIM_FLASH2H_STAGES=2|deep: the K/V ring's depth (deep: fwd_deep_stages, with the default
// schedule only: overlapped at d = 128, plain at d = 64).
bool deep_ring(int64_t d) {
    const char* e = sim::knob("FLASHSIM_FLASH2H_STAGES");
    const std::string v = e != nullptr ? e : "";
    if (v.empty() || v == "2" || v == "default") return false;
    if (v != "deep") throw std::runtime_error("FLASHSIM_FLASH2H_STAGES must be 2 or deep (got '" + v + "')");
    if (overlapped(d) != (d == 128))
        throw std::runtime_error(
            "FLASHSIM_FLASH2H_STAGES=deep needs flash2h's default schedule (overlapped at d = 128, "
            "plain at d = 64); unset FLASHSIM_FLASH2H");
    return true;
}

// FLASHSIM_FLASH2H_EXP=ftz|ieee|poly: the softmax's exponentials (ExpMode); ieee and poly with the
// default schedule and ring only.
int exp_mode(int64_t d) {
    const char* e = sim::knob("FLASHSIM_FLASH2H_EXP");
    const std::string v = e != nullptr ? e : "";
    if (v.empty() || v == "ftz" || v == "default") return EXP_FTZ;
    if (v != "ieee" && v != "poly")
        throw std::runtime_error("FLASHSIM_FLASH2H_EXP must be ftz, ieee or poly (got '" + v + "')");
    if (overlapped(d) != (d == 128) || deep_ring(d))
        throw std::runtime_error("FLASHSIM_FLASH2H_EXP=" + v +
                                 " needs flash2h's default schedule and ring; unset FLASHSIM_FLASH2H and "
                                 "FLASHSIM_FLASH2H_STAGES");
    return v == "ieee" ? EXP_IEEE : EXP_POLY;
}

// Consumer warpgroups: FLASHSIM_FLASH2H_WG=2|3 (3: B_r = 192, d = 64 only; d = 128 always 2). By
// default 3 at d = 64: on the H200, three ran 7-10% faster than two at d = 64 not causal (N =
// 2048-16384), and, once the softmax's exponentials were ex2.approx.ftz, 16-23% faster causal (N =
// 4096-16384; with exp2f's longer softmax they had been no faster); cuda/NOTES.md, "three consumer
// warpgroups" and "the softmax's exponentials".
int consumer_groups(int64_t d) {
    if (d != 64) return 2;
    const char* e = sim::knob("FLASHSIM_FLASH2H_WG");
    if (e == nullptr || std::string(e).empty() || std::string(e) == "default") return 3;
    const std::string v(e);
    if (v == "2") return 2;
    if (v == "3") return 3;
    throw std::runtime_error("FLASHSIM_FLASH2H_WG must be 2 or 3 (got '" + v + "')");
}

// FLASHSIM_FLASH2H_GRID=static|persistent|tiles: one thread block an SM looping over units of
// tiles, in turn (static) or the next unit from a counter (persistent), or one thread block a tile
// (tiles). The persistent grids run with the default schedule, ring and exponentials and the heads
// order; asked for with any of those changed, they are refused. By default (unset or "default"),
// with those defaults: the static order, causal only up to kStaticCausalMaxTr query blocks at d = 128
// and kStaticCausalMaxTr64 at d = 64 (three consumer warpgroups; with two, not measured in the static
// order, the tiles grid), where d = 64 causal takes the counter grid instead; the tiles grid otherwise. On the H200, with turns, the static order ran
// 0-14% faster than the tiles grid at d = 128 but for N = 8,192 unmasked (0.4% slower) and N = 16,384
// causal (3.3% slower: the last round's idle blocks cost more than the tile starts save on long
// tiles; the threshold sits between 8,192, where the static order gained 2.4%, and 16,384);
// cuda/NOTES.md, "the static order with turns"; at d = 64, "the static order where its blocks are
// short" and the measurement after it.
enum GridMode { GRID_TILES = 0, GRID_PERSISTENT = 1, GRID_STATIC = 2 };
// The schedule, ring and exponentials all as by default (overlapped at d = 128, plain at 64; 2
// stages; ex2.approx.ftz): what the persistent grids and the turns run with.
bool default_kernel(int64_t d) { return overlapped(d) == (d == 128) && !deep_ring(d) && exp_mode(d) == EXP_FTZ; }
// the default's static order, causal: T_r = ceil(N / 128) up to this (sim/kernel_geometry.hpp)
constexpr int64_t kStaticCausalMaxTr = sim::geometry::kFlash2hStaticCausalMaxTr;
// d = 64, causal: T_r = ceil(N / 192) up to this (N <= 4,224); measured on the H200, the static order
// against the tiles grid: -9, +3, -3, +3, +7% causal at N = 1,024-16,384 (the N = 2,048 row 3% slower
// under this rule), -11 to -2% unmasked at every N
constexpr int64_t kStaticCausalMaxTr64 = sim::geometry::kFlash2hStaticCausalMaxTr64;
GridMode grid_mode(const sim::Problem& p) {
    const int64_t d = p.head_dim;
    const char* e = sim::knob("FLASHSIM_FLASH2H_GRID");
    const std::string v = e != nullptr ? e : "";
    if (v == "tiles") return GRID_TILES;
    const bool explicit_ask = v == "persistent" || v == "static";
    if (!explicit_ask && !v.empty() && v != "default")
        throw std::runtime_error("FLASHSIM_FLASH2H_GRID must be static, persistent or tiles (got '" + v + "')");
    const bool defaults = default_kernel(d);
    const bool heavy = heavy_first(p.causal) != 0;
    if (explicit_ask && (!defaults || heavy))
        throw std::runtime_error("FLASHSIM_FLASH2H_GRID=" + v +
                                 " needs flash2h's default schedule, ring, exponentials and heads order; unset "
                                 "FLASHSIM_FLASH2H, FLASHSIM_FLASH2H_STAGES, FLASHSIM_FLASH2H_EXP and "
                                 "FLASHSIM_FLASH2H_ORDER, or set FLASHSIM_FLASH2H_GRID=tiles");
    if (explicit_ask) return v == "static" ? GRID_STATIC : GRID_PERSISTENT;
    const int groups = consumer_groups(d);  // B_r = 64 a consumer warpgroup
    const int64_t br = 64 * groups, T_r = (p.seq + br - 1) / br;
    const bool measured = d == 128 || groups == 3;  // the configurations the default's rule was measured on
    const int64_t causal_max = d == 128 ? kStaticCausalMaxTr : kStaticCausalMaxTr64;
    const bool by_default = measured && defaults && !heavy && (!p.causal || T_r <= causal_max);
    // d = 64, causal: the units from the counter, 1.0-4.3% faster than in turn on the H200 at N = 1,024-
    // 8,192 in two rounds (cuda/NOTES.md, "the planned H200 call, measured"); at d = 128 it lost on the H100
    if (by_default && d == 64 && p.causal) return GRID_PERSISTENT;
    return by_default ? GRID_STATIC : GRID_TILES;
}

// FLASHSIM_FLASH2H_PINGPONG=on|off: the consumer warpgroups take turns to issue their products (PP
// in the kernel). By default on at d = 128 and off at d = 64: on the H200, turns ran -1% to +9%
// against none at d = 128 (N = 1024-16384, both masks) and 6-14% slower at d = 64, where three
// warpgroups wait for each other's issues (cuda/NOTES.md, "take turns"). With the default schedule,
// ring and exponentials only, on the tiles grid or (d = 128) the static order; asked for otherwise,
// refused with what to unset.
bool pingpong(const sim::Problem& p) {
    const int64_t d = p.head_dim;
    const char* e = sim::knob("FLASHSIM_FLASH2H_PINGPONG");
    const std::string v = e != nullptr ? e : "";
    if (v == "off") return false;
    const bool explicit_on = v == "on";
    if (!explicit_on && !v.empty() && v != "default")
        throw std::runtime_error("FLASHSIM_FLASH2H_PINGPONG must be on or off (got '" + v + "')");
    const bool defaults = default_kernel(d);
    const GridMode gm = grid_mode(p);
    const bool grid_ok = gm == GRID_TILES || (gm == GRID_STATIC && d == 128);
    if (explicit_on && !defaults)
        throw std::runtime_error(
            "FLASHSIM_FLASH2H_PINGPONG=on needs flash2h's default schedule, ring and exponentials; "
            "unset FLASHSIM_FLASH2H, FLASHSIM_FLASH2H_STAGES and FLASHSIM_FLASH2H_EXP");
    if (explicit_on && !grid_ok) {  // an asked-for grid, or at d = 64 the default's static order
        const char* g = sim::knob("FLASHSIM_FLASH2H_GRID");
        const std::string got = g != nullptr && *g != 0 ? std::string(" (got '") + g + "')"
                                : gm == GRID_PERSISTENT ? std::string(" (the default grid here is the counter grid)")
                                                        : std::string(" (the default grid here is the static order)");
        throw std::runtime_error(
            std::string("FLASHSIM_FLASH2H_PINGPONG=on runs on the tiles grid, or at d = 128 the static "
                        "order; ") +
            (d == 128 ? "unset FLASHSIM_FLASH2H_GRID" : "set FLASHSIM_FLASH2H_GRID=tiles") + got);
    }
    return explicit_on || (d == 128 && defaults && grid_ok);
}

// FLASHSIM_FLASH2H_BC=128|176: keys a K_j / V_j block. 176 (as FlashAttention-3 takes for d = 128
// without a mask: S is 64 x 176 a warpgroup, 88 registers) only with d = 128, no mask, and the
// default kernel (overlapped, 2 stages of 44 KiB K_j and V_j: 209 KiB, turns, the static order),
// where it is the default: measured 0.8-3.4% faster than 128 at N = 1024-16384 side by side
// (cuda/NOTES.md); asked for elsewhere, refused with what to change.
int key_block_cols(const sim::Problem& p) {
    const char* e = sim::knob("FLASHSIM_FLASH2H_BC");
    const std::string v = e != nullptr ? e : "";
    if (v == "128") return BC;
    if (v.empty() || v == "default")
        return p.head_dim == 128 && !p.causal && default_kernel(128) && grid_mode(p) == GRID_STATIC && pingpong(p) ? 176
                                                                                                                   : BC;
    if (v != "176") throw std::runtime_error("FLASHSIM_FLASH2H_BC must be 128 or 176 (got '" + v + "')");
    if (p.head_dim != 128 || p.causal)
        throw std::runtime_error(
            "FLASHSIM_FLASH2H_BC=176 is written for d = 128 without a mask (got d = " + std::to_string(p.head_dim) +
            (p.causal ? ", causal" : "") + "); unset it or set FLASHSIM_FLASH2H_BC=128");
    if (!default_kernel(128) || grid_mode(p) != GRID_STATIC || !pingpong(p))
        throw std::runtime_error(
            "FLASHSIM_FLASH2H_BC=176 runs with flash2h's default kernel at d = 128 (overlapped, "
            "2 stages, ex2.approx.ftz, the static order, turns); unset FLASHSIM_FLASH2H, "
            "FLASHSIM_FLASH2H_STAGES, FLASHSIM_FLASH2H_EXP, FLASHSIM_FLASH2H_GRID and "
            "FLASHSIM_FLASH2H_PINGPONG, or set FLASHSIM_FLASH2H_BC=128");
    return 176;
}

// FLASHSIM_FLASH2H_TAIL=whole|split: the static order's last round run as it falls (whole units, some
// blocks idle) or its units' key blocks spread evenly over every block, each unit's pieces merged by
// the last of them (sim::tail::Plan, tail_merge). split only with the default kernel on 176-key blocks
// (d = 128, no mask); asked for elsewhere, refused with what to change.
bool tail_split(const sim::Problem& p) {
    const char* e = sim::knob("FLASHSIM_FLASH2H_TAIL");
    const std::string v = e != nullptr ? e : "";
    if (v.empty() || v == "whole" || v == "default") return false;
    if (v != "split") throw std::runtime_error("FLASHSIM_FLASH2H_TAIL must be whole or split (got '" + v + "')");
    if (key_block_cols(p) != 176)
        throw std::runtime_error(
            "FLASHSIM_FLASH2H_TAIL=split runs with flash2h's default kernel at d = 128 without a mask (176-key "
            "blocks, the static order, turns); unset FLASHSIM_FLASH2H_TAIL, or run d = 128 unmasked with the other "
            "FLASHSIM_FLASH2H_* knobs unset");
    return true;
}
// The split of problem p on this card (d = 128, 128 query rows a unit, 176 keys a block, a block an SM).
sim::tail::Plan tail_plan_of(const sim::Problem& p) {
    const int N = static_cast<int>(p.seq), BH = static_cast<int>(p.heads_total());
    return sim::tail::plan(persistent_units(false, (N + 127) / 128, BH), (N + 175) / 176, sm_count());
}

// The workspace of the last round split along the keys (d = 128, two consumer warpgroups): the counts
// (a left-over unit and warpgroup each, 256-byte aligned), then two slots a block, each one piece's
// partials (TailArgs, sim::tail::piece_bytes).
struct TailBytes {
    int64_t counts, parts;
    int64_t total() const { return counts + parts; }
};
TailBytes tail_bytes(const sim::tail::Plan& tp) {
    // room for G units' counts, more than any shape leaves over (L < G): the partials start at the same
    // place for every shape on this card, so a workspace kept from another shape holds zero counts
    const int64_t counts = (static_cast<int64_t>(tp.G) * 2 * 4 + 255) / 256 * 256;
    return {counts, int64_t{2} * tp.G * sim::tail::piece_bytes(128, 128)};
}

template <typename T, int D, bool CAUSAL, bool OVERLAP, int NC, int STAGES = 2, int EXP = EXP_FTZ, bool PERSIST = false,
          bool PP = false, int BCK = BC, bool TAIL = false>
void launch(const sim::Problem& p, const Tensors& t, Workspace& ws, cudaStream_t s, bool counted = false,
            const sim::tail::Plan& tail_plan = {}) {
    using Z = Sizes<D, NC, STAGES, BCK>;
    const int N = static_cast<int>(p.seq), BH = static_cast<int>(p.heads_total());
    constexpr int smem = Z::SMEM;
    auto kernel = flash2h_fwd_kernel<T, D, CAUSAL, OVERLAP, NC, STAGES, EXP, PERSIST, PP, BCK, TAIL>;
    CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    const CUtensorMap mq = make_map<T>(t.Q, p, Z::BR), mk = make_map<T>(t.K, p, BCK), mv = make_map<T>(t.V, p, BCK);
    const int T_r = (N + Z::BR - 1) / Z::BR;
    TailArgs tail{};
    if constexpr (TAIL) {  // a block an SM; the partials and the counts in the workspace (tail_bytes)
        tail.plan = tail_plan;
        const TailBytes tb = tail_bytes(tail.plan);
        if (ws.d.bytes() < static_cast<size_t>(tb.total())) {  // new: the counts zeroed once, left zero by every launch
            ws.d.ensure(static_cast<size_t>(tb.total()));
            CUDA_CHECK(cudaMemsetAsync(ws.d.get(), 0, static_cast<size_t>(tb.counts), s));
        }
        tail.count = ws.d.as<unsigned>();
        tail.part = reinterpret_cast<float*>(ws.d.as<unsigned char>() + tb.counts);
    }
    const dim3 grid = TAIL      ? dim3(static_cast<unsigned>(tail.plan.G))
                      : PERSIST ? dim3(static_cast<unsigned>(std::min(sm_count(), persistent_units(CAUSAL, T_r, BH))))
                                : dim3(static_cast<unsigned>(T_r), static_cast<unsigned>(BH));
    const float scale = static_cast<float>(p.softmax_scale());
    // counted: the persistent grid's unit counter (4 bytes of the workspace, zeroed once; every
    // launch leaves it zero); otherwise the static order (no counter)
    unsigned* counter = nullptr;
    if (PERSIST && counted && persistent_units(CAUSAL, T_r, BH) >= 2) {  // one unit: the static order
        if (ws.d.bytes() < 4) {
            ws.d.ensure(4);
            CUDA_CHECK(cudaMemsetAsync(ws.d.get(), 0, 4, s));
        }
        counter = ws.d.as<unsigned>();
    }
    if (counter != nullptr) {  // st.async hands the tile word over: a launch in clusters of two blocks
        // (a unit counter's grid may be any size up to the units: rounded down to even)
        launch_in_clusters(kernel, dim3(grid.x & ~1u), dim3(Z::THREADS), smem, s, 2, mq, mk, mv, static_cast<T*>(t.O),
                           t.LSE, N, scale, scale * LOG2E, 0, BH, counter, tail);
    } else {
        kernel<<<grid, Z::THREADS, smem, s>>>(mq, mk, mv, static_cast<T*>(t.O), t.LSE, N, scale, scale * LOG2E,
                                              PERSIST ? 0 : heavy_first(CAUSAL), BH, counter, tail);
    }
    LAUNCH_CHECK();
}

// The mask decides the kernel's CAUSAL argument; everything else is fixed by the caller.
template <typename T, int D, bool OVERLAP, int NC, int STAGES = 2, int EXP = EXP_FTZ, bool PERSIST = false,
          bool PP = false>
void launch_mask(const sim::Problem& p, const Tensors& t, Workspace& ws, cudaStream_t s, bool counted = false) {
    if (p.causal)
        launch<T, D, true, OVERLAP, NC, STAGES, EXP, PERSIST, PP>(p, t, ws, s, counted);
    else
        launch<T, D, false, OVERLAP, NC, STAGES, EXP, PERSIST, PP>(p, t, ws, s, counted);
}

template <typename T, int D, int NC>
void launch_d(const sim::Problem& p, const Tensors& t, Workspace& ws, cudaStream_t s) {
    // the other exponentials and the deeper ring run with the default schedule (checked by
    // exp_mode and deep_ring): overlapped at d = 128, plain at d = 64
    constexpr bool OV = D == 128;
    const int ex = exp_mode(D);
    if constexpr (D == 128)
        if (key_block_cols(p) == 176) {  // the default kernel on 176-key blocks (static order, turns)
            if (tail_split(p))
                if (const sim::tail::Plan tp = tail_plan_of(p); sim::tail::worth(tp))
                    return launch<T, 128, false, true, 2, 2, EXP_FTZ, true, true, 176, true>(p, t, ws, s, false, tp);
            return launch<T, 128, false, true, 2, 2, EXP_FTZ, true, true, 176>(p, t, ws, s, false);
        }
    if (ex == EXP_IEEE)
        launch_mask<T, D, OV, NC, 2, EXP_IEEE>(p, t, ws, s);
    else if (ex == EXP_POLY)
        launch_mask<T, D, OV, NC, 2, EXP_POLY>(p, t, ws, s);
    else if (deep_ring(D))
        launch_mask<T, D, OV, NC, fwd_deep_stages<D>()>(p, t, ws, s);
    else if (const GridMode gm = grid_mode(p);
             gm != GRID_TILES) {  // the default schedule (overlapped at d = 128, plain at 64)
        if constexpr (D == 128)
            if (pingpong(p)) return launch_mask<T, D, OV, NC, 2, EXP_FTZ, true, true>(p, t, ws, s);  // static order
        launch_mask<T, D, OV, NC, 2, EXP_FTZ, true>(p, t, ws, s, gm == GRID_PERSISTENT);
    } else if (pingpong(p))  // the default schedule, tiles grid
        launch_mask<T, D, OV, NC, 2, EXP_FTZ, false, true>(p, t, ws, s);
    else if (overlapped(D))
        launch_mask<T, D, true, NC>(p, t, ws, s);
    else
        launch_mask<T, D, false, NC>(p, t, ws, s);
}

}  // namespace

// Called before every launch: the compute capability from two cheap attribute queries; the device
// properties (its name) only for the message when the answer is no.
bool flash2h_available(std::string* why) {
    int dev = 0, major = 0, minor = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) != cudaSuccess) {
        if (why) *why = "no CUDA device";
        return false;
    }
    if (major != 9 || minor != 0) {
        if (why) {
            cudaDeviceProp prop{};
            const std::string name = cudaGetDeviceProperties(&prop, dev) == cudaSuccess ? prop.name : "this GPU";
            *why = "flash2h needs a Hopper GPU (compute capability 9.0: wgmma and TMA); this is " + name + " (" +
                   std::to_string(major) + "." + std::to_string(minor) + "); use flash2";
        }
        return false;
    }
    return true;
}

TileConfig flash2h_tiles(const sim::Problem& p) {
    if (p.head_dim != 64 && p.head_dim != 128)
        throw std::runtime_error("flash2h: head_dim must be 64 or 128 (got " + std::to_string(p.head_dim) + ")");
    TileConfig c;
    c.variant = "flash2h";
    c.algo = "flash2";  // the same algorithm as flash2, on other instructions
    c.loop_order = "q_outer";
    const bool deep = deep_ring(p.head_dim);
    c.stages = deep ? (p.head_dim == 64 ? fwd_deep_stages<64>() : fwd_deep_stages<128>()) : 2;
    const int nc = consumer_groups(p.head_dim);
    c.block_rows = 64 * nc;
    const int bc = key_block_cols(p);
    c.block_cols = bc;
    c.threads = 128 * (nc + 1);
    const bool ov = overlapped(p.head_dim);
    std::string layout = std::to_string(nc) + " consumer warpgroups x 64 query rows (wgmma), 1 TMA producer warpgroup";
    if (ov) layout += "; S_{j+1} overlaps P_j V_j";
    if (pingpong(p)) layout += "; warpgroups take turns to issue their products (ping-pong)";
    const GridMode gm = grid_mode(p);
    c.grid = gm == GRID_STATIC       ? sim::KernelGrid::static_units
             : gm == GRID_PERSISTENT ? sim::KernelGrid::counter
                                     : sim::KernelGrid::tiles;
    if (gm != GRID_TILES)
        layout +=
            std::string("; persistent grid (a block an SM; ") +
            (p.causal ? "units of a head's p-th heaviest and p-th lightest query blocks, or two heads' middle blocks"
                      : "units of one query block") +
            (gm == GRID_STATIC ? ", in turn)" : ", the next from a counter)");
    if (bc == 176 && tail_split(p)) {
        const sim::tail::Plan tp = tail_plan_of(p);
        c.tail_split = sim::tail::worth(tp);
        layout += c.tail_split ? "; the last round's " + std::to_string(tp.L) + " units split along the keys over " +
                                     std::to_string(tp.G) + " blocks, each merged by its last piece"
                               : std::string("; the last round whole (too short to split along the keys)");
    }
    static std::mutex mu;
    static std::set<std::string> layouts;  // TileConfig holds C strings: every layout text, kept for good
    {
        const std::lock_guard<std::mutex> lock(mu);
        c.layout = layouts.insert(layout).first->c_str();
    }
    if (deep)
        c.smem_bytes = p.head_dim == 128 ? Sizes<128, 2, fwd_deep_stages<128>()>::SMEM
                       : nc == 3         ? Sizes<64, 3, fwd_deep_stages<64>()>::SMEM
                                         : Sizes<64, 2, fwd_deep_stages<64>()>::SMEM;
    else if (bc == 176)
        c.smem_bytes = Sizes<128, 2, 2, 176>::SMEM;
    else
        c.smem_bytes = p.head_dim == 128 ? Sizes<128, 2>::SMEM : nc == 3 ? Sizes<64, 3>::SMEM : Sizes<64, 2>::SMEM;
    const int d = static_cast<int>(p.head_dim);
    const int BR = c.block_rows;
    // registers hold O_i (B_r, d) and S_ij / P_ij (B_r, B_c) in fp32, and m_i, l_i
    c.sram_bytes = c.smem_bytes + (BR * d + BR * bc + 2 * BR) * 4;
    return c;
}

int64_t flash2h_fwd_workspace_bytes(const sim::Problem& p) {
    if (p.head_dim == 128 && key_block_cols(p) == 176 && tail_split(p)) {  // the split's counts and partials
        const sim::tail::Plan tp = tail_plan_of(p);
        return sim::tail::worth(tp) ? tail_bytes(tp).total() : 0;
    }
    if (grid_mode(p) != GRID_PERSISTENT) return 0;
    const int64_t BR = flash2h_tiles(p).block_rows;  // the unit counter, where there are two units or more
    const int T_r = static_cast<int>((p.seq + BR - 1) / BR);
    return persistent_units(p.causal, T_r, static_cast<int>(p.heads_total())) >= 2 ? 4 : 0;
}

void flash2h_forward(const sim::Problem& p, const Tensors& t, Workspace& ws, cudaStream_t s) {
    (void)flash2h_tiles(p);
    std::string why;
    if (!flash2h_available(&why)) throw std::runtime_error(why);
    dispatch_dtype(p.dtype, [&]<typename T>() {
        if (p.head_dim == 128)
            launch_d<T, 128, 2>(p, t, ws, s);
        else if (consumer_groups(64) == 3)
            launch_d<T, 64, 3>(p, t, ws, s);
        else
            launch_d<T, 64, 2>(p, t, ws, s);
    });
}

}  // namespace fcuda

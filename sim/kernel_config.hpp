// sim/kernel_config.hpp — the bridge from a CUDA kernel's configuration to the simulator's.
//
//   cuda/'s *_tiles(problem) ──► KernelTiles (data: tiles, grid kind, dQ schedule, ...)
//   KernelRun{problem, pass, kernels, tiles} ──► sim_config(run)      ──► sim::Config for sim::simulate
//                                           ──► run_profile(run, part) ──► KernelProfile for predict_kernel
//
// The bench (a fresh measurement), `bench --resimulate` (a recorded row) and the app's live run all
// build a KernelRun and call these two functions, so the three cannot disagree on how a kernel is
// walked. Rows recorded before the structured fields existed said some of them in prose
// (tiles.layout); legacy_tiles_fields is the one place that still reads that prose.
#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "sim/enum_names.hpp"
#include "sim/kernel_model.hpp"
#include "sim/problem.hpp"
#include "sim/simulate.hpp"

namespace sim {

// How a kernel's thread blocks meet its tiles: one block a tile in launch order ("tiles"); a
// persistent grid, one block an SM, taking units in turn ("static"); or the same grid taking the
// next unit from a counter ("counter"). The walk takes "counter" as the static order: both start the
// units in their order, only the slot that takes one differs.
enum class KernelGrid { tiles, static_units, counter };
template <>
struct EnumNames<KernelGrid> {
    static constexpr std::array<EnumName<KernelGrid>, 3> table{
        {{KernelGrid::tiles, "tiles"}, {KernelGrid::static_units, "static"}, {KernelGrid::counter, "counter"}}};
};

// How a backward adds its dQ_i parts: none (a forward), float atomics in any order, atomics in
// key-block order (deterministic: a block waits for the one before it), or bulk reductions from
// shared-memory tiles (cp.reduce.async.bulk).
enum class DqSchedule { none, atomics, block_order, bulk_reduction };
template <>
struct EnumNames<DqSchedule> {
    static constexpr std::array<EnumName<DqSchedule>, 4> table{{{DqSchedule::none, "none"},
                                                                {DqSchedule::atomics, "atomics"},
                                                                {DqSchedule::block_order, "block_order"},
                                                                {DqSchedule::bulk_reduction, "bulk_reduction"}}};
};

// A kernel's tiling and schedule, as data (cuda/api.hpp calls it fcuda::TileConfig). block_rows =
// B_r, block_cols = B_c, loop_order "kv_outer" (Algorithm 1) or "q_outer" (FA2), stages = K/V
// buffers in flight, smem_bytes = shared memory a thread block allocates, sram_bytes = all on-chip
// bytes its tiles occupy (shared memory plus register accumulators): the budget M the simulator is
// given so that it holds the same tiles.
struct KernelTiles {
    std::string variant;
    std::string algo;  // the simulator's algorithm the kernel runs: standard, flash1 or flash2
    int64_t block_rows = 0, block_cols = 0;
    std::string loop_order;
    int stages = 1;
    int64_t sram_bytes = 0, smem_bytes = 0;
    int threads = 0;     // per thread block
    std::string layout;  // how warps split the tile, in words: for people; nothing parses it
    int dq_copies = 1;   // backward: fp32 dQ accumulators (one a warpgroup's keys, summed after)
    KernelGrid grid = KernelGrid::tiles;
    DqSchedule dq = DqSchedule::none;
    // the static order under the causal mask at odd T_r: each head's middle block a unit alone
    // (flash2h's forward until 2026-12-05) rather than two heads' middle blocks as one unit
    bool lone_middles = false;
    bool launch_per_kv_block = false;  // flash1: one launch per K/V block j
    // flash2h forward, static order, no mask (FLASHSIM_FLASH2H_TAIL=split): the last round's units
    // spread along the keys over every block (sim/tail_plan.hpp), each merged by its last piece
    bool tail_split = false;
};

// What of a KernelTiles an old row's prose said: the grid (a persistent grid "in turn" or "the next
// from a counter"), the dQ schedule ("dQ in block order", "bulk reduction") and lone middles (a static
// causal grid whose layout does not name "two heads' middle blocks"). Only for rows without the fields.
struct LegacyTilesFields {
    KernelGrid grid = KernelGrid::tiles;
    DqSchedule dq = DqSchedule::none;
    bool lone_middles = false;
};
LegacyTilesFields legacy_tiles_fields(std::string_view layout, bool backward);

// One measured configuration: the problem, the pass (both = a training step), the forward's and the
// backward's kernels (a step may pair two), and the tiles of the pass's kernel (a step: its
// backward's) and of a step's forward.
struct KernelRun {
    Problem problem;
    Pass pass = Pass::forward;
    std::string fwd_kernel, bwd_kernel;
    KernelTiles tiles;
    std::optional<KernelTiles> tiles_forward;
};

// A run of `variant` ("A+B": forward A, backward B, for a step) with the kernel's tiles.
KernelRun kernel_run(const Problem& p, Pass pass, const std::string& variant, const KernelTiles& tiles,
                     const std::optional<KernelTiles>& tiles_forward = std::nullopt);

// The simulator's configuration for the run: the kernel's algorithm, tiles, SRAM, grid order, dQ
// schedule, launches and blocks an SM, numerics off, no timing, the CLI's largest L2 budget. Throws
// sim::Error when the tiles name no simulator algorithm, or a step's two kernels run different ones.
Config sim_config(const KernelRun& run);

// The kernel model's profile of one part of the run (Pass::forward or Pass::backward) as the kernel
// ran it: the kernel's profile at the run's head dim and mask, with the recorded tiles, grid order,
// lone middles and dQ schedule. Throws sim::Error for a kernel the model does not know.
KernelProfile run_profile(const KernelRun& run, Pass part);

// The machine preset for a device name as the CUDA runtime reports it ("NVIDIA H100 80GB HBM3" ->
// "H100-SXM", "NVIDIA H200" -> "H200"); nullopt for a card without a preset.
std::optional<std::string> preset_for_device(std::string_view device_name);

}  // namespace sim

// sim/knobs.cpp — the table of FLASHSIM_* variables (see the header). One row a variable.
#include "sim/knobs.hpp"

#include <cstdlib>
#include <stdexcept>

namespace sim {

const std::vector<Knob>& knobs() {
    static const std::vector<Knob> table{
        // ---- flash2h forward (cuda/flash2h.cu, cuda/hopper.cuh) ----
        {"FLASHSIM_FLASH2H", "overlapped | plain", "overlapped at d = 128, plain at d = 64", "",
         "whether S_{j+1} = Q K_{j+1}^T is issued under the softmax of block j: the overlap that pays at d = 128",
         "cuda/flash2h.cu"},
        {"FLASHSIM_FLASH2H_STAGES", "2 | deep", "2", "deep: the default FLASHSIM_FLASH2H",
         "how deep the K/V ring must be for the TMA copies to hide behind the products", "cuda/flash2h.cu"},
        {"FLASHSIM_FLASH2H_EXP", "ftz | ieee | poly", "ftz",
         "ieee, poly: the default FLASHSIM_FLASH2H and FLASHSIM_FLASH2H_STAGES",
         "what the softmax's exponentials cost: ex2.approx.ftz, exp2f, or a polynomial on the FMA pipes",
         "cuda/flash2h.cu"},
        {"FLASHSIM_FLASH2H_WG", "2 | 3", "3 at d = 64 (d = 128 always 2)", "3: d = 64 only",
         "B_r = 64 a consumer warpgroup: three warpgroups (B_r = 192) against two at d = 64", "cuda/flash2h.cu"},
        {"FLASHSIM_FLASH2H_GRID", "static | persistent | tiles",
         "static order unmasked, and causal while T_r <= 95 (d = 128) or 22 (d = 64, which takes the counter "
         "grid); tiles otherwise",
         "static, persistent: the default schedule, ring, exponentials and heads order",
         "a persistent grid (one block an SM, units in turn or from a counter) against one block a tile",
         "cuda/flash2h.cu"},
        {"FLASHSIM_FLASH2H_PINGPONG", "on | off", "on at d = 128, off at d = 64",
         "on: the default kernel, on the tiles grid or (d = 128) the static order",
         "warpgroups taking turns to issue their products, so one's softmax runs under the other's", "cuda/flash2h.cu"},
        {"FLASHSIM_FLASH2H_BC", "128 | 176", "176 at d = 128 unmasked with the default kernel, else 128",
         "176: d = 128, no mask, the default kernel",
         "a wider key block (FlashAttention-3's 176) against register pressure", "cuda/flash2h.cu"},
        {"FLASHSIM_FLASH2H_TAIL", "whole | split", "whole",
         "split: d = 128, no mask, the default kernel (176-key blocks)",
         "what the last, part-empty round of the static order costs: its units' key blocks spread over every block, "
         "each unit's pieces merged by the last",
         "cuda/flash2h.cu"},
        {"FLASHSIM_FLASH2H_ORDER", "heads | heavy", "heads", "heavy: causal grids only; not with the persistent grids",
         "causal blocks launched heaviest first, to shorten the last wave", "cuda/hopper.cuh"},
        {"FLASHSIM_FLASH2H_FP8_PINGPONG", "on | off", "off", "--dtype fp8 (flash2h's e4m3 forward)",
         "in FP8 the exponentials cost nearly what the products do: turns between the two consumer warpgroups so "
         "that one's softmax runs under the other's products",
         "cuda/flash2h_fp8.cu"},
        {"FLASHSIM_FLASH2H_FP8_STAGES", "2 | 4", "2", "--dtype fp8 (flash2h's e4m3 forward)",
         "a deeper K/V ring where one-byte tiles leave shared memory to spare (16 KiB a tile)", "cuda/flash2h_fp8.cu"},
        {"FLASHSIM_FLASH2H_FP8_OVERLAP", "on | off", "off", "--dtype fp8; on: FLASHSIM_FLASH2H_FP8_PINGPONG off",
         "S_{j+1} issued before block j's softmax into a second accumulator, so the exponentials run under a "
         "whole block's products instead of half of one",
         "cuda/flash2h_fp8.cu"},
        {"FLASHSIM_FLASH2H_FP8_EXP", "mufu | poly", "mufu",
         "--dtype fp8; poly: the default FP8 schedule (no turns, no deeper overlap, 2 stages)",
         "where the exponential unit binds: a quarter of the softmax's exponentials by a polynomial on the FMA pipes",
         "cuda/flash2h_fp8.cu"},
        {"FLASHSIM_FLASH2H_FP8_SOFTMAX", "chain | tree", "chain",
         "--dtype fp8; tree: the default FP8 schedule (no turns, no deeper overlap, 2 stages)",
         "what latency costs when no unit is full: each row's maximum and sum as four partial ones, chains of 4 and 8 "
         "instead of 16 and 32",
         "cuda/flash2h_fp8.cu"},
        // ---- flash2h backward (cuda/flash2h_bwd.cu) ----
        {"FLASHSIM_FLASH2H_BWD", "deterministic", "dQ added in any order", "",
         "what bit-identical runs cost: dQ added in key-block order", "cuda/flash2h_bwd.cu"},
        {"FLASHSIM_FLASH2H_BWD_SCHEDULE", "plain | pipelined | bulk | bulk-pipelined | bulk-keys | bulk-sum",
         "bulk-sum at d = 64, bulk-pipelined at d = 128", "bulk-sum: d = 64 with the writers",
         "how dQ reaches HBM: float2 atomics, or bulk reductions from shared-memory tiles", "cuda/flash2h_bwd.cu"},
        {"FLASHSIM_FLASH2H_BWD_STAGES", "2 | deep", "deep at d = 64 (bulk-keys, bulk-sum), 2 at d = 128",
         "deep: the default schedule, not deterministic", "a deeper Q/dO ring in the backward", "cuda/flash2h_bwd.cu"},
        {"FLASHSIM_FLASH2H_BWD_FLUSH", "consumers | writers", "writers with the bulk schedules",
         "writers: a bulk schedule, not deterministic", "dQ tiles handed to producer warps instead of the consumers",
         "cuda/flash2h_bwd.cu"},
        {"FLASHSIM_FLASH2H_BWD_BR", "64 | 128", "128 with bulk-sum, else 64", "128: bulk-sum (d = 64), 2 stages",
         "query rows a backward step", "cuda/flash2h_bwd.cu"},
        {"FLASHSIM_FLASH2H_BWD_POST", "staged | plain", "staged", "",
         "the fp32 dQ accumulator converted through a shared tile (whole rows) or by each thread's own stores",
         "cuda/flash2h_bwd.cu"},
        // ---- flash2 and standard (cuda/flash2.cu, flash2_bwd.cu, standard.cu) ----
        {"FLASHSIM_FLASH2_FWD", "default | 16rows | bc32", "default (2 strips of 16 rows a warp)", "bc32: d = 128",
         "how the warps split a query block on mma.sync", "cuda/flash2.cu"},
        {"FLASHSIM_FLASH2_FWD_D64", "default | 16rows", "FLASHSIM_FLASH2_FWD", "", "FLASHSIM_FLASH2_FWD at d = 64 only",
         "cuda/flash2.cu"},
        {"FLASHSIM_FLASH2_FWD_D128", "default | 16rows | bc32", "FLASHSIM_FLASH2_FWD", "",
         "FLASHSIM_FLASH2_FWD at d = 128 only", "cuda/flash2.cu"},
        {"FLASHSIM_FLASH2_BWD_BC", "64 | 128", "128", "", "keys a block in flash2's backward", "cuda/flash2_bwd.cu"},
        {"FLASHSIM_FLASH2_BWD_WALK", "in-step | staggered", "in-step",
         "staggered: without a mask (a causal walk starts at the diagonal already)",
         "where each key block of flash2's backward starts its walk over the query blocks: all at the first, or "
         "where a causal walk would start, wrapping",
         "cuda/flash2_bwd.cu"},
        {"FLASHSIM_STANDARD_SOFTMAX", "vec | rows", "vec", "",
         "standard's softmax in one DRAM pass or in two passes a row", "cuda/standard.cu"},
        // ---- decode (cuda/decode.cu) ----
        {"FLASHSIM_DECODE_STAGE_KEYS", "64 | 128", "128 at d = 64, 64 at d = 128", "128: d = 64 only",
         "keys a stage of the decode kernel's K/V ring", "cuda/decode.cu"},
        {"FLASHSIM_DECODE_PREFETCH", "0 | 128 | 256", "0 (no hint)", "", "an L2 prefetch hint on the K/V copies",
         "cuda/decode.cu"},
        {"FLASHSIM_DECODE_LOAD", "cp.async | tma", "tma on sm_90 without a prefetch hint, else cp.async",
         "tma: sm_90 or later", "how K/V tiles reach shared memory", "cuda/decode.cu"},
        {"FLASHSIM_DECODE_MERGE", "fused | separate | cluster", "fused",
         "cluster: sm_90 with the TMA loads, <= 16 splits",
         "who merges the splits: the last block, a second kernel, or a cluster through distributed shared memory",
         "cuda/decode.cu"},
        {"FLASHSIM_DECODE_CLUSTER_RING", "96 | 192", "192", "with FLASHSIM_DECODE_MERGE=cluster",
         "the K/V ring (KiB) a block of the cluster merge holds: one block an SM or two", "cuda/decode.cu"},
        // ---- the harness and the ring ----
        {"FLASHSIM_L2_FLUSH", "write | read", "write for the training passes, read for decode", "",
         "how L2 is emptied between timed calls, and what the leftover dirty lines cost", "cuda/harness.cu"},
        {"FLASHSIM_NCCL_LIB", "a path to libnccl.so", "libnccl.so.2 from the loader's path", "",
         "which NCCL the ring over GPUs loads at run time", "cuda/ring.cu"},
        // ---- the command, the app, the lessons ----
        {"FLASHSIM_GIT_COMMIT", "a commit id", "unknown", "", "the commit a results file records",
         "cli/bench_common.cpp"},
        {"FLASHSIM_EXACT_LIMIT", "a number of elements", "the app's own limit", "",
         "how large a problem the app's exact (float64) view computes", "viz/exact_view.cpp"},
        {"FLASHSIM_LESSONS", "a folder", "the lessons beside the program", "", "where the lessons are read from",
         "lessons/lib/directory.cpp"},
        {"FLASHSIM_MEASURED", "a results file", "the recorded file the lesson names", "",
         "which measured results the lessons quote", "lessons/lib/context.cpp"},
        {"FLASHSIM_RESULTS", "a folder", "results/ (in the working folder, else the source tree's)", "",
         "where the recorded measurements are read from (results/<card>/<kind>.json)", "report/results.cpp"},
    };
    return table;
}

const Knob* find_knob(std::string_view name) {
    for (const Knob& k : knobs())
        if (k.name == name) return &k;
    return nullptr;
}

const char* knob(std::string_view name) {
    const Knob* k = find_knob(name);
    if (!k) throw std::logic_error("FLASHSIM variable '" + std::string(name) + "' is not in sim/knobs.cpp's table");
    return std::getenv(std::string(k->name).c_str());
}

std::map<std::string, std::string> knob_settings() {
    std::map<std::string, std::string> set;
    for (const Knob& k : knobs())
        if (const char* v = std::getenv(std::string(k.name).c_str()); v && *v) set[std::string(k.name)] = v;
    return set;
}

std::string knobs_markdown() {
    std::string s = "| variable | values | default | needs | what it teaches | read by |\n|---|---|---|---|---|---|\n";
    auto cell = [](std::string_view v) {  // a '|' in a cell is escaped, or it would end the cell
        std::string c;
        for (const char ch : v) c += ch == '|' ? std::string("\\|") : std::string(1, ch);
        return c.empty() ? std::string("-") : c;
    };
    for (const Knob& k : knobs())
        s += "| `" + std::string(k.name) + "` | " + cell(k.values) + " | " + cell(k.fallback) + " | " +
             cell(k.constraints) + " | " + cell(k.teaches) + " | " + cell(k.reader) + " |\n";
    return s;
}

std::string knobs_text() {
    std::string s;
    for (const Knob& k : knobs()) {
        s += std::string(k.name) + "=" + std::string(k.values) + "\n";
        s += "    default: " + std::string(k.fallback) + "\n";
        if (!k.constraints.empty()) s += "    needs:   " + std::string(k.constraints) + "\n";
        s += "    teaches: " + std::string(k.teaches) + "\n";
        s += "    read by: " + std::string(k.reader) + "\n";
    }
    return s;
}

}  // namespace sim

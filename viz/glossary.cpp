// viz/glossary.cpp — the app's teaching notes for "(?)" markers, one entry per term, in our words.
#include "viz/glossary.hpp"

#include <array>
#include <utility>

namespace viz {

namespace {
constexpr std::array<std::pair<std::string_view, std::string_view>, 39> kTerms = {{
    {"HBM",
     "High-bandwidth memory: the GPU's main memory (tens of GB). Everything starts and ends here. It is "
     "fast by DRAM standards but far slower than on-chip SRAM, so every byte moved to or from it costs time."},
    {"SRAM",
     "On-chip memory next to the arithmetic units (shared memory and registers). Very fast, but tiny: "
     "one thread block gets a few hundred KiB at most. Tiles must fit here while they are used."},
    {"L2",
     "A cache between HBM and the SMs (tens of MiB). Reads that hit in L2 do not reach HBM. The counts in "
     "the views are HBM <-> SRAM as the tile loops move them; the simulator's L2 model (an LRU cache of the "
     "preset's size, thread blocks replayed in launch order) says how many of those bytes L2 would serve."},
    {"predicted time",
     "The simulator's timing model for the whole problem on the preset GPU: each step's copies "
     "against its arithmetic, blocks scheduled over the SMs, copies overlapped with the previous "
     "step's math (docs/simulator.md). Compare with the measured view."},
    {"tile",
     "A block of rows (and columns) of a tensor, small enough to sit in SRAM. Tiled algorithms move "
     "tiles, never whole matrices."},
    {"B_r",
     "Rows per query tile (Q_i, O_i): how many queries are processed together. The paper picks "
     "B_r = min(ceil(M / 4d), d)."},
    {"B_c",
     "Rows per key/value tile (K_j, V_j): how many keys stream past the queries at once. The paper "
     "picks B_c = ceil(M / 4d), M being the SRAM size in elements."},
    {"T_r", "Number of query tiles: ceil(N / B_r)."},
    {"T_c", "Number of key/value tiles: ceil(N / B_c)."},
    {"M", "The SRAM budget one thread block may use, in bytes. Larger M: larger tiles, fewer passes over K and V."},
    {"N", "Sequence length: the number of tokens. The score matrix S has N x N entries."},
    {"d", "Head dimension: the length of each query, key and value vector."},
    {"S", "S = scale * Q K^T: one score per (query, key) pair, an N x N matrix."},
    {"P", "P = softmax(S), row by row: the attention weights, N x N like S."},
    {"O", "O = P V: the output, N x d, the same size as Q."},
    {"standard",
     "Standard attention: computes S, writes it to HBM, reads it back for the softmax, writes P, "
     "reads P for O = PV. Its HBM traffic grows like N^2."},
    {"flash1",
     "FlashAttention as in the paper's Algorithm 1: the outer loop runs over K/V tiles, the inner over Q "
     "tiles; O, l and m live in HBM and are read and written back on every inner step."},
    {"flash2",
     "FlashAttention-2's loop order: each query tile Q_i stays in SRAM while all K_j, V_j stream past; "
     "the running max, sum and output stay on chip and O is written once."},
    {"online softmax",
     "Softmax computed block by block: keep a running max m and a running sum l; when a block "
     "brings a larger max, multiply what was carried by e^(m_old - m_new). The result equals "
     "the plain softmax in exact arithmetic."},
    {"rescale",
     "The correction e^(m_old - m_new) applied to the carried sum and the output accumulator when the "
     "running max grows. It is 1 when the max does not change."},
    {"running max",
     "m: the largest score of the row seen so far. Exponentials are taken relative to it so they "
     "never overflow."},
    {"running sum", "l: the sum of e^(s - m) over the scores seen so far, kept relative to the current max m."},
    {"LSE",
     "Log-sum-exp, m + log l per row: one number per query that FlashAttention-2 stores so the backward "
     "pass can rebuild P without storing it."},
    {"accumulator",
     "The unnormalised output carried across blocks: sum of e^(s - m) times the values. Divided by "
     "l once at the end."},
    {"step",
     "One trip through the algorithm's inner loop (one pair of tiles). The slider and arrow keys move "
     "one step at a time."},
    {"phase", "Standard attention runs three passes: S = QK^T, then P = softmax(S), then O = PV."},
    {"FLOPs",
     "Floating-point operations: 2 per multiply-add in the matrix products, plus exponentials, maxima "
     "and rescaling. Flash does about the same arithmetic as standard; it moves far fewer bytes."},
    {"ulp",
     "Unit in the last place: the gap between adjacent floating-point numbers. 0 ulp means bit-identical; "
     "1 ulp is the smallest possible difference."},
    {"max abs", "The largest absolute difference between two results, element by element."},
    {"clock",
     "The app's modelled clock: each step lasts max(its HBM bytes / HBM bandwidth, its FLOPs / the "
     "arithmetic rate), steps one after another for one head. It is a teaching model, not a measurement. "
     "When steps are bandwidth-bound every algorithm moves bytes at the same rate on this clock: what "
     "differs is how much of the attention those bytes buy, and when each run ends."},
    {"event cap",
     "The trace keeps the first events of head 0 only (to bound memory). Totals always cover the "
     "whole run; the animation stops where the kept events end."},
    {"DRAM bytes",
     "Bytes the GPU's memory controller actually read and wrote, from hardware counters (read "
     "in process through CUPTI, or by Nsight Compute). Compare them with the simulator's count for the "
     "kernel's own tiling."},
    {"TFLOP/s",
     "Trillions of floating-point operations per second: attention's FLOPs (4 N^2 d per head forward) "
     "divided by the measured time."},
    {"causal", "Each query sees only itself and earlier keys. Tiles entirely above the diagonal are skipped."},
    {"dtype",
     "Storage type of Q, K, V, O (and S, P) in HBM: fp16 and bf16 take 2 bytes, fp32 takes 4. "
     "Arithmetic is float32 either way."},
    {"GPU preset",
     "The machine model: HBM bandwidth, SRAM per thread block, arithmetic rates, from datasheets "
     "(sim/machine.cpp lists the sources)."},
    {"vs standard",
     "Bytes this algorithm has moved so far, as a fraction of what standard attention moves over "
     "its whole run on the same problem."},
    {"SDPA",
     "PyTorch's scaled_dot_product_attention: its flash and cuDNN kernels are the yardstick the measured "
     "kernels are compared with."},
    {"resident", "Tiles that sit in SRAM during this step. Arrows: up = load from HBM, down = store to HBM."},
}};
}  // namespace

std::string_view glossary(std::string_view term) {
    for (const auto& [k, v] : kTerms)
        if (k == term) return v;
    return "(no glossary entry for this term: add it to viz/glossary.cpp)";
}

bool glossary_has(std::string_view term) {
    for (const auto& kv : kTerms)
        if (kv.first == term) return true;
    return false;
}

}  // namespace viz

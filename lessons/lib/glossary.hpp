// lessons/lib/glossary.hpp — every term the course explains, in one table: the lessons link terms
// (a step's `terms = [...]`), `flashsim lesson --term NAME` prints an entry, and the app's "(?)"
// markers show the same text. Header-only: plain data.
#pragma once
#include <array>
#include <string_view>
#include <utility>

namespace lessons {

namespace glossary_detail {
inline constexpr std::pair<std::string_view, std::string_view> kTerms[] = {
    {"HBM",
     "High-bandwidth memory: the GPU's main memory (tens of GB). Everything starts and ends here. It is "
     "fast by DRAM standards but far slower than on-chip SRAM, so every byte moved to or from it costs time."},
    {"SRAM",
     "On-chip memory next to the arithmetic units (shared memory and registers). Very fast, but tiny: "
     "one thread block gets at most a few hundred KiB of shared memory (227 KiB on Hopper). Tiles must fit "
     "here while they are used."},
    {"L2",
     "A cache between HBM and the SMs (tens of MiB). Reads that hit in L2 do not reach HBM. The counts in "
     "the views are HBM <-> SRAM as the tile loops move them; the simulator's L2 model (an LRU cache of the "
     "preset's size, thread blocks replayed in launch order) says how many of those bytes L2 would serve."},
    {"predicted time",
     "The simulator's timing model for the whole problem on the preset GPU: each step's copies "
     "against its arithmetic, blocks scheduled over the SMs, copies overlapped with the previous "
     "step's math (docs/simulator.md). Compare with the measured view. It is one rung of the timing "
     "ladder: see bytes bound, ideal machine and this kernel."},
    {"bytes bound",
     "Rung 1 of the timing ladder: the HBM bytes a pass moves divided by the HBM bandwidth. No kernel "
     "can be faster than its bytes allow; for standard attention it is close to the whole story, for "
     "flash attention far from it."},
    {"ideal machine",
     "Rung 2 of the timing ladder: bytes and FLOPs at the preset's peak rates, copies overlapped with "
     "arithmetic (matrix products on the tensor cores, exponentials on the special-function units, the "
     "rest on the fp32 lanes). A limit no real kernel reaches. The one caveat of the course's timings: "
     "the step-level model charges the exponentials with the other non-matrix work at the fp32 lanes' "
     "rate, so its exponential bars are thinner than the special-function units would make them; the "
     "kernel model (this kernel) charges them where they run."},
    {"this kernel",
     "Rung 3 of the timing ladder: the kernel model (sim/kernel_model.hpp) of one named kernel: its "
     "tiles, its instruction path (mma.sync or wgmma, MUFU for exponentials, copies), its schedule of "
     "thread blocks over the SMs, at datasheet or measured ceilings. Where a kernel is named or "
     "measured, this is the prediction to compare; the lower rungs explain the gap."},
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
    {"M",
     "The SRAM budget one thread block may use. The paper counts M in numbers (elements), as in its rule "
     "B_c = ceil(M / 4d); the simulator's --sram takes bytes and divides by the element size. Larger M: "
     "larger tiles, fewer passes over K and V."},
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
     "running max grows. It is 1 when the max does not change. The simulator counts one rescale per row "
     "per key block, whether or not the max moved, the first block's (of a still empty accumulator) "
     "included."},
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
     "and rescaling. Flash's forward does the same matrix products as standard's; its backward adds one "
     "(recomputing S: a quarter more matmul FLOPs, lesson 7). It moves far fewer bytes."},
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
    {"DRAM",
     "The memory chips of the GPU. On the GPUs in this course the DRAM is the HBM: 'DRAM bytes' from "
     "the hardware counters are HBM traffic."},
    {"ncu",
     "Nsight Compute, NVIDIA's kernel profiler: it replays a kernel and reads the hardware counters "
     "(DRAM bytes, instructions, stalls). The bench reads the same counters in process through CUPTI."},
    {"cuBLAS",
     "NVIDIA's library of dense linear algebra on the GPU (matrix products). Standard attention's "
     "products call it; it is the yardstick for a tuned GEMM."},
    {"eager PyTorch",
     "PyTorch run operation by operation as the Python code calls them, each one its own kernel "
     "reading its inputs from HBM and writing its output back: how the paper's standard attention runs."},
    {"persistent grid",
     "A launch of one thread block per SM (or a few), each looping over units of work until none are "
     "left, instead of one thread block per unit. The order of the units is then the kernel's choice "
     "(flash2h's forward runs so)."},
    {"FlashAttention-3",
     "The third FlashAttention (Shah et al., 2024), for Hopper: warp specialisation (producer warps "
     "issue TMA copies while consumer warpgroups compute) and ping-pong scheduling (two warpgroups take "
     "turns so one's softmax runs while the other's wgmma products do), plus FP8. Copy-compute "
     "overlap itself (cp.async double buffering) was already FlashAttention-2's practice."},
    {"causal mask",
     "The mask that lets query n see keys 0..n only (causal): scores above the diagonal are set to "
     "minus infinity, so their weights are 0. Tiles wholly above the diagonal need not be computed (lesson 8)."},
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
    {"bf16",
     "Brain floating point, 16 bits: float32's 8-bit exponent with only 7 bits of mantissa. It covers the "
     "same range as float32, so large scores do not overflow, but it rounds more coarsely than fp16. Two "
     "bytes a number, like fp16, and the tensor cores take it as input."},
    {"cuDNN",
     "NVIDIA's library of tuned deep-learning kernels. Its fused attention kernels are one of the back ends "
     "PyTorch's SDPA can choose; the course compares the project's kernels with them."},
    {"CUPTI",
     "The CUDA Profiling Tools Interface: NVIDIA's library through which a program reads the GPU's hardware "
     "counters (for example the bytes DRAM served) while its kernels run. Nsight Compute reads the same "
     "counters from outside the program."},
    {"NVLink",
     "NVIDIA's direct link between GPUs, several times faster than PCIe; in a server, NVSwitch chips join "
     "every GPU to every other. Spreading one attention over several GPUs sends K and V blocks over it."},
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

    {"thread block",
     "A group of threads (up to 1,024) that runs on one SM and shares that SM's shared memory. A kernel "
     "is launched as a grid of thread blocks; each flash thread block owns some query or key tiles."},
    {"SM",
     "Streaming multiprocessor: one of the GPU's independent cores, with its own shared memory, "
     "registers, tensor cores and special-function units. Thread blocks are spread over the SMs."},
    {"tensor cores",
     "Units inside each SM that multiply small matrix tiles in one instruction (fp16/bf16 inputs, fp32 "
     "sums). They give the GPU its headline FLOP rate; only matrix products can use them."},
    {"special-function units",
     "Units (MUFU) that evaluate exponentials, logarithms, reciprocals and the like: 16 results per SM per "
     "clock on recent NVIDIA GPUs, far slower than the tensor cores, so softmax's exponentials can cost as much time "
     "as the "
     "matrix products (FlashAttention-3 hides one behind the other)."},
    {"roofline",
     "A picture of a kernel's limit: time is at least bytes / bandwidth and at least FLOPs / "
     "arithmetic rate. Below the ridge point (FLOPs per byte) a kernel is memory-bound, above it "
     "compute-bound."},
    {"ridge point",
     "Peak arithmetic rate divided by memory bandwidth: how many FLOPs a kernel must do per byte it "
     "moves before arithmetic, not memory, limits it."},
    {"dO", "The gradient of the loss with respect to the output O (N x d): what the backward pass starts from."},
    {"dP", "The gradient with respect to the attention weights P: dP = dO V^T, an N x N matrix."},
    {"dS",
     "The gradient with respect to the scores S: dS = P * (dP - D) element by element, N x N; it "
     "gives dQ = dS K and dK = dS^T Q."},
    {"D",
     "D_i = the dot product of row i of dO and row i of O: one number per query row that the softmax "
     "gradient needs (dS = P * (dP - D)). It equals sum_j P_ij dP_ij, the part of dP that every weight of "
     "the row shares because the row's weights sum to 1; computing it from O and dO avoids a pass over P."},
    {"dQ",
     "The gradient with respect to Q. In the flash backward every key block adds its part to the same "
     "dQ rows, so the additions come from many thread blocks (atomics) in an order that can vary."},
    {"atomics",
     "Read-modify-write operations on memory that many threads may issue at once without losing an "
     "update. Their order is not fixed, so floating-point sums made with them can differ in the last "
     "bits from run to run."},
    {"atomic add",
     "One thread adds a number to a value in memory as a single indivisible step (read, add, write "
     "back), so that when many threads add to the same place at once none of their additions is lost. "
     "The hardware decides the order in which they land."},
    {"TMA",
     "Tensor Memory Accelerator (Hopper): a copy engine that moves a whole tile between global and shared "
     "memory on one thread's request, leaving the other threads free to compute."},
    {"warpgroup", "Four warps (128 threads) that Hopper's wgmma instruction drives together."},
    {"wgmma",
     "Hopper's warpgroup matrix-multiply instruction: 128 threads multiply tiles read straight from "
     "shared memory, asynchronously, so copies and other work can overlap it."},
    {"warp", "32 threads that execute the same instruction together; the unit the SM schedules."},
    {"flash2h",
     "The project's FA2 kernels for Hopper (H100, H200): the same loop orders as flash2, written with TMA "
     "copies and wgmma products instead of mma.sync. The forward uses the same 128-row query blocks as "
     "flash2, so it moves the same bytes; the backward, like flash2's, uses key blocks of 128 rows, so it "
     "reads Q and dO once for every 128 keys."},
    {"mma.sync",
     "A warp-level tensor-core instruction (the one the project's flash1 and flash2 kernels use, on any GPU "
     "from the A100 on): each warp multiplies small tiles whose operands it must first copy from shared "
     "memory into its own registers. Hopper still runs it, but reaches its full matrix rate only with wgmma."},
    {"footprint",
     "The bytes a pass keeps allocated in HBM at the same time (inputs, outputs, intermediates, "
     "workspace). Traffic decides how fast a layer runs; the footprint decides whether it fits at all."},
    {"decoding",
     "Generating text one token at a time: each step runs attention for the new token's query against "
     "the keys and values of every earlier token, then appends the new token's own key and value."},
    {"KV cache",
     "The keys and values of every token seen so far, kept in HBM between decoding steps so that they "
     "are not recomputed: 2 x L x d numbers per KV head for a context of L tokens."},
    {"GQA",
     "Grouped-query attention: several query heads share one key/value head, so the KV cache is that "
     "many times smaller (e.g. 32 query heads, 8 KV heads: groups of 4)."},
    {"MQA", "Multi-query attention: GQA with a single KV head shared by all query heads."},
    {"split-KV",
     "Decoding with the cache cut into splits, each processed by its own thread block (Flash-Decoding): "
     "each writes a partial output and its LSE, and a small merge combines them."},
    {"merge",
     "Combining the partial results of split-KV: with LSE = log(sum e^(LSE_s)), the output is "
     "sum_s e^(LSE_s - LSE) O_s. Exact in real arithmetic, like the online softmax's rescaling."},
    {"FP8",
     "An 8-bit floating-point storage type. The attention forward uses e4m3: 1 sign bit, 4 exponent bits, "
     "3 mantissa bits (unit roundoff 2^-4, bf16's is 2^-8), largest value 448, no infinities. Hopper's "
     "tensor cores multiply it at twice bf16's rate; values are stored divided by a scale."},
    {"scale",
     "FP8's range is narrow (448 down to 2^-9), so a group of values is stored as x / s with s = amax / 448, "
     "the group's largest magnitude mapped to 448; products are multiplied by the scales afterwards. One "
     "scale a tensor, or one a tile (per-block), which one large tile cannot spoil for the others."},
    {"incoherent processing",
     "Multiplying Q and K along d by the same random orthogonal matrix (a Hadamard matrix with random "
     "signs) before quantizing them: Q K^T is unchanged in exact arithmetic, and a channel of large "
     "values is spread over all d channels, so the scales no longer have to cover it."},
};
}  // namespace glossary_detail

// The jargon whose first use in the course must follow a step that links it (`terms = [...]`);
// tests/lessons/test_course.cpp checks it over every lesson in order.
inline constexpr std::string_view kCheckedTerms[] = {
    "HBM",
    "SRAM",
    "L2",
    "SM",
    "thread block",
    "tensor cores",
    "special-function units",
    "B_r",
    "B_c",
    "T_r",
    "T_c",
    "LSE",
    "online softmax",
    "ulp",
    "dO",
    "dP",
    "dS",
    "D",
    "dQ",
    "atomics",
    "atomic add",
    "TMA",
    "wgmma",
    "warpgroup",
    "roofline",
    "ridge point",
    "footprint",
    "KV cache",
    "GQA",
    "MQA",
    "split-KV",
    "warp",
    "flash2h",
    "mma.sync",
    "SDPA",
    "bf16",
    "cuDNN",
    "CUPTI",
    "NVLink",
    "FlashAttention-3",
    "causal mask",
    "ncu",
    "DRAM",
    "persistent grid",
    "cuBLAS",
    "eager PyTorch",
    "bytes bound",
    "ideal machine",
};
inline constexpr auto& checked_terms() { return kCheckedTerms; }

// Every entry, in table order.
inline constexpr auto& glossary_entries() { return glossary_detail::kTerms; }

// The explanation of a term; a visible placeholder naming the missing entry when there is none.
inline std::string_view glossary(std::string_view term) {
    for (const auto& [k, v] : glossary_detail::kTerms)
        if (k == term) return v;
    return "(no glossary entry for this term: add it to lessons/lib/glossary.hpp)";
}

inline bool glossary_has(std::string_view term) {
    for (const auto& kv : glossary_detail::kTerms)
        if (kv.first == term) return true;
    return false;
}

}  // namespace lessons

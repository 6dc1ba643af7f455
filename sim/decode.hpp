// sim/decode.hpp — decoding: q_len new tokens attend to a KV cache of L keys, with grouped-query
// attention (H_q query heads share H_kv key/value heads; H_kv = 1 is multi-query attention) and
// split-KV ("Flash-Decoding"):
//
//   for each (batch b, KV head h, split s)            one thread block; all H_q/H_kv query heads
//       load Q rows of the group once                   of the group ride along, so each K/V tile
//       for each K/V tile of the split: load K_j, V_j   is read once per KV head, not per query head
//           online softmax (m, l, O) per query row
//       store the partial O_s (fp32) and LSE_s = m_s + log l_s
//   merge, one block per (b, query head):  LSE = log sum_s exp(LSE_s),  O = sum_s exp(LSE_s - LSE) O_s
//
// With one split the first kernel writes O itself and there is no merge. The merge may also run
// inside the split kernel, in the last block of each (b, KV head) to finish: the same bytes, one
// launch (DecodeConfig::fused_merge_max_splits; the GPU kernel does so). The cache is cut into
// splits so that B·H_kv·splits blocks fill the SMs (each K/V head alone is one block: at B = 1 and
// H_kv = 8 that is 8 blocks on 132 SMs, and HBM cannot be kept busy by 8). Splits are kept no shorter
// than a minimum number of tiles, so the merge stays small next to the cache.
// Query row i of the q_len new tokens sees keys 0 .. L - q_len + i (the new tokens are the last
// q_len entries of the cache).
//
// Bytes are counted by walking these loops (tests check them against closed forms); time is
// bytes / HBM bandwidth (scaled down when the blocks cannot fill the SMs) + the merge + launches.
#pragma once
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/machine.hpp"
#include "sim/problem.hpp"
#include "sim/tensor.hpp"

namespace sim {

struct DecodeProblem {
    int64_t batch = 1;       // B
    int64_t q_heads = 32;    // H_q
    int64_t kv_heads = 8;    // H_kv; must divide H_q
    int64_t q_len = 1;       // new tokens per sequence
    int64_t kv_len = 0;      // L, keys in the cache (including the q_len new ones)
    int64_t head_dim = 128;  // d
    DType dtype = DType::bf16;
    double scale = 0;  // 0: 1/sqrt(d)
    uint64_t seed = 42;

    int64_t group() const { return q_heads / kv_heads; }
    double softmax_scale() const;
    // Throws sim::Error naming the bad field.
    void validate() const;
    // The (B, H, N, d) problems whose generated tensors are this decode's inputs: Q is
    // (B, H_q, q_len, d), K and V are (B, H_kv, L, d) (sim::generate_input on these).
    Problem q_shape() const;
    Problem kv_shape() const;
};

struct DecodeConfig {
    int64_t splits = 0;               // 0: choose (choose_splits)
    int64_t tile_keys = 64;           // keys per K/V tile (the GPU kernel's)
    int64_t min_tiles_per_split = 4;  // splits no shorter than this many tiles
    int blocks_per_sm = 2;            // blocks per SM the split count aims to fill
    double launch_s = 3e-6;           // a kernel launch and its drain on an idle GPU (an assumption)
    // With 1 < splits <= this, the split kernel's last block of each (b, KV head) merges (an atomic
    // counter tells it it is last): the same bytes, one launch fewer. 0: the merge is its own kernel.
    int64_t fused_merge_max_splits = 0;
    bool measured_bandwidth = true;  // use the preset's measured copy bandwidth when it has one
    bool numerics = false;           // compute the output by split and merge (float32, as the kernel)
};

struct DecodeSplit {
    int64_t splits = 1, tiles = 0, tiles_per_split = 0, keys_per_split = 0;
    int64_t blocks = 0;         // B * H_kv * splits
    int64_t target_blocks = 0;  // SMs x blocks_per_sm
    std::string why;
};
// Throws sim::Error on a bad problem or config.
DecodeSplit choose_splits(const DecodeProblem& p, const Machine& m, const DecodeConfig& c);

struct DecodeResult {
    DecodeProblem problem;
    DecodeSplit split;
    // Bytes, counted by walking the loops.
    int64_t kv_read_bytes = 0;            // K and V, once per KV head
    int64_t q_read_bytes = 0;             // Q, once per block
    int64_t partial_write_bytes = 0;      // O_s (fp32) and LSE_s per split (0 with one split)
    int64_t merge_read_bytes = 0;         // the merge reads every partial back
    int64_t o_write_bytes = 0;            // O in the storage type (by the merge, or by the only split)
    int64_t kv_bytes_per_query_head = 0;  // what K and V would cost read once per query head instead
    int64_t total_bytes() const {
        return kv_read_bytes + q_read_bytes + partial_write_bytes + merge_read_bytes + o_write_bytes;
    }
    // Time.
    double bandwidth = 0;  // bytes/s used
    std::string bandwidth_source;
    double fill = 1;           // min(1, blocks / target_blocks): the fraction of HBM bandwidth the blocks reach
    bool merge_fused = false;  // the merge runs in the split kernel's last blocks (one launch)
    double split_kernel_s = 0, merge_s = 0, launch_s = 0, total_s = 0;
    double kv_bandwidth() const { return total_s > 0 ? double(kv_read_bytes) / total_s : 0; }  // KV bytes / time
    // With numerics: O (B, H_q, q_len, d) rounded to the storage type, and LSE (B, H_q, q_len).
    std::optional<TensorF> output;
    std::vector<double> lse;
};
DecodeResult simulate_decode(const DecodeProblem& p, const Machine& m, const DecodeConfig& c);

struct DecodeInputs {
    TensorF Q, K, V;  // Q (B, H_q, q_len, d); K, V (B, H_kv, L, d); rounded to the dtype
};
DecodeInputs generate_decode_inputs(const DecodeProblem& p);

// float64 reference: O (B, H_q, q_len, d) and, if lse is given, the natural-log LSE per row.
TensorD decode_reference(const DecodeProblem& p, const DecodeInputs& in, std::vector<double>* lse = nullptr);
// The split-and-merge computation in float32 with `splits` splits of whole tiles (as the kernel).
TensorF decode_split_merge(const DecodeProblem& p, const DecodeInputs& in, int64_t splits, int64_t tile_keys,
                           std::vector<double>* lse = nullptr);

// One row's softmax state over some scores: m = max, l = sum exp(s - m). Merging two states of
// disjoint parts of a row gives the state of their union: m = max(m_a, m_b),
// l = l_a e^(m_a - m) + l_b e^(m_b - m). An empty part is {-inf, 0}.
struct SoftmaxPartial {
    double m = -INFINITY, l = 0;
    double lse() const { return m + std::log(l); }
};
SoftmaxPartial softmax_partial(const std::vector<double>& scores);
SoftmaxPartial merge_partials(SoftmaxPartial a, SoftmaxPartial b);

// One query row's attention computed as split-KV does it, in float64: the keys cut into splits of
// `split_len` (the last may be shorter); each split s gives its own (m_s, l_s), its normalised
// output O_s = sum_j e^(s_j - m_s) v_j / l_s and LSE_s = m_s + log l_s; the merge gives
// LSE = log sum_s e^(LSE_s) and O = sum_s w_s O_s with w_s = e^(LSE_s - LSE) (the weights sum to 1).
// `values`: one row of V per score. Throws sim::Error on empty scores, split_len < 1 or a shape
// mismatch.
struct RowSplit {
    int64_t first = 0, count = 0;  // the keys of this split
    SoftmaxPartial state;          // (m_s, l_s)
    double lse = 0;                // LSE_s
    double weight = 0;             // w_s
    std::vector<double> out;       // O_s
};
struct RowSplitMerge {
    std::vector<RowSplit> splits;
    double lse = 0;           // the merged LSE
    std::vector<double> out;  // the merged output
};
RowSplitMerge split_merge_row(const std::vector<double>& scores, const std::vector<std::vector<double>>& values,
                              int64_t split_len);

}  // namespace sim

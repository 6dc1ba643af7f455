// viz/decode_view.hpp — what the Decoding view shows, GL-free (unit-tested in tests/viz): one decoding
// step of sim::simulate_decode cut into its splits (the keys and bytes each split's thread blocks
// read and write, then the merge), the step's time on the timing ladder's rungs, and the recorded
// row of results/<card>/decode.json at the same shape (report::current_file), each named.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/decode.hpp"
#include "sim/machine.hpp"

namespace viz {

// The decoding view's problem: one step of B sequences against a cache of L keys (sim::DecodeProblem),
// the split count (0: the simulator chooses) and the lesson's [decode.NAME] it came from ("" if none).
struct DecodeShape {
    int64_t batch = 1, q_heads = 32, kv_heads = 8, kv_len = 32768, head_dim = 128;
    sim::DType dtype = sim::DType::bf16;
    int64_t splits = 0;
    std::string name;
    sim::DecodeProblem problem() const;
    sim::DecodeConfig config() const;
};

// One split: its keys (the same range in every (sequence, KV head)) and what all its thread blocks
// move, summed over the B x H_kv (sequence, KV head) pairs.
struct DecodeSplitRow {
    int64_t index = 0;      // 0-based
    int64_t first_key = 0;  // the split's first key
    int64_t keys = 0;       // keys it streams (the last split may be shorter)
    int64_t kv_bytes = 0;   // K and V of those keys
    int64_t q_bytes = 0;    // the query rows of the group, once a block
    int64_t out_bytes = 0;  // its partial O_s (fp32) and LSE_s, or O itself with one split
    int64_t total() const { return kv_bytes + q_bytes + out_bytes; }
};

// A recorded decode row at the view's shape.
struct DecodeRecorded {
    std::string file;    // the results file, as the results index names it ("h200/decode.json")
    std::string device;  // the GPU it ran on
    double ms = 0;       // median time of the call
    double sim_ms = 0;   // the decode model's prediction recorded beside it (0: none)
    int64_t splits = 0;  // the split count the kernel used
    double tbps = 0;     // KV bytes over the median time, TB/s
};

struct DecodeView {
    sim::DecodeResult result;
    std::vector<DecodeSplitRow> splits;  // in key order; their totals plus the merge's bytes make result.total_bytes()
    double bytes_bound_s = 0;            // rung 1, "bytes bound": all bytes at the bandwidth the model uses
    std::optional<DecodeRecorded> recorded;
    std::string recorded_note;  // why there is no recorded row ("" when there is)
    std::string error;          // the simulator refused the shape (the rest is empty)
};

// The splits of `r` (its choose_splits): keys and bytes a split. Counted from the split's key range,
// not from the walker's loop, so that the test can hold the two against each other.
std::vector<DecodeSplitRow> split_rows(const sim::DecodeResult& r, int64_t tile_keys);

// The row of a decode results document (its JSON text) at exactly this problem (batch, heads, L, d,
// dtype, one new token); nullopt when there is none or the text is not a results document.
std::optional<DecodeRecorded> find_decode_row(const std::string& json_text, const sim::DecodeProblem& p);

// Everything the view draws for `s` on `m`; never throws (a refused shape sets .error). The results
// file is read once per path and kept.
DecodeView decode_view(const DecodeShape& s, const sim::Machine& m);

}  // namespace viz

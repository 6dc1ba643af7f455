// sim/tile_machine.hpp — the lab's tile machine: a learner's kernel written as explicit loads,
// stores and tile arithmetic, counted the way the simulator's walkers count theirs.
//
//   HBM tensors (inputs, outputs, scratch; each with a shape and a storage dtype)
//        │ load(tensor, row0, col0, rows, cols) ──► tile handle in SRAM (bytes = rows·cols·dtype size)
//        ▼
//   SRAM (a byte capacity) ── compute on tiles (float32 results, 4 bytes an element) ── store ──► HBM
//
// Counting rules (those of sim/forward.cpp and sim/backward.cpp, so that a learner's FlashAttention
// moves and computes exactly what `flashsim simulate` counts at the same tiles):
//   - a load or store moves rows·cols·(the tensor's element size) bytes; a store rounds to the dtype;
//   - a product A·B of (m×k)·(k×n) is 2mkn matmul FLOPs (accumulating into a tile is the FMA's add,
//     free); a scale other than 1 adds m·n other FLOPs (one multiply an element);
//   - exp(x − shift) is one exp FLOP an element, the subtraction fused into it; log(x) + add the same;
//   - row max, row sum, elementwise add/sub/mul/div/max, scaling by a scalar or per row: one other
//     FLOP an element of the result (row max and sum: an element of the input);
//   - fill and the causal mask cost nothing (the walkers count none for them).
// Refusals (sim::Error) name the operation's number ("step 12 (load K)") and what to change:
// SRAM overflow, a tile used after it was freed, a tile out of a tensor's bounds, shape mismatch.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "sim/dtype.hpp"
#include "sim/problem.hpp"
#include "sim/trace.hpp"

namespace sim {

enum class LabRole : uint8_t { input, output, scratch };

struct LabTensor {
    std::string name;
    Tensor traced = Tensor::O;  // the tensor its bytes count under (name, or the name's prefix before '_')
    DType dtype = DType::fp32;
    LabRole role = LabRole::scratch;
    int64_t rows = 0, cols = 0;
    std::vector<float> data;  // row-major, values representable in dtype
    // The extent of its first tile loaded or stored at row 0 (col 0): the stride its trace events'
    // tile indices count in, so that a last, shorter tile keeps its place (0 until such a tile).
    int64_t tile_rows = 0, tile_cols = 0;
    int64_t elem_bytes() const { return dtype_bytes(dtype); }
};

struct LabTile {
    int64_t rows = 0, cols = 0;
    std::vector<float> data;  // row-major float32
    int64_t bytes = 0;        // its SRAM footprint
    std::string origin;       // "load of Q rows 0..63" or "row_max"
    int64_t made_at = 0;      // operation number that made it
    int64_t freed_at = -1;    // operation number that freed it (-1: live)
    float at(int64_t r, int64_t c) const { return data[static_cast<size_t>(r * cols + c)]; }
};

// Where a compute op writes: a new tile (into = -1) or an existing live tile of the result's shape
// (in place: no new SRAM); the tensor its trace event is labelled with (S, P, O, dS, ...).
struct LabOut {
    int into = -1;
    Tensor label = Tensor::O;
};

enum class LabBinary : uint8_t { add, sub, mul, div, max };
enum class LabRowOp : uint8_t { add, sub, mul, div };  // x[r, :] op v[r]

class TileMachine {
public:
    explicit TileMachine(int64_t sram_bytes);

    // HBM. `data` (rows·cols values, row-major) is rounded to dtype; null: zeros.
    void add_tensor(const std::string& name, int64_t rows, int64_t cols, DType dtype, LabRole role,
                    const float* data = nullptr);
    const LabTensor& tensor(const std::string& name) const;
    const std::vector<LabTensor>& tensors() const { return tensors_; }

    // HBM <-> SRAM
    int load(const std::string& name, int64_t row0, int64_t col0, int64_t rows, int64_t cols);
    void store(int tile, const std::string& name, int64_t row0, int64_t col0);
    void free(int tile);

    // Compute. Each returns the result's handle (out.into when given).
    int fill(int64_t rows, int64_t cols, float value, LabOut out = {});
    int matmul(int a, int b, bool transpose_a, bool transpose_b, float scale, int accumulate, LabOut out = {});
    int exp(int x, int shift, LabOut out = {});  // shift: -1 none, else a (rows x 1) tile
    int log(int x, int add, LabOut out = {});    // log(x) + add; where x <= 0 (an empty row): 0
    int row_max(int x, LabOut out = {});
    int row_sum(int x, LabOut out = {});
    int scale(int x, float s, LabOut out = {});
    int rows_op(LabRowOp op, int x, int v, LabOut out = {});
    int binary(LabBinary op, int a, int b, LabOut out = {});
    void mask_causal(int x, int64_t row0, int64_t col0);  // -inf where key col0 + c > query row0 + r
    void step();                                          // marks the start of a loop step (the trace's step index)

    const LabTile& tile(int handle) const;  // a live tile (refused otherwise)
    int64_t sram_capacity() const { return capacity_; }
    int64_t sram_used() const { return used_; }
    int64_t sram_peak() const { return peak_; }
    int64_t operations() const { return ops_; }
    int64_t live_tiles() const;
    const Totals& totals() const { return totals_; }
    const Trace& trace() const { return trace_; }

private:
    LabTensor& find(const std::string& name, const char* op);
    LabTile& live(int handle, const char* op, const char* what);
    int make(const char* op, int64_t rows, int64_t cols, int64_t bytes, LabOut out, std::string origin);
    void charge(const char* op, int64_t extra);
    void event(EventKind k, Tensor t, int64_t rt, int64_t ct, int64_t rows, int64_t cols, int64_t bytes, Flops f);
    [[noreturn]] void fail(const char* op, const std::string& what) const;

    int64_t capacity_ = 0, used_ = 0, peak_ = 0, ops_ = 0, step_ = 0;
    std::vector<LabTensor> tensors_;
    std::vector<LabTile> tiles_;
    Totals totals_;
    Trace trace_;
};

// The trace tensor a lab tensor's name counts under: the name itself (Q, K, V, O, LSE, dQ, ...) or
// its prefix before the first '_' (O_part -> O, dQ_acc -> dQ). Throws sim::Error when neither is one.
Tensor lab_traced_tensor(const std::string& name);

}  // namespace sim

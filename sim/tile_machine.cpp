#include "sim/tile_machine.hpp"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <limits>

namespace sim {

namespace {
constexpr int64_t kF32 = 4;  // computed tiles live in SRAM as float32, as the walkers count them
constexpr float kNegInf = -std::numeric_limits<float>::infinity();
using MatF = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

std::string range_text(int64_t a, int64_t n) { return std::to_string(a) + ".." + std::to_string(a + n - 1); }

// The tile index of an offset along one side of a tensor, counted in the extent of the first tile
// at offset 0 (the stride): N = 200 in tiles of 64 ends with rows 192..199, tile 3 (not 192 / 8).
int64_t tile_index(int64_t& stride, int64_t at, int64_t extent) {
    if (at == 0 && stride == 0) stride = extent;
    return at / (stride > 0 ? stride : extent);
}
}  // namespace

Tensor lab_traced_tensor(const std::string& name) {
    if (auto t = parse_enum<Tensor>(name)) return *t;
    const auto cut = name.find('_');
    if (cut != std::string::npos)
        if (auto t = parse_enum<Tensor>(name.substr(0, cut))) return *t;
    throw Error("tensor name '" + name +
                "' names none of the simulator's tensors; use one of Q, K, V, O, S, P, m, l, LSE, dO, dQ, dK, dV, "
                "dS, dP, D, or such a name followed by '_' and a word (e.g. O_part)");
}

TileMachine::TileMachine(int64_t sram_bytes) : capacity_(sram_bytes) {
    if (sram_bytes <= 0) throw Error("SRAM capacity must be positive bytes (got " + std::to_string(sram_bytes) + ")");
}

void TileMachine::fail(const char* op, const std::string& what) const {
    throw Error("step " + std::to_string(ops_) + " (" + op + "): " + what);
}

void TileMachine::add_tensor(const std::string& name, int64_t rows, int64_t cols, DType dtype, LabRole role,
                             const float* data) {
    if (rows <= 0 || cols <= 0)
        throw Error("tensor " + name + " needs a positive shape (got " + std::to_string(rows) + " x " +
                    std::to_string(cols) + ")");
    for (const auto& t : tensors_)
        if (t.name == name) throw Error("tensor " + name + " is already in HBM; give each tensor its own name");
    LabTensor t{name, lab_traced_tensor(name), dtype, role, rows, cols, std::vector<float>(rows * cols, 0.0f)};
    if (data)
        for (int64_t a = 0; a < rows * cols; ++a) t.data[a] = round_to(dtype, data[a]);
    tensors_.push_back(std::move(t));
}

const LabTensor& TileMachine::tensor(const std::string& name) const {
    for (const auto& t : tensors_)
        if (t.name == name) return t;
    throw Error("no tensor named " + name + " in HBM");
}

LabTensor& TileMachine::find(const std::string& name, const char* op) {
    for (auto& t : tensors_)
        if (t.name == name) return t;
    std::string have;
    for (const auto& t : tensors_) have += (have.empty() ? "" : ", ") + t.name;
    fail(op, "no tensor named " + name + " in HBM (there are: " + have + ")");
}

LabTile& TileMachine::live(int h, const char* op, const char* what) {
    if (h < 0 || h >= static_cast<int>(tiles_.size()))
        fail(op, std::string(what) + " is not a tile handle (" + std::to_string(h) + "); load or compute it first");
    LabTile& t = tiles_[static_cast<size_t>(h)];
    if (t.freed_at >= 0)
        fail(op, std::string(what) + " (tile " + std::to_string(h) + ", " + t.origin + ") was freed at step " +
                     std::to_string(t.freed_at) + "; it is no longer in SRAM, load it again or free it later");
    return t;
}

const LabTile& TileMachine::tile(int h) const {
    if (h < 0 || h >= static_cast<int>(tiles_.size())) throw Error("no tile " + std::to_string(h));
    const LabTile& t = tiles_[static_cast<size_t>(h)];
    if (t.freed_at >= 0) throw Error("tile " + std::to_string(h) + " (" + t.origin + ") was freed");
    return t;
}

int64_t TileMachine::live_tiles() const {
    return std::count_if(tiles_.begin(), tiles_.end(), [](const LabTile& t) { return t.freed_at < 0; });
}

void TileMachine::charge(const char* op, int64_t extra) {
    if (used_ + extra > capacity_)
        fail(op, "SRAM overflow: " + std::to_string(used_) + " B in use + " + std::to_string(extra) +
                     " B = " + std::to_string(used_ + extra) + " B, over the capacity of " + std::to_string(capacity_) +
                     " B; free tiles you no longer need, compute in place (out=), or use smaller tiles");
    used_ += extra;
    peak_ = std::max(peak_, used_);
}

int TileMachine::make(const char* op, int64_t rows, int64_t cols, int64_t bytes, LabOut out, std::string origin) {
    if (out.into >= 0) {
        LabTile& t = live(out.into, op, "the output tile");
        if (t.rows != rows || t.cols != cols)
            fail(op, "the output tile is " + std::to_string(t.rows) + " x " + std::to_string(t.cols) +
                         " but the result is " + std::to_string(rows) + " x " + std::to_string(cols));
        charge(op, std::max<int64_t>(0, bytes - t.bytes));
        used_ -= std::max<int64_t>(0, t.bytes - bytes);
        t.bytes = bytes;
        t.origin = std::move(origin);
        return out.into;
    }
    charge(op, bytes);
    tiles_.push_back(
        {rows, cols, std::vector<float>(static_cast<size_t>(rows * cols)), bytes, std::move(origin), ops_});
    return static_cast<int>(tiles_.size()) - 1;
}

void TileMachine::event(EventKind k, Tensor t, int64_t rt, int64_t ct, int64_t rows, int64_t cols, int64_t bytes,
                        Flops f) {
    if (k == EventKind::load) totals_[t].read_bytes += bytes;
    if (k == EventKind::store) totals_[t].write_bytes += bytes;
    totals_.flops += f;
    ++trace_.events_total;
    Event e{k,
            t,
            static_cast<int32_t>(rt),
            static_cast<int32_t>(ct),
            static_cast<int32_t>(rows),
            static_cast<int32_t>(cols),
            bytes,
            f,
            step_,
            0,
            0};
    trace_.events.push_back(e);
}

void TileMachine::step() {
    ++ops_;
    step_ = totals_.steps++;
    trace_.steps_per_head = totals_.steps;
}

int TileMachine::load(const std::string& name, int64_t row0, int64_t col0, int64_t rows, int64_t cols) {
    ++ops_;
    const char* op = "load";
    LabTensor& t = find(name, op);
    if (rows <= 0 || cols <= 0 || row0 < 0 || col0 < 0 || row0 + rows > t.rows || col0 + cols > t.cols)
        fail(op, "rows " + range_text(row0, rows) + ", cols " + range_text(col0, cols) + " lie outside " + name + " (" +
                     std::to_string(t.rows) + " x " + std::to_string(t.cols) + ")");
    const int64_t bytes = rows * cols * t.elem_bytes();
    const int h = make(op, rows, cols, bytes, {}, "load of " + name + " rows " + range_text(row0, rows));
    LabTile& tl = tiles_[static_cast<size_t>(h)];
    for (int64_t r = 0; r < rows; ++r)
        std::copy_n(t.data.begin() + (row0 + r) * t.cols + col0, cols, tl.data.begin() + r * cols);
    const bool whole_width = col0 == 0 && cols == t.cols;
    const int64_t rt = tile_index(t.tile_rows, row0, rows), ct = whole_width ? -1 : tile_index(t.tile_cols, col0, cols);
    event(EventKind::load, t.traced, rt, ct, rows, cols, bytes, {});
    return h;
}

void TileMachine::store(int h, const std::string& name, int64_t row0, int64_t col0) {
    ++ops_;
    const char* op = "store";
    const LabTile& tl = live(h, op, "the tile to store");
    LabTensor& t = find(name, op);
    if (t.role == LabRole::input) fail(op, name + " is an input; store results into an output or scratch tensor");
    if (row0 < 0 || col0 < 0 || row0 + tl.rows > t.rows || col0 + tl.cols > t.cols)
        fail(op, "a " + std::to_string(tl.rows) + " x " + std::to_string(tl.cols) + " tile at row " +
                     std::to_string(row0) + ", col " + std::to_string(col0) + " does not fit in " + name + " (" +
                     std::to_string(t.rows) + " x " + std::to_string(t.cols) + ")");
    for (int64_t r = 0; r < tl.rows; ++r)
        for (int64_t c = 0; c < tl.cols; ++c) t.data[(row0 + r) * t.cols + col0 + c] = round_to(t.dtype, tl.at(r, c));
    const int64_t bytes = tl.rows * tl.cols * t.elem_bytes();
    const bool whole_width = col0 == 0 && tl.cols == t.cols;
    const int64_t rt = tile_index(t.tile_rows, row0, tl.rows);
    const int64_t ct = whole_width ? -1 : tile_index(t.tile_cols, col0, tl.cols);
    event(EventKind::store, t.traced, rt, ct, tl.rows, tl.cols, bytes, {});
}

void TileMachine::free(int h) {
    ++ops_;
    LabTile& t = live(h, "free", "the tile to free");
    used_ -= t.bytes;
    t.freed_at = ops_;
    t.data.clear();
    t.data.shrink_to_fit();
}

int TileMachine::fill(int64_t rows, int64_t cols, float value, LabOut out) {
    ++ops_;
    if (rows <= 0 || cols <= 0) fail("fill", "needs a positive shape");
    const int h = make("fill", rows, cols, rows * cols * kF32, out, "fill");
    std::fill(tiles_[h].data.begin(), tiles_[h].data.end(), value);
    return h;
}

int TileMachine::matmul(int a, int b, bool ta, bool tb, float s, int acc, LabOut out) {
    ++ops_;
    const char* op = "matmul";
    const LabTile& A = live(a, op, "the left operand");
    const LabTile& B = live(b, op, "the right operand");
    const int64_t m = ta ? A.cols : A.rows, k = ta ? A.rows : A.cols;
    const int64_t kb = tb ? B.cols : B.rows, n = tb ? B.rows : B.cols;
    if (k != kb)
        fail(op, "inner sizes differ: the left operand gives " + std::to_string(m) + " x " + std::to_string(k) +
                     ", the right " + std::to_string(kb) + " x " + std::to_string(n) + " (transpose_a / transpose_b?)");
    const Eigen::Map<const MatF> Am(A.data.data(), A.rows, A.cols), Bm(B.data.data(), B.rows, B.cols);
    MatF C = ta ? (tb ? MatF(Am.transpose() * Bm.transpose()) : MatF(Am.transpose() * Bm))
                : (tb ? MatF(Am * Bm.transpose()) : MatF(Am * Bm));
    if (s != 1.0f) C *= s;
    if (acc >= 0) {
        const LabTile& Ct = live(acc, op, "the accumulator");
        if (Ct.rows != m || Ct.cols != n)
            fail(op, "the accumulator is " + std::to_string(Ct.rows) + " x " + std::to_string(Ct.cols) +
                         " but the product is " + std::to_string(m) + " x " + std::to_string(n));
        C += Eigen::Map<const MatF>(Ct.data.data(), m, n);
        out.into = acc;
    }
    const int h = make(op, m, n, m * n * kF32, out, "matmul");
    std::copy_n(C.data(), m * n, tiles_[h].data.begin());
    event(EventKind::compute, out.label, -1, -1, m, n, 0, {2 * m * n * k, 0, s != 1.0f ? m * n : 0});
    return h;
}

int TileMachine::exp(int x, int shift, LabOut out) {
    ++ops_;
    const LabTile& X = live(x, "exp", "the input");
    std::vector<float> v(X.data.size());
    const LabTile* S = shift >= 0 ? &live(shift, "exp", "the shift") : nullptr;
    if (S && (S->rows != X.rows || S->cols != 1))
        fail("exp", "the shift must be a " + std::to_string(X.rows) + " x 1 tile (one value a row), got " +
                        std::to_string(S->rows) + " x " + std::to_string(S->cols));
    for (int64_t r = 0; r < X.rows; ++r) {
        // a row whose running max is still -inf (only masked scores so far) shifts by 0: its exps stay 0
        const float sh = S ? (S->data[r] == kNegInf ? 0.0f : S->data[r]) : 0.0f;
        for (int64_t c = 0; c < X.cols; ++c) {
            const float a = X.at(r, c);
            v[r * X.cols + c] = a == kNegInf ? 0.0f : std::exp(a - sh);
        }
    }
    const int64_t n = X.rows * X.cols, rows = X.rows, cols = X.cols;
    const int h = make("exp", rows, cols, n * kF32, out, "exp");
    tiles_[h].data = std::move(v);
    event(EventKind::compute, out.label, -1, -1, rows, cols, 0, {0, n, 0});
    return h;
}

int TileMachine::log(int x, int add, LabOut out) {
    ++ops_;
    const LabTile& X = live(x, "log", "the input");
    const LabTile* A = add >= 0 ? &live(add, "log", "the addend") : nullptr;
    if (A && (A->rows != X.rows || A->cols != X.cols)) fail("log", "the addend's shape differs from the input's");
    std::vector<float> v(X.data.size());
    for (size_t a = 0; a < v.size(); ++a) v[a] = X.data[a] > 0 ? std::log(X.data[a]) + (A ? A->data[a] : 0.0f) : 0.0f;
    const int64_t rows = X.rows, cols = X.cols;
    const int h = make("log", rows, cols, rows * cols * kF32, out, "log");
    tiles_[h].data = std::move(v);
    event(EventKind::compute, out.label, -1, -1, rows, cols, 0, {0, rows * cols, 0});
    return h;
}

int TileMachine::row_max(int x, LabOut out) {
    ++ops_;
    const LabTile& X = live(x, "row_max", "the input");
    std::vector<float> v(static_cast<size_t>(X.rows), kNegInf);
    for (int64_t r = 0; r < X.rows; ++r)
        for (int64_t c = 0; c < X.cols; ++c) v[r] = std::max(v[r], X.at(r, c));
    const int64_t rows = X.rows, n = X.rows * X.cols;
    const int h = make("row_max", rows, 1, rows * kF32, out, "row_max");
    tiles_[h].data = std::move(v);
    event(EventKind::compute, out.label, -1, -1, rows, 1, 0, {0, 0, n});
    return h;
}

int TileMachine::row_sum(int x, LabOut out) {
    ++ops_;
    const LabTile& X = live(x, "row_sum", "the input");
    std::vector<float> v(static_cast<size_t>(X.rows), 0.0f);
    for (int64_t r = 0; r < X.rows; ++r)
        for (int64_t c = 0; c < X.cols; ++c) v[r] += X.at(r, c);
    const int64_t rows = X.rows, n = X.rows * X.cols;
    const int h = make("row_sum", rows, 1, rows * kF32, out, "row_sum");
    tiles_[h].data = std::move(v);
    event(EventKind::compute, out.label, -1, -1, rows, 1, 0, {0, 0, n});
    return h;
}

int TileMachine::scale(int x, float s, LabOut out) {
    ++ops_;
    const LabTile& X = live(x, "scale", "the input");
    std::vector<float> v(X.data);
    for (auto& a : v) a *= s;
    const int64_t rows = X.rows, cols = X.cols;
    const int h = make("scale", rows, cols, rows * cols * kF32, out, "scale");
    tiles_[h].data = std::move(v);
    event(EventKind::compute, out.label, -1, -1, rows, cols, 0, {0, 0, rows * cols});
    return h;
}

int TileMachine::rows_op(LabRowOp o, int x, int vh, LabOut out) {
    ++ops_;
    static constexpr const char* names[] = {"add_rows", "sub_rows", "mul_rows", "div_rows"};
    const char* op = names[static_cast<int>(o)];
    const LabTile& X = live(x, op, "the input");
    const LabTile& V = live(vh, op, "the row vector");
    if (V.rows != X.rows || V.cols != 1)
        fail(op, "the row vector must be " + std::to_string(X.rows) + " x 1 (one value a row of the " +
                     std::to_string(X.rows) + " x " + std::to_string(X.cols) + " tile), got " + std::to_string(V.rows) +
                     " x " + std::to_string(V.cols));
    std::vector<float> v(X.data);
    for (int64_t r = 0; r < X.rows; ++r)
        for (int64_t c = 0; c < X.cols; ++c) {
            float& a = v[r * X.cols + c];
            const float b = V.data[r];
            switch (o) {
                case LabRowOp::add:
                    a += b;
                    break;
                case LabRowOp::sub:
                    a -= b;
                    break;
                case LabRowOp::mul:
                    a *= b;
                    break;
                case LabRowOp::div:
                    a = b != 0.0f ? a / b : 0.0f;
                    break;  // an empty row (sum 0) stays 0
            }
        }
    const int64_t rows = X.rows, cols = X.cols;
    const int h = make(op, rows, cols, rows * cols * kF32, out, op);
    tiles_[h].data = std::move(v);
    event(EventKind::compute, out.label, -1, -1, rows, cols, 0, {0, 0, rows * cols});
    return h;
}

int TileMachine::binary(LabBinary o, int a, int b, LabOut out) {
    ++ops_;
    static constexpr const char* names[] = {"add", "sub", "mul", "div", "maximum"};
    const char* op = names[static_cast<int>(o)];
    const LabTile& A = live(a, op, "the left operand");
    const LabTile& B = live(b, op, "the right operand");
    if (A.rows != B.rows || A.cols != B.cols)
        fail(op, "shapes differ: " + std::to_string(A.rows) + " x " + std::to_string(A.cols) + " and " +
                     std::to_string(B.rows) + " x " + std::to_string(B.cols));
    std::vector<float> v(A.data.size());
    for (size_t k = 0; k < v.size(); ++k) {
        const float x = A.data[k], y = B.data[k];
        switch (o) {
            case LabBinary::add:
                v[k] = x + y;
                break;
            case LabBinary::sub:
                v[k] = x - y;
                break;
            case LabBinary::mul:
                v[k] = x * y;
                break;
            case LabBinary::div:
                v[k] = y != 0.0f ? x / y : 0.0f;
                break;
            case LabBinary::max:
                v[k] = std::max(x, y);
                break;
        }
    }
    const int64_t rows = A.rows, cols = A.cols;
    const int h = make(op, rows, cols, rows * cols * kF32, out, op);
    tiles_[h].data = std::move(v);
    event(EventKind::compute, out.label, -1, -1, rows, cols, 0, {0, 0, rows * cols});
    return h;
}

void TileMachine::mask_causal(int x, int64_t row0, int64_t col0) {
    ++ops_;
    LabTile& X = live(x, "mask_causal", "the score tile");
    for (int64_t r = 0; r < X.rows; ++r)
        for (int64_t c = 0; c < X.cols; ++c)
            if (col0 + c > row0 + r) X.data[r * X.cols + c] = kNegInf;
}

}  // namespace sim

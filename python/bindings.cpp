// python/bindings.cpp — the `_flashsim` extension behind the `flashsim` package: thin conversions
// between NumPy / dicts and sim/. No logic of its own: the tile machine and the simulator do the work.
// [SECTIONS] conversions · the tile machine (and its trace file, report/lab_trace) · the simulator
// (simulate, decode, softmax, attend, fit, the float64 references, round_to, machines)
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>

#include "report/lab_trace.hpp"
#include "sim/decode.hpp"
#include "sim/footprint.hpp"
#include "sim/machine.hpp"
#include "sim/mask.hpp"
#include "sim/reference.hpp"
#include "sim/simulate.hpp"
#include "sim/softmax.hpp"
#include "sim/tile_machine.hpp"

namespace py = pybind11;
using namespace sim;

namespace {

using F32Array = py::array_t<float, py::array::c_style | py::array::forcecast>;

DType dtype_of(const std::string& s) {
    if (auto t = parse_dtype(s)) {
        if (*t == DType::fp8)  // its numbers need scales: sim/fp8_attention.hpp, `flashsim numerics --dtype fp8`
            throw Error(
                "dtype fp8 is not bound here (its numbers need scales: `flashsim numerics --dtype fp8`); "
                "use fp32, fp16 or bf16");
        return *t;
    }
    throw Error("unknown dtype '" + s + "'; use fp32, fp16 or bf16");
}

Algo algo_of(const std::string& s) {
    if (auto a = parse_algo(s)) return *a;
    throw Error("unknown algo '" + s + "'; use standard, flash1 or flash2");
}

Pass pass_of(const std::string& s) {
    if (auto p = parse_pass(s)) return *p;
    throw Error("unknown pass '" + s + "'; use forward, backward or both");
}

py::array_t<float> to_numpy(const std::vector<float>& v, int64_t rows, int64_t cols) {
    py::array_t<float> a({rows, cols});
    std::copy(v.begin(), v.end(), a.mutable_data());
    return a;
}

template <class T>
py::array_t<T> head_array(const HostTensor<T>& t) {
    py::array_t<T> a({t.batch, t.heads, t.rows, t.cols});
    std::copy(t.data.begin(), t.data.end(), a.mutable_data());
    return a;
}

py::dict flops_dict(const Flops& f) {
    py::dict d;
    d["matmul"] = f.matmul;
    d["exp"] = f.exp;
    d["other"] = f.other;
    d["total"] = f.total();
    return d;
}

py::dict totals_dict(const Totals& t) {
    py::dict d, per;
    for (int k = 0; k < kTensorCount; ++k) {
        const Traffic& x = t.hbm[static_cast<size_t>(k)];
        if (x.total() == 0) continue;
        py::dict e;
        e["read"] = x.read_bytes;
        e["write"] = x.write_bytes;
        per[py::str(std::string(tensor_name(static_cast<Tensor>(k))))] = e;
    }
    d["tensors"] = per;
    d["read_bytes"] = t.hbm_total().read_bytes;
    d["write_bytes"] = t.hbm_total().write_bytes;
    d["bytes"] = t.hbm_total().total();
    d["flops"] = flops_dict(t.flops);
    d["steps"] = t.steps;
    return d;
}

py::list events_list(const Trace& tr) {
    py::list l;
    for (const Event& e : tr.events) {
        py::dict d;
        d["kind"] = std::string(event_kind_name(e.kind));
        d["tensor"] = std::string(tensor_name(e.tensor));
        d["row_tile"] = e.row_tile;
        d["col_tile"] = e.col_tile;
        d["rows"] = e.rows;
        d["cols"] = e.cols;
        d["bytes"] = e.bytes;
        d["flops"] = flops_dict(e.flops);
        d["step"] = e.step;
        l.append(d);
    }
    return l;
}

TensorF head_tensor(const F32Array& a, const char* what) {
    if (a.ndim() != 2) throw Error(std::string(what) + " must be a 2-D array (N, d) of one head");
    TensorF t(1, 1, a.shape(0), a.shape(1));
    std::copy(a.data(), a.data() + a.size(), t.data.begin());
    return t;
}

Problem head_problem(const F32Array& q, const F32Array& k, bool causal, double scale, const std::string& dtype) {
    Problem p;
    p.seq = q.shape(0);
    p.head_dim = q.shape(1);
    p.causal = causal;
    p.scale = scale;
    p.dtype = dtype_of(dtype);
    if (k.ndim() != 2 || k.shape(0) != p.seq || k.shape(1) != p.head_dim)
        throw Error("Q, K, V (and dO) must have the same shape (N, d)");
    return p;
}

const char* kTileMachineDoc = R"(A tile machine: tensors in HBM, an SRAM of `sram_bytes`, and a kernel's operations.

Bytes and FLOPs are counted exactly as `flashsim simulate`'s walkers count theirs:
  load/store: rows*cols*element size of the tensor's dtype (stores round to the dtype);
  matmul (m x k)(k x n): 2*m*k*n matmul FLOPs, accumulating (acc=) is free, a scale != 1 adds m*n;
  exp(x, shift) and log(x, add): one exp FLOP an element (the shift/add fused);
  row_max, row_sum, add/sub/mul/div/maximum, scale, *_rows: one other FLOP an element;
  fill and mask_causal: free.
Loaded tiles take rows*cols*(dtype size) bytes of SRAM, computed tiles 4 bytes an element (float32).
Every compute op takes out= (a live tile of the result's shape, written in place: no new SRAM) and
tensor= (the name its trace event carries, e.g. "S" or "P"). Handles are ints.
Errors (an SRAM overflow, a freed tile used, a tile outside a tensor) raise ValueError naming the step.)";

void bind_tile_machine(py::module_& m) {
    py::class_<TileMachine>(m, "TileMachine", kTileMachineDoc)
        .def(py::init<int64_t>(), py::arg("sram_bytes"))
        .def(
            "add_tensor",
            [](TileMachine& tm, const std::string& name, py::object data, int64_t rows, int64_t cols,
               const std::string& dtype, const std::string& role) {
                const LabRole r = role == "input"    ? LabRole::input
                                  : role == "output" ? LabRole::output
                                  : role == "scratch"
                                      ? LabRole::scratch
                                      : throw Error("role must be input, output or scratch (got " + role + ")");
                if (!data.is_none()) {
                    const F32Array a = data.cast<F32Array>();
                    if (a.ndim() != 2) throw Error("tensor " + name + ": data must be a 2-D array");
                    tm.add_tensor(name, a.shape(0), a.shape(1), dtype_of(dtype), r, a.data());
                } else {
                    tm.add_tensor(name, rows, cols, dtype_of(dtype), r);
                }
            },
            py::arg("name"), py::arg("data") = py::none(), py::arg("rows") = 0, py::arg("cols") = 0,
            py::arg("dtype") = "fp16", py::arg("role") = "input",
            "Put a tensor in HBM: from a 2-D array `data` (rounded to dtype) or zeros of rows x cols. role: "
            "input (read only), output or scratch. Its bytes count under its name (Q, K, V, O, LSE, dQ, ...) or "
            "the name's prefix before '_' (O_part counts as O).")
        .def(
            "hbm",
            [](const TileMachine& tm, const std::string& name) {
                const LabTensor& t = tm.tensor(name);
                return to_numpy(t.data, t.rows, t.cols);
            },
            py::arg("name"), "A copy of an HBM tensor as a float32 array (reading it counts nothing).")
        .def("load", &TileMachine::load, py::arg("name"), py::arg("row0"), py::arg("col0"), py::arg("rows"),
             py::arg("cols"), "Load rows x cols of a tensor from (row0, col0) into SRAM; returns a tile handle.")
        .def("store", &TileMachine::store, py::arg("tile"), py::arg("name"), py::arg("row0"), py::arg("col0"),
             "Store a tile into a tensor at (row0, col0), rounding to the tensor's dtype.")
        .def("free", &TileMachine::free, py::arg("tile"), "Free a tile's SRAM.")
        .def(
            "fill",
            [](TileMachine& tm, int64_t rows, int64_t cols, float v, int out) { return tm.fill(rows, cols, v, {out}); },
            py::arg("rows"), py::arg("cols"), py::arg("value"), py::arg("out") = -1,
            "A rows x cols tile of one value (float32; free).")
        .def(
            "matmul",
            [](TileMachine& tm, int a, int b, bool ta, bool tb, float s, int acc, int out, const std::string& t) {
                return tm.matmul(a, b, ta, tb, s, acc, {out, lab_traced_tensor(t)});
            },
            py::arg("a"), py::arg("b"), py::arg("transpose_a") = false, py::arg("transpose_b") = false,
            py::arg("scale") = 1.0f, py::arg("acc") = -1, py::arg("out") = -1, py::arg("tensor") = "O",
            "scale * op(a) @ op(b) in float32; acc=tile adds the product into that tile (in place).")
        .def(
            "exp",
            [](TileMachine& tm, int x, int shift, int out, const std::string& t) {
                return tm.exp(x, shift, {out, lab_traced_tensor(t)});
            },
            py::arg("x"), py::arg("shift") = -1, py::arg("out") = -1, py::arg("tensor") = "P",
            "exp(x - shift[row]) (shift a rows x 1 tile; -inf counts as 0); exp(-inf) is exactly 0.")
        .def(
            "log",
            [](TileMachine& tm, int x, int add, int out, const std::string& t) {
                return tm.log(x, add, {out, lab_traced_tensor(t)});
            },
            py::arg("x"), py::arg("add") = -1, py::arg("out") = -1, py::arg("tensor") = "LSE",
            "log(x) + add elementwise; 0 where x <= 0 (a fully masked row).")
        .def(
            "row_max",
            [](TileMachine& tm, int x, int out) {
                return tm.row_max(x, {out, Tensor::m});
            },
            py::arg("x"), py::arg("out") = -1, "The max of each row: a rows x 1 tile.")
        .def(
            "row_sum",
            [](TileMachine& tm, int x, int out) {
                return tm.row_sum(x, {out, Tensor::l});
            },
            py::arg("x"), py::arg("out") = -1, "The sum of each row: a rows x 1 tile.")
        .def(
            "scale", [](TileMachine& tm, int x, float s, int out) { return tm.scale(x, s, {out}); }, py::arg("x"),
            py::arg("s"), py::arg("out") = -1, "x * s.")
        .def(
            "mul_rows", [](TileMachine& tm, int x, int v, int out) { return tm.rows_op(LabRowOp::mul, x, v, {out}); },
            py::arg("x"), py::arg("v"), py::arg("out") = -1, "x[r, :] * v[r] (v a rows x 1 tile).")
        .def(
            "div_rows", [](TileMachine& tm, int x, int v, int out) { return tm.rows_op(LabRowOp::div, x, v, {out}); },
            py::arg("x"), py::arg("v"), py::arg("out") = -1, "x[r, :] / v[r]; 0 where v[r] is 0.")
        .def(
            "sub_rows", [](TileMachine& tm, int x, int v, int out) { return tm.rows_op(LabRowOp::sub, x, v, {out}); },
            py::arg("x"), py::arg("v"), py::arg("out") = -1, "x[r, :] - v[r].")
        .def(
            "add_rows", [](TileMachine& tm, int x, int v, int out) { return tm.rows_op(LabRowOp::add, x, v, {out}); },
            py::arg("x"), py::arg("v"), py::arg("out") = -1, "x[r, :] + v[r].")
        .def(
            "add", [](TileMachine& tm, int a, int b, int out) { return tm.binary(LabBinary::add, a, b, {out}); },
            py::arg("a"), py::arg("b"), py::arg("out") = -1, "a + b elementwise.")
        .def(
            "sub", [](TileMachine& tm, int a, int b, int out) { return tm.binary(LabBinary::sub, a, b, {out}); },
            py::arg("a"), py::arg("b"), py::arg("out") = -1, "a - b elementwise.")
        .def(
            "mul", [](TileMachine& tm, int a, int b, int out) { return tm.binary(LabBinary::mul, a, b, {out}); },
            py::arg("a"), py::arg("b"), py::arg("out") = -1, "a * b elementwise.")
        .def(
            "div", [](TileMachine& tm, int a, int b, int out) { return tm.binary(LabBinary::div, a, b, {out}); },
            py::arg("a"), py::arg("b"), py::arg("out") = -1, "a / b elementwise (0 where b is 0).")
        .def(
            "maximum", [](TileMachine& tm, int a, int b, int out) { return tm.binary(LabBinary::max, a, b, {out}); },
            py::arg("a"), py::arg("b"), py::arg("out") = -1, "max(a, b) elementwise.")
        .def("mask_causal", &TileMachine::mask_causal, py::arg("x"), py::arg("row0"), py::arg("col0"),
             "Set -inf where key col0 + c comes after query row0 + r (free).")
        .def("step", &TileMachine::step, "Mark the start of a loop step (groups the trace's events).")
        .def(
            "tile",
            [](const TileMachine& tm, int h) {
                const LabTile& t = tm.tile(h);
                return to_numpy(t.data, t.rows, t.cols);
            },
            py::arg("tile"), "A copy of a live tile as a float32 array (reading it counts nothing).")
        .def_property_readonly("sram_capacity", &TileMachine::sram_capacity)
        .def_property_readonly("sram_used", &TileMachine::sram_used)
        .def_property_readonly("sram_peak", &TileMachine::sram_peak, "The most SRAM in use at any step, bytes.")
        .def_property_readonly("operations", &TileMachine::operations)
        .def_property_readonly("live_tiles", &TileMachine::live_tiles)
        .def(
            "totals", [](const TileMachine& tm) { return totals_dict(tm.totals()); },
            "Bytes per tensor (read/write), totals, FLOPs and steps, as a dict.")
        .def(
            "events", [](const TileMachine& tm) { return events_list(tm.trace()); },
            "The trace: one dict an event (kind, tensor, tile, rows, cols, bytes, flops, step).")
        .def(
            "save_trace",
            [](const TileMachine& tm, const std::string& path, const std::string& algo, int64_t block_rows,
               int64_t block_cols, bool causal, const std::string& pass, int64_t seq, int64_t head_dim) {
                report::LabTraceInfo info;
                const Algo a = algo_of(algo);
                const Pass ps = pass_of(pass);
                info.algo = a;
                info.pass = ps;
                info.block_rows = block_rows;
                info.block_cols = block_cols;
                info.problem.seq = seq;
                info.problem.head_dim = head_dim;
                info.problem.causal = causal;
                report::save_lab_trace(path, tm, report::complete_lab_trace_info(tm, info));
            },
            py::arg("path"), py::arg("algo") = "flash2", py::arg("block_rows") = 0, py::arg("block_cols") = 0,
            py::arg("causal") = false, py::arg("pass_") = "forward", py::arg("seq") = 0, py::arg("head_dim") = 0,
            "Write the run so far as a trace file (JSON) that `flashsim-app --trace FILE` replays beside the built-in "
            "`algo` at the same problem and tiles. seq, head_dim (0: tensor Q's shape, dtype Q's), block_rows and "
            "block_cols (0: the rows of the first load of Q and of K) describe the problem for that built-in run.");
}

void bind_simulator(py::module_& m) {
    m.def(
        "simulate",
        [](int64_t seq, int64_t head_dim, const std::string& algo, const std::string& dtype, bool causal,
           int64_t block_rows, int64_t block_cols, const std::string& pass, int64_t bwd_block_rows,
           int64_t bwd_block_cols, const std::string& gpu, int64_t sram, int64_t batch, int64_t heads, bool numerics,
           double block_sparse) {
            Problem p;
            p.block_density = block_sparse;  // validated by simulate()
            p.seq = seq;
            p.head_dim = head_dim;
            p.batch = batch;
            p.heads = heads;
            p.causal = causal;
            p.dtype = dtype_of(dtype);
            Config c;
            const Algo a = algo_of(algo);
            const Pass ps = pass_of(pass);
            c.algo = a;
            c.pass = ps;
            c.block_rows = block_rows;
            c.block_cols = block_cols;
            c.bwd_block_rows = bwd_block_rows;
            c.bwd_block_cols = bwd_block_cols;
            c.sram_bytes = sram;
            c.numerics = numerics ? Numerics::on : Numerics::off;
            c.l2 = L2Mode::off;
            c.timing = false;
            const Result r = simulate(p, find_machine(gpu), c);
            py::dict d = totals_dict(r.totals);
            d["algo"] = std::string(algo_name(r.algo));
            d["block_rows"] = r.block_rows;
            d["block_cols"] = r.block_cols;
            d["bwd_block_rows"] = r.bwd_block_rows;
            d["bwd_block_cols"] = r.bwd_block_cols;
            d["T_r"] = r.T_r;
            d["T_c"] = r.T_c;
            d["key_blocks"] = mask_key_blocks(r.problem) > 0 ? mask_key_blocks(r.problem) : r.T_c;
            d["kept_key_blocks"] = mask_key_blocks(r.problem) > 0 ? mask_kept_blocks(r.problem) : r.T_c;
            d["sram_bytes"] = r.sram_bytes;
            d["sram_peak_bytes"] = r.sram_peak_bytes;
            d["forward"] = totals_dict(r.forward_totals);
            d["backward"] = totals_dict(r.backward_totals);
            d["events"] = events_list(r.trace);
            if (r.output) d["output"] = head_array(*r.output);
            return d;
        },
        py::arg("seq"), py::arg("head_dim"), py::arg("algo") = "flash2", py::arg("dtype") = "fp16",
        py::arg("causal") = false, py::arg("block_rows") = 0, py::arg("block_cols") = 0, py::arg("pass_") = "forward",
        py::arg("bwd_block_rows") = 0, py::arg("bwd_block_cols") = 0, py::arg("gpu") = "H200", py::arg("sram") = 0,
        py::arg("batch") = 1, py::arg("heads") = 1, py::arg("numerics") = false, py::arg("block_sparse") = 1.0,
        "Simulate one attention algorithm tile by tile, as `flashsim simulate` does (no L2, no timing). Returns a "
        "dict: bytes per tensor ('tensors': {name: {read, write}}), read_bytes, write_bytes, bytes, flops, "
        "steps, the blocks used, T_r, T_c, SRAM budget and peak, forward/backward totals, the trace's events, "
        "and 'output' (B, H, N, d) when numerics=True. block_sparse < 1: each query block keeps that fraction "
        "of the key blocks (the tiles; 'kept_key_blocks' of 'key_blocks' in the dict), as "
        "`flashsim simulate --block-sparse`.");
    m.def(
        "decode",
        [](int64_t kv_len, int64_t head_dim, int64_t q_len, int64_t q_heads, int64_t kv_heads, int64_t batch,
           int64_t splits, int64_t tile_keys, const std::string& dtype, const std::string& gpu) {
            DecodeProblem p;
            p.kv_len = kv_len;
            p.head_dim = head_dim;
            p.q_len = q_len;
            p.q_heads = q_heads;
            p.kv_heads = kv_heads;
            p.batch = batch;
            p.dtype = dtype_of(dtype);
            DecodeConfig c;
            c.splits = splits;
            c.tile_keys = tile_keys;
            const DecodeResult r = simulate_decode(p, find_machine(gpu), c);
            py::dict d;
            d["splits"] = r.split.splits;
            d["why"] = r.split.why;
            d["kv_read_bytes"] = r.kv_read_bytes;
            d["q_read_bytes"] = r.q_read_bytes;
            d["partial_write_bytes"] = r.partial_write_bytes;
            d["merge_read_bytes"] = r.merge_read_bytes;
            d["o_write_bytes"] = r.o_write_bytes;
            d["bytes"] = r.total_bytes();
            d["total_s"] = r.total_s;
            return d;
        },
        py::arg("kv_len"), py::arg("head_dim"), py::arg("q_len") = 1, py::arg("q_heads") = 1, py::arg("kv_heads") = 1,
        py::arg("batch") = 1, py::arg("splits") = 0, py::arg("tile_keys") = 64, py::arg("dtype") = "bf16",
        py::arg("gpu") = "H200",
        "Split-KV decoding as `flashsim decode` walks it: bytes of K/V, Q, the partials and their merge, O, and "
        "the predicted time (splits 0: the simulator chooses).");
    m.def(
        "softmax",
        [](const std::vector<double>& scores, int64_t block, bool fp64) {
            const StreamedSoftmax r = stream_softmax(scores, block, {}, fp64 ? Precision::fp64 : Precision::fp32);
            py::list blocks;
            for (const SoftmaxBlockState& b : r.record.blocks) {
                py::dict d;
                d["block"] = b.block;
                d["first_key"] = b.first_key;
                d["block_max"] = b.block_max;
                d["max_before"] = b.running_max_before;
                d["max_after"] = b.running_max_after;
                d["rescale"] = b.rescale;
                d["sum_before"] = b.running_sum_before;
                d["sum_after"] = b.running_sum_after;
                blocks.append(d);
            }
            py::dict d;
            d["blocks"] = blocks;
            d["plain"] = py::array_t<double>(static_cast<py::ssize_t>(r.plain.size()), r.plain.data());
            d["streamed"] = py::array_t<double>(static_cast<py::ssize_t>(r.streamed.size()), r.streamed.data());
            d["max_abs_diff"] = r.max_abs_diff;
            d["max_ulp"] = r.max_ulp;
            return d;
        },
        py::arg("scores"), py::arg("block") = 4, py::arg("fp64") = false,
        "The online softmax of one row of scores in blocks, as `flashsim softmax` runs it: each block's running "
        "max, rescale and running sum, the plain and streamed probabilities and their difference.");
    m.def(
        "attention_reference",
        [](const F32Array& q, const F32Array& k, const F32Array& v, bool causal, double scale) {
            const Problem p = head_problem(q, k, causal, scale, "fp32");
            return head_array(attention_reference(p, head_tensor(q, "Q"), head_tensor(k, "K"), head_tensor(v, "V")));
        },
        py::arg("q"), py::arg("k"), py::arg("v"), py::arg("causal") = false, py::arg("scale") = 0.0,
        "softmax(scale Q K^T [causal mask]) V in float64 for one head (arrays (N, d); scale 0: 1/sqrt(d)). "
        "Returns (1, 1, N, d).");
    m.def(
        "attention_backward_reference",
        [](const F32Array& q, const F32Array& k, const F32Array& v, const F32Array& dout, bool causal, double scale) {
            const Problem p = head_problem(q, k, causal, scale, "fp32");
            const Gradients g = attention_backward_reference(p, head_tensor(q, "Q"), head_tensor(k, "K"),
                                                             head_tensor(v, "V"), head_tensor(dout, "dO"));
            py::dict d;
            d["dQ"] = head_array(g.dQ);
            d["dK"] = head_array(g.dK);
            d["dV"] = head_array(g.dV);
            return d;
        },
        py::arg("q"), py::arg("k"), py::arg("v"), py::arg("dout"), py::arg("causal") = false, py::arg("scale") = 0.0,
        "The float64 gradients of sum(O * dO) for one head: a dict of dQ, dK, dV, each (1, 1, N, d).");
    m.def(
        "round_to",
        [](const F32Array& x, const std::string& dtype) {
            const DType t = dtype_of(dtype);
            py::array_t<float> out(std::vector<py::ssize_t>(x.shape(), x.shape() + x.ndim()));
            for (py::ssize_t a = 0; a < x.size(); ++a) out.mutable_data()[a] = round_to(t, x.data()[a]);
            return out;
        },
        py::arg("x"), py::arg("dtype"), "x rounded to fp16/bf16/fp32 (nearest, ties to even), as float32.");
    m.def(
        "machines",
        [] {
            py::dict d;
            for (const Machine& mc : machine_presets()) {
                py::dict e;
                e["description"] = mc.description;
                e["sram_bytes"] = mc.sram_bytes;
                e["hbm_bandwidth"] = mc.hbm_bandwidth;
                d[py::str(mc.name)] = e;
            }
            return d;
        },
        "The GPU presets: name -> description, SRAM a block may use (bytes), HBM bandwidth (bytes/s).");
}

// Your tensors through an algorithm (attend) and the longest N that fits a GPU (fit).
void bind_attend_fit(py::module_& m) {
    m.def(
        "attend",
        [](const F32Array& q, const F32Array& k, const F32Array& v, const std::string& algo, bool causal,
           const std::string& dtype, int64_t block_rows, int64_t block_cols, double scale, py::object dout,
           const std::string& gpu) {
            const Problem p = head_problem(q, k, causal, scale, dtype);
            if (v.ndim() != 2 || v.shape(0) != p.seq || v.shape(1) != p.head_dim)
                throw Error("Q, K, V (and dO) must have the same shape (N, d)");
            Inputs in;
            in.Q = head_tensor(q, "Q");
            in.K = head_tensor(k, "K");
            in.V = head_tensor(v, "V");
            Config c;
            const Algo a = algo_of(algo);
            c.algo = a;
            c.block_rows = block_rows;
            c.block_cols = block_cols;
            c.numerics = Numerics::on;
            c.l2 = L2Mode::off;
            c.timing = false;
            if (!dout.is_none()) {
                const F32Array g = dout.cast<F32Array>();
                if (g.ndim() != 2 || g.shape(0) != p.seq || g.shape(1) != p.head_dim)
                    throw Error("Q, K, V (and dO) must have the same shape (N, d)");
                in.dO = head_tensor(g, "dO");
                c.pass = Pass::both;
            }
            for (TensorF* t : {&in.Q, &in.K, &in.V, &in.dO})
                for (float& x : t->data) x = round_to(p.dtype, x);
            const Result r = simulate(p, find_machine(gpu), c, in);
            py::dict d = totals_dict(r.totals);
            d["algo"] = std::string(algo_name(r.algo));
            d["block_rows"] = r.block_rows;
            d["block_cols"] = r.block_cols;
            auto head = [](const TensorF& t) { return to_numpy(t.data, t.rows, t.cols); };
            if (r.output) d["O"] = head(*r.output);
            if (r.dQ) d["dQ"] = head(*r.dQ);
            if (r.dK) d["dK"] = head(*r.dK);
            if (r.dV) d["dV"] = head(*r.dV);
            return d;
        },
        py::arg("q"), py::arg("k"), py::arg("v"), py::arg("algo") = "flash2", py::arg("causal") = false,
        py::arg("dtype") = "fp16", py::arg("block_rows") = 0, py::arg("block_cols") = 0, py::arg("scale") = 0.0,
        py::arg("dout") = py::none(), py::arg("gpu") = "H200",
        "Run your Q, K, V (arrays (N, d), one head; rounded to dtype) through a simulated algorithm with its "
        "arithmetic, as `flashsim attend` does: a dict with 'O' (N, d) float32 (as the algorithm hands it back: "
        "standard and flash2 round it to dtype, flash1 keeps Algorithm 1's float32 O) and the run's "
        "counts (bytes per tensor, flops, steps, the blocks used). With dout= (N, d) the backward runs too and "
        "'dQ', 'dK', 'dV' come back. scale 0: 1/sqrt(d).");
    m.def(
        "fit",
        [](int64_t head_dim, int64_t heads, int64_t batch, const std::string& dtype, const std::string& algo,
           const std::string& pass, const std::string& gpu, double memory) {
            Problem shape;
            shape.batch = batch;
            shape.heads = heads;
            shape.head_dim = head_dim;
            shape.seq = 1;
            shape.dtype = dtype_of(dtype);
            shape.validate();
            const Algo a = algo_of(algo);
            const Pass ps = pass_of(pass);
            if (memory < 0) throw Error("memory must be a positive number of bytes (0: the GPU preset's)");
            const double cap = memory > 0 ? memory : usable_memory(find_machine(gpu));
            const FitResult f = longest_fit(shape, a, ps, cap);
            py::dict d;
            d["longest_n"] = f.longest_n;
            d["bytes_at_longest"] = f.bytes_at_longest;
            d["next_n"] = f.next_n;
            d["bytes_at_next"] = f.bytes_at_next;
            d["capacity"] = f.capacity;
            d["at_limit"] = f.at_limit;
            return d;
        },
        py::arg("head_dim") = 128, py::arg("heads") = 16, py::arg("batch") = 1, py::arg("dtype") = "bf16",
        py::arg("algo") = "flash2", py::arg("pass_") = "forward", py::arg("gpu") = "H200", py::arg("memory") = 0.0,
        "The longest sequence N (on the grid of eighths of a power of two) whose attention layer (B x H heads of "
        "dimension d) fits a GPU's memory, as `flashsim fit` searches it: a dict of longest_n, bytes_at_longest, "
        "next_n (the next grid point, which does not fit), bytes_at_next, capacity and at_limit. memory 0: the "
        "preset's usable memory, in bytes.");
}

}  // namespace

PYBIND11_MODULE(_flashsim, m) {
    m.doc() = "flashsim's simulator and the lab's tile machine (the C++ part of the flashsim package).";
    py::register_exception<Error>(m, "Error", PyExc_ValueError);
    bind_tile_machine(m);
    bind_simulator(m);
    bind_attend_fit(m);
}

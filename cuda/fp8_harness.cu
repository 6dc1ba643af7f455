// cuda/fp8_harness.cu — fcuda::run and compute_fp8 for the FP8 forward (cuda/flash2h_fp8.cu): its
// inputs are the generator's values in bf16 (the tensors a user holds), prepared to e4m3 with
// per-block scales outside the timed forward (the preparation is timed and reported apart, as
// FlashAttention-3 measures its FP8 forward on inputs already in FP8). Otherwise as run() does
// (cuda/harness.cu): outputs poisoned before every run, one checked run against the float64 CPU
// reference (small problems) and the standard kernel in bf16 on the same inputs, warm-up and timed
// runs each after an L2 flush, the median; DRAM bytes of one forward by CUPTI.
#include <algorithm>
#include <cmath>
#include <nvtx3/nvToolsExt.h>

#include "cuda/counters.hpp"
#include "cuda/variants.hpp"
#include "sim/reference.hpp"

namespace fcuda {

namespace {

// One set: bf16 sources, what the preparation makes of them, and the forward's outputs.
struct Fp8Set {
    DeviceBuffer Q, K, V, Q8, K8, Vt8, scales, O, LSE;
    Fp8Buffers buffers() const { return {Q8.as<uint8_t>(), K8.as<uint8_t>(), Vt8.as<uint8_t>(), scales.as<float>()}; }
    int64_t bytes() const {
        int64_t n = 0;
        for (const DeviceBuffer* b : {&Q, &K, &V, &Q8, &K8, &Vt8, &scales, &O, &LSE})
            n += static_cast<int64_t>(b->bytes());
        return n;
    }
};

sim::Problem as_bf16(const sim::Problem& p) {
    sim::Problem q = p;
    q.dtype = sim::DType::bf16;
    return q;
}

Fp8Set make_fp8_set(const sim::Problem& p) {
    const Fp8Layout z = fp8_layout(p);
    const int64_t elems = p.heads_total() * p.seq * p.head_dim;
    const auto b16 = static_cast<size_t>(elems * 2);
    Fp8Set s{DeviceBuffer(b16),
             DeviceBuffer(b16),
             DeviceBuffer(b16),
             DeviceBuffer(static_cast<size_t>(z.qk_bytes)),
             DeviceBuffer(static_cast<size_t>(z.qk_bytes)),
             DeviceBuffer(static_cast<size_t>(z.vt_bytes)),
             DeviceBuffer(static_cast<size_t>(z.scale_count) * 4),
             DeviceBuffer(b16),
             DeviceBuffer(static_cast<size_t>(p.heads_total() * p.seq) * 4)};
    generate_on_device(s.Q.get(), sim::DType::bf16, p.seed, sim::InputTensor::Q, elems);
    generate_on_device(s.K.get(), sim::DType::bf16, p.seed, sim::InputTensor::K, elems);
    generate_on_device(s.V.get(), sim::DType::bf16, p.seed, sim::InputTensor::V, elems);
    return s;
}

void poison_fp8_outputs(const Fp8Set& s, cudaStream_t st) {
    poison(s.O.get(), s.O.bytes(), st);
    poison(s.LSE.get(), s.LSE.bytes(), st);
}

// O of the checked run against float64 (small problems) and against standard in bf16 on the same inputs.
void check_fp8(const sim::Problem& p, const Fp8Set& set, const RunOptions& opt, Measurement& out) {
    const sim::Problem pb = as_bf16(p);
    const double work = double(p.heads_total()) * double(p.seq) * double(p.seq) * double(p.head_dim);
    const bool vs_ref = opt.check_reference && work <= opt.max_reference_work;
    if (!vs_ref && !opt.check_standard) return;
    sim::TensorF got(p.batch, p.heads, p.seq, p.head_dim);
    copy_to_host_float(set.O.get(), sim::DType::bf16, got.size(), got.data.data());
    if (vs_ref) {
        const sim::Inputs in = sim::generate_inputs(pb);
        out.vs_reference = sim::validate(got, sim::attention_reference(pb, in.Q, in.K, in.V), sim::DType::bf16);
    }
    if (opt.check_standard) {
        DeviceBuffer O(set.O.bytes()), LSE(set.LSE.bytes());
        Tensors t;
        t.Q = set.Q.get();
        t.K = set.K.get();
        t.V = set.V.get();
        t.O = O.get();
        t.LSE = LSE.as<float>();
        Workspace ws;
        forward_of("standard", pb, t, ws, 0);
        CUDA_CHECK(cudaDeviceSynchronize());
        sim::TensorF want(p.batch, p.heads, p.seq, p.head_dim);
        copy_to_host_float(O.get(), sim::DType::bf16, want.size(), want.data.data());
        out.vs_standard = sim::validate(got, want, sim::DType::bf16);
    }
}

}  // namespace

Measurement run_fp8(const sim::Problem& p, const std::string& variant, const RunOptions& opt) {
    if (variant != "flash2h" || opt.pass != Pass::forward)
        throw std::runtime_error("fp8 runs flash2h's forward only (FlashAttention-3's FP8 forward); got " + variant +
                                 " " + pass_name(opt.pass) + ": use --variant flash2h --pass forward, or bf16");
    std::string why;
    if (!flash2h_available(&why)) throw std::runtime_error(why);
    Measurement out;
    out.variant = variant;
    out.pass = opt.pass;
    out.l2_flush = l2_flush_name(l2_flush_mode(kTrainingFlush));
    out.tiles = flash2h_fp8_tiles(p);
    cudaStream_t s = 0;
    const int64_t elems = p.heads_total() * p.seq * p.head_dim;
    const int64_t fwd_bytes = 3 * elems + 2 * elems;  // what a forward reads and writes: e4m3 Q, K, V; bf16 O
    int copies = opt.input_copies;
    if (copies <= 0) {
        const double l2 = static_cast<double>(l2_bytes());
        copies =
            double(fwd_bytes) < 2 * l2 ? static_cast<int>(std::min(8.0, std::ceil(2 * l2 / double(fwd_bytes)))) : 1;
    }
    std::vector<Fp8Set> sets;
    for (int c = 0; c < copies; ++c) sets.push_back(make_fp8_set(p));
    for (const Fp8Set& set : sets) flash2h_fp8_prepare(p, set.Q.get(), set.K.get(), set.V.get(), set.buffers(), s);
    CUDA_CHECK(cudaDeviceSynchronize());
    // the checked run
    poison_fp8_outputs(sets[0], s);
    if (opt.nvtx) nvtxRangePushA("measure");  // the one launch ncu --nvtx-include measure/ profiles
    flash2h_fp8_forward(p, sets[0].buffers(), sets[0].O.get(), sets[0].LSE.as<float>(), s);
    if (opt.nvtx) nvtxRangePop();
    CUDA_CHECK(cudaDeviceSynchronize());
    out.peak_bytes = sets[0].bytes();
    const int64_t bad_first = count_nonfinite(sets[0].O.get(), sim::DType::bf16, elems);
    if (bad_first) out.note += "checked run left " + std::to_string(bad_first) + " non-finite/unwritten outputs; ";
    check_fp8(p, sets[0], opt, out);
    for (int w = 0; w < opt.warmup; ++w) {
        const Fp8Set& set = sets[w % copies];
        flash2h_fp8_prepare(p, set.Q.get(), set.K.get(), set.V.get(), set.buffers(), s);
        flash2h_fp8_forward(p, set.buffers(), set.O.get(), set.LSE.as<float>(), s);
    }
    CUDA_CHECK(cudaDeviceSynchronize());
    cudaEvent_t e0, e1, e2;
    CUDA_CHECK(cudaEventCreate(&e0));
    CUDA_CHECK(cudaEventCreate(&e1));
    CUDA_CHECK(cudaEventCreate(&e2));
    std::vector<float> fwd, prep;
    int last = 0;
    for (int r = 0; r < opt.repeats; ++r) {
        last = r % copies;
        const Fp8Set& set = sets[last];
        poison_fp8_outputs(set, s);
        if (opt.flush_l2) flush_l2(s);
        CUDA_CHECK(cudaEventRecord(e1, s));
        flash2h_fp8_forward(p, set.buffers(), set.O.get(), set.LSE.as<float>(), s);
        CUDA_CHECK(cudaEventRecord(e2, s));
        CUDA_CHECK(cudaEventSynchronize(e2));
        float ms = 0;
        CUDA_CHECK(cudaEventElapsedTime(&ms, e1, e2));
        fwd.push_back(ms);
    }
    // the preparation alone, each after an L2 flush
    for (int r = 0; r < opt.repeats; ++r) {
        const Fp8Set& set = sets[r % copies];
        if (opt.flush_l2) flush_l2(s);
        CUDA_CHECK(cudaEventRecord(e0, s));
        flash2h_fp8_prepare(p, set.Q.get(), set.K.get(), set.V.get(), set.buffers(), s);
        CUDA_CHECK(cudaEventRecord(e1, s));
        CUDA_CHECK(cudaEventSynchronize(e1));
        float a = 0;
        CUDA_CHECK(cudaEventElapsedTime(&a, e0, e1));
        prep.push_back(a);
    }
    for (cudaEvent_t e : {e0, e1, e2}) CUDA_CHECK(cudaEventDestroy(e));
    if (!fwd.empty()) {
        out.unwritten = count_nonfinite(sets[last].O.get(), sim::DType::bf16, elems);
        out.ms_median = median_of({fwd.begin(), fwd.end()});
        out.ms_min = *std::min_element(fwd.begin(), fwd.end());
        out.ms_max = *std::max_element(fwd.begin(), fwd.end());
        out.repeats = static_cast<int>(fwd.size());
        out.tflops = attention_flops(p, opt.pass) / (out.ms_median * 1e-3) / 1e12;
        out.prep_ms = median_of({prep.begin(), prep.end()});
    } else {
        out.unwritten = bad_first;
    }
    if (opt.counters) {
        if (opt.flush_l2) flush_l2(s);
        CUDA_CHECK(cudaDeviceSynchronize());
        const CounterValues c = read_counters([&] {
            flash2h_fp8_forward(p, sets[0].buffers(), sets[0].O.get(), sets[0].LSE.as<float>(), s);
            CUDA_CHECK(cudaDeviceSynchronize());
        });
        if (c.ok) {
            out.dram_read_bytes = std::llround(c.dram_read);
            out.dram_write_bytes = std::llround(c.dram_write);
            out.l2_bytes = std::llround(c.l2);
            out.counters_note =
                "CUPTI range profiler in process: one fp8 forward (not its preparation) after an L2 "
                "flush, " +
                std::to_string(c.kernels) + " kernel(s)";
        } else {
            out.counters_note = "DRAM counters not read in-process (" + c.why + ")";
        }
    } else {
        out.counters_note = "DRAM counters not requested";
    }
    return out;
}

Fp8Outputs compute_fp8(const sim::Problem& p) {
    check_flash2h_fp8(p);
    std::string why;
    if (!flash2h_available(&why)) throw std::runtime_error(why);
    Fp8Set set = make_fp8_set(p);
    flash2h_fp8_prepare(p, set.Q.get(), set.K.get(), set.V.get(), set.buffers(), 0);
    poison_fp8_outputs(set, 0);
    flash2h_fp8_forward(p, set.buffers(), set.O.get(), set.LSE.as<float>(), 0);
    CUDA_CHECK(cudaDeviceSynchronize());
    const Fp8Layout z = fp8_layout(p);
    Fp8Outputs o;
    o.T = z.T;
    o.n_pad = z.n_pad;
    o.O = sim::TensorF(p.batch, p.heads, p.seq, p.head_dim);
    copy_to_host_float(set.O.get(), sim::DType::bf16, o.O.size(), o.O.data.data());
    o.LSE.resize(static_cast<size_t>(p.heads_total() * p.seq));
    copy_to_host_float(set.LSE.get(), sim::DType::fp32, static_cast<int64_t>(o.LSE.size()), o.LSE.data());
    o.Q8.resize(static_cast<size_t>(z.qk_bytes));
    o.K8.resize(static_cast<size_t>(z.qk_bytes));
    o.Vt8.resize(static_cast<size_t>(z.vt_bytes));
    o.scales.resize(static_cast<size_t>(z.scale_count));
    CUDA_CHECK(cudaMemcpy(o.Q8.data(), set.Q8.get(), o.Q8.size(), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(o.K8.data(), set.K8.get(), o.K8.size(), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(o.Vt8.data(), set.Vt8.get(), o.Vt8.size(), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(o.scales.data(), set.scales.get(), o.scales.size() * 4, cudaMemcpyDeviceToHost));
    return o;
}

}  // namespace fcuda

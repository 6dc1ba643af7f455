// cuda/harness.cu — the one place that allocates, generates inputs, poisons, times and checks.
//
// run(): inputs generated on the device from sim::input_value (copies rotated when a set is
// smaller than 2x L2), outputs poisoned (all bits set: NaN) before every run, one checked run
// compared with the float64 CPU reference (small problems) and with `standard` (any size), then
// `warmup` untimed and `repeats` timed runs, each after an L2 flush, timed with CUDA events; the
// median, min and max are reported. After the last timed run every output element must be finite.
// DRAM and L2 bytes are read in process with CUPTI's range profiler (cuda/counters.cpp) on one
// extra run after an L2 flush; without CUPTI, counters_note says why and gives the ncu command.
#include <nvtx3/nvToolsExt.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>

#include "cuda/counters.hpp"
#include "cuda/reference_bwd.hpp"
#include "cuda/variants.hpp"
#include "sim/footprint.hpp"
#include "sim/reference.hpp"

namespace fcuda {

// ---- small device helpers ----------------------------------------------------------------------

namespace {

template <typename T>
__global__ void harness_generate(T* out, uint64_t seed, sim::InputTensor which, int64_t count) {
    for (int64_t k = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; k < count; k += int64_t(gridDim.x) * blockDim.x)
        out[k] = StorageTraits<T>::from_float(sim::input_value(seed, which, static_cast<uint64_t>(k)));
}

// Reads every 16 bytes of a buffer; stores only if the data say so, which they never do (the loads
// stay: the compiler cannot know). bench --counters-probe's read.
__global__ void harness_read_through(const uint4* p, int64_t count, unsigned* sink) {
    unsigned acc = 0;
    for (int64_t k = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; k < count; k += int64_t(gridDim.x) * blockDim.x) {
        const uint4 v = p[k];
        acc += v.x ^ v.y ^ v.z ^ v.w;
    }
    if (acc == 0x9e3779b9u) *sink = acc;
}

__global__ void harness_write_words(uint4* p, int64_t count) {
    for (int64_t k = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; k < count; k += int64_t(gridDim.x) * blockDim.x)
        p[k] = make_uint4(unsigned(k), 1u, 2u, 3u);
}

template <typename T>
__device__ float as_float(T x) {
    return StorageTraits<T>::to_float(x);
}
template <>
__device__ float as_float<float>(float x) {
    return x;
}

template <typename T>
__global__ void harness_count_nonfinite(const T* p, int64_t count, unsigned long long* bad) {
    unsigned long long local = 0;
    for (int64_t k = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; k < count; k += int64_t(gridDim.x) * blockDim.x)
        if (!isfinite(as_float(p[k]))) ++local;
    if (local) atomicAdd(bad, local);
}

template <typename T>
__global__ void harness_to_float(const T* p, int64_t count, float* out) {
    for (int64_t k = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; k < count; k += int64_t(gridDim.x) * blockDim.x)
        out[k] = as_float(p[k]);
}

template <typename T>
__global__ void harness_from_float(const float* in, int64_t count, T* out) {
    for (int64_t k = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; k < count; k += int64_t(gridDim.x) * blockDim.x)
        out[k] = StorageTraits<T>::from_float(in[k]);
}

template <typename F>
void dispatch_any(sim::DType dt, F&& f) {
    if (dt == sim::DType::fp32)
        f.template operator()<float>();
    else
        dispatch_dtype(dt, std::forward<F>(f));
}

}  // namespace

int64_t l2_bytes() {
    int dev = 0, l2 = 0;
    CUDA_CHECK(cudaGetDevice(&dev));
    CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
    return l2;
}

int sm_count() {
    int dev = 0, sms = 0;
    CUDA_CHECK(cudaGetDevice(&dev));
    CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    return sms;
}

double median_of(std::vector<double> v) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// write fills L2 with a memset's lines, part of them dirty, which the timed kernel's own misses then
// write back (the training rows' flush); read leaves L2 full of clean lines (a buffer written once,
// read through twice at first use; the decode rows' flush). FLASHSIM_L2_FLUSH=write|read overrides.
L2Flush l2_flush_mode(L2Flush fallback) {
    const char* e = sim::knob("FLASHSIM_L2_FLUSH");
    if (e == nullptr || *e == 0) return fallback;
    if (std::string(e) == "write") return L2Flush::write;
    if (std::string(e) == "read") return L2Flush::read;
    throw std::runtime_error(std::string("FLASHSIM_L2_FLUSH must be write or read (got '") + e +
                             "'): how the timed runs empty L2 between calls; unset it for each bench's own "
                             "(write for the training passes, read for decode)");
}

const char* l2_flush_name(L2Flush m) { return m == L2Flush::read ? "read" : "write"; }

std::string l2_flush_setting(bool decode) {
    return l2_flush_name(l2_flush_mode(decode ? kDecodeFlush : kTrainingFlush));
}

void flush_l2(cudaStream_t s, L2Flush fallback) {
    // one buffer a GPU, twice its L2, on the current one (the ring over NCCL flushes each GPU's L2)
    static std::map<int, DeviceBuffer> bufs, read_bufs, sinks;
    int dev = 0;
    CUDA_CHECK(cudaGetDevice(&dev));
    const size_t bytes = static_cast<size_t>(2 * l2_bytes());
    if (l2_flush_mode(fallback) == L2Flush::read) {
        DeviceBuffer &rb = read_bufs[dev], &sink = sinks[dev];
        sink.ensure(sizeof(unsigned));
        const bool fresh = rb.bytes() < bytes;
        rb.ensure(bytes);
        const int64_t words = static_cast<int64_t>(rb.bytes() / 16);
        if (fresh) {  // written once, then read through twice so that none of its lines stays dirty
            harness_write_words<<<1024, 256, 0, s>>>(rb.as<uint4>(), words);
            for (int k = 0; k < 2; ++k)
                harness_read_through<<<1024, 256, 0, s>>>(rb.as<const uint4>(), words, sink.as<unsigned>());
        }
        harness_read_through<<<1024, 256, 0, s>>>(rb.as<const uint4>(), words, sink.as<unsigned>());
        LAUNCH_CHECK();
        return;
    }
    DeviceBuffer& buf = bufs[dev];
    buf.ensure(bytes);
    CUDA_CHECK(cudaMemsetAsync(buf.get(), 0x5a, buf.bytes(), s));
}

std::vector<CounterProbe> probe_counters(int repeats) {
    const size_t big = size_t{576} << 20, out_bytes = size_t{64} << 20;  // up to 3 forward rows' Q, K, V
    DeviceBuffer in(big), out(out_bytes), sink(sizeof(unsigned));
    harness_write_words<<<1024, 256>>>(in.as<uint4>(), int64_t(big / 16));
    harness_write_words<<<1024, 256>>>(out.as<uint4>(), int64_t(out_bytes / 16));
    LAUNCH_CHECK();
    CUDA_CHECK(cudaDeviceSynchronize());
    auto read = [&](size_t bytes) {
        return [&, bytes] {
            harness_read_through<<<1024, 256>>>(in.as<const uint4>(), int64_t(bytes / 16), sink.as<unsigned>());
            LAUNCH_CHECK();
        };
    };
    struct Probe {
        std::string name, method;
        double r, w;
        std::function<void()> work;
        bool flush = true;  // the bench's L2 flush before the counted range
    };
    std::vector<Probe> probes = {{"one_warp", "the flush, then a kernel of one warp that writes nothing", 0, 0, [&] {
                                      harness_read_through<<<1, 32>>>(in.as<const uint4>(), 32, sink.as<unsigned>());
                                      LAUNCH_CHECK();
                                  }}};
    for (const size_t mib : {64, 192, 576})
        probes.push_back({"read_" + std::to_string(mib) + "MiB",
                          "the flush, then a kernel reading " + std::to_string(mib) + " MiB that writes nothing",
                          double(mib << 20), 0, read(mib << 20)});
    probes.push_back(
        {"write_64MiB", "the flush, then a kernel writing 64 MiB (a forward row's O)", 0, double(out_bytes), [&] {
             harness_write_words<<<1024, 256>>>(out.as<uint4>(), int64_t(out_bytes / 16));
             LAUNCH_CHECK();
         }});
    // where the reads' bounded extra writes come from: two reads in one range (a residue present
    // when the range begins is written once; a share of every read, twice), and a read with no
    // flush before its range (the last repeat's range read the same buffer and wrote nothing)
    const size_t mid = size_t{192} << 20;
    probes.push_back(
        {"read_192MiB_twice", "the flush, then two kernels each reading the same 192 MiB", double(2 * mid), 0, [&] {
             read(mid)();
             read(mid)();
         }});
    probes.push_back({"read_192MiB_noflush", "no flush, then a kernel reading 192 MiB (the last range read it too)",
                      double(mid), 0, read(mid), false});
    // the L2 capacity a re-read sees: the same S MiB read twice in one range, by the same grid (block
    // b reads the same addresses both times, on whatever SM it lands); DRAM reads between S (the
    // second read served by L2) and 2 S (none of it)
    for (const size_t mib : {8, 16, 24, 32, 40, 48, 56, 64}) {
        const size_t bytes = mib << 20;
        probes.push_back({"reread_" + std::to_string(mib) + "MiB",
                          "the flush, then two kernels each reading the same " + std::to_string(mib) +
                              " MiB (1024 blocks of 256 threads, grid-stride 16-byte loads)",
                          double(2 * bytes), 0, [&, bytes] {
                              read(bytes)();
                              read(bytes)();
                          }});
    }
    std::vector<CounterProbe> res;
    for (const Probe& p : probes) {
        CounterProbe c;
        c.name = p.name;
        c.method = p.method;
        c.work_read = p.r;
        c.work_write = p.w;
        std::vector<double> rd, wr;
        for (int k = 0; k < repeats; ++k) {
            if (p.flush) flush_l2(0);
            CUDA_CHECK(cudaDeviceSynchronize());
            const CounterValues v = read_counters([&] {
                p.work();
                CUDA_CHECK(cudaDeviceSynchronize());
            });
            if (!v.ok) {
                c.why = v.why;
                break;
            }
            rd.push_back(v.dram_read);
            wr.push_back(v.dram_write);
        }
        if (c.why.empty()) {
            c.dram_read = median_of(rd);
            c.dram_write = median_of(wr);
        }
        res.push_back(c);
    }
    return res;
}

// bench --launch-probe's block that holds shared memory (HOLD: the most a block may, the carve-out set
// to all shared; otherwise none and the default carve-out): the SM must be set to a carve-out that holds
// it before the block starts. The store never happens (sink is null); the compiler cannot know.
template <bool HOLD>
__global__ void harness_hold_smem(unsigned* sink) {
    extern __shared__ unsigned held[];
    if (sink != nullptr && threadIdx.x == 0) {
        held[0] = blockIdx.x;
        *sink = held[0];
    }
}

namespace {

// The most dynamic shared memory a block may ask for on the current device (opt-in).
int max_smem_optin() {
    int dev = 0, optin = 0;
    CUDA_CHECK(cudaGetDevice(&dev));
    CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    return optin;
}

// Launches harness_hold_smem<HOLD> on every SM; each kind's attributes are set once, at its first use,
// so that nothing but the launch lands between a timed call's events.
template <bool HOLD>
void hold_smem(cudaStream_t s) {
    static const int bytes = [] {
        if (!HOLD) return 0;
        const int b = max_smem_optin();
        CUDA_CHECK(cudaFuncSetAttribute(harness_hold_smem<true>, cudaFuncAttributeMaxDynamicSharedMemorySize, b));
        CUDA_CHECK(cudaFuncSetAttribute(harness_hold_smem<true>, cudaFuncAttributePreferredSharedMemoryCarveout,
                                        cudaSharedmemCarveoutMaxShared));
        return b;
    }();
    harness_hold_smem<HOLD><<<sm_count(), 128, bytes, s>>>(nullptr);
    LAUNCH_CHECK();
}

}  // namespace

void generate_on_device(void* out, sim::DType dt, uint64_t seed, sim::InputTensor which, int64_t count) {
    dispatch_dtype(dt, [&]<typename T>() {
        harness_generate<T><<<1024, 256>>>(static_cast<T*>(out), seed, which, count);
        LAUNCH_CHECK();
    });
}

void poison(void* p, size_t bytes, cudaStream_t s) {
    if (p && bytes) CUDA_CHECK(cudaMemsetAsync(p, 0xff, bytes, s));
}

int64_t count_nonfinite(const void* p, sim::DType dt, int64_t count) {
    DeviceBuffer bad(sizeof(unsigned long long));
    CUDA_CHECK(cudaMemset(bad.get(), 0, bad.bytes()));
    dispatch_any(dt, [&]<typename T>() {
        harness_count_nonfinite<T><<<1024, 256>>>(static_cast<const T*>(p), count, bad.as<unsigned long long>());
        LAUNCH_CHECK();
    });
    unsigned long long h = 0;
    CUDA_CHECK(cudaMemcpy(&h, bad.get(), sizeof h, cudaMemcpyDeviceToHost));
    return static_cast<int64_t>(h);
}

void copy_to_host_float(const void* p, sim::DType dt, int64_t count, float* out) {
    DeviceBuffer tmp(static_cast<size_t>(count) * sizeof(float));
    dispatch_any(dt, [&]<typename T>() {
        harness_to_float<T><<<1024, 256>>>(static_cast<const T*>(p), count, tmp.as<float>());
        LAUNCH_CHECK();
    });
    CUDA_CHECK(cudaMemcpy(out, tmp.get(), tmp.bytes(), cudaMemcpyDeviceToHost));
}

// ---- the public API ------------------------------------------------------------------------------

const char* pass_name(Pass p) {
    switch (p) {
        case Pass::forward:
            return "forward";
        case Pass::backward:
            return "backward";
        case Pass::step:
            return "step";
    }
    return "?";
}

std::pair<std::string, std::string> step_pair(const std::string& variant) {
    const size_t plus = variant.find('+');
    if (plus == std::string::npos) return {variant, variant};
    return {variant.substr(0, plus), variant.substr(plus + 1)};
}

namespace {
// A backward reads what a forward left: standard's the P in its workspace, flash2's and flash2h's
// O and the log-sum-exp LSE (natural log, both forwards store the same).
bool pairs_with(const std::string& fwd, const std::string& bwd) {
    if (bwd == "standard") return fwd == "standard";
    return (bwd == "flash2" || bwd == "flash2h") && (fwd == "flash2" || fwd == "flash2h");
}
}  // namespace

bool device_available(std::string* why) {
    int n = 0;
    const cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        // cudaErrorInsufficientDriver also means "no driver at all": the runtime cannot tell the
        // two apart, so ask whether the driver library is there before blaming its version.
        if (why) {
            int drv = 0;
            const bool driver = cudaDriverGetVersion(&drv) == cudaSuccess && drv > 0;
            if (e == cudaErrorNoDevice)
                *why = "no CUDA GPU found (the NVIDIA driver is loaded but sees no device)";
            else if (!driver)
                *why = "no NVIDIA GPU driver on this machine (so no CUDA GPU to run on)";
            else if (e == cudaErrorInsufficientDriver)
                *why = "the NVIDIA driver (CUDA " + std::to_string(drv / 1000) + "." + std::to_string(drv % 1000 / 10) +
                       ") is older than this build's CUDA runtime (" + std::to_string(CUDART_VERSION / 1000) + "." +
                       std::to_string(CUDART_VERSION % 1000 / 10) + "): update the driver";
            else
                *why = std::string("no usable CUDA GPU (") + cudaGetErrorString(e) + ")";
        }
        cudaGetLastError();
        return false;
    }
    if (n == 0) {
        if (why) *why = "no CUDA GPU found";
        return false;
    }
    return true;
}

std::string device_name() {
    int dev = 0;
    CUDA_CHECK(cudaGetDevice(&dev));
    cudaDeviceProp prop{};
    CUDA_CHECK(cudaGetDeviceProperties(&prop, dev));
    return prop.name;
}

std::string driver_version() {
    int v = 0;
    CUDA_CHECK(cudaDriverGetVersion(&v));
    return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

std::vector<std::string> variants() { return {"standard", "flash1", "flash2", "flash2h"}; }

bool variant_available(const std::string& variant, std::string* why) {
    if (!device_available(why)) return false;
    const auto [fwd, bwd] = step_pair(variant);
    for (const std::string& v : {fwd, bwd})
        if (v == "flash2h" && !flash2h_available(why)) return false;
    return true;
}

bool supports(const std::string& variant, Pass pass) {
    if (pass == Pass::step) {
        const auto [fwd, bwd] = step_pair(variant);
        return supports(fwd, Pass::forward) && supports(bwd, Pass::backward) && pairs_with(fwd, bwd);
    }
    if (variant.find('+') != std::string::npos) return false;  // pairs are for steps only
    if (variant == "standard" || variant == "flash2" || variant == "flash2h") return true;
    if (variant == "flash1") return pass == Pass::forward;
    return false;
}

static void check_problem(const sim::Problem& p) {
    p.validate();
    if (p.head_dim != 64 && p.head_dim != 128)
        throw std::runtime_error("cuda kernels support head_dim 64 or 128 (got " + std::to_string(p.head_dim) + ")");
    if (p.dtype == sim::DType::fp8) {
        check_flash2h_fp8(p);  // flash2h's forward alone takes fp8 (the variant is checked by run)
    } else if (p.dtype != sim::DType::fp16 && p.dtype != sim::DType::bf16) {
        throw std::runtime_error("cuda kernels store fp16, bf16 or (flash2h's forward) fp8 (got " +
                                 std::string(sim::dtype_name(p.dtype)) + ")");
    }
    if (p.window > 0) throw std::runtime_error("cuda kernels do not implement sliding windows (window > 0)");
    if (p.pad_left > 0) throw std::runtime_error("cuda kernels do not implement left padding (pad_left > 0)");
    if (p.heads_total() > 65535)
        throw std::runtime_error("cuda kernels launch one grid row per (batch, head), at most 65,535; B*H = " +
                                 std::to_string(p.heads_total()) + ": split the batch");
}

TileConfig tile_config(const std::string& variant, const sim::Problem& p, Pass pass) {
    check_problem(p);
    if (!supports(variant, pass))
        throw std::runtime_error("variant '" + variant + "' has no " + pass_name(pass) +
                                 " pass (variants: standard, flash1, flash2, flash2h; flash1 is forward only; a "
                                 "step pairs a forward and a backward that reads it: standard with standard, "
                                 "flash2 or flash2h with flash2 or flash2h)");
    if (p.dtype == sim::DType::fp8) {
        if (variant != "flash2h" || pass != Pass::forward)
            throw std::runtime_error("fp8 runs flash2h's forward only; got " + variant + " " + pass_name(pass));
        return flash2h_fp8_tiles(p);
    }
    if (pass == Pass::step) return tile_config(step_pair(variant).second, p, Pass::backward);
    if (variant == "standard") return standard_tiles(p, pass);
    if (variant == "flash1") return flash1_tiles(p);
    if (variant == "flash2h") return pass == Pass::forward ? flash2h_tiles(p) : flash2h_bwd_tiles(p);
    return pass == Pass::forward ? flash2_tiles(p) : flash2_bwd_tiles(p);
}

double attention_flops(const sim::Problem& p, Pass pass) {
    double f = 4.0 * double(p.batch) * double(p.heads) * double(p.seq) * double(p.seq) * double(p.head_dim);
    if (p.causal) f *= 0.5;
    if (pass == Pass::backward) f *= 2.5;
    if (pass == Pass::step) f *= 3.5;
    return f;
}

void forward_of(const std::string& variant, const sim::Problem& p, const Tensors& t, Workspace& ws, cudaStream_t s) {
    if (variant == "standard")
        standard_forward(p, t, ws, s);
    else if (variant == "flash1")
        flash1_forward(p, t, ws, s);
    else if (variant == "flash2")
        flash2_forward(p, t, ws, s);
    else if (variant == "flash2h")
        flash2h_forward(p, t, ws, s);
    else
        throw std::runtime_error("unknown variant '" + variant + "'");
}

void backward_of(const std::string& variant, const sim::Problem& p, const Tensors& t, Workspace& ws, cudaStream_t s) {
    if (variant == "standard")
        standard_backward(p, t, ws, s);
    else if (variant == "flash2")
        flash2_backward(p, t, ws, s);
    else if (variant == "flash2h")
        flash2h_backward(p, t, ws, s);
    else
        throw std::runtime_error("variant '" + variant + "' has no backward pass");
}

namespace {

// One full set of inputs and outputs.
struct Set {
    DeviceBuffer Q, K, V, dO, O, LSE, dQ, dK, dV;
    Tensors tensors() const {
        Tensors t;
        t.Q = Q.get();
        t.K = K.get();
        t.V = V.get();
        t.dO = dO.get();
        t.O = O.get();
        t.LSE = LSE.as<float>();
        t.dQ = dQ.get();
        t.dK = dK.get();
        t.dV = dV.get();
        return t;
    }
};

struct Problem3 {  // sizes derived from a problem
    int64_t elems, rows;
    size_t bytes;
};
Problem3 sizes(const sim::Problem& p) {
    const int64_t elems = p.heads_total() * p.seq * p.head_dim;
    return {elems, p.heads_total() * p.seq, static_cast<size_t>(elems * p.elem_bytes())};
}

// The buffers of one pass; the inputs (Q, K, V, and dO for a backward) filled by `fill(buffer,
// which)`: the generator's values by default (make_set), the caller's tensors in compute().
template <typename Fill>
Set alloc_set(const sim::Problem& p, bool backward, Fill fill) {
    const auto z = sizes(p);
    Set s;
    s.Q = DeviceBuffer(z.bytes);
    s.K = DeviceBuffer(z.bytes);
    s.V = DeviceBuffer(z.bytes);
    s.O = DeviceBuffer(z.bytes);
    s.LSE = DeviceBuffer(static_cast<size_t>(z.rows) * 4);
    fill(s.Q.get(), sim::InputTensor::Q);
    fill(s.K.get(), sim::InputTensor::K);
    fill(s.V.get(), sim::InputTensor::V);
    if (backward) {
        s.dO = DeviceBuffer(z.bytes);
        s.dQ = DeviceBuffer(z.bytes);
        s.dK = DeviceBuffer(z.bytes);
        s.dV = DeviceBuffer(z.bytes);
        fill(s.dO.get(), sim::InputTensor::dO);
    }
    return s;
}

Set make_set(const sim::Problem& p, bool backward) {
    const int64_t elems = sizes(p).elems;
    return alloc_set(p, backward, [&](void* buf, sim::InputTensor which) {
        generate_on_device(buf, p.dtype, p.seed, which, elems);
    });
}

// What a pass writes: the forward O and LSE, the backward dQ, dK, dV, a step all five.
void poison_outputs(const Set& set, Pass pass, cudaStream_t s) {
    if (pass != Pass::backward) {
        poison(set.O.get(), set.O.bytes(), s);
        poison(set.LSE.get(), set.LSE.bytes(), s);
    }
    if (pass != Pass::forward) {
        poison(set.dQ.get(), set.dQ.bytes(), s);
        poison(set.dK.get(), set.dK.bytes(), s);
        poison(set.dV.get(), set.dV.bytes(), s);
    }
}

int64_t nonfinite_outputs(const sim::Problem& p, const Set& set, Pass pass) {
    const auto z = sizes(p);
    int64_t n = 0;
    if (pass != Pass::backward) n += count_nonfinite(set.O.get(), p.dtype, z.elems);
    if (pass != Pass::forward)
        n += count_nonfinite(set.dQ.get(), p.dtype, z.elems) + count_nonfinite(set.dK.get(), p.dtype, z.elems) +
             count_nonfinite(set.dV.get(), p.dtype, z.elems);
    return n;
}

sim::TensorF to_host(const sim::Problem& p, const void* dev) {
    sim::TensorF t(p.batch, p.heads, p.seq, p.head_dim);
    copy_to_host_float(dev, p.dtype, t.size(), t.data.data());
    return t;
}

// The worst of several comparisons (counts add up).
sim::ErrorStats worst(const std::vector<sim::ErrorStats>& v) {
    sim::ErrorStats w;
    double num = 0;
    for (const auto& e : v) {
        if (e.max_abs >= w.max_abs) {
            w.max_abs = e.max_abs;
            w.first_bad = e.first_bad;
            w.where = e.where;
        }
        num = std::max(num, e.rel_frobenius);
        w.max_ulp = std::max(w.max_ulp, e.max_ulp);
        w.identical += e.identical;
        w.count += e.count;
        w.nonfinite += e.nonfinite;
    }
    w.rel_frobenius = num;
    return w;
}

// O (forward, step) then dQ, dK, dV (backward, step).
std::vector<sim::TensorF> host_outputs(const sim::Problem& p, const Set& set, Pass pass) {
    std::vector<sim::TensorF> out;
    if (pass != Pass::backward) out.push_back(to_host(p, set.O.get()));
    if (pass != Pass::forward)
        for (const DeviceBuffer* b : {&set.dQ, &set.dK, &set.dV}) out.push_back(to_host(p, b->get()));
    return out;
}

int64_t set_bytes_of(const Set& s) {
    int64_t n = 0;
    for (const DeviceBuffer* b : {&s.Q, &s.K, &s.V, &s.dO, &s.O, &s.LSE, &s.dQ, &s.dK, &s.dV})
        n += static_cast<int64_t>(b->bytes());
    return n;
}
int64_t workspace_bytes(const Workspace& ws) {
    return static_cast<int64_t>(ws.a.bytes() + ws.b.bytes() + ws.c.bytes() + ws.d.bytes());
}

}  // namespace

Measurement run(const sim::Problem& p, const std::string& variant, const RunOptions& opt) {
    check_problem(p);
    if (p.dtype == sim::DType::fp8) return run_fp8(p, variant, opt);
    Measurement out;
    out.variant = variant;
    out.l2_flush = l2_flush_name(l2_flush_mode(kTrainingFlush));
    out.pass = opt.pass;
    out.tiles = tile_config(variant, p, opt.pass);
    const auto [fwd_variant, bwd_variant] = step_pair(variant);
    if (opt.pass == Pass::step) out.tiles_forward = tile_config(fwd_variant, p, Pass::forward);
    const bool bwd = opt.pass == Pass::backward;
    const bool grads = opt.pass != Pass::forward;  // dO in, dQ, dK, dV out
    cudaStream_t s = 0;
    const auto z = sizes(p);

    // input copies: rotate when a set is small next to the L2
    const size_t set_bytes = z.bytes * (grads ? 8 : 4);
    int copies = opt.input_copies;
    if (copies <= 0) {
        const double l2 = static_cast<double>(l2_bytes());
        copies = set_bytes < 2 * l2 ? static_cast<int>(std::min(8.0, std::ceil(2 * l2 / double(set_bytes)))) : 1;
    }
    if (bwd && variant == "standard") copies = 1;  // its backward reads the P that its forward left
    std::vector<Set> sets;
    for (int c = 0; c < copies; ++c) sets.push_back(make_set(p, grads));
    Workspace ws;
    auto pass_fn = [&](const Set& set) {
        const Tensors t = set.tensors();
        if (opt.pass != Pass::backward) forward_of(fwd_variant, p, t, ws, s);
        if (opt.pass != Pass::forward) backward_of(bwd_variant, p, t, ws, s);
    };
    if (bwd)  // O and LSE for the backward, from the same variant's forward; copy 0 last
        for (int c = copies - 1; c >= 0; --c) forward_of(variant, p, sets[c].tensors(), ws, s);
    CUDA_CHECK(cudaDeviceSynchronize());

    // the checked run
    poison_outputs(sets[0], opt.pass, s);
    if (opt.nvtx) nvtxRangePushA("measure");
    pass_fn(sets[0]);
    if (opt.nvtx) nvtxRangePop();
    CUDA_CHECK(cudaDeviceSynchronize());
    out.peak_bytes = set_bytes_of(sets[0]) + workspace_bytes(ws);
    const int64_t bad_first = nonfinite_outputs(p, sets[0], opt.pass);
    if (bad_first) out.note += "checked run left " + std::to_string(bad_first) + " non-finite/unwritten outputs; ";

    const double work = double(p.heads_total()) * double(p.seq) * double(p.seq) * double(p.head_dim);
    const bool vs_ref = opt.check_reference && work <= opt.max_reference_work;
    const bool vs_std = opt.check_standard && variant != "standard";
    if (vs_ref || vs_std) {  // the checked run's outputs, copied to the host once for both comparisons
        const std::vector<sim::TensorF> got = host_outputs(p, sets[0], opt.pass);
        if (vs_ref) {
            const sim::Inputs in = sim::generate_inputs(p);
            std::vector<sim::ErrorStats> e;
            size_t k = 0;
            if (opt.pass != Pass::backward)
                e.push_back(sim::validate(got[k++], sim::attention_reference(p, in.Q, in.K, in.V), p.dtype));
            if (opt.pass != Pass::forward) {
                const sim::TensorF dO = sim::generate_input(p, sim::InputTensor::dO);
                const GradsD g = fcuda::attention_backward_reference(p, in.Q, in.K, in.V, dO);
                for (const auto* want : {&g.dQ, &g.dK, &g.dV}) e.push_back(sim::validate(got[k++], *want, p.dtype));
            }
            out.vs_reference = worst(e);
        }
        if (vs_std) {
            Set ref = make_set(p, grads);
            Workspace ws_ref;
            const Tensors t = ref.tensors();
            standard_forward(p, t, ws_ref, s);
            if (grads) standard_backward(p, t, ws_ref, s);
            CUDA_CHECK(cudaDeviceSynchronize());
            auto want = host_outputs(p, ref, opt.pass);
            std::vector<sim::ErrorStats> e;
            for (size_t k = 0; k < got.size(); ++k) e.push_back(sim::validate(got[k], want[k], p.dtype));
            out.vs_standard = worst(e);
        }
    }

    // warm-up and timed runs
    for (int w = 0; w < opt.warmup; ++w) pass_fn(sets[w % copies]);
    CUDA_CHECK(cudaDeviceSynchronize());
    std::vector<float> ms;
    cudaEvent_t start, stop;
    CUDA_CHECK(cudaEventCreate(&start));
    CUDA_CHECK(cudaEventCreate(&stop));
    int last = 0;
    for (int r = 0; r < opt.repeats; ++r) {
        last = r % copies;
        poison_outputs(sets[last], opt.pass, s);
        if (opt.flush_l2) flush_l2(s);
        CUDA_CHECK(cudaEventRecord(start, s));
        pass_fn(sets[last]);
        CUDA_CHECK(cudaEventRecord(stop, s));
        CUDA_CHECK(cudaEventSynchronize(stop));
        float t = 0;
        CUDA_CHECK(cudaEventElapsedTime(&t, start, stop));
        ms.push_back(t);
    }
    CUDA_CHECK(cudaEventDestroy(start));
    CUDA_CHECK(cudaEventDestroy(stop));
    if (!ms.empty()) {
        out.unwritten = nonfinite_outputs(p, sets[last], opt.pass);
        std::sort(ms.begin(), ms.end());
        const size_t n = ms.size();
        out.ms_median = n % 2 ? ms[n / 2] : 0.5 * (ms[n / 2 - 1] + ms[n / 2]);
        out.ms_min = ms.front();
        out.ms_max = ms.back();
        out.repeats = static_cast<int>(n);
        out.tflops = attention_flops(p, opt.pass) / (out.ms_median * 1e-3) / 1e12;
    } else {
        out.unwritten = bad_first;
    }
    // hardware counters: one more run of the pass, after an L2 flush, under CUPTI's range profiler
    const std::string ncu_hint =
        "measure with: ncu --clock-control none --nvtx --nvtx-include measure/ --metrics "
        "dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum flashsim bench --nvtx --warmup 0 --repeats 0 "
        "--no-check ...";
    if (opt.counters) {
        if (opt.flush_l2) flush_l2(s);
        CUDA_CHECK(cudaDeviceSynchronize());
        const CounterValues c = read_counters([&] {
            pass_fn(sets[0]);
            CUDA_CHECK(cudaDeviceSynchronize());
        });
        if (c.ok) {
            out.dram_read_bytes = std::llround(c.dram_read);
            out.dram_write_bytes = std::llround(c.dram_write);
            out.l2_bytes = std::llround(c.l2);
            out.counters_note = "CUPTI range profiler in process: one run of the pass after an L2 flush, " +
                                std::to_string(c.kernels) + " kernel(s) summed, " + std::to_string(c.passes) +
                                " pass(es)";
        } else {
            out.counters_note = "DRAM counters not read in-process (" + c.why + "); " + ncu_hint;
        }
    } else {
        out.counters_note = "DRAM counters not requested; " + ncu_hint;
    }
    return out;
}

// ---- the user's own tensors (flashsim attend --backend cuda) and sampled rows (--scale) --------

namespace {
// Host floats into device storage of p.dtype (rounded to nearest, as the generator's values are).
void upload_as(void* dev, sim::DType dt, const std::vector<float>& host) {
    const int64_t count = static_cast<int64_t>(host.size());
    DeviceBuffer tmp(static_cast<size_t>(count) * sizeof(float));
    CUDA_CHECK(cudaMemcpy(tmp.get(), host.data(), tmp.bytes(), cudaMemcpyHostToDevice));
    dispatch_dtype(dt, [&]<typename T>() {
        harness_from_float<T><<<1024, 256>>>(tmp.as<float>(), count, static_cast<T*>(dev));
        LAUNCH_CHECK();
    });
    CUDA_CHECK(cudaDeviceSynchronize());
}

Outputs outputs_of(const sim::Problem& p, const std::string& fwd_variant, const Set& set, bool bwd) {
    Outputs o;
    o.O = to_host(p, set.O.get());
    if (fwd_variant == "flash2" || fwd_variant == "flash2h") {
        o.LSE.resize(static_cast<size_t>(p.heads_total() * p.seq));
        copy_to_host_float(set.LSE.get(), sim::DType::fp32, static_cast<int64_t>(o.LSE.size()), o.LSE.data());
    }
    if (bwd) {
        o.dQ = to_host(p, set.dQ.get());
        o.dK = to_host(p, set.dK.get());
        o.dV = to_host(p, set.dV.get());
    }
    return o;
}

// The pass on the set: the forward (outputs poisoned first), then for a backward the backward.
void run_pass_once(const sim::Problem& p, const std::string& variant, bool bwd, const Set& set) {
    const auto [fwd_variant, bwd_variant] = step_pair(variant);
    Workspace ws;
    const Tensors t = set.tensors();
    poison(set.O.get(), set.O.bytes(), 0);
    poison(set.LSE.get(), set.LSE.bytes(), 0);
    forward_of(fwd_variant, p, t, ws, 0);
    if (bwd) {
        poison_outputs(set, Pass::backward, 0);
        backward_of(bwd_variant, p, t, ws, 0);
    }
    CUDA_CHECK(cudaDeviceSynchronize());
}
}  // namespace

Outputs compute(const sim::Problem& p, const std::string& variant, Pass pass) {
    check_problem(p);
    (void)tile_config(variant, p, pass);
    const bool bwd = pass != Pass::forward;  // a backward runs its forward first, as a step does
    Set set = make_set(p, bwd);
    run_pass_once(p, variant, bwd, set);
    return outputs_of(p, step_pair(variant).first, set, bwd);
}

std::string clear_error_state() {
    const cudaError_t sync = cudaDeviceSynchronize();
    const cudaError_t last = cudaGetLastError();  // clears an error that is not sticky
    if (sync == cudaSuccess || cudaDeviceSynchronize() == cudaSuccess) return "";
    const cudaError_t e = sync != cudaSuccess ? sync : last;
    return std::string("the GPU context is lost (") + cudaGetErrorString(e) +
           "): later cases in this process cannot run; run the bench again from the next case";
}

int64_t device_bytes_needed(const sim::Problem& p, const std::string& variant, Pass pass) {
    check_problem(p);
    (void)tile_config(variant, p, pass);
    const auto [fwd_variant, bwd_variant] = step_pair(variant);
    const auto z = sizes(p);
    const bool bwd = pass != Pass::forward;
    int64_t n = static_cast<int64_t>(z.bytes) * (bwd ? 8 : 4) + z.rows * 4;  // Q, K, V, O (dO, dQ, dK, dV), LSE
    n += z.elems * 4;  // one tensor's float32 staging copy while uploading
    if (bwd) return n + step_workspace_bytes(bwd_variant, p);
    const int64_t BH = p.heads_total(), N = p.seq;
    if (fwd_variant == "standard") n += 2 * BH * N * N * p.elem_bytes();  // S, P
    if (fwd_variant == "flash1") n += z.elems * 4 + 2 * z.rows * 4;       // O (fp32), l, m
    return n;
}

double device_free_bytes() {
    size_t free_b = 0, total_b = 0;
    CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
    return double(free_b);
}

Outputs compute(const sim::Problem& p, const std::string& variant, Pass pass, const sim::TensorF& Q,
                const sim::TensorF& K, const sim::TensorF& V, const sim::TensorF* dO) {
    check_problem(p);
    (void)tile_config(variant, p, pass);
    const bool bwd = pass != Pass::forward;
    for (const sim::TensorF* t : {&Q, &K, &V, bwd ? dO : &Q}) {
        if (!t) throw std::runtime_error("a backward needs dO");
        if (t->batch != p.batch || t->heads != p.heads || t->rows != p.seq || t->cols != p.head_dim)
            throw std::runtime_error("a tensor's shape differs from the problem's (B, H, N, d)");
    }
    const int64_t need = device_bytes_needed(p, variant, pass);
    const double free_b = device_free_bytes();
    if (double(need) > free_b)
        throw OutOfDeviceMemory("the " + std::string(pass_name(pass)) + " pass of " + variant + " needs " +
                                    std::to_string(need) + " bytes of GPU memory and " +
                                    std::to_string(static_cast<int64_t>(free_b)) + " are free",
                                need, free_b);
    Set s = alloc_set(p, bwd, [&](void* buf, sim::InputTensor which) {
        const sim::TensorF& src = which == sim::InputTensor::Q   ? Q
                                  : which == sim::InputTensor::K ? K
                                  : which == sim::InputTensor::V ? V
                                                                 : *dO;
        upload_as(buf, p.dtype, src.data);
    });
    run_pass_once(p, variant, bwd, s);
    return outputs_of(p, step_pair(variant).first, s, bwd);
}

SampledRows compute_rows(const sim::Problem& p, const std::string& variant, Pass pass,
                         const std::vector<int64_t>& rows) {
    check_problem(p);
    (void)tile_config(variant, p, pass);
    const bool bwd = pass != Pass::forward;
    const auto z = sizes(p);
    for (int64_t r : rows)
        if (r < 0 || r >= z.rows) throw std::runtime_error("compute_rows: row " + std::to_string(r) + " out of range");
    Set set = make_set(p, bwd);
    run_pass_once(p, variant, bwd, set);
    SampledRows out;
    out.rows = rows;
    const int64_t d = p.head_dim, e = p.elem_bytes();
    std::vector<float> row(static_cast<size_t>(d));
    auto take = [&](const DeviceBuffer& b, std::vector<float>& into) {
        for (int64_t r : rows) {
            copy_to_host_float(static_cast<const char*>(b.get()) + r * d * e, p.dtype, d, row.data());
            into.insert(into.end(), row.begin(), row.end());
        }
    };
    take(set.O, out.O);
    if (step_pair(variant).first != "standard" && step_pair(variant).first != "flash1")
        for (int64_t r : rows) {
            float v = 0;
            copy_to_host_float(static_cast<const char*>(set.LSE.get()) + r * 4, sim::DType::fp32, 1, &v);
            out.LSE.push_back(v);
        }
    if (bwd) {
        take(set.dQ, out.dQ);
        take(set.dK, out.dK);
        take(set.dV, out.dV);
    }
    out.nonfinite = nonfinite_outputs(p, set, pass);
    return out;
}

sim::TensorF device_input(const sim::Problem& p, sim::InputTensor which) {
    const auto z = sizes(p);
    DeviceBuffer buf(z.bytes);
    generate_on_device(buf.get(), p.dtype, p.seed, which, z.elems);
    CUDA_CHECK(cudaDeviceSynchronize());
    return to_host(p, buf.get());
}

// ---- decoding (cuda/decode.cu) ------------------------------------------------------------------

namespace {

struct DecodeSet {
    DeviceBuffer Q, K, V, O, LSE, O_part, LSE_part, counters;
    DecodeTensors tensors() const {
        DecodeTensors t;
        t.Q = Q.get();
        t.K = K.get();
        t.V = V.get();
        t.O = O.get();
        t.LSE = LSE.as<float>();
        t.O_part = O_part.as<float>();
        t.LSE_part = LSE_part.as<float>();
        t.counters = counters.as<unsigned>();
        return t;
    }
    int64_t bytes() const {
        int64_t n = 0;
        for (const DeviceBuffer* b : {&Q, &K, &V, &O, &LSE, &O_part, &LSE_part, &counters})
            n += static_cast<int64_t>(b->bytes());
        return n;
    }
};

DecodeSet make_decode_set(const sim::DecodeProblem& p, const DecodePlan& plan) {
    const int64_t e = sim::dtype_bytes(p.dtype), d = p.head_dim;
    const int64_t q_elems = p.batch * p.q_heads * d, kv_elems = p.batch * p.kv_heads * p.kv_len * d;
    DecodeSet s;
    s.Q = DeviceBuffer(static_cast<size_t>(q_elems * e));
    s.K = DeviceBuffer(static_cast<size_t>(kv_elems * e));
    s.V = DeviceBuffer(static_cast<size_t>(kv_elems * e));
    s.O = DeviceBuffer(static_cast<size_t>(q_elems * e));
    s.LSE = DeviceBuffer(static_cast<size_t>(p.batch * p.q_heads * 4));
    if (plan.merge == "fused" || plan.merge == "separate") {  // the cluster merge keeps its partials in shared memory
        s.O_part = DeviceBuffer(static_cast<size_t>(q_elems * plan.splits * 4));
        s.LSE_part = DeviceBuffer(static_cast<size_t>(p.batch * p.q_heads * plan.splits * 4));
        s.counters = DeviceBuffer(static_cast<size_t>(p.batch * p.q_heads * 4));  // the kernel leaves them at 0
        CUDA_CHECK(cudaMemset(s.counters.get(), 0, s.counters.bytes()));
    }
    generate_on_device(s.Q.get(), p.dtype, p.seed, sim::InputTensor::Q, q_elems);
    generate_on_device(s.K.get(), p.dtype, p.seed, sim::InputTensor::K, kv_elems);
    generate_on_device(s.V.get(), p.dtype, p.seed, sim::InputTensor::V, kv_elems);
    return s;
}

sim::TensorF decode_output(const sim::DecodeProblem& p, const DecodeSet& s) {
    sim::TensorF O(p.batch, p.q_heads, 1, p.head_dim);
    copy_to_host_float(s.O.get(), p.dtype, O.size(), O.data.data());
    return O;
}

// `runs` calls with the split kernel's blocks stamping their trace records (decode.cu), each after
// an L2 flush; every figure the median over the calls.
DecodeTrace trace_decode(const sim::DecodeProblem& p, const DecodePlan& plan, const DecodeSet& set, int runs,
                         cudaEvent_t start, cudaEvent_t stop) {
    const int64_t blocks = plan.splits * p.batch * p.kv_heads * (p.group() / plan.group_chunk);
    const size_t words = static_cast<size_t>(blocks) * kDecodeTraceWords;
    DeviceBuffer buf(words * 8);
    std::vector<unsigned long long> rec(words);
    std::vector<DecodeTrace> each;  // one a traced call
    double step = 0;
    for (int r = 0; r < runs; ++r) {
        CUDA_CHECK(cudaMemset(buf.get(), 0, buf.bytes()));
        flush_l2(0, kDecodeFlush);
        DecodeTensors t = set.tensors();
        t.trace = buf.as<unsigned long long>();
        CUDA_CHECK(cudaEventRecord(start, 0));
        decode_forward(p, plan, t, 0);
        CUDA_CHECK(cudaEventRecord(stop, 0));
        CUDA_CHECK(cudaEventSynchronize(stop));
        float ev = 0;
        CUDA_CHECK(cudaEventElapsedTime(&ev, start, stop));
        CUDA_CHECK(cudaMemcpy(rec.data(), buf.get(), buf.bytes(), cudaMemcpyDeviceToHost));
        unsigned long long t0 = ~0ull, end = 0;
        for (int64_t b = 0; b < blocks; ++b) t0 = std::min(t0, rec[b * kDecodeTraceWords]);
        std::vector<double> at[5], wait, merge, ghz;
        for (int64_t b = 0; b < blocks; ++b) {
            const unsigned long long* x = &rec[b * kDecodeTraceWords];
            for (int k = 0; k < 5; ++k)
                if (x[2 * k] != 0) {
                    at[k].push_back((x[2 * k] - t0) * 1e-3);
                    end = std::max(end, x[2 * k]);
                }
            if (x[2] != 0) wait.push_back((x[2] - x[0]) * 1e-3);
            if (x[8] != 0) merge.push_back((x[8] - x[6]) * 1e-3);
            if (x[6] > x[0]) ghz.push_back(double(x[7] - x[1]) / double(x[6] - x[0]));
            for (int k = 1; k < 5; ++k)
                if (x[2 * k] > x[2 * k - 2] && x[2 * k - 2] != 0) {
                    const double dstep = double(x[2 * k] - x[2 * k - 2]);
                    step = step == 0 ? dstep : std::min(step, dstep);
                }
        }
        auto mx = [](const std::vector<double>& v) { return v.empty() ? 0.0 : *std::max_element(v.begin(), v.end()); };
        DecodeTrace one;
        one.event_us = ev * 1e3;
        one.span_us = (end - t0) * 1e-3;
        one.start_med_us = median_of(at[0]);
        one.start_max_us = mx(at[0]);
        one.first_tile_med_us = median_of(at[1]);
        one.first_tile_max_us = mx(at[1]);
        one.stream_med_us = median_of(at[2]);
        one.stream_max_us = mx(at[2]);
        one.written_med_us = median_of(at[3]);
        one.written_max_us = mx(at[3]);
        one.first_tile_wait_us = median_of(wait);
        one.merge_us = median_of(merge);
        one.sm_clock_ghz = median_of(ghz);
        each.push_back(one);
    }
    DecodeTrace tr;  // each figure the median over the calls
    tr.runs = runs;
    using Field = double DecodeTrace::*;
    const Field fields[] = {&DecodeTrace::event_us,           &DecodeTrace::span_us,
                            &DecodeTrace::start_med_us,       &DecodeTrace::start_max_us,
                            &DecodeTrace::first_tile_med_us,  &DecodeTrace::first_tile_max_us,
                            &DecodeTrace::stream_med_us,      &DecodeTrace::stream_max_us,
                            &DecodeTrace::written_med_us,     &DecodeTrace::written_max_us,
                            &DecodeTrace::first_tile_wait_us, &DecodeTrace::merge_us,
                            &DecodeTrace::sm_clock_ghz};
    for (const Field f : fields) {
        std::vector<double> v;
        for (const DecodeTrace& one : each) v.push_back(one.*f);
        tr.*f = median_of(v);
    }
    tr.timer_step_ns = step;
    return tr;
}

}  // namespace

DecodeMeasurement run_decode(const sim::DecodeProblem& p, const RunOptions& opt, int64_t splits) {
    check_decode(p);
    const int sms = sm_count();
    const DecodePlan plan = decode_plan(p, sms, splits);
    DecodeMeasurement out;
    out.splits = plan.splits;
    out.splits_why = plan.why;
    out.tile_keys = decode_kernel_config().tile_keys;
    out.stage_keys = plan.stage_keys;
    out.l2_prefetch = plan.l2_prefetch;
    out.kv_load = plan.kv_load;
    out.merge = plan.merge;
    const L2Flush flush = l2_flush_mode(kDecodeFlush);  // resolved once: the row records what the runs did
    out.l2_flush = l2_flush_name(flush);
    const int64_t chunks = p.group() / plan.group_chunk;
    out.blocks = plan.splits * p.batch * p.kv_heads * chunks;
    {  // the simulator's count for the same splits (K and V read once per KV head and chunk)
        sim::Machine m = sim::find_machine(
            !opt.machine.empty() ? opt.machine : sim::preset_for_device(device_name()).value_or("H200"));
        m.sm_count = sms;
        sim::DecodeConfig c = decode_kernel_config();
        c.splits = plan.splits;
        const sim::DecodeResult r = sim::simulate_decode(p, m, c);
        out.kv_bytes = r.kv_read_bytes * chunks;
        out.total_bytes = r.total_bytes() + r.kv_read_bytes * (chunks - 1);
        out.sim_predicted_ms = r.total_s * 1e3;
        if (plan.merge == "cluster")
            out.note +=
                "the cluster merge keeps the partials in shared memory: total_bytes counts their write and "
                "read, which it does not make; ";
        if (chunks > 1)
            out.note += "H_q/H_kv = " + std::to_string(p.group()) + " runs in " + std::to_string(chunks) +
                        " chunks of " + std::to_string(plan.group_chunk) + " query heads, each reading K and V; ";
    }
    cudaStream_t s = 0;
    const int64_t kv_set = 2 * p.batch * p.kv_heads * p.kv_len * p.head_dim * sim::dtype_bytes(p.dtype);
    int copies = opt.input_copies;
    if (copies <= 0) {
        const double l2 = static_cast<double>(l2_bytes());
        copies = double(kv_set) < 2 * l2 ? static_cast<int>(std::min(8.0, std::ceil(2 * l2 / double(kv_set)))) : 1;
    }
    std::vector<DecodeSet> sets;
    for (int c = 0; c < copies; ++c) sets.push_back(make_decode_set(p, plan));
    out.peak_bytes = sets[0].bytes();
    CUDA_CHECK(cudaDeviceSynchronize());
    const int64_t o_elems = p.batch * p.q_heads * p.head_dim;
    auto poison_o = [&](const DecodeSet& set) {
        poison(set.O.get(), set.O.bytes(), s);
        poison(set.LSE.get(), set.LSE.bytes(), s);
        poison(set.O_part.get(), set.O_part.bytes(), s);
        poison(set.LSE_part.get(), set.LSE_part.bytes(), s);
    };
    // the checked run
    poison_o(sets[0]);
    decode_forward(p, plan, sets[0].tensors(), s);
    CUDA_CHECK(cudaDeviceSynchronize());
    const int64_t bad_first = count_nonfinite(sets[0].O.get(), p.dtype, o_elems);
    if (bad_first) out.note += "checked run left " + std::to_string(bad_first) + " non-finite/unwritten outputs; ";
    const double kv_elems = double(p.batch) * double(p.kv_heads) * double(p.kv_len) * double(p.head_dim);
    if (opt.check_reference && kv_elems <= 1.4e8) {  // the host keeps K and V as floats: ~1.1 GB at the limit
        const sim::DecodeInputs in = sim::generate_decode_inputs(p);
        out.vs_reference = sim::validate(decode_output(p, sets[0]), sim::decode_reference(p, in), p.dtype);
    } else if (opt.check_reference) {
        out.note += "float64 reference skipped (K and V too large for the CPU check); ";
    }
    for (int w = 0; w < opt.warmup; ++w) decode_forward(p, plan, sets[w % copies].tensors(), s);
    CUDA_CHECK(cudaDeviceSynchronize());
    std::vector<float> ms;
    cudaEvent_t start, stop;
    CUDA_CHECK(cudaEventCreate(&start));
    CUDA_CHECK(cudaEventCreate(&stop));
    int last = 0;
    for (int r = 0; r < opt.repeats; ++r) {
        last = r % copies;
        poison_o(sets[last]);
        if (opt.flush_l2) flush_l2(s, flush);
        CUDA_CHECK(cudaEventRecord(start, s));
        decode_forward(p, plan, sets[last].tensors(), s);
        CUDA_CHECK(cudaEventRecord(stop, s));
        CUDA_CHECK(cudaEventSynchronize(stop));
        float t = 0;
        CUDA_CHECK(cudaEventElapsedTime(&t, start, stop));
        ms.push_back(t);
    }
    if (opt.trace_runs > 0) out.trace = trace_decode(p, plan, sets[0], opt.trace_runs, start, stop);
    CUDA_CHECK(cudaEventDestroy(start));
    CUDA_CHECK(cudaEventDestroy(stop));
    if (!ms.empty()) {
        out.unwritten = count_nonfinite(sets[last].O.get(), p.dtype, o_elems);
        std::sort(ms.begin(), ms.end());
        const size_t n = ms.size();
        out.ms_median = n % 2 ? ms[n / 2] : 0.5 * (ms[n / 2 - 1] + ms[n / 2]);
        out.ms_min = ms.front();
        out.ms_max = ms.back();
        out.repeats = static_cast<int>(n);
        out.kv_tbps = double(out.kv_bytes) / (out.ms_median * 1e-3) / 1e12;
    } else {
        out.unwritten = bad_first;
    }
    return out;
}

DecodeOutputs compute_decode(const sim::DecodeProblem& p, int64_t splits) {
    check_decode(p);
    const DecodePlan plan = decode_plan(p, sm_count(), splits);
    DecodeSet set = make_decode_set(p, plan);
    poison(set.O.get(), set.O.bytes(), 0);
    poison(set.LSE.get(), set.LSE.bytes(), 0);
    decode_forward(p, plan, set.tensors(), 0);
    CUDA_CHECK(cudaDeviceSynchronize());
    DecodeOutputs o;
    o.O = decode_output(p, set);
    o.LSE.resize(static_cast<size_t>(p.batch * p.q_heads));
    copy_to_host_float(set.LSE.get(), sim::DType::fp32, static_cast<int64_t>(o.LSE.size()), o.LSE.data());
    o.splits = plan.splits;
    o.keys_per_split = plan.keys_per_split;
    o.stage_keys = plan.stage_keys;
    o.l2_prefetch = plan.l2_prefetch;
    o.kv_load = plan.kv_load;
    o.merge = plan.merge;
    return o;
}

// ---- how long a sequence fits (flashsim bench --fit) ----------------------------------------------

int64_t step_workspace_bytes(const std::string& variant, const sim::Problem& p) {
    check_problem(p);
    const int64_t BH = p.heads_total(), n = p.seq, e = p.elem_bytes(), elems = BH * n * p.head_dim;
    if (variant == "standard") return 4 * BH * n * n * e;    // S, P (forward); dP, dS (backward): standard.cu
    if (variant == "flash2") return elems * 4 + BH * n * 4;  // dQ accumulator, D: flash2_bwd.cu
    if (variant == "flash2h")  // its schedule's dQ accumulator, D, LSE, counters; the forward's unit counter
        return flash2h_bwd_workspace_bytes(p) + flash2h_fwd_workspace_bytes(p);
    throw std::runtime_error("variant '" + variant + "' has no training step to fit (standard, flash2, flash2h)");
}

namespace {
// Allocate `sizes` one after another; false (everything freed, the error cleared) when one fails
// with cudaErrorMemoryAllocation; any other error throws.
bool try_allocate(const std::vector<int64_t>& sizes) {
    std::vector<void*> held;
    bool ok = true;
    for (int64_t b : sizes) {
        void* ptr = nullptr;
        const cudaError_t e = cudaMalloc(&ptr, static_cast<size_t>(b));
        if (e == cudaErrorMemoryAllocation) {
            cudaGetLastError();
            ok = false;
            break;
        }
        if (e != cudaSuccess) {
            for (void* q : held) cudaFree(q);
            CUDA_CHECK(e);
        }
        held.push_back(ptr);
    }
    for (void* q : held) CUDA_CHECK(cudaFree(q));
    return ok;
}

std::vector<int64_t> step_allocations(const std::string& variant, const sim::Problem& p) {
    const int64_t t = p.heads_total() * p.seq * p.head_dim * p.elem_bytes();
    std::vector<int64_t> v(8, t);              // Q, K, V, O, dO, dQ, dK, dV
    v.push_back(p.heads_total() * p.seq * 4);  // LSE
    const int64_t BH = p.heads_total(), n = p.seq, e = p.elem_bytes(), elems = BH * n * p.head_dim;
    if (variant == "standard") {
        for (int k = 0; k < 4; ++k) v.push_back(BH * n * n * e);  // S, P, dP, dS
    } else {
        v.push_back(elems * 4);  // the dQ accumulator, then the rest of the workspace
        v.push_back(step_workspace_bytes(variant, p) - elems * 4);
    }
    return v;
}
}  // namespace

FitProbe probe_fit(const std::string& variant, const sim::Problem& shape) {
    if (!supports(variant, Pass::step))
        throw std::runtime_error("variant '" + variant + "' has no training step to fit (standard, flash2, flash2h)");
    std::string why;
    if (!variant_available(variant, &why)) throw std::runtime_error(why);
    FitProbe r;
    r.variant = variant;
    size_t free_b = 0, total_b = 0;
    CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
    r.free_bytes = double(free_b);
    r.total_bytes = double(total_b);
    sim::Problem p = shape;
    p.causal = false;
    auto total = [](const std::vector<int64_t>& v) {
        int64_t n = 0;
        for (int64_t b : v) n += b;
        return n;
    };
    auto fits = [&](int64_t idx) {
        p.seq = sim::grid_point(idx);
        check_problem(p);
        const std::vector<int64_t> a = step_allocations(variant, p);
        ++r.probes;
        if (double(total(a)) > r.free_bytes) return false;  // cannot fit: no need to ask the driver
        return try_allocate(a);
    };
    // largest grid index that fits. The search ends where flashsim stops counting (N <= 2^24 and
    // B H N^2 d <= 2^56: at B = 1, H = 16, d = 128, N up to 5.9 million) and where the step's own bytes
    // exceed the free memory, so no probe asks for more than the card has
    int64_t lo = -1, hi = sim::grid_index_at_most(int64_t{1} << 24);
    auto countable = [&](int64_t idx) {
        sim::Problem q = p;
        q.seq = sim::grid_point(idx);
        try {
            check_problem(q);
            return double(total(step_allocations(variant, q))) <= r.free_bytes;
        } catch (const std::exception&) { return false; }
    };
    const int64_t grid_end = hi;
    while (hi > 0 && !countable(hi)) --hi;
    if (fits(hi)) {
        lo = hi;
        // the next grid point was left out of the search because its buffers alone exceed the free
        // memory (or flashsim cannot count it): it does not fit, so it is the step past the longest
        if (hi < grid_end) r.next_n = sim::grid_point(hi + 1);
        r.note = hi == grid_end ? "N = 2^24 fits (the grid's end)"
                                : "N = " + std::to_string(sim::grid_point(hi)) +
                                      " fits: the longest whose step flashsim counts and the free memory holds";
    } else {
        while (hi - lo > 1) {
            const int64_t mid = lo + (hi - lo) / 2;
            (fits(mid) ? lo : hi) = mid;
        }
        r.next_n = sim::grid_point(hi);
    }
    if (lo >= 0) {
        p.seq = sim::grid_point(lo);
        r.longest_n = p.seq;
        r.peak_bytes_at_longest = total(step_allocations(variant, p));
    }
    return r;
}

int64_t step_workspace_after_run(const std::string& variant, const sim::Problem& p) {
    check_problem(p);
    Set set = make_set(p, true);
    Workspace ws;
    const Tensors t = set.tensors();
    forward_of(variant, p, t, ws, 0);
    backward_of(variant, p, t, ws, 0);
    CUDA_CHECK(cudaDeviceSynchronize());
    return workspace_bytes(ws);
}

std::vector<LaunchProbe> probe_launch(int repeats) {
    if (repeats < 1)
        throw std::runtime_error("--launch-probe needs --repeats >= 1 (got " + std::to_string(repeats) + ")");
    // the decode rows' B = 1, L = 32k problems (GQA 32/8, bf16), their split plan, and a copy of as many bytes
    auto decode_problem = [](int64_t d) {
        sim::DecodeProblem p;
        p.kv_len = 32768;
        p.head_dim = d;
        return p;
    };
    const sim::DecodeProblem p128 = decode_problem(128), p64 = decode_problem(64);
    const DecodePlan plan128 = decode_plan(p128, sm_count(), 0), plan64 = decode_plan(p64, sm_count(), 0);
    std::vector<DecodeSet> set128, set64;  // enough copies that no call finds its K, V in L2
    for (int c = 0; c < 2; ++c) set128.push_back(make_decode_set(p128, plan128));
    for (int c = 0; c < 3; ++c) set64.push_back(make_decode_set(p64, plan64));
    const size_t copy_bytes = set128[0].K.bytes() + set128[0].V.bytes();
    DeviceBuffer src(copy_bytes), dst(copy_bytes);
    CUDA_CHECK(cudaMemset(src.get(), 1, copy_bytes));
    CUDA_CHECK(cudaDeviceSynchronize());
    const int max_smem = max_smem_optin();
    struct Work {
        std::string name, method;
        std::function<void(int)> run;  // argument: the repeat
    };
    cudaStream_t s = 0;
    std::vector<Work> works = {
        {"empty", "a block an SM, 128 threads, no shared memory", [&](int) { hold_smem<false>(s); }},
        {"empty_max_smem",
         "a block an SM holding the most dynamic shared memory a block may (" + std::to_string(max_smem / 1024) +
             " KiB), carve-out all shared",
         [&](int) { hold_smem<true>(s); }},
        {"copy_kv_32k_d128",
         "cudaMemcpyAsync of the d = 128 row's K and V bytes (" + std::to_string(copy_bytes >> 20) + " MiB)",
         [&](int) { CUDA_CHECK(cudaMemcpyAsync(dst.get(), src.get(), copy_bytes, cudaMemcpyDeviceToDevice, s)); }},
        {"decode_1_32k_d128",
         "the decode kernel, B = 1, L = 32,768, GQA 32/8, d = 128, bf16, the plan's " + std::to_string(plan128.splits) +
             " splits",
         [&](int r) { decode_forward(p128, plan128, set128[r % set128.size()].tensors(), s); }},
        {"decode_1_32k_d64", "the same at d = 64 (" + std::to_string(plan64.splits) + " splits)",
         [&](int r) { decode_forward(p64, plan64, set64[r % set64.size()].tensors(), s); }},
    };
    // Before each timed call: the decode rows' read flush, then (a) nothing, or a block on every SM that
    // holds (b) the most shared memory, (c) none with the default carve-out: what the SMs were last set
    // to when the call starts.
    struct Before {
        std::string name;
        std::function<void()> run;
    };
    const std::vector<Before> befores = {
        {"the read flush", [] {}},
        {"the read flush, then a kernel holding the most shared memory", [&] { hold_smem<true>(s); }},
        {"the read flush, then a kernel holding none (default carve-out)", [&] { hold_smem<false>(s); }},
    };
    cudaEvent_t start, stop;
    CUDA_CHECK(cudaEventCreate(&start));
    CUDA_CHECK(cudaEventCreate(&stop));
    std::vector<std::vector<double>> us(works.size() * befores.size());
    for (int r = -3; r < repeats; ++r)  // three warm-up rounds; rounds interleave every case
        for (size_t w = 0; w < works.size(); ++w)
            for (size_t b = 0; b < befores.size(); ++b) {
                flush_l2(s, kDecodeFlush);
                befores[b].run();
                CUDA_CHECK(cudaEventRecord(start, s));
                works[w].run(r < 0 ? 0 : r);
                CUDA_CHECK(cudaEventRecord(stop, s));
                CUDA_CHECK(cudaEventSynchronize(stop));
                float ms = 0;
                CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
                if (r >= 0) us[w * befores.size() + b].push_back(ms * 1e3);
            }
    CUDA_CHECK(cudaEventDestroy(start));
    CUDA_CHECK(cudaEventDestroy(stop));
    std::vector<LaunchProbe> out;
    for (size_t w = 0; w < works.size(); ++w)
        for (size_t b = 0; b < befores.size(); ++b) {
            std::vector<double>& v = us[w * befores.size() + b];
            LaunchProbe lp;
            lp.name = works[w].name;
            lp.method = works[w].method;
            lp.before = befores[b].name;
            lp.repeats = static_cast<int>(v.size());
            lp.us_median = median_of(v);
            const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
            lp.us_min = *lo;
            lp.us_max = *hi;
            out.push_back(lp);
        }
    return out;
}

}  // namespace fcuda

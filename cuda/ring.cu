// cuda/ring.cu — ring attention run with the kernels: the schedule of sim/ring.hpp on real data.
//
//   P devices; device i holds the query chunks ring_chunks(i) (balanced: i and 2P-1-i) and, at
//   step s, the K/V slice of device ring_source(P, i, s) in slot s % 2 of a two-slot buffer.
//   step s on device i:
//     send   (s < P-1) its slot s%2 K/V to device i+1's slot (s+1)%2, on the communication stream,
//            while it computes: the receiver's slot must be free (its compute of step s-1 done)
//     compute every (query chunk a, key chunk b) block: block_kind(causal, a, b) says full (no
//            mask), diagonal (the causal mask on the c x c block) or none (skipped); one call of the
//            kernel (flash2 or flash2h) on a c-token sub-problem, then
//            forward:  merge the block's (O_b, LSE_b) into the running fp32 (O, LSE):
//                      L = logaddexp(LSE, LSE_b), O = O e^(LSE - L) + O_b e^(LSE_b - L);
//                      a query chunk's first block sets them, its last writes the rounded output
//                      and LSE, and a chunk with one block in the pass takes the kernel's output
//            backward: the kernel's backward with the whole rows' O, LSE (keys_elsewhere, so the
//                      one-key shortcut stays off): dQ_b added into the home fp32 dQ; dK_b, dV_b
//                      into the fp32 accumulators that travel with the slice (once they arrive)
//     send   (backward, every s) the slice's dK, dV accumulators to device i+1 after the compute;
//            after P sends they are home (K and V themselves move P-1 times).
//   transport emulated: the P devices are P sets of buffers and streams on GPU 0, a send is a
//            device-to-device copy on the sender's communication stream;
//   transport nccl:     one process drives GPUs 0..P-1 (ncclCommInitAll), a send is ncclSend /
//            ncclRecv grouped over the ring on each GPU's communication stream. NCCL is loaded at
//            run time (FLASHSIM_NCCL_LIB, else libnccl.so.2 on the loader's path), so the program
//            starts without it; NCCL_NVLS_ENABLE=0 (no NVLink multicast) unless set otherwise.
//
// Numerics: every block's output is rounded to the storage type by the kernel, then summed in
// fp32; the result differs from one kernel on the whole problem by rounding (the tests and the
// bench measure by how much).
#include <dlfcn.h>
#include <nccl.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "cuda/api.hpp"
#include "cuda/common.cuh"
#include "cuda/reference64.hpp"
#include "cuda/reference_bwd.hpp"
#include "cuda/variants.hpp"
#include "sim/reference.hpp"
#include "sim/ring.hpp"

namespace fcuda {

const char* ring_transport_name(RingTransport t) { return t == RingTransport::nccl ? "nccl" : "emulated"; }

namespace {

// ---- NCCL, loaded at run time ------------------------------------------------------------------

struct Nccl {
    void* lib = nullptr;
    std::string why;  // empty when loaded
    ncclResult_t (*comm_init_all)(ncclComm_t*, int, const int*) = nullptr;
    ncclResult_t (*comm_destroy)(ncclComm_t) = nullptr;
    ncclResult_t (*group_start)() = nullptr;
    ncclResult_t (*group_end)() = nullptr;
    ncclResult_t (*send)(const void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t) = nullptr;
    ncclResult_t (*recv)(void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t) = nullptr;
    const char* (*error_string)(ncclResult_t) = nullptr;
    ncclResult_t (*get_version)(int*) = nullptr;
};

const Nccl& nccl() {
    static const Nccl n = [] {
        Nccl x;
        const char* env = sim::knob("FLASHSIM_NCCL_LIB");
        const std::string name = env && *env ? env : "libnccl.so.2";
        x.lib = ::dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (!x.lib) {
            const char* e = ::dlerror();
            x.why = "NCCL could not be loaded (" + std::string(e ? e : name) +
                    "); set FLASHSIM_NCCL_LIB to the path of libnccl.so.2 (PyTorch's wheel has one under "
                    "site-packages/nvidia/nccl/lib) or add its folder to LD_LIBRARY_PATH";
            return x;
        }
        auto sym = [&](const char* s) {
            void* f = ::dlsym(x.lib, s);
            if (!f && x.why.empty()) x.why = std::string("NCCL library ") + name + " has no symbol " + s;
            return f;
        };
        x.comm_init_all = reinterpret_cast<decltype(x.comm_init_all)>(sym("ncclCommInitAll"));
        x.comm_destroy = reinterpret_cast<decltype(x.comm_destroy)>(sym("ncclCommDestroy"));
        x.group_start = reinterpret_cast<decltype(x.group_start)>(sym("ncclGroupStart"));
        x.group_end = reinterpret_cast<decltype(x.group_end)>(sym("ncclGroupEnd"));
        x.send = reinterpret_cast<decltype(x.send)>(sym("ncclSend"));
        x.recv = reinterpret_cast<decltype(x.recv)>(sym("ncclRecv"));
        x.error_string = reinterpret_cast<decltype(x.error_string)>(sym("ncclGetErrorString"));
        x.get_version = reinterpret_cast<decltype(x.get_version)>(sym("ncclGetVersion"));
        return x;
    }();
    return n;
}

void nccl_check(ncclResult_t r, const char* what) {
    if (r != ncclSuccess)
        throw std::runtime_error(std::string(what) + " failed: " +
                                 (nccl().error_string ? nccl().error_string(r) : "NCCL error " + std::to_string(r)));
}

// ---- small kernels: scatter, merge, accumulate, convert ------------------------------------------

// A block's (O_b in T, LSE_b) into a query chunk's running fp32 (O, LSE); one warp a row.
// mode first: the running values are the block's; middle: merged; last: merged and written to the
// chunk's output (T) and LSE instead of the running values.
enum MergeMode : int { merge_first = 0, merge_middle = 1, merge_last = 2 };
template <typename T>
__global__ void ring_merge(float* __restrict__ O, float* __restrict__ L, const T* __restrict__ Ob,
                           const float* __restrict__ Lb, T* __restrict__ Out, float* __restrict__ Lout, int64_t rows,
                           int d, int mode) {
    const int64_t row = blockIdx.x * int64_t(blockDim.x / 32) + threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    if (row >= rows) return;
    float* o = O + row * d;
    const T* ob = Ob + row * d;
    if (mode == merge_first) {
        for (int c = lane; c < d; c += 32) o[c] = StorageTraits<T>::to_float(ob[c]);
        if (lane == 0) L[row] = Lb[row];
        return;
    }
    const float l0 = L[row], l1 = Lb[row];
    const float m = fmaxf(l0, l1);
    const float w0 = l0 == -INFINITY ? 0.0f : expf(l0 - m), w1 = l1 == -INFINITY ? 0.0f : expf(l1 - m);
    const float s = w0 + w1;
    const float a = s > 0 ? w0 / s : 0.0f, b = s > 0 ? w1 / s : 0.0f;
    const float lse = s > 0 ? m + logf(s) : -INFINITY;
    if (mode == merge_last) {
        T* out = Out + row * d;
        for (int c = lane; c < d; c += 32)
            out[c] = StorageTraits<T>::from_float(a * o[c] + b * StorageTraits<T>::to_float(ob[c]));
        if (lane == 0) Lout[row] = lse;
        return;
    }
    for (int c = lane; c < d; c += 32) o[c] = a * o[c] + b * StorageTraits<T>::to_float(ob[c]);
    if (lane == 0) L[row] = lse;
}

template <typename T>
__global__ void ring_add(float* __restrict__ acc, const T* __restrict__ x, int64_t count) {
    for (int64_t k = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; k < count; k += int64_t(gridDim.x) * blockDim.x)
        acc[k] += StorageTraits<T>::to_float(x[k]);
}

template <typename T>
__global__ void ring_round(T* __restrict__ out, const float* __restrict__ in, int64_t count) {
    for (int64_t k = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; k < count; k += int64_t(gridDim.x) * blockDim.x)
        out[k] = StorageTraits<T>::from_float(in[k]);
}

// ---- the ring --------------------------------------------------------------------------------

// One device of the ring: its rows (query chunks, dO, the pass's outputs) and the two slots the
// K/V slices (and in the backward their dK, dV accumulators) pass through.
struct Device {
    int gpu = 0;
    std::vector<int64_t> chunks;  // global chunk indices of its queries (and of its own K/V)
    cudaStream_t compute = nullptr, comm = nullptr;
    // per slot: after this device's compute on the slot (slot free to be overwritten); after
    // K/V arrived in the slot; after the dK/dV accumulators arrived; after they left
    cudaEvent_t computed[2]{}, kv_in[2]{}, kv_out[2]{}, grad_in[2]{}, grad_out[2]{};
    cudaEvent_t joined = nullptr;  // the timing's: both streams done
    // query chunk 1's blocks run on a second compute stream beside chunk 0's (balanced layout):
    // go = the step may start, side_done = chunk 1's blocks are done
    cudaStream_t side = nullptr;
    cudaEvent_t go = nullptr, side_done = nullptr;
    DeviceBuffer Q, dO, O, LSE;  // its chunks, chunk-major: [chunk][B·H][c][d] (LSE [chunk][B·H][c])
    DeviceBuffer Oacc, Lacc;     // forward: running fp32 output and LSE
    DeviceBuffer dQacc;          // backward: fp32
    DeviceBuffer slot[2];        // K | V (storage type) | dK | dV (fp32, backward)
    DeviceBuffer Ob[2], Lb[2];   // one block's forward output, a stream
    DeviceBuffer dQb, dKb, dVb;  // the step's blocks' gradients (chunks_per_gpu^2 blocks each)
    Workspace ws[2];             // a stream
    ncclComm_t comm_nccl = nullptr;
};

struct Ring {
    sim::RingProblem p;
    std::string kernel;
    RingTransport transport = RingTransport::emulated;
    int64_t P = 1, cpg = 1, c = 0, BH = 0, d = 0, eb = 2;
    int64_t chunk_elems = 0, chunk_rows = 0;
    std::vector<Device> dev;
    int64_t sends = 0, link_bytes = 0, blocks = 0;  // of the last pass run (per link: bytes device 0 sent)

    sim::Problem sub(bool causal) const {
        sim::Problem q = p.attn;
        q.seq = c;
        q.causal = causal;
        return q;
    }
    size_t kv_bytes() const { return static_cast<size_t>(2 * cpg * chunk_elems * eb); }
    size_t grad_bytes() const { return static_cast<size_t>(2 * cpg * chunk_elems * 4); }
    char* K_of(Device& v, int slot, int64_t y) const {
        return v.slot[slot].as<char>() + static_cast<size_t>(y * chunk_elems * eb);
    }
    char* V_of(Device& v, int slot, int64_t y) const {
        return v.slot[slot].as<char>() + static_cast<size_t>((cpg + y) * chunk_elems * eb);
    }
    float* dK_of(Device& v, int slot, int64_t y) const {
        return reinterpret_cast<float*>(v.slot[slot].as<char>() + kv_bytes()) + y * chunk_elems;
    }
    float* dV_of(Device& v, int slot, int64_t y) const { return dK_of(v, slot, 0) + (cpg + y) * chunk_elems; }
    template <typename X = char>
    X* at(const DeviceBuffer& b, int64_t chunk, int64_t per_chunk_bytes) const {
        return reinterpret_cast<X*>(b.as<char>() + chunk * per_chunk_bytes);
    }

    void use(const Device& v) const { CUDA_CHECK(cudaSetDevice(v.gpu)); }
};

void check_ring(const sim::RingProblem& p, const std::string& kernel, RingTransport t) {
    try {
        p.validate();
    } catch (const std::exception& e) { throw std::runtime_error(e.what()); }
    if (kernel != "flash2" && kernel != "flash2h")
        throw std::runtime_error(
            "the ring runs flash2 or flash2h on its blocks (they keep the LSE the merge needs), "
            "got '" +
            kernel + "'");
    std::string why;
    if (!variant_available(kernel, &why)) throw std::runtime_error(why);
    if (p.attn.head_dim != 64 && p.attn.head_dim != 128)
        throw std::runtime_error("the ring's kernels take head_dim 64 or 128, got " + std::to_string(p.attn.head_dim));
    if (p.attn.dtype != sim::DType::bf16 && p.attn.dtype != sim::DType::fp16)
        throw std::runtime_error("the ring's kernels store bf16 or fp16");
    if (t == RingTransport::nccl) {
        if (!nccl_available(&why)) throw std::runtime_error(why);
        int n = 0;
        CUDA_CHECK(cudaGetDeviceCount(&n));
        if (p.gpus > n)
            throw std::runtime_error("the nccl ring needs one GPU a device: P = " + std::to_string(p.gpus) + " but " +
                                     std::to_string(n) + " GPU(s) are visible; use --ring-transport emulated to run " +
                                     "the ring's P devices on one GPU");
    }
}

// Allocates the devices, their streams, events and buffers, and loads each device's chunks of the
// generator's inputs (the same values as one-GPU runs: sim::input_value over the whole tensor).
std::unique_ptr<Ring> make_ring(const sim::RingProblem& p, const std::string& kernel, RingTransport t, bool grads) {
    check_ring(p, kernel, t);
    auto r = std::make_unique<Ring>();
    r->p = p;
    r->kernel = kernel;
    r->transport = t;
    r->P = p.gpus;
    r->cpg = p.chunks_per_gpu();
    r->c = p.chunk();
    r->BH = p.attn.heads_total();
    r->d = p.attn.head_dim;
    r->eb = p.attn.elem_bytes();
    r->chunk_elems = r->BH * r->c * r->d;
    r->chunk_rows = r->BH * r->c;
    const int64_t N = p.attn.seq;
    const size_t full_bytes = static_cast<size_t>(r->BH * N * r->d * r->eb);
    const size_t cb = static_cast<size_t>(r->chunk_elems * r->eb), cr = static_cast<size_t>(r->chunk_rows * 4);
    const size_t cf = static_cast<size_t>(r->chunk_elems * 4);
    r->dev.resize(static_cast<size_t>(r->P));
    for (int64_t i = 0; i < r->P; ++i) {
        Device& v = r->dev[static_cast<size_t>(i)];
        v.gpu = t == RingTransport::nccl ? static_cast<int>(i) : 0;
        v.chunks = sim::ring_chunks(p, i);
        r->use(v);
        CUDA_CHECK(cudaStreamCreateWithFlags(&v.compute, cudaStreamNonBlocking));
        CUDA_CHECK(cudaStreamCreateWithFlags(&v.comm, cudaStreamNonBlocking));
        CUDA_CHECK(cudaStreamCreateWithFlags(&v.side, cudaStreamNonBlocking));
        CUDA_CHECK(cudaEventCreateWithFlags(&v.go, cudaEventDisableTiming));
        CUDA_CHECK(cudaEventCreateWithFlags(&v.side_done, cudaEventDisableTiming));
        for (int k = 0; k < 2; ++k)
            for (cudaEvent_t* e : {&v.computed[k], &v.kv_in[k], &v.kv_out[k], &v.grad_in[k], &v.grad_out[k]})
                CUDA_CHECK(cudaEventCreateWithFlags(e, cudaEventDisableTiming));
        CUDA_CHECK(cudaEventCreateWithFlags(&v.joined, cudaEventDisableTiming));
        const size_t n = static_cast<size_t>(r->cpg);
        v.Q = DeviceBuffer(n * cb);
        v.O = DeviceBuffer(n * cb);
        v.LSE = DeviceBuffer(n * cr);
        v.Oacc = DeviceBuffer(n * cf);
        v.Lacc = DeviceBuffer(n * cr);
        for (int k = 0; k < 2; ++k) {
            v.Ob[k] = DeviceBuffer(cb);
            v.Lb[k] = DeviceBuffer(cr);
        }
        for (auto& s : v.slot) s = DeviceBuffer(r->kv_bytes() + (grads ? r->grad_bytes() : 0));
        if (grads) {
            v.dO = DeviceBuffer(n * cb);
            v.dQacc = DeviceBuffer(n * cf);
            v.dQb = DeviceBuffer(n * n * cb);
            v.dKb = DeviceBuffer(n * n * cb);
            v.dVb = DeviceBuffer(n * n * cb);
        }
        // the whole tensor generated on this GPU, then its chunks cut out ([B·H][N][d] -> [B·H][c][d])
        DeviceBuffer full(full_bytes);
        auto load = [&](sim::InputTensor which, char* dst, size_t stride_chunks) {
            generate_on_device(full.get(), p.attn.dtype, p.attn.seed, which, r->BH * N * r->d);
            for (size_t x = 0; x < v.chunks.size(); ++x)
                CUDA_CHECK(cudaMemcpy2D(dst + x * stride_chunks, static_cast<size_t>(r->c * r->d * r->eb),
                                        full.as<char>() + v.chunks[x] * r->c * r->d * r->eb,
                                        static_cast<size_t>(N * r->d * r->eb), static_cast<size_t>(r->c * r->d * r->eb),
                                        static_cast<size_t>(r->BH), cudaMemcpyDeviceToDevice));
        };
        load(sim::InputTensor::Q, v.Q.as<char>(), cb);
        load(sim::InputTensor::K, v.slot[0].as<char>(), cb);
        load(sim::InputTensor::V, v.slot[0].as<char>() + n * cb, cb);
        if (grads) load(sim::InputTensor::dO, v.dO.as<char>(), cb);
        CUDA_CHECK(cudaDeviceSynchronize());
    }
    if (t == RingTransport::nccl) {
        if (!std::getenv("NCCL_NVLS_ENABLE")) ::setenv("NCCL_NVLS_ENABLE", "0", 0);
        std::vector<ncclComm_t> comms(static_cast<size_t>(r->P));
        std::vector<int> gpus(static_cast<size_t>(r->P));
        for (int64_t i = 0; i < r->P; ++i) gpus[static_cast<size_t>(i)] = static_cast<int>(i);
        nccl_check(nccl().comm_init_all(comms.data(), static_cast<int>(r->P), gpus.data()), "ncclCommInitAll");
        for (int64_t i = 0; i < r->P; ++i) r->dev[static_cast<size_t>(i)].comm_nccl = comms[static_cast<size_t>(i)];
    }
    return r;
}

void free_ring(Ring& r) {
    for (Device& v : r.dev) {
        cudaSetDevice(v.gpu);
        cudaDeviceSynchronize();
        if (v.comm_nccl) nccl().comm_destroy(v.comm_nccl);
        for (int k = 0; k < 2; ++k)
            for (cudaEvent_t e : {v.computed[k], v.kv_in[k], v.kv_out[k], v.grad_in[k], v.grad_out[k]})
                if (e) cudaEventDestroy(e);
        if (v.joined) cudaEventDestroy(v.joined);
        if (v.go) cudaEventDestroy(v.go);
        if (v.side_done) cudaEventDestroy(v.side_done);
        if (v.side) cudaStreamDestroy(v.side);
        if (v.compute) cudaStreamDestroy(v.compute);
        if (v.comm) cudaStreamDestroy(v.comm);
    }
}
struct RingHolder {
    std::unique_ptr<Ring> r;
    ~RingHolder() {
        if (r) free_ring(*r);
    }
};

// Each device sends `bytes` at offset `off` of slot `from` to the next device's slot `to`; the
// sender's comm stream first waits for what must be done on both ends (`wait` of the receiver's
// slot `to`, and `wait_self` of its own slot `from`); `arrived` of the receiver's slot is recorded
// when the data is there, `left` of the sender's slot when it has gone.
using Events = cudaEvent_t[2];  // one a slot
void send_round(Ring& r, int from, int to, size_t off, size_t bytes, Events Device::*wait_recv,
                Events Device::*wait_self, Events Device::*arrived, Events Device::*left) {
    const int64_t P = r.P;
    auto& D = r.dev;
    for (int64_t i = 0; i < P; ++i) {
        Device& v = D[static_cast<size_t>(i)];
        Device& next = D[static_cast<size_t>((i + 1) % P)];
        r.use(v);
        if (wait_recv) CUDA_CHECK(cudaStreamWaitEvent(v.comm, (next.*wait_recv)[to], 0));
        if (wait_self) CUDA_CHECK(cudaStreamWaitEvent(v.comm, (v.*wait_self)[from], 0));
        if (r.transport == RingTransport::nccl) {
            // the receive runs on the receiver's stream: it must also know the receiver's slot is free
            if (wait_recv) CUDA_CHECK(cudaStreamWaitEvent(v.comm, (v.*wait_recv)[to], 0));
        }
    }
    if (r.transport == RingTransport::emulated) {
        for (int64_t i = 0; i < P; ++i) {
            Device& v = D[static_cast<size_t>(i)];
            Device& next = D[static_cast<size_t>((i + 1) % P)];
            CUDA_CHECK(cudaMemcpyAsync(next.slot[to].as<char>() + off, v.slot[from].as<char>() + off, bytes,
                                       cudaMemcpyDeviceToDevice, v.comm));
            CUDA_CHECK(cudaEventRecord((next.*arrived)[to], v.comm));
            CUDA_CHECK(cudaEventRecord((v.*left)[from], v.comm));
        }
    } else {
        nccl_check(nccl().group_start(), "ncclGroupStart");
        for (int64_t i = 0; i < P; ++i) {
            Device& v = D[static_cast<size_t>(i)];
            const int nxt = static_cast<int>((i + 1) % P), prv = static_cast<int>((i + P - 1) % P);
            nccl_check(nccl().send(v.slot[from].as<char>() + off, bytes, ncclUint8, nxt, v.comm_nccl, v.comm),
                       "ncclSend");
            nccl_check(nccl().recv(v.slot[to].as<char>() + off, bytes, ncclUint8, prv, v.comm_nccl, v.comm),
                       "ncclRecv");
        }
        nccl_check(nccl().group_end(), "ncclGroupEnd");
        for (int64_t i = 0; i < P; ++i) {
            Device& v = D[static_cast<size_t>(i)];
            r.use(v);
            CUDA_CHECK(cudaEventRecord((v.*arrived)[to], v.comm));
            CUDA_CHECK(cudaEventRecord((v.*left)[from], v.comm));
        }
    }
    r.sends += P;
    r.link_bytes += static_cast<int64_t>(bytes);
}

// A step's second query chunk runs on the side stream: it starts when the main stream may (fork)
// and the main stream goes on when it is done (join). One query chunk (contiguous): no side stream.
void fork(Device& v, int64_t cpg) {
    if (cpg < 2) return;
    CUDA_CHECK(cudaEventRecord(v.go, v.compute));
    CUDA_CHECK(cudaStreamWaitEvent(v.side, v.go, 0));
}
void join(Device& v, int64_t cpg) {
    if (cpg < 2) return;
    CUDA_CHECK(cudaEventRecord(v.side_done, v.side));
    CUDA_CHECK(cudaStreamWaitEvent(v.compute, v.side_done, 0));
}

// The frame of a pass's step s: the next K/V slice is sent on (s < P-1) while each device, once
// the slice it computes with is in, runs work(device, index, slot, the slice's key chunks) with
// its second query chunk's blocks free to go on the side stream (fork; work joins).
template <typename Work>
void ring_step(Ring& r, int64_t s, Work&& work) {
    const int cur = static_cast<int>(s % 2), nxt = 1 - cur;
    if (s + 1 < r.P)  // the next slice travels while this one is computed
        send_round(r, cur, nxt, 0, r.kv_bytes(), &Device::computed, s > 0 ? &Device::kv_in : nullptr, &Device::kv_in,
                   &Device::kv_out);
    for (int64_t i = 0; i < r.P; ++i) {
        Device& v = r.dev[static_cast<size_t>(i)];
        r.use(v);
        if (s > 0) CUDA_CHECK(cudaStreamWaitEvent(v.compute, v.kv_in[cur], 0));
        fork(v, r.cpg);
        work(v, i, cur, sim::ring_chunks(r.p, sim::ring_source(r.P, i, s)));
    }
}

// The blocks query chunk x of device i meets over a whole pass (its merges' first and last).
std::vector<int64_t> blocks_of_chunks(const Ring& r, int64_t i) {
    std::vector<int64_t> n(static_cast<size_t>(r.cpg), 0);
    for (int64_t s = 0; s < r.P; ++s) {
        const std::vector<int64_t> keys = sim::ring_chunks(r.p, sim::ring_source(r.P, i, s));
        for (int64_t x = 0; x < r.cpg; ++x)
            for (int64_t b : keys)
                n[static_cast<size_t>(x)] +=
                    sim::block_kind(r.p.attn.causal, r.dev[static_cast<size_t>(i)].chunks[static_cast<size_t>(x)], b) !=
                    sim::BlockKind::none;
    }
    return n;
}

template <typename T>
void ring_forward(Ring& r) {
    const int64_t P = r.P, cpg = r.cpg;
    const size_t cb = static_cast<size_t>(r.chunk_elems * r.eb), cr = static_cast<size_t>(r.chunk_rows * 4);
    r.sends = r.link_bytes = r.blocks = 0;
    std::vector<std::vector<int64_t>> total(static_cast<size_t>(P)), seen(static_cast<size_t>(P));
    for (int64_t i = 0; i < P; ++i) {
        Device& v = r.dev[static_cast<size_t>(i)];
        total[static_cast<size_t>(i)] = blocks_of_chunks(r, i);
        seen[static_cast<size_t>(i)].assign(static_cast<size_t>(cpg), 0);
        r.use(v);
        CUDA_CHECK(cudaEventRecord(v.computed[1], v.compute));  // slot 1 is free
    }
    for (int64_t s = 0; s < P; ++s)
        ring_step(r, s, [&](Device& v, int64_t i, int cur, const std::vector<int64_t>& keys) {
            for (int64_t x = 0; x < cpg; ++x)
                for (int64_t y = 0; y < cpg; ++y) {
                    const sim::BlockKind k = sim::block_kind(r.p.attn.causal, v.chunks[static_cast<size_t>(x)],
                                                             keys[static_cast<size_t>(y)]);
                    if (k == sim::BlockKind::none) continue;
                    cudaStream_t st = x == 0 ? v.compute : v.side;
                    const int n1 = x == 0 ? 0 : 1;
                    const int64_t n = total[static_cast<size_t>(i)][static_cast<size_t>(x)];
                    int64_t& done = seen[static_cast<size_t>(i)][static_cast<size_t>(x)];
                    T* out = r.at<T>(v.O, x, static_cast<int64_t>(cb));
                    float* lse = r.at<float>(v.LSE, x, static_cast<int64_t>(cr));
                    Tensors t;
                    t.Q = r.at(v.Q, x, static_cast<int64_t>(cb));
                    t.K = r.K_of(v, cur, y);
                    t.V = r.V_of(v, cur, y);
                    // the chunk's only block: the kernel's output is the answer
                    t.O = n == 1 ? static_cast<void*>(out) : v.Ob[n1].get();
                    t.LSE = n == 1 ? lse : v.Lb[n1].as<float>();
                    forward_of(r.kernel, r.sub(k == sim::BlockKind::diagonal), t, v.ws[n1], st);
                    if (n > 1) {
                        const int mode = done == 0 ? merge_first : done + 1 == n ? merge_last : merge_middle;
                        const int64_t rows = r.chunk_rows;
                        ring_merge<T><<<static_cast<unsigned>((rows + 7) / 8), 256, 0, st>>>(
                            r.at<float>(v.Oacc, x, static_cast<int64_t>(cb) * 2),
                            r.at<float>(v.Lacc, x, static_cast<int64_t>(cr)), v.Ob[n1].as<T>(), v.Lb[n1].as<float>(),
                            out, lse, rows, static_cast<int>(r.d), mode);
                        LAUNCH_CHECK();
                    }
                    ++done;
                    ++r.blocks;
                }
            join(v, cpg);
            CUDA_CHECK(cudaEventRecord(v.computed[cur], v.compute));
        });
}

// Needs ring_forward's O and LSE on every device and the K/V slices back in slot 0 (reset_slots).
template <typename T>
void ring_backward(Ring& r) {
    const int64_t P = r.P, cpg = r.cpg;
    const size_t cb = static_cast<size_t>(r.chunk_elems * r.eb), cr = static_cast<size_t>(r.chunk_rows * 4);
    r.sends = r.link_bytes = r.blocks = 0;
    for (Device& v : r.dev) {
        r.use(v);
        CUDA_CHECK(cudaMemsetAsync(v.dQacc.get(), 0, v.dQacc.bytes(), v.compute));
        CUDA_CHECK(cudaMemsetAsync(v.slot[0].as<char>() + r.kv_bytes(), 0, r.grad_bytes(), v.compute));
        CUDA_CHECK(cudaEventRecord(v.computed[1], v.compute));
        CUDA_CHECK(cudaEventRecord(v.grad_out[1], v.compute));
    }
    for (int64_t s = 0; s < P; ++s) {
        const int cur = static_cast<int>(s % 2), nxt = 1 - cur;
        ring_step(r, s, [&](Device& v, int64_t, int, const std::vector<int64_t>& keys) {
            std::vector<std::pair<int64_t, int64_t>> done;
            for (int64_t x = 0; x < cpg; ++x)
                for (int64_t y = 0; y < cpg; ++y) {
                    const sim::BlockKind k = sim::block_kind(r.p.attn.causal, v.chunks[static_cast<size_t>(x)],
                                                             keys[static_cast<size_t>(y)]);
                    if (k == sim::BlockKind::none) continue;
                    const int64_t b = x * cpg + y;
                    Tensors t;
                    t.Q = r.at(v.Q, x, static_cast<int64_t>(cb));
                    t.K = r.K_of(v, cur, y);
                    t.V = r.V_of(v, cur, y);
                    t.O = r.at(v.O, x, static_cast<int64_t>(cb));
                    t.LSE = r.at<float>(v.LSE, x, static_cast<int64_t>(cr));
                    t.dO = r.at(v.dO, x, static_cast<int64_t>(cb));
                    t.dQ = r.at(v.dQb, b, static_cast<int64_t>(cb));
                    t.dK = r.at(v.dKb, b, static_cast<int64_t>(cb));
                    t.dV = r.at(v.dVb, b, static_cast<int64_t>(cb));
                    t.keys_elsewhere = true;
                    cudaStream_t st = x == 0 ? v.compute : v.side;
                    backward_of(r.kernel, r.sub(k == sim::BlockKind::diagonal), t, v.ws[x == 0 ? 0 : 1], st);
                    ring_add<T><<<512, 256, 0, st>>>(r.at<float>(v.dQacc, x, static_cast<int64_t>(cb) * 2),
                                                     r.at<T>(v.dQb, b, static_cast<int64_t>(cb)), r.chunk_elems);
                    LAUNCH_CHECK();
                    done.push_back({b, y});
                    ++r.blocks;
                }
            join(v, cpg);  // both query chunks add into the same dK, dV: one stream, a fixed order
            // the slice's dK, dV accumulators: here since step s-1's send (slot 0's were zeroed at home)
            if (s > 0) CUDA_CHECK(cudaStreamWaitEvent(v.compute, v.grad_in[cur], 0));
            for (const auto& [b, y] : done) {
                ring_add<T><<<512, 256, 0, v.compute>>>(r.dK_of(v, cur, y), r.at<T>(v.dKb, b, static_cast<int64_t>(cb)),
                                                        r.chunk_elems);
                ring_add<T><<<512, 256, 0, v.compute>>>(r.dV_of(v, cur, y), r.at<T>(v.dVb, b, static_cast<int64_t>(cb)),
                                                        r.chunk_elems);
                LAUNCH_CHECK();
            }
            CUDA_CHECK(cudaEventRecord(v.computed[cur], v.compute));
        });
        // the accumulators move on after the compute; P sends bring them home (P = 1: already home)
        if (P > 1)
            send_round(r, cur, nxt, r.kv_bytes(), r.grad_bytes(), &Device::grad_out, &Device::computed,
                       &Device::grad_in, &Device::grad_out);
    }
    const int home = static_cast<int>(P % 2);
    for (Device& v : r.dev) {
        r.use(v);
        if (P > 1) CUDA_CHECK(cudaStreamWaitEvent(v.compute, v.grad_in[home], 0));
    }
}

// After a backward the slots hold other devices' slices: put each device's own K/V back in slot 0
// (what a new pass starts from). Its K/V came home in slot P % 2 only with the gradients; the
// inputs are read-only, so copy them from the device that holds them now.
void reset_slots(Ring& r, int slot_now, int64_t steps_moved) {
    if (steps_moved % r.P == 0 && slot_now == 0) return;
    std::vector<DeviceBuffer> tmp(static_cast<size_t>(r.P));
    for (int64_t i = 0; i < r.P; ++i) {
        // device i holds at slot_now the slice of device (i - steps_moved) mod P
        const int64_t owner = ((i - steps_moved) % r.P + r.P) % r.P;
        Device& v = r.dev[static_cast<size_t>(i)];
        Device& o = r.dev[static_cast<size_t>(owner)];
        r.use(o);
        tmp[static_cast<size_t>(owner)] = DeviceBuffer(r.kv_bytes());
        CUDA_CHECK(
            cudaMemcpyPeer(tmp[static_cast<size_t>(owner)].get(), o.gpu, v.slot[slot_now].get(), v.gpu, r.kv_bytes()));
    }
    for (int64_t i = 0; i < r.P; ++i) {
        Device& v = r.dev[static_cast<size_t>(i)];
        r.use(v);
        CUDA_CHECK(
            cudaMemcpy(v.slot[0].get(), tmp[static_cast<size_t>(i)].get(), r.kv_bytes(), cudaMemcpyDeviceToDevice));
    }
}

void sync_all(Ring& r) {
    for (Device& v : r.dev) {
        r.use(v);
        CUDA_CHECK(cudaDeviceSynchronize());
    }
}

void pass_forward(Ring& r) {
    dispatch_dtype(r.p.attn.dtype, [&]<typename T>() { ring_forward<T>(r); });
    sync_all(r);
    reset_slots(r, static_cast<int>((r.P - 1) % 2), r.P - 1);
}
void pass_backward(Ring& r) {
    dispatch_dtype(r.p.attn.dtype, [&]<typename T>() { ring_backward<T>(r); });
    sync_all(r);
}

// A chunked device tensor ([chunk][B·H][c][cols]) of every device, gathered into (B, H, N, cols).
sim::TensorF gather(Ring& r, const std::vector<const void*>& per_device, sim::DType dt, int64_t cols) {
    const int64_t N = r.p.attn.seq, eb = dt == sim::DType::fp32 ? 4 : r.eb;
    sim::TensorF out(r.p.attn.batch, r.p.attn.heads, N, cols);
    std::vector<float> chunk(static_cast<size_t>(r.BH * r.c * cols));
    for (int64_t i = 0; i < r.P; ++i) {
        Device& v = r.dev[static_cast<size_t>(i)];
        r.use(v);
        for (size_t x = 0; x < v.chunks.size(); ++x) {
            const char* src = static_cast<const char*>(per_device[static_cast<size_t>(i)]) +
                              static_cast<int64_t>(x) * r.BH * r.c * cols * eb;
            copy_to_host_float(src, dt, r.BH * r.c * cols, chunk.data());
            for (int64_t bh = 0; bh < r.BH; ++bh)
                std::copy_n(chunk.begin() + bh * r.c * cols, r.c * cols,
                            out.data.begin() + (bh * N + v.chunks[x] * r.c) * cols);
        }
    }
    return out;
}

RingOutputs outputs_of(Ring& r, bool grads) {
    RingOutputs o;
    std::vector<const void*> O, L, dQ, dK, dV;
    std::vector<DeviceBuffer> rounded;  // the fp32 gradients in the storage type, as the kernels give them
    const int home = static_cast<int>(r.P % 2);
    for (Device& v : r.dev) {
        r.use(v);
        O.push_back(v.O.get());
        L.push_back(v.LSE.get());
        if (grads) {
            const int64_t n = r.cpg * r.chunk_elems;
            for (const float* src :
                 {v.dQacc.as<float>(), r.dK_of(v, r.P > 1 ? home : 0, 0), r.dV_of(v, r.P > 1 ? home : 0, 0)}) {
                rounded.emplace_back(static_cast<size_t>(n * r.eb));
                dispatch_dtype(r.p.attn.dtype, [&]<typename T>() {
                    ring_round<T><<<512, 256>>>(rounded.back().as<T>(), src, n);
                    LAUNCH_CHECK();
                });
            }
            CUDA_CHECK(cudaDeviceSynchronize());
            dQ.push_back(rounded[rounded.size() - 3].get());
            dK.push_back(rounded[rounded.size() - 2].get());
            dV.push_back(rounded[rounded.size() - 1].get());
        }
    }
    o.O = gather(r, O, r.p.attn.dtype, r.d);
    const sim::TensorF lse = gather(r, L, sim::DType::fp32, 1);
    o.LSE = lse.data;
    if (grads) {
        o.dQ = gather(r, dQ, r.p.attn.dtype, r.d);
        o.dK = gather(r, dK, r.p.attn.dtype, r.d);
        o.dV = gather(r, dV, r.p.attn.dtype, r.d);
    }
    o.blocks = r.blocks;
    o.sends = r.sends;
    o.link_bytes = r.link_bytes;
    return o;
}

}  // namespace

bool nccl_available(std::string* why) {
    const Nccl& n = nccl();
    if (!n.why.empty()) {
        if (why) *why = n.why;
        return false;
    }
    return true;
}

std::string nccl_version() {
    if (!nccl_available(nullptr) || !nccl().get_version) return "";
    int v = 0;
    if (nccl().get_version(&v) != ncclSuccess) return "";
    return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
}

int gpu_count() {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) return 0;
    return n;
}

RingOutputs compute_ring(const sim::RingProblem& p, const std::string& kernel, RingTransport t) {
    const bool grads = p.pass != sim::Pass::forward;
    RingHolder h{make_ring(p, kernel, t, grads)};
    Ring& r = *h.r;
    pass_forward(r);
    const int64_t forward_blocks = r.blocks;
    if (grads) pass_backward(r);
    RingOutputs o = outputs_of(r, grads);
    o.blocks_forward = forward_blocks;
    return o;
}

RingMeasurement run_ring(const sim::RingProblem& p, const std::string& kernel, RingTransport t, const RunOptions& opt) {
    RingMeasurement m;
    m.kernel = kernel;
    m.transport = ring_transport_name(t);
    const bool grads = p.pass != sim::Pass::forward;
    RingHolder h{make_ring(p, kernel, t, grads)};
    Ring& r = *h.r;
    m.gpus_used = t == RingTransport::nccl ? static_cast<int>(p.gpus) : 1;

    // the checked run
    pass_forward(r);
    if (grads) pass_backward(r);
    const RingOutputs got = outputs_of(r, grads);
    m.blocks = got.blocks;
    m.sends = got.sends;
    m.link_bytes = got.link_bytes;
    // the same problem by one kernel call on one GPU, and (when cheap) float64
    const Pass one_pass = grads ? Pass::backward : Pass::forward;
    const Outputs one = compute(p.attn, kernel, one_pass);
    std::vector<sim::ErrorStats> vs_one{sim::validate(got.O, one.O, p.attn.dtype)};
    if (grads)
        for (auto [a, b] : {std::pair{&got.dQ, &one.dQ}, {&got.dK, &one.dK}, {&got.dV, &one.dV}})
            vs_one.push_back(sim::validate(*a, *b, p.attn.dtype));
    m.vs_single = vs_one;
    const double work =
        double(p.attn.heads_total()) * double(p.attn.seq) * double(p.attn.seq) * double(p.attn.head_dim);
    if (opt.check_reference && work <= opt.max_reference_work) {
        const sim::Inputs in = sim::generate_inputs(p.attn);
        const sim::TensorD ref = sim::attention_reference(p.attn, in.Q, in.K, in.V);
        m.ref_max.push_back(max_abs_of(ref));
        m.vs_reference.push_back(sim::validate(got.O, ref, p.attn.dtype));
        m.single_vs_reference.push_back(sim::validate(one.O, ref, p.attn.dtype));
        if (grads) {
            const sim::TensorF dO = sim::generate_input(p.attn, sim::InputTensor::dO);
            const GradsD g = fcuda::attention_backward_reference(p.attn, in.Q, in.K, in.V, dO);
            for (auto [a, b, w] :
                 {std::tuple{&got.dQ, &one.dQ, &g.dQ}, {&got.dK, &one.dK, &g.dK}, {&got.dV, &one.dV, &g.dV}}) {
                m.ref_max.push_back(max_abs_of(*w));
                m.vs_reference.push_back(sim::validate(*a, *w, p.attn.dtype));
                m.single_vs_reference.push_back(sim::validate(*b, *w, p.attn.dtype));
            }
        }
    }
    for (const sim::TensorF* x : {&got.O, &got.dQ, &got.dK, &got.dV})
        for (float f : x->data) m.nonfinite += std::isfinite(f) ? 0 : 1;
    {
        const double K = double(p.gpus * p.chunks_per_gpu());
        const std::vector<const sim::TensorF*> ones{&one.O, &one.dQ, &one.dK, &one.dV};
        m.ok = m.nonfinite == 0;
        for (size_t k = 0; k < m.vs_single.size(); ++k) {
            double b = 0, err = 0;
            if (k < m.vs_reference.size()) {
                b = 2 * m.single_vs_reference[k].max_abs + K * ulp_at(p.attn.dtype, m.ref_max[k]);
                err = m.vs_reference[k].max_abs;
            } else {
                double top = 0;
                for (float f : ones[k]->data) top = std::max(top, double(std::abs(f)));
                b = K * ulp_at(p.attn.dtype, top);
                err = m.vs_single[k].max_abs;
            }
            m.bound.push_back(b);
            m.ok = m.ok && err <= b;
        }
    }

    // timed: the pass(es) of the ring, every device's streams, from a synchronised start
    if (opt.repeats > 0) {
        std::vector<double> fwd_ms, bwd_ms;
        constexpr int MARKS = 4;  // forward start, end; backward start, end
        std::vector<cudaEvent_t> ev(r.dev.size() * MARKS);
        for (size_t i = 0; i < r.dev.size(); ++i) {
            r.use(r.dev[i]);
            for (int k = 0; k < MARKS; ++k) CUDA_CHECK(cudaEventCreate(&ev[i * MARKS + static_cast<size_t>(k)]));
        }
        auto at = [&](size_t i, int k) { return ev[i * MARKS + static_cast<size_t>(k)]; };
        auto span = [&](int a, int b) {  // the longest device's time between marks a and b
            double worst = 0;
            for (size_t i = 0; i < r.dev.size(); ++i) {
                float ms = 0;
                CUDA_CHECK(cudaEventElapsedTime(&ms, at(i, a), at(i, b)));
                worst = std::max(worst, double(ms));
            }
            return worst;
        };
        auto mark = [&](int k) {
            for (size_t i = 0; i < r.dev.size(); ++i) {
                Device& v = r.dev[i];
                r.use(v);
                // a device's pass ends when both its streams are done
                CUDA_CHECK(cudaEventRecord(v.joined, v.comm));
                CUDA_CHECK(cudaStreamWaitEvent(v.compute, v.joined, 0));
                CUDA_CHECK(cudaEventRecord(at(i, k), v.compute));
            }
        };
        auto start = [&] {  // L2 flushed, every device idle
            if (opt.flush_l2)
                for (Device& v : r.dev) {
                    r.use(v);
                    flush_l2(v.compute);
                }
            sync_all(r);
        };
        // one timed pass between marks a and a + 1, its slices put back home afterwards
        auto timed = [&](int a, bool backward) {
            start();
            mark(a);
            dispatch_dtype(p.attn.dtype, [&]<typename T>() {
                if (backward)
                    ring_backward<T>(r);
                else
                    ring_forward<T>(r);
            });
            mark(a + 1);
            sync_all(r);
            reset_slots(r, static_cast<int>((r.P - 1) % 2), r.P - 1);
        };
        for (int it = 0; it < opt.warmup + opt.repeats; ++it) {
            timed(0, false);
            if (grads) timed(2, true);
            if (it < opt.warmup) continue;
            fwd_ms.push_back(span(0, 1));
            if (grads) bwd_ms.push_back(span(2, 3));
        }
        for (size_t i = 0; i < ev.size(); ++i) {
            r.use(r.dev[i / MARKS]);
            cudaEventDestroy(ev[i]);
        }
        auto median = [](std::vector<double> v) {
            std::sort(v.begin(), v.end());
            return v.empty() ? 0.0 : v[v.size() / 2];
        };
        m.forward_ms = median(fwd_ms);
        m.backward_ms = median(bwd_ms);
        m.repeats = opt.repeats;
    }
    return m;
}

}  // namespace fcuda

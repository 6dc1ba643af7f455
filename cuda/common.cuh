// cuda/common.cuh — the shared harness of every kernel file in cuda/.
//
// One copy of: CUDA_CHECK / CUBLAS_CHECK with file:line, LAUNCH_CHECK after each launch, RAII
// device buffers, the storage-type traits (fp16 / bf16), device-side input generation from
// sim::input_value (bit-identical to the host's sim::generate_inputs), NaN poisoning of outputs,
// an L2 flush, and the Tensors bundle the kernels read and write.
//
// Nothing here is a kernel variant: the variants live one a file (standard.cu, flash1.cu,
// flash2.cu, flash2_bwd.cu, flash2h.cu) and are driven by cuda/harness.cu through cuda/variants.hpp.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>

#include "sim/dtype.hpp"
#include "sim/generator.hpp"
#include "sim/problem.hpp"

namespace fcuda {

// ---- errors ----------------------------------------------------------------------------------

// What to do about a failed CUDA call, in the user's words: the errors a user can act on get their
// remedy; a sticky error (the context is lost) says that the rest of this process cannot use the GPU.
inline std::string cuda_advice(cudaError_t e) {
    switch (e) {
        case cudaErrorMemoryAllocation:
            return "the GPU has too little free memory for this problem: lower --seq, --batch or --heads, or free "
                   "the GPU (nvidia-smi lists what holds it)";
        case cudaErrorInvalidConfiguration:
        case cudaErrorLaunchOutOfResources:
        case cudaErrorInvalidValue:
            return "this card cannot launch the kernel at this shape: try another --variant or head dim";
        case cudaErrorNoKernelImageForDevice:
        case cudaErrorUnsupportedPtxVersion:
            return "this build has no code for this card: rebuild for its compute capability (cmake -DCMAKE_CUDA_"
                   "ARCHITECTURES=...)";
        case cudaErrorIllegalAddress:
        case cudaErrorLaunchFailure:
        case cudaErrorIllegalInstruction:
        case cudaErrorMisalignedAddress:
        case cudaErrorHardwareStackError:
            return "the GPU context is lost, so every later case in this process fails too: run the bench again "
                   "from the next case, and report this one (a kernel fault)";
        default:
            return "";
    }
}

// A failed CUDA call: the error state is cleared (an error that is not sticky would otherwise be
// returned again by the next cudaGetLastError, and fail a later, correct case), and the message says
// what was asked, what CUDA said and what to do. `what` is the call as written; no source paths.
[[noreturn]] inline void fail(const char* what, cudaError_t e) {
    (void)cudaGetLastError();
    const std::string advice = cuda_advice(e);
    throw std::runtime_error(std::string("the GPU refused ") + what + ": " + cudaGetErrorString(e) +
                             (advice.empty() ? "" : "; " + advice));
}

#define CUDA_CHECK(expr)                                 \
    do {                                                 \
        cudaError_t e_ = (expr);                         \
        if (e_ != cudaSuccess) ::fcuda::fail(#expr, e_); \
    } while (0)

// An allocation the card could not make: what was asked, what the card has free and in all, what to do.
[[noreturn]] inline void fail_allocation(size_t bytes, cudaError_t e) {
    (void)cudaGetLastError();
    if (e != cudaErrorMemoryAllocation) fail("cudaMalloc", e);
    size_t free_b = 0, total_b = 0;
    const bool known = cudaMemGetInfo(&free_b, &total_b) == cudaSuccess;
    (void)cudaGetLastError();
    char b[256];
    std::snprintf(b, sizeof b, "could not allocate %.2f GiB of GPU memory (the card has %.2f GiB free of %.2f GiB)",
                  double(bytes) / (1 << 30), known ? double(free_b) / (1 << 30) : 0.0,
                  known ? double(total_b) / (1 << 30) : 0.0);
    throw std::runtime_error(std::string(b) + "; " + cuda_advice(e));
}

// After every kernel launch: catches bad launch configurations at the launch site.
#define LAUNCH_CHECK() CUDA_CHECK(cudaGetLastError())

// ---- RAII device memory ----------------------------------------------------------------------

class DeviceBuffer {
public:
    DeviceBuffer() = default;
    explicit DeviceBuffer(size_t bytes) : bytes_(bytes) {
        if (bytes_) {
            const cudaError_t e = cudaMalloc(&ptr_, bytes_);
            if (e != cudaSuccess) {
                ptr_ = nullptr;
                fail_allocation(bytes_, e);
            }
        }
    }
    ~DeviceBuffer() {
        if (ptr_) cudaFree(ptr_);
    }
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;
    DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(o.ptr_), bytes_(o.bytes_) {
        o.ptr_ = nullptr;
        o.bytes_ = 0;
    }
    DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
        if (this != &o) {
            if (ptr_) cudaFree(ptr_);
            ptr_ = o.ptr_;
            bytes_ = o.bytes_;
            o.ptr_ = nullptr;
            o.bytes_ = 0;
        }
        return *this;
    }
    void* get() const { return ptr_; }
    template <typename T>
    T* as() const {
        return static_cast<T*>(ptr_);
    }
    size_t bytes() const { return bytes_; }
    // Grow-only: reallocates when more is asked than held (contents are lost).
    void ensure(size_t bytes) {
        if (bytes > bytes_) *this = DeviceBuffer(bytes);
    }

private:
    void* ptr_ = nullptr;
    size_t bytes_ = 0;
};

// ---- storage types ----------------------------------------------------------------------------

template <typename T>
struct StorageTraits;
template <>
struct StorageTraits<__half> {
    static constexpr sim::DType dtype = sim::DType::fp16;
    __device__ static __half from_float(float x) { return __float2half_rn(x); }
    __device__ static float to_float(__half x) { return __half2float(x); }
    __device__ static __half2 pack(float a, float b) { return __floats2half2_rn(a, b); }
};
template <>
struct StorageTraits<__nv_bfloat16> {
    static constexpr sim::DType dtype = sim::DType::bf16;
    __device__ static __nv_bfloat16 from_float(float x) { return __float2bfloat16_rn(x); }
    __device__ static float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }
    __device__ static __nv_bfloat162 pack(float a, float b) { return __floats2bfloat162_rn(a, b); }
};

// dst[0] += a, dst[1] += b by atomics: one float2 atomic (red.global.add.v2.f32) on sm_90, two
// float atomics before it. flash2's backward adds dQ this way; cuda/ceilings.cu measures its rate.
__device__ __forceinline__ void atomic_add2(float* p, float a, float b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    atomicAdd(reinterpret_cast<float2*>(p), make_float2(a, b));
#else
    atomicAdd(p, a);
    atomicAdd(p + 1, b);
#endif
}

// Calls f.template operator()<T>() with T the storage type of `dt` (fp16 or bf16).
template <typename F>
void dispatch_dtype(sim::DType dt, F&& f) {
    if (dt == sim::DType::fp16)
        f.template operator()<__half>();
    else if (dt == sim::DType::bf16)
        f.template operator()<__nv_bfloat16>();
    else
        throw std::runtime_error("cuda kernels store fp16 or bf16 only (got " + std::string(sim::dtype_name(dt)) + ")");
}

// ---- what the kernels read and write ----------------------------------------------------------

// All tensors (B, H, N, d) row-major in the problem's dtype; LSE (B, H, N) float32, natural log.
struct Tensors {
    const void* Q = nullptr;
    const void* K = nullptr;
    const void* V = nullptr;
    void* O = nullptr;
    float* LSE = nullptr;      // written by forward variants that keep it (flash2); may be null
    const void* dO = nullptr;  // backward only
    void* dQ = nullptr;
    void* dK = nullptr;
    void* dV = nullptr;
    // The rows also attend keys outside this call (a ring's block of one query chunk against one
    // key chunk): O and LSE are the whole rows', so a row with one key here is not a row with one
    // key. The backwards then skip their exact zero for such a row.
    bool keys_elsewhere = false;
};

// Scratch memory a variant needs besides its inputs and outputs (S and P of `standard`, the
// fp32 O / l / m of flash1, the dQ accumulator of flash2_bwd). Owned by the harness, grown on
// demand, reused across repeats so that allocation stays out of the timings.
struct Workspace {
    DeviceBuffer a, b, c, d;
};

// ---- device-side helpers used by the harness ---------------------------------------------------

int64_t l2_bytes();  // of the current device
int sm_count();      // streaming multiprocessors of the current device
// How the timed runs empty L2 between calls: write a buffer twice its size (memset; the lines it
// leaves dirty are written back inside the next call: ~6-9 us of a decode call, measured) or read
// one (clean lines). FLASHSIM_L2_FLUSH=write|read overrides the caller's choice for every bench.
enum class L2Flush { write, read };
constexpr L2Flush kTrainingFlush = L2Flush::write;  // run(): the training passes' rows
constexpr L2Flush kDecodeFlush = L2Flush::read;     // run_decode(), trace_decode()
L2Flush l2_flush_mode(L2Flush fallback);            // FLASHSIM_L2_FLUSH, else fallback
const char* l2_flush_name(L2Flush m);
void flush_l2(cudaStream_t s, L2Flush fallback = kTrainingFlush);
// Fill `count` elements of `out` (dtype dt) with sim::input_value(seed, which, first + i) rounded.
void generate_on_device(void* out, sim::DType dt, uint64_t seed, sim::InputTensor which, int64_t count);
// Every byte 0xFF: NaN in fp16, bf16 and fp32.
void poison(void* p, size_t bytes, cudaStream_t s);
// Number of NaN / inf elements among `count` elements of dtype dt (fp32 when dt == fp32).
int64_t count_nonfinite(const void* p, sim::DType dt, int64_t count);
// Copy `count` elements of dtype dt to host floats.
void copy_to_host_float(const void* p, sim::DType dt, int64_t count, float* out);

}  // namespace fcuda

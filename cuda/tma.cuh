// cuda/tma.cuh — the sm_90 pieces of the Tensor Memory Accelerator that more than one kernel uses, as
// thin inline-PTX wrappers (sm_90, not sm_90a: the decode kernel, compiled for sm_80 and sm_90, calls
// them only where __CUDA_ARCH__ >= 900):
//   * mbarrier (init, arrive, arrive with expected transaction bytes, wait on a phase parity), and a
//     word stored through the async proxy that completes on one (st.async);
//   * thread block clusters: a block's rank, the cluster-wide barrier, and loads from a peer block's
//     shared memory (distributed shared memory: mapa, ld.shared::cluster);
//   * TMA: cp.async.bulk.tensor (a 3-D box from a CUtensorMap into shared memory, completing
//     on an mbarrier), and the driver's cuTensorMapEncodeTiled that makes the map (host).
// flash2h.cu and flash2h_bwd.cu reach them through cuda/hopper.cuh.
#pragma once
#include <cuda.h>
#include <cudaTypedefs.h>

#include <cstdint>
#include <stdexcept>
#include <utility>

#include "cuda/common.cuh"

namespace fcuda::hopper {

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// ---- mbarrier ----------------------------------------------------------------------------------
__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_fence_init() { asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory"); }
__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void mbar_arrive_expect_tx(uint32_t bar, uint32_t bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}
// ---- thread block clusters (sm_90) ---------------------------------------------------------------
// This block's rank in its cluster.
__device__ __forceinline__ uint32_t cluster_rank() {
    uint32_t r = 0;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}
// Every thread of every block of the cluster arrives, then waits for all: the shared-memory writes
// each block made before it are visible to the cluster's loads after it (release, acquire).
__device__ __forceinline__ void cluster_sync() {
    asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}
// Shared-memory address `a` of this block as the same address in block `rank` of the cluster (mapa).
__device__ __forceinline__ uint32_t peer_addr(uint32_t a, uint32_t rank) {
    uint32_t out = 0;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(out) : "r"(a), "r"(rank));
    return out;
}
// A float from a cluster shared-memory address (peer_addr): distributed shared memory.
__device__ __forceinline__ float ld_peer_f32(uint32_t a) {
    float v;
    asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(a) : "memory");
    return v;
}
// This block's shared-memory address `a` as an address of its cluster's shared memory (mapa to the
// block's own rank); only in a kernel launched with a cluster dimension.
__device__ __forceinline__ uint32_t own_cluster_addr(uint32_t a) { return peer_addr(a, cluster_rank()); }
// A 4-byte store into a cluster's shared memory by the async proxy, its bytes counted as bar's
// transaction bytes: a thread that sees bar's phase complete sees the word, ordered by the barrier
// alone (st.async, sm_90). dst and bar are cluster addresses (own_cluster_addr); the kernel must be
// launched in clusters of two blocks or more: in a plain launch the instruction faults (illegal
// instruction, H100), and compute-sanitizer's memcheck refuses a cluster of one.
__device__ __forceinline__ void st_async_u32(uint32_t dst, uint32_t value, uint32_t bar) {
    asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.u32 [%0], %1, [%2];" ::"r"(dst), "r"(value),
                 "r"(bar)
                 : "memory");
}
// Returns once the phase with this parity has completed (phases alternate 0, 1, 0, ...).
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
    uint32_t done = 0;
    do {
        asm volatile(
            "{\n.reg .pred p;\n"
            "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
            "selp.u32 %0, 1, 0, p;\n}\n"
            : "=r"(done)
            : "r"(bar), "r"(parity)
            : "memory");
    } while (!done);
}

// ---- TMA -----------------------------------------------------------------------------------------
// One box of the 3-D tensor map at coordinates (c0 innermost, c1, c2) into shared memory at dst;
// the bytes count toward bar's expected transactions. Elements outside the tensor arrive as zeros.
__device__ __forceinline__ void tma_load_3d(uint32_t dst, const CUtensorMap* map, uint32_t bar, int c0, int c1,
                                            int c2) {
    asm volatile(
        "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5}], [%2];" ::
            "r"(dst),
        "l"(reinterpret_cast<uint64_t>(map)), "r"(bar), "r"(c0), "r"(c1), "r"(c2)
        : "memory");
}
__device__ __forceinline__ void tma_prefetch_map(const CUtensorMap* map) {
    asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<uint64_t>(map)) : "memory");
}

// ---- host side ---------------------------------------------------------------------------------

inline PFN_cuTensorMapEncodeTiled_v12000 encode_fn() {
    static PFN_cuTensorMapEncodeTiled_v12000 fn = [] {
        void* f = nullptr;
        cudaDriverEntryPointQueryResult q{};
        CUDA_CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000, cudaEnableDefault, &q));
        if (q != cudaDriverEntryPointSuccess || f == nullptr)
            throw std::runtime_error("TMA: the driver has no cuTensorMapEncodeTiled (needs a CUDA 12+ driver)");
        return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(f);
    }();
    return fn;
}

// Launches kernel(args...) on grid x block in clusters of cluster_x blocks along x (sm_90; grid.x a
// multiple of cluster_x; above 8 the kernel must allow a non-portable cluster size).
template <typename... Params, typename... Args>
void launch_in_clusters(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem, cudaStream_t s,
                        unsigned cluster_x, Args&&... args) {
    cudaLaunchConfig_t cfg{};
    cfg.gridDim = grid;
    cfg.blockDim = block;
    cfg.dynamicSmemBytes = smem;
    cfg.stream = s;
    cudaLaunchAttribute cluster[1];
    cluster[0].id = cudaLaunchAttributeClusterDimension;
    cluster[0].val.clusterDim.x = cluster_x;
    cluster[0].val.clusterDim.y = 1;
    cluster[0].val.clusterDim.z = 1;
    cfg.attrs = cluster;
    cfg.numAttrs = 1;
    CUDA_CHECK(cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...));
}

}  // namespace fcuda::hopper

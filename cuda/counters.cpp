// cuda/counters.cpp — see counters.hpp. The sequence (CUPTI 13 "range profiler" API; the part up to
// the config image is built once per device and kept):
//   profiler initialize -> chip name + counter availability -> host object: metrics -> config image
//   -> range profiler enable on the context -> counter data image -> set config (auto range,
//   kernel replay) -> start -> work -> stop -> decode -> per range: evaluate metrics -> disable.
#include "cuda/counters.hpp"

#if FLASHSIM_HAVE_CUPTI
#include <cuda.h>
#include <cuda_runtime.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>

#include <cstdint>
#include <map>
#include <stdexcept>
#include <vector>
#endif

namespace fcuda {

#if !FLASHSIM_HAVE_CUPTI

CounterValues read_counters(const std::function<void()>& work) {
    (void)work;
    CounterValues c;
    c.why = "this build has no CUPTI (not found when it was configured)";
    return c;
}

#else

namespace {

const char* kMetrics[] = {"dram__bytes_read.sum", "dram__bytes_write.sum", "lts__t_bytes.sum"};
constexpr size_t kNumMetrics = sizeof(kMetrics) / sizeof(kMetrics[0]);
constexpr size_t kMaxRanges = 512;  // kernels one call may launch (flash1 at N = 16384: 66)

void check(CUptiResult r, const char* what) {
    if (r == CUPTI_SUCCESS) return;
    const char* s = nullptr;
    cuptiGetResultString(r, &s);
    throw std::runtime_error(std::string(what) + ": " + (s ? s : "unknown CUPTI error"));
}
#define CUPTI_TRY(call) check((call), #call)

// A CUPTI parameter struct as every call expects it: all zero but its own size.
template <typename P>
P zeroed_params(size_t size) {
    P p{};
    p.structSize = size;
    return p;
}
#define CUPTI_PARAMS(Type) zeroed_params<Type>(Type##_STRUCT_SIZE)

CUcontext current_context() {
    using Fn = CUresult (*)(CUcontext*);
    static Fn fn = [] {
        void* f = nullptr;
        cudaDriverEntryPointQueryResult q{};
        if (cudaGetDriverEntryPointByVersion("cuCtxGetCurrent", &f, 12000, cudaEnableDefault, &q) != cudaSuccess ||
            q != cudaDriverEntryPointSuccess)
            f = nullptr;
        return reinterpret_cast<Fn>(f);
    }();
    if (fn == nullptr) throw std::runtime_error("cuCtxGetCurrent: not found in the driver");
    CUcontext ctx = nullptr;
    if (cudaFree(nullptr) != cudaSuccess || fn(&ctx) != CUDA_SUCCESS || ctx == nullptr)
        throw std::runtime_error("no current CUDA context");
    return ctx;
}

struct HostObject {  // the metric configuration and evaluation side
    CUpti_Profiler_Host_Object* p = nullptr;
    ~HostObject() {
        if (p == nullptr) return;
        auto d = CUPTI_PARAMS(CUpti_Profiler_Host_Deinitialize_Params);
        d.pHostObject = p;
        cuptiProfilerHostDeinitialize(&d);
    }
};
// What depends only on the device: the metrics' configuration image and the host object that
// evaluates them. Built once per device (CUPTI's initialisation, the chip's counter availability
// and the metric configuration are the slow part of a reading) and kept for the process's
// lifetime (never destroyed: CUPTI may be unloaded before static destructors run).
struct Setup {
    CUpti_Profiler_Host_Object* host = nullptr;
    std::vector<uint8_t> config;
    int passes = 0;
};

const Setup& setup_for(int dev, CUcontext ctx) {
    static std::map<int, Setup*> made;
    if (auto it = made.find(dev); it != made.end()) return *it->second;
    if (made.empty()) {
        auto ip = CUPTI_PARAMS(CUpti_Profiler_Initialize_Params);
        CUPTI_TRY(cuptiProfilerInitialize(&ip));
    }
    auto chip = CUPTI_PARAMS(CUpti_Device_GetChipName_Params);
    chip.deviceIndex = static_cast<size_t>(dev);
    CUPTI_TRY(cuptiDeviceGetChipName(&chip));
    auto avail = CUPTI_PARAMS(CUpti_Profiler_GetCounterAvailability_Params);
    avail.ctx = ctx;
    CUPTI_TRY(cuptiProfilerGetCounterAvailability(&avail));
    std::vector<uint8_t> avail_image(avail.counterAvailabilityImageSize);
    avail.pCounterAvailabilityImage = avail_image.data();
    CUPTI_TRY(cuptiProfilerGetCounterAvailability(&avail));

    HostObject host;  // destroyed if anything below fails
    auto hi = CUPTI_PARAMS(CUpti_Profiler_Host_Initialize_Params);
    hi.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
    hi.pChipName = chip.pChipName;
    hi.pCounterAvailabilityImage = avail_image.data();
    CUPTI_TRY(cuptiProfilerHostInitialize(&hi));
    host.p = hi.pHostObject;
    auto add = CUPTI_PARAMS(CUpti_Profiler_Host_ConfigAddMetrics_Params);
    add.pHostObject = host.p;
    add.ppMetricNames = kMetrics;
    add.numMetrics = kNumMetrics;
    CUPTI_TRY(cuptiProfilerHostConfigAddMetrics(&add));
    auto csz = CUPTI_PARAMS(CUpti_Profiler_Host_GetConfigImageSize_Params);
    csz.pHostObject = host.p;
    CUPTI_TRY(cuptiProfilerHostGetConfigImageSize(&csz));
    std::vector<uint8_t> config(csz.configImageSize);
    auto cimg = CUPTI_PARAMS(CUpti_Profiler_Host_GetConfigImage_Params);
    cimg.pHostObject = host.p;
    cimg.configImageSize = config.size();
    cimg.pConfigImage = config.data();
    CUPTI_TRY(cuptiProfilerHostGetConfigImage(&cimg));
    auto np = CUPTI_PARAMS(CUpti_Profiler_Host_GetNumOfPasses_Params);
    np.configImageSize = config.size();
    np.pConfigImage = config.data();
    CUPTI_TRY(cuptiProfilerHostGetNumOfPasses(&np));
    auto* su = new Setup{host.p, std::move(config), static_cast<int>(np.numOfPasses)};
    host.p = nullptr;  // owned by the cache from here on
    made[dev] = su;
    return *su;
}

struct RangeProfiler {  // the collection side, bound to a context
    CUpti_RangeProfiler_Object* p = nullptr;
    ~RangeProfiler() {
        if (p == nullptr) return;
        auto d = CUPTI_PARAMS(CUpti_RangeProfiler_Disable_Params);
        d.pRangeProfilerObject = p;
        cuptiRangeProfilerDisable(&d);
    }
};

}  // namespace

CounterValues read_counters(const std::function<void()>& work) {
    CounterValues out;
    try {
        const CUcontext ctx = current_context();
        int dev = 0;
        if (cudaGetDevice(&dev) != cudaSuccess) throw std::runtime_error("cudaGetDevice failed");
        const Setup& su = setup_for(dev, ctx);
        out.passes = su.passes;

        RangeProfiler rp;
        auto en = CUPTI_PARAMS(CUpti_RangeProfiler_Enable_Params);
        en.ctx = ctx;
        CUPTI_TRY(cuptiRangeProfilerEnable(&en));
        rp.p = en.pRangeProfilerObject;
        auto dsz = CUPTI_PARAMS(CUpti_RangeProfiler_GetCounterDataSize_Params);
        dsz.pRangeProfilerObject = rp.p;
        dsz.pMetricNames = kMetrics;
        dsz.numMetrics = kNumMetrics;
        dsz.maxNumOfRanges = kMaxRanges;
        dsz.maxNumRangeTreeNodes = kMaxRanges;
        CUPTI_TRY(cuptiRangeProfilerGetCounterDataSize(&dsz));
        std::vector<uint8_t> data(dsz.counterDataSize);
        auto di = CUPTI_PARAMS(CUpti_RangeProfiler_CounterDataImage_Initialize_Params);
        di.pRangeProfilerObject = rp.p;
        di.counterDataSize = data.size();
        di.pCounterData = data.data();
        CUPTI_TRY(cuptiRangeProfilerCounterDataImageInitialize(&di));
        auto sc = CUPTI_PARAMS(CUpti_RangeProfiler_SetConfig_Params);
        sc.pRangeProfilerObject = rp.p;
        sc.configSize = su.config.size();
        sc.pConfig = su.config.data();
        sc.counterDataImageSize = data.size();
        sc.pCounterDataImage = data.data();
        sc.range = CUPTI_AutoRange;
        sc.replayMode = CUPTI_KernelReplay;
        sc.maxRangesPerPass = kMaxRanges;
        sc.numNestingLevels = 1;
        sc.minNestingLevel = 1;
        sc.passIndex = 0;
        sc.targetNestingLevel = 1;
        CUPTI_TRY(cuptiRangeProfilerSetConfig(&sc));

        auto st = CUPTI_PARAMS(CUpti_RangeProfiler_Start_Params);
        st.pRangeProfilerObject = rp.p;
        CUPTI_TRY(cuptiRangeProfilerStart(&st));
        work();
        auto sp = CUPTI_PARAMS(CUpti_RangeProfiler_Stop_Params);
        sp.pRangeProfilerObject = rp.p;
        CUPTI_TRY(cuptiRangeProfilerStop(&sp));
        auto dec = CUPTI_PARAMS(CUpti_RangeProfiler_DecodeData_Params);
        dec.pRangeProfilerObject = rp.p;
        CUPTI_TRY(cuptiRangeProfilerDecodeData(&dec));
        if (dec.numOfRangeDropped > 0)
            throw std::runtime_error(std::to_string(dec.numOfRangeDropped) + " kernels not profiled (more than " +
                                     std::to_string(kMaxRanges) + " in one call)");

        auto info = CUPTI_PARAMS(CUpti_RangeProfiler_GetCounterDataInfo_Params);
        info.pCounterDataImage = data.data();
        info.counterDataImageSize = data.size();
        CUPTI_TRY(cuptiRangeProfilerGetCounterDataInfo(&info));
        for (size_t r = 0; r < info.numTotalRanges; ++r) {
            double v[kNumMetrics] = {};
            auto ev = CUPTI_PARAMS(CUpti_Profiler_Host_EvaluateToGpuValues_Params);
            ev.pHostObject = su.host;
            ev.pCounterDataImage = data.data();
            ev.counterDataImageSize = data.size();
            ev.rangeIndex = r;
            ev.ppMetricNames = kMetrics;
            ev.numMetrics = kNumMetrics;
            ev.pMetricValues = v;
            CUPTI_TRY(cuptiProfilerHostEvaluateToGpuValues(&ev));
            out.dram_read += v[0];
            out.dram_write += v[1];
            out.l2 += v[2];
        }
        out.kernels = static_cast<int>(info.numTotalRanges);
        out.ok = out.kernels > 0;
        if (!out.ok) out.why = "CUPTI profiled no kernel";
    } catch (const std::exception& e) {
        out = CounterValues{};
        out.why = e.what();
    }
    return out;
}

#endif

}  // namespace fcuda

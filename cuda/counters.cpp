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
        CUpti_Profiler_Host_Deinitialize_Params d{CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE};
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
        CUpti_Profiler_Initialize_Params ip{CUpti_Profiler_Initialize_Params_STRUCT_SIZE};
        CUPTI_TRY(cuptiProfilerInitialize(&ip));
    }
    CUpti_Device_GetChipName_Params chip{CUpti_Device_GetChipName_Params_STRUCT_SIZE};
    chip.deviceIndex = static_cast<size_t>(dev);
    CUPTI_TRY(cuptiDeviceGetChipName(&chip));
    CUpti_Profiler_GetCounterAvailability_Params avail{CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE};
    avail.ctx = ctx;
    CUPTI_TRY(cuptiProfilerGetCounterAvailability(&avail));
    std::vector<uint8_t> avail_image(avail.counterAvailabilityImageSize);
    avail.pCounterAvailabilityImage = avail_image.data();
    CUPTI_TRY(cuptiProfilerGetCounterAvailability(&avail));

    HostObject host;  // destroyed if anything below fails
    CUpti_Profiler_Host_Initialize_Params hi{CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE};
    hi.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
    hi.pChipName = chip.pChipName;
    hi.pCounterAvailabilityImage = avail_image.data();
    CUPTI_TRY(cuptiProfilerHostInitialize(&hi));
    host.p = hi.pHostObject;
    CUpti_Profiler_Host_ConfigAddMetrics_Params add{CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE};
    add.pHostObject = host.p;
    add.ppMetricNames = kMetrics;
    add.numMetrics = kNumMetrics;
    CUPTI_TRY(cuptiProfilerHostConfigAddMetrics(&add));
    CUpti_Profiler_Host_GetConfigImageSize_Params csz{CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE};
    csz.pHostObject = host.p;
    CUPTI_TRY(cuptiProfilerHostGetConfigImageSize(&csz));
    std::vector<uint8_t> config(csz.configImageSize);
    CUpti_Profiler_Host_GetConfigImage_Params cimg{CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE};
    cimg.pHostObject = host.p;
    cimg.configImageSize = config.size();
    cimg.pConfigImage = config.data();
    CUPTI_TRY(cuptiProfilerHostGetConfigImage(&cimg));
    CUpti_Profiler_Host_GetNumOfPasses_Params np{CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE};
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
        CUpti_RangeProfiler_Disable_Params d{CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE};
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
        CUpti_RangeProfiler_Enable_Params en{CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE};
        en.ctx = ctx;
        CUPTI_TRY(cuptiRangeProfilerEnable(&en));
        rp.p = en.pRangeProfilerObject;
        CUpti_RangeProfiler_GetCounterDataSize_Params dsz{CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE};
        dsz.pRangeProfilerObject = rp.p;
        dsz.pMetricNames = kMetrics;
        dsz.numMetrics = kNumMetrics;
        dsz.maxNumOfRanges = kMaxRanges;
        dsz.maxNumRangeTreeNodes = kMaxRanges;
        CUPTI_TRY(cuptiRangeProfilerGetCounterDataSize(&dsz));
        std::vector<uint8_t> data(dsz.counterDataSize);
        CUpti_RangeProfiler_CounterDataImage_Initialize_Params di{CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE};
        di.pRangeProfilerObject = rp.p;
        di.counterDataSize = data.size();
        di.pCounterData = data.data();
        CUPTI_TRY(cuptiRangeProfilerCounterDataImageInitialize(&di));
        CUpti_RangeProfiler_SetConfig_Params sc{CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE};
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

        CUpti_RangeProfiler_Start_Params st{CUpti_RangeProfiler_Start_Params_STRUCT_SIZE};
        st.pRangeProfilerObject = rp.p;
        CUPTI_TRY(cuptiRangeProfilerStart(&st));
        work();
        CUpti_RangeProfiler_Stop_Params sp{CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE};
        sp.pRangeProfilerObject = rp.p;
        CUPTI_TRY(cuptiRangeProfilerStop(&sp));
        CUpti_RangeProfiler_DecodeData_Params dec{CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE};
        dec.pRangeProfilerObject = rp.p;
        CUPTI_TRY(cuptiRangeProfilerDecodeData(&dec));
        if (dec.numOfRangeDropped > 0)
            throw std::runtime_error(std::to_string(dec.numOfRangeDropped) + " kernels not profiled (more than " +
                                     std::to_string(kMaxRanges) + " in one call)");

        CUpti_RangeProfiler_GetCounterDataInfo_Params info{CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE};
        info.pCounterDataImage = data.data();
        info.counterDataImageSize = data.size();
        CUPTI_TRY(cuptiRangeProfilerGetCounterDataInfo(&info));
        for (size_t r = 0; r < info.numTotalRanges; ++r) {
            double v[kNumMetrics] = {};
            CUpti_Profiler_Host_EvaluateToGpuValues_Params ev{CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE};
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

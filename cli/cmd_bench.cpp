// flashsim bench — time the CUDA kernels (cuda/), check them, and set their DRAM traffic beside
// the simulator's count for the same tiling.
//
//   flashsim bench [--variant standard,flash1,flash2] [--seq 1024,4096] [--head-dim 64,128]
//                  [--batch B --heads H] [--dtype bf16|fp16] [--causal] [--pass forward,backward]
//                  [--repeats 20] [--warmup 3] [--json FILE] [--no-check] [--nvtx]
//
// Per configuration: median/min/max ms over the timed repeats, TFLOP/s (4 B H N^2 d forward, half
// when causal, x2.5 backward), DRAM bytes (measured by ncu from scripts/gpu_session.sh and merged
// into the JSON there; null here), the simulator's HBM bytes for the kernel's own (B_r, B_c, SRAM)
// (sim::simulate, numerics off, H200 preset; null for backward until the simulator has it), and
// the errors against the float64 reference (small problems) and against `standard`.
// Default shape when --batch/--heads are omitted: B*N = 16384 tokens, H*d = 2048.
// Every row carries peak_bytes: the device memory the pass holds, from the harness's own
// allocations (one set of inputs and outputs plus the variant's workspace; cuda/api.hpp).
//
//   flashsim bench --decode [--cache 32768,131072 --batch B] [--q-heads 32 --kv-heads 8] [-d 128]
//                  [--splits 0] [--trace 10]
// decodes one new token against a KV cache (cuda/decode.cu): without --cache the four rows
// (B, L) = (1, 32768), (1, 131072), (8, 32768), (64, 8192); rows have "pass": "decode", kv_len,
// q_heads, kv_heads, splits, kv_bytes (K and V read), tbps (kv_bytes / median time) and the
// simulator's prediction (sim::simulate_decode with the same splits). --trace K adds K traced
// calls a row and its "trace": where the call's time goes, from the blocks' own timer stamps
// (fcuda::DecodeTrace; python3 tools/results/table.py --decode-trace prints it).
//
//   flashsim bench --counters-probe [--json F]
// runs known work after the bench's L2 flush under the in-process DRAM counters (a warp, reads of
// 64, 192 and 576 MiB, a 64 MiB write) and prints what they counted.
//
//   flashsim bench --launch-probe [--repeats R] [--json F]
// times what a short call holds besides its work: an empty kernel with and without the most shared
// memory, a copy and the decode kernel at B = 1, L = 32k, each after the decode rows' L2 flush, and
// after that flush plus a kernel that leaves the SMs set to the most shared memory or to the default.
//
//   flashsim bench --fit [--variant standard,flash2,flash2h] [--batch 1 --heads 16 -d 128]
// finds the longest N (grid of 1/8 of a power of two) whose training step (forward + backward)
// the GPU can allocate, by allocation only (no kernel runs), beside the simulator's answer for
// the free memory cudaMemGetInfo reports (sim::longest_fit).
//   flashsim bench --ring P [--ring-layout balanced|contiguous] [--ring-transport emulated|nccl]
//                  [--variant flash2h] [--seq 8192 -d 128 --causal] [--pass forward|backward]
// runs ring attention with the kernels (cuda/ring.cu): P devices emulated on this GPU, or GPUs
// 0..P-1 over NCCL; per row the ring's forward (and backward) time, its outputs against one
// kernel call on the whole problem and against float64 (small problems), the same kernel on the
// whole problem and on one device's share (N/P tokens) timed in the same call, and the
// simulator's ring (sim::simulate_ring with the kernel's model) for P GPUs.
//
// Without CUDA in the build or without a visible device it says so in one line and exits 2.
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <unistd.h>
#include <vector>

#include "cli/bench.hpp"
#include "cli/commands.hpp"
#include "report/kernel_report.hpp"
#include "sim/knobs.hpp"
#if FLASHSIM_HAVE_CUDA
#include "cuda/api.hpp"
#endif

using bench::BenchArgs;

namespace {

// The list options as typed and the options whose presence matters, kept alive by the callback.
struct BenchInput {
    std::string variants, seqs, dims, passes = "forward", caches, slice, resim, mode;
    bool knobs = false, knobs_markdown = false;
    CLI::Option *batch = nullptr, *heads = nullptr, *layout = nullptr, *time_limit = nullptr, *ring = nullptr,
                *study = nullptr, *transport = nullptr;
};

// The modes as a word (`flashsim bench decode`), each the same as its flag.
const char* const kModes = "time, decode, ring, fit, study, scale, ceilings, counters-probe, launch-probe, knobs";

void add_mode_options(CLI::App* cmd, BenchArgs& a, BenchInput& in) {
    cmd->add_option("mode", in.mode,
                    std::string("The mode: ") + kModes +
                        " (default time; ring and study take their count from --ring P and --study COUNT)");
    cmd->add_flag("--counters-probe", a.counters_probe,
                  "What the in-process DRAM counters see for known work after the L2 flush (a warp, reads of 64, "
                  "192 and 576 MiB, a 64 MiB write), beside the work's own bytes");
    cmd->add_flag("--launch-probe", a.launch_probe,
                  "Time an empty kernel, a copy and the decode kernel (B = 1, L = 32k) after the decode rows' L2 "
                  "flush, with the SMs left set to the most shared memory or to the default: what a short call "
                  "pays besides its work");
    cmd->add_flag("--ceilings", a.ceilings,
                  "Measure this GPU's ceilings instead (HBM copy, L2, shared memory, mma.sync, wgmma, exp unit, "
                  "launch) with microbenchmarks; --json writes them");
    cmd->add_flag("--decode", a.decode,
                  "Decode one new token against a KV cache (cuda/decode.cu); without --cache the rows (B, L) = (1, "
                  "32768), (1, 131072), (8, 32768), (64, 8192)");
    cmd->add_option("--cache", in.caches,
                    "--decode: comma-separated KV cache lengths L (batch from --batch, default 1)");
    cmd->add_option("--q-heads", a.q_heads, "--decode: query heads H_q")->capture_default_str();
    cmd->add_option("--kv-heads", a.kv_heads, "--decode: key/value heads H_kv (dividing H_q)")->capture_default_str();
    cmd->add_option("--splits", a.splits, "--decode: splits of the cache (0: choose to fill the SMs)")
        ->capture_default_str();
    cmd->add_option("--trace", a.trace,
                    "--decode: K traced calls a row after the timed ones: where a call's time goes, from the "
                    "kernel's per-block timer stamps")
        ->capture_default_str();
    in.ring = cmd->add_option(
        "--ring", a.ring,
        "Ring attention with the kernels over P devices (emulated on this GPU, or --ring-transport nccl)");
    in.layout =
        cmd->add_option("--ring-layout", a.ring_layout, "--ring: balanced or contiguous")->capture_default_str();
    in.transport = cmd->add_option("--ring-transport", a.ring_transport,
                                   "--ring: emulated (P devices on this GPU, device copies) or nccl (GPUs 0..P-1)")
                       ->capture_default_str();
    cmd->add_flag("--fit", a.fit,
                  "The longest N each variant's training step can allocate (B=1, H=16, d=128 unless given; "
                  "allocation only, no kernel runs), beside the simulator's answer");
    in.study = cmd->add_option(
        "--study", a.study,
        "The numerics study: this many random shapes, every kernel and pass against float64 (seed from --seed)");
    in.time_limit =
        cmd->add_option("--time-limit", a.time_limit, "--study: start no new shape after this many seconds");
    cmd->add_option("--study-slice", in.slice,
                    "--study: K/M runs only the shapes whose index is K modulo M (M processes share a study)");
    cmd->add_flag("--scale", a.scale,
                  "The flash kernels past 2^31 elements in a tensor and at N = 1,048,576 (sizes cut to this card's "
                  "free memory), checked on sampled rows");
    cmd->add_option("--resimulate", in.resim,
                    "Recompute the simulator's columns of a recorded bench JSON (no GPU needed); prints the "
                    "result, or writes it to the file --json names (the same file to update it)");
    cmd->add_flag("--knobs", in.knobs, "Print the FLASHSIM_* tuning knobs (docs/knobs.md) and exit");
    cmd->add_flag("--knobs-markdown", in.knobs_markdown, "The same as docs/knobs.md's Markdown table");
}

void add_options(CLI::App* cmd, BenchArgs& a, BenchInput& in) {
    cmd->add_option("--variant", in.variants,
                    "Comma-separated: standard, flash1, flash2, flash2h (Hopper only) (default: all this GPU runs); "
                    "for --pass step also pairs FWD+BWD, e.g. flash2h+flash2");
    cmd->add_option("--seq,-n", in.seqs, "Comma-separated sequence lengths (default 1024,2048,4096,8192,16384)");
    cmd->add_option("--head-dim,-d", in.dims, "Comma-separated head dims, 64 and/or 128 (default both)");
    in.batch = cmd->add_option("--batch,-b", a.batch, "Batch B (default 16384 / N)");
    in.heads = cmd->add_option("--heads", a.heads, "Heads H (default 2048 / d)");
    cmd->add_option("--dtype", a.dtype, "bf16 or fp16")->capture_default_str();
    cmd->add_flag("--causal", a.causal, "Causal mask");
    cmd->add_option("--pass", in.passes,
                    "Comma-separated: forward, backward, step (a training step: the forward then the backward, "
                    "timed as one)")
        ->capture_default_str();
    cmd->add_option("--repeats", a.repeats, "Timed repeats (median reported); 0: none")->capture_default_str();
    cmd->add_option("--warmup", a.warmup, "Untimed warm-up runs")->capture_default_str();
    cmd->add_option("--seed", a.seed, "Input generator seed")->capture_default_str();
    cmd->add_option("--json", a.json, "Write every row (and device, driver, date, commit, knobs) to this file");
    cmd->add_option("--gpu", a.gpu,
                    "Machine preset the predictions are made for (H200, H100-SXM, A100-80GB, ...); default: the card "
                    "the bench runs on (--resimulate: the file's recorded device), else H200");
    cmd->add_option("--predict-ceilings", a.predict_ceilings,
                    "Ceilings of the kernel model's predictions: auto (the card's measured file, else estimated from "
                    "a measured card of its architecture, else the datasheet), measured, estimated or datasheet")
        ->capture_default_str();
    cmd->add_flag("--no-check", a.no_check, "Skip the reference and standard comparisons");
    cmd->add_flag("--nvtx", a.nvtx, "Wrap the checked run in an NVTX range 'measure' (for ncu)");
    add_mode_options(cmd, a, in);
    std::string footer = "Tuning knobs (environment; `flashsim bench --knobs` for defaults and what each needs):\n";
    for (const sim::Knob& k : sim::knobs())
        if (std::string_view(k.reader).substr(0, 5) == "cuda/")
            footer += "  " + std::string(k.name) + "=" + std::string(k.values) + "\n";
    cmd->footer(footer);
}

// A mode word sets its flag; a word and a different flag together are refused.
void apply_mode(BenchArgs& a, const BenchInput& in) {
    const std::string& m = in.mode;
    if (m.empty() || m == "time") return;
    if (m == "decode")
        a.decode = true;
    else if (m == "fit")
        a.fit = true;
    else if (m == "scale")
        a.scale = true;
    else if (m == "ceilings")
        a.ceilings = true;
    else if (m == "counters-probe")
        a.counters_probe = true;
    else if (m == "launch-probe")
        a.launch_probe = true;
    else if (m == "ring") {
        if (a.ring == 0) throw std::runtime_error("bench ring needs the device count: --ring P");
    } else if (m == "study") {
        if (a.study == 0) throw std::runtime_error("bench study needs the count of shapes: --study COUNT");
    } else if (m != "knobs")
        throw std::runtime_error("unknown bench mode '" + m + "'; the modes are " + kModes);
}

#if FLASHSIM_HAVE_CUDA
// a whole number for a list flag, or an error that names the flag and the item
int64_t whole(const std::string& item, const char* flag) {
    size_t used = 0;
    int64_t v = 0;
    try {
        v = std::stoll(item, &used);
    } catch (const std::exception&) { used = 0; }
    if (item.empty() || used != item.size())
        throw std::runtime_error(std::string(flag) + " takes whole numbers separated by commas, got '" + item + "'");
    return v;
}

void parse_lists(BenchArgs& a, const BenchInput& in) {
    a.variants = split_items(in.variants, "--variant");
    a.passes = split_items(in.passes, "--pass");
    if (!in.seqs.empty()) {
        a.seqs.clear();
        for (const auto& s : split_items(in.seqs, "--seq")) a.seqs.push_back(whole(s, "--seq"));
    }
    if (!in.dims.empty()) {
        a.head_dims.clear();
        for (const auto& s : split_items(in.dims, "--head-dim")) a.head_dims.push_back(whole(s, "--head-dim"));
        a.dims_given = true;
    }
    for (const auto& s : split_items(in.caches, "--cache")) {
        const int64_t L = whole(s, "--cache");
        if (L <= 0) throw std::runtime_error("--cache lengths must be >= 1, got " + s);
        a.caches.push_back(L);
    }
    if (!in.slice.empty()) {
        if (a.study == 0) throw std::runtime_error("--study-slice goes with --study");
        const auto cut = in.slice.find('/');
        if (cut == std::string::npos) throw std::runtime_error("--study-slice takes K/M, e.g. 0/4");
        a.slice = static_cast<int>(whole(in.slice.substr(0, cut), "--study-slice K/M"));
        a.slices = static_cast<int>(whole(in.slice.substr(cut + 1), "--study-slice K/M"));
        if (a.slices < 1 || a.slice < 0 || a.slice >= a.slices)
            throw std::runtime_error("--study-slice K/M needs 0 <= K < M, got " + in.slice);
    }
}

void check_variants(const BenchArgs& a) {
    const std::vector<std::string> known = fcuda::variants();
    for (const auto& v : a.variants) {
        const auto [fwd, bwd] = fcuda::step_pair(v);  // "flash2h+flash2": a step's pair
        for (const std::string& k : {fwd, bwd})
            if (std::find(known.begin(), known.end(), k) == known.end()) {
                std::string list;
                for (const auto& n : known) list += (list.empty() ? "" : ", ") + n;
                throw std::runtime_error("unknown variant '" + k + "' (" + list +
                                         "; a step may pair two as FWD+BWD, e.g. flash2h+flash2)");
            }
        if (v.find('+') != std::string::npos && std::find(a.passes.begin(), a.passes.end(), "step") == a.passes.end())
            throw std::runtime_error("'" + v + "' pairs a forward with a backward: it runs with --pass step");
    }
}

// values the runs would otherwise take silently: each refused with what it takes
void check_args(const BenchArgs& a, const BenchInput& in) {
    if (a.decode && a.fit) throw std::runtime_error("--decode and --fit are separate runs");
    if (!a.caches.empty() && !a.decode) throw std::runtime_error("--cache goes with --decode");
    if (a.trace != 0 && !a.decode) throw std::runtime_error("--trace goes with --decode");
    if (a.trace < 0 || a.trace > 1000)
        throw std::runtime_error("--trace takes a count of traced calls from 1 to 1000, got " +
                                 std::to_string(a.trace));
    if (int(a.decode) + int(a.fit) + int(a.study > 0) + int(a.scale) + int(a.ring != 0) + int(a.ceilings) +
            int(a.counters_probe) + int(a.launch_probe) >
        1)
        throw std::runtime_error(
            "--decode, --fit, --study, --scale, --ring, --ceilings, --counters-probe and --launch-probe are "
            "separate runs");
    if (a.ring < 0 || (in.ring->count() && a.ring == 0)) throw std::runtime_error("--ring takes a device count P >= 1");
    if (a.study < 0 || (in.study->count() && a.study == 0))
        throw std::runtime_error("--study takes a count of shapes >= 1");
    for (int64_t n : a.seqs)
        if (n < 1 || n > (int64_t{1} << 24))
            throw std::runtime_error("--seq takes lengths from 1 to 16,777,216, got " + std::to_string(n));
    for (int64_t d : a.head_dims)
        if (d < 1 || d > 1024)
            throw std::runtime_error("--head-dim takes sizes from 1 to 1024 (the kernels run 64 and 128), got " +
                                     std::to_string(d));
    if (in.batch->count() && a.batch < 1)
        throw std::runtime_error("--batch must be >= 1, got " + std::to_string(a.batch) +
                                 " (leave it out for 16384 / N)");
    if (in.heads->count() && a.heads < 1)
        throw std::runtime_error("--heads must be >= 1, got " + std::to_string(a.heads) +
                                 " (leave it out for 2048 / d)");
    if (a.repeats < 0) throw std::runtime_error("--repeats must be >= 0 (0: no timed repeats)");
    if (a.warmup < 0) throw std::runtime_error("--warmup must be >= 0");
    if ((in.layout->count() || in.transport->count()) && a.ring == 0)
        throw std::runtime_error("--ring-layout and --ring-transport go with --ring P");
    if (in.time_limit->count() && a.study == 0) throw std::runtime_error("--time-limit goes with --study");
    if (in.time_limit->count() && !(a.time_limit > 0))
        throw std::runtime_error("--time-limit takes a number of seconds > 0");
    if (!a.gpu.empty()) (void)sim::find_machine(a.gpu);  // an unknown preset is refused with the list
    if (!a.json.empty()) {  // a path that cannot be written fails now, not after the whole run
        namespace fs = std::filesystem;
        const fs::path out(a.json);
        const fs::path dir = out.has_parent_path() ? out.parent_path() : fs::path(".");
        std::error_code ec;
        if (fs::is_directory(out, ec))
            throw std::runtime_error("--json " + a.json + " is a folder; give a file name, e.g. " +
                                     (out / "bench.json").string());
        if (!fs::is_directory(dir, ec) || ::access(dir.c_str(), W_OK) != 0)
            throw std::runtime_error("--json " + a.json + ": cannot write into " + dir.string() +
                                     " (no such folder, or not writable); choose another path");
    }
}

int run_mode(const BenchArgs& a) {
    if (a.decode) return bench::run_decode_bench(a);
    if (a.fit) return bench::run_fit_bench(a);
    if (a.study) return bench::run_study(a);
    if (a.scale) return bench::run_scale(a);
    if (a.ring) return bench::run_ring_bench(a);
    if (const int rc = bench::check_device_and_dtype(a)) return rc;
    if (a.ceilings) return bench::run_ceilings(a);
    if (a.counters_probe) return bench::run_counters_probe(a);
    if (a.launch_probe) return bench::run_launch_probe(a);
    return bench::run_bench(a);
}
#endif

}  // namespace

void register_bench(CLI::App& app, int& rc) {
    auto args = std::make_shared<BenchArgs>();
    auto in = std::make_shared<BenchInput>();
    auto* cmd =
        app.add_subcommand("bench", "Time the CUDA kernels, check them, compare their traffic with the simulator");
    add_options(cmd, *args, *in);
    // every object the options write into is captured (the options keep pointers into them)
    cmd->callback([args, in, &rc] {
        try {
            apply_mode(*args, *in);
            if (in->knobs || in->knobs_markdown || in->mode == "knobs") {
                std::cout << (in->knobs_markdown ? sim::knobs_markdown() : sim::knobs_text());
                rc = 0;
                return;
            }
            if (!report::is_rates_choice(args->predict_ceilings))
                throw sim::Error("--predict-ceilings must be auto, measured, estimated or datasheet, got '" +
                                 args->predict_ceilings + "'");
            if (!in->resim.empty()) {
                rc = bench::resimulate(in->resim, args->gpu, args->json, args->predict_ceilings);
                return;
            }
#if FLASHSIM_HAVE_CUDA
            parse_lists(*args, *in);
            check_variants(*args);
            check_args(*args, *in);
            rc = run_mode(*args);
#else
            std::cerr << "flashsim bench: this build has no CUDA backend (built without nvcc); recorded H200 "
                         "results are in results/h200/bench.json\n";
            rc = 2;
#endif
        } catch (const std::exception& e) {
            print_error("bench", e.what());
            rc = 1;
        }
    });
}

// flashsim fit — the longest sequence length N whose attention layer fits a GPU's memory, for each
// algorithm and pass: a binary search on the N grid (steps of an eighth of a power of two) over
// the footprint sim::footprint counts (the tensors a pass holds in HBM at once).
//
//   flashsim fit [--batch 1 --heads 16 --head-dim 128 --dtype bf16] [--gpu H200 | --memory 80GB]
//                [--algo standard,flash1,flash2] [--pass forward,backward,both] [--json]
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "report/memory.hpp"

namespace {

struct FitArgs {
    int64_t batch = 1, heads = 16, head_dim = 128;
    std::string dtype = "bf16", gpu = "H200", algos = "standard,flash1,flash2", passes = "both", memory;
    bool json = false;
};

// "80GB", "139GiB", "24e9", "512MiB" -> bytes; throws sim::Error on anything else.
double parse_memory(const std::string& s) {
    size_t used = 0;
    double v = 0;
    try {
        v = std::stod(s, &used);
    } catch (const std::exception&) { used = 0; }
    const std::string unit = s.substr(used);
    double mul = 0;
    for (const auto& [u, f] : std::initializer_list<std::pair<const char*, double>>{{"", 1},
                                                                                    {"B", 1},
                                                                                    {"KB", 1e3},
                                                                                    {"MB", 1e6},
                                                                                    {"GB", 1e9},
                                                                                    {"TB", 1e12},
                                                                                    {"KiB", 1024.0},
                                                                                    {"MiB", 1048576.0},
                                                                                    {"GiB", 1073741824.0},
                                                                                    {"TiB", 1099511627776.0}})
        if (unit == u) mul = f;
    if (used == 0 || mul == 0 || !(v > 0) || !std::isfinite(v))
        throw sim::Error("--memory must be a positive size such as 80GB, 139GiB or 24e9 (bytes), got '" + s + "'");
    // at least a byte, at most a petabyte (no GPU holds more; the search's sizes stay exact)
    if (v * mul < 1 || v * mul > 1e15) throw sim::Error("--memory must be between 1 byte and 1 PB, got '" + s + "'");
    return v * mul;
}

}  // namespace

void register_fit(CLI::App& app, int& rc) {
    auto a = std::make_shared<FitArgs>();
    auto* cmd = app.add_subcommand(
        "fit",
        "The longest N one attention layer fits in a GPU's memory, per algorithm and pass (binary search on "
        "the N grid of 1/8 of a power of two)");
    cmd->add_option("--batch,-b", a->batch, "Batch B")->capture_default_str();
    cmd->add_option("--heads", a->heads, "Heads H")->capture_default_str();
    cmd->add_option("--head-dim,-d", a->head_dim, "Head dimension d")->capture_default_str();
    cmd->add_option("--dtype", a->dtype, "fp16, bf16 or fp32")->capture_default_str();
    cmd->add_option("--gpu", a->gpu, "GPU preset (its usable memory): H200, H100-SXM, A100-40GB, A100-80GB, RTX4090")
        ->capture_default_str();
    auto* opt_memory =
        cmd->add_option("--memory", a->memory, "Capacity instead of the preset's, e.g. 80GB, 139GiB, 24e9");
    cmd->add_option("--algo,-a", a->algos, "Comma-separated: standard, flash1, flash2")->capture_default_str();
    cmd->add_option("--pass", a->passes, "Comma-separated: forward, backward, both (a training step)")
        ->capture_default_str();
    cmd->add_flag("--json", a->json, "Print one JSON object");
    cmd->callback([a, opt_memory, &rc] {
        try {
            sim::Problem shape;
            shape.batch = a->batch;
            shape.heads = a->heads;
            shape.head_dim = a->head_dim;
            shape.seq = 1;
            const auto dt = sim::parse_dtype(a->dtype);
            if (!dt) throw sim::Error("unknown --dtype '" + a->dtype + "'; use fp16, bf16 or fp32");
            if (*dt == sim::DType::fp8)
                throw sim::Error(
                    "fp8 is modelled for the attention forward only (`flashsim simulate --kernel flash2h --dtype fp8`, "
                    "`flashsim numerics --dtype fp8`); use fp16, bf16 or fp32 here");
            shape.dtype = *dt;
            shape.validate();
            const sim::Machine& m = sim::find_machine(a->gpu);
            if (opt_memory->count() && a->memory.empty())
                throw sim::Error("--memory needs a size such as 80GB, 139GiB or 24e9 (bytes)");
            const double cap = a->memory.empty() ? sim::usable_memory(m) : parse_memory(a->memory);
            std::vector<report::FitRow> rows;
            const auto algos = split_items(a->algos, "--algo"), passes = split_items(a->passes, "--pass");
            if (algos.empty()) throw sim::Error("--algo needs at least one of standard, flash1, flash2");
            if (passes.empty()) throw sim::Error("--pass needs at least one of forward, backward, both");
            for (const auto& an : algos) {
                const auto al = sim::parse_algo(an);
                if (!al) throw sim::Error("unknown --algo '" + an + "'; use standard, flash1 or flash2");
                for (const auto& pn : passes) {
                    const auto ps = sim::parse_pass(pn);
                    if (!ps) throw sim::Error("--pass must be forward, backward or both, got '" + pn + "'");
                    rows.push_back({*al, *ps, sim::longest_fit(shape, *al, *ps, cap)});
                }
            }
            if (a->json)
                std::cout << report::fit_json(shape, m, rows).dump(2) << "\n";
            else
                std::cout << report::fit_text(shape, m, rows);
            rc = 0;
        } catch (const sim::Error& e) {
            print_error("fit", e.what());
            rc = 1;
        }
    });
}

#include "report/figure2.hpp"

#include <cstdio>
#include <sstream>

namespace report {

namespace {

std::string f(const char* format, double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, format, v);
    return buf;
}

std::string pad(const std::string& s, size_t w, bool left = false) {
    if (s.size() >= w) return s;
    return left ? s + std::string(w - s.size(), ' ') : std::string(w - s.size(), ' ') + s;
}

void kernels_text(std::ostringstream& o, const sim::Fig2Column& c) {
    o << c.name << ": " << c.description << "\n";
    o << "  " << pad("kernel", 58, true) << pad("read GB", 9) << pad("written GB", 11) << pad("GFLOP", 8)
      << pad("ms", 8) << "  bound\n";
    for (const auto& k : c.kernels)
        o << "  " << pad(std::string(k.pass ? "bwd " : "fwd ") + k.name, 58, true)
          << pad(f("%.3f", static_cast<double>(k.read_bytes()) / 1e9), 9)
          << pad(f("%.3f", static_cast<double>(k.written_bytes()) / 1e9), 11)
          << pad(f("%.1f", (k.matmul_flops + k.other_flops) / 1e9), 8) << pad(f("%.3f", k.seconds * 1e3), 8) << "  "
          << k.bound << "\n";
}

nlohmann::json column_json(const sim::Fig2Column& c) {
    nlohmann::json ks = nlohmann::json::array();
    for (const auto& k : c.kernels) {
        nlohmann::json ts = nlohmann::json::array();
        for (const auto& t : k.tensors) ts.push_back({{"tensor", t.tensor}, {"read", t.read}, {"written", t.written}});
        ks.push_back({{"name", k.name},
                      {"pass", k.pass ? "backward" : "forward"},
                      {"tensors", ts},
                      {"read_bytes", k.read_bytes()},
                      {"written_bytes", k.written_bytes()},
                      {"matmul_flops", k.matmul_flops},
                      {"other_flops", k.other_flops},
                      {"exps", k.exps},
                      {"ms", k.seconds * 1e3},
                      {"bound", k.bound}});
    }
    return {{"name", c.name},          {"description", c.description}, {"kernel_count", c.kernels.size()},
            {"gflops", c.flops() / 1e9},
            {"matmul_gflops", c.matmul_flops() / 1e9}, {"hbm_gb", static_cast<double>(c.hbm_bytes()) / 1e9},
            {"ms", c.seconds() * 1e3}, {"kernels", ks},                 {"notes", c.notes}};
}

}  // namespace

std::string figure2_text(const sim::Figure2& fig) {
    const auto& paper = sim::paper_figure2();
    const auto& p = fig.problem;
    std::ostringstream o;
    o << "figure2: the FlashAttention paper's Figure 2, modelled. B=" << p.batch << " H=" << p.heads << " N=" << p.seq
      << " d=" << p.head_dim << " " << sim::dtype_name(p.dtype) << (p.causal ? " causal" : "")
      << ", forward + backward, on " << fig.machine << "\n";
    o << "paper: " << paper.setting << "\n";
    o << "rates: " << fig.rates_source << "\n";
    if (fig.machine.rfind("A100", 0) != 0)
        o << "note: the paper measured an A100; on " << fig.machine
          << " the ours/paper columns set two GPUs side by side (the bytes still compare; the times do not)\n";
    o << "\n";

    o << "Left panel" << pad("standard (eager PyTorch)", 34) << pad("FlashAttention (FA1)", 30) << "\n";
    o << pad("", 16, true);
    for (int i = 0; i < 2; ++i) o << pad("ours", 10) << pad("paper", 9) << pad("ours/paper", 12);
    o << "\n";
    auto row = [&](const char* label, double a, double pa, double b, double pb, const char* fmt) {
        o << pad(label, 16, true) << pad(f(fmt, a), 10) << pad(f("%.1f", pa), 9) << pad(f("%.2f", a / pa), 12)
          << pad(f(fmt, b), 10) << pad(f("%.1f", pb), 9) << pad(f("%.2f", b / pb), 12) << "\n";
    };
    row("GFLOPs", fig.standard.flops() / 1e9, paper.standard_gflops, fig.flash.flops() / 1e9, paper.flash_gflops, "%.1f");
    row("HBM R/W (GB)", static_cast<double>(fig.standard.hbm_bytes()) / 1e9, paper.standard_hbm_gb,
        static_cast<double>(fig.flash.hbm_bytes()) / 1e9, paper.flash_hbm_gb, "%.2f");
    row("Runtime (ms)", fig.standard.seconds() * 1e3, paper.standard_ms, fig.flash.seconds() * 1e3, paper.flash_ms,
        "%.2f");
    o << "FLOPs, flash / standard: ours " << f("%.3f", fig.flash.flops() / fig.standard.flops()) << " (matmul only "
      << f("%.3f", fig.flash.matmul_flops() / fig.standard.matmul_flops()) << "), paper "
      << f("%.3f", paper.flash_gflops / paper.standard_gflops) << "\n";
    o << "our bytes in the paper's runtime: standard " << f("%.2f", static_cast<double>(fig.standard.hbm_bytes()) / (paper.standard_ms * 1e-3) / 1e12)
      << " TB/s, FA1 " << f("%.2f", static_cast<double>(fig.flash.hbm_bytes()) / (paper.flash_ms * 1e-3) / 1e12)
      << " TB/s\n\n";

    kernels_text(o, fig.standard);
    o << "\n";
    kernels_text(o, fig.flash);

    o << "\nMiddle panel: FA1 forward only, B_r = 16, against B_c (the paper: " << paper.middle_claim << ")\n";
    o << pad("B_c", 6) << pad("HBM GB", 10) << pad("ms", 9) << "  bound\n";
    for (const auto& s : fig.sweep)
        o << pad(std::to_string(s.block_cols), 6) << pad(f("%.3f", static_cast<double>(s.hbm_bytes) / 1e9), 10)
          << pad(f("%.3f", s.seconds * 1e3), 9) << "  " << s.bound << "\n";

    o << "\nVariants (one assumption changed)\n";
    for (const auto& v : fig.variants)
        o << "  " << pad(v.label, 58, true) << pad(f("%.2f GB", static_cast<double>(v.hbm_bytes) / 1e9), 11)
          << pad(f("%.2f ms", v.seconds * 1e3), 11) << "\n";
    o << "\nNotes\n";
    for (const auto* c : {&fig.standard, &fig.flash})
        for (const auto& n : c->notes) o << "  " << n << "\n";
    o << "source of the paper's figures: " << paper.source << "\n";
    return o.str();
}

nlohmann::json figure2_json(const sim::Figure2& fig) {
    const auto& paper = sim::paper_figure2();
    nlohmann::json sweep = nlohmann::json::array();
    for (const auto& s : fig.sweep)
        sweep.push_back({{"block_cols", s.block_cols},
                         {"hbm_gb", static_cast<double>(s.hbm_bytes) / 1e9},
                         {"ms", s.seconds * 1e3},
                         {"bound", s.bound}});
    nlohmann::json variants = nlohmann::json::array();
    for (const auto& v : fig.variants)
        variants.push_back({{"label", v.label}, {"hbm_gb", static_cast<double>(v.hbm_bytes) / 1e9}, {"ms", v.seconds * 1e3}});
    const auto& p = fig.problem;
    return {{"scenario", "figure2"},
            {"problem", {{"batch", p.batch}, {"heads", p.heads}, {"seq", p.seq}, {"head_dim", p.head_dim},
                         {"dtype", sim::dtype_name(p.dtype)}, {"causal", p.causal}}},
            {"machine", fig.machine},
            {"fa1_block_rows", sim::Fa1Options{}.block_rows},
            {"fa1_block_cols", sim::fa1_block_cols(p)},
            {"rates_source", fig.rates_source},
            {"standard", column_json(fig.standard)},
            {"flash", column_json(fig.flash)},
            {"middle", sweep},
            {"variants", variants},
            {"paper",
             {{"standard", {{"gflops", paper.standard_gflops}, {"hbm_gb", paper.standard_hbm_gb}, {"ms", paper.standard_ms}}},
              {"flash", {{"gflops", paper.flash_gflops}, {"hbm_gb", paper.flash_hbm_gb}, {"ms", paper.flash_ms}}},
              {"middle_block_sizes", paper.middle_block_sizes},
              {"middle_claim", paper.middle_claim},
              {"setting", paper.setting},
              {"source", paper.source}}}};
}

}  // namespace report

#include "report/figure2.hpp"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
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
      << pad("ms", 8) << pad("of HBM", 8) << "  bound\n";
    for (const auto& k : c.kernels)
        o << "  " << pad(std::string(k.pass ? "bwd " : "fwd ") + k.name, 58, true)
          << pad(f("%.3f", static_cast<double>(k.read_bytes()) / 1e9), 9)
          << pad(f("%.3f", static_cast<double>(k.written_bytes()) / 1e9), 11)
          << pad(f("%.1f", (k.matmul_flops + k.other_flops) / 1e9), 8) << pad(f("%.3f", k.seconds * 1e3), 8)
          << pad(f("%.2f", k.hbm_fraction), 8) << "  " << k.bound << "\n";
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
                      {"hbm_fraction", k.hbm_fraction},
                      {"bound", k.bound}});
    }
    return {{"name", c.name},
            {"description", c.description},
            {"kernel_count", c.kernels.size()},
            {"gflops", c.flops() / 1e9},
            {"matmul_gflops", c.matmul_flops() / 1e9},
            {"hbm_gb", static_cast<double>(c.hbm_bytes()) / 1e9},
            {"ms", c.seconds() * 1e3},
            {"kernels", ks},
            {"notes", c.notes}};
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
    o << "eager kernels: "
      << (fig.eager.source.empty() ? "every kernel at the HBM rate (no measured eager rates read)" : fig.eager.source)
      << "\n";
    if (!fig.eager.device.empty())
        o << "the authors' program measured on " << fig.eager.device << ": " << f("%.2f", fig.eager.dram_bytes / 1e9)
          << " GB of DRAM (ncu) in " << f("%.2f", fig.eager.step_ms)
          << " ms; the model's count of its kernels: " << f("%.2f", static_cast<double>(fig.standard.hbm_bytes()) / 1e9)
          << " GB\n";
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
    row("GFLOPs", fig.standard.flops() / 1e9, paper.standard_gflops, fig.flash.flops() / 1e9, paper.flash_gflops,
        "%.1f");
    row("HBM R/W (GB)", static_cast<double>(fig.standard.hbm_bytes()) / 1e9, paper.standard_hbm_gb,
        static_cast<double>(fig.flash.hbm_bytes()) / 1e9, paper.flash_hbm_gb, "%.2f");
    row("Runtime (ms)", fig.standard.seconds() * 1e3, paper.standard_ms, fig.flash.seconds() * 1e3, paper.flash_ms,
        "%.2f");
    o << "FLOPs, flash / standard: ours " << f("%.3f", fig.flash.flops() / fig.standard.flops()) << " (matmul only "
      << f("%.3f", fig.flash.matmul_flops() / fig.standard.matmul_flops()) << "), paper "
      << f("%.3f", paper.flash_gflops / paper.standard_gflops) << "\n";
    o << "our bytes in the paper's runtime: standard "
      << f("%.2f", static_cast<double>(fig.standard.hbm_bytes()) / (paper.standard_ms * 1e-3) / 1e12) << " TB/s, FA1 "
      << f("%.2f", static_cast<double>(fig.flash.hbm_bytes()) / (paper.flash_ms * 1e-3) / 1e12) << " TB/s\n\n";

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
        variants.push_back(
            {{"label", v.label}, {"hbm_gb", static_cast<double>(v.hbm_bytes) / 1e9}, {"ms", v.seconds * 1e3}});
    const auto& p = fig.problem;
    return {{"scenario", "figure2"},
            {"problem",
             {{"batch", p.batch},
              {"heads", p.heads},
              {"seq", p.seq},
              {"head_dim", p.head_dim},
              {"dtype", sim::dtype_name(p.dtype)},
              {"causal", p.causal}}},
            {"machine", fig.machine},
            {"fa1_block_rows", sim::Fa1Options{}.block_rows},
            {"fa1_block_cols", sim::fa1_block_cols(p)},
            {"rates_source", fig.rates_source},
            {"eager_rates_source", fig.eager.source},
            {"eager_measured",
             {{"device", fig.eager.device}, {"dram_gb", fig.eager.dram_bytes / 1e9}, {"step_ms", fig.eager.step_ms}}},
            {"standard", column_json(fig.standard)},
            {"flash", column_json(fig.flash)},
            {"middle", sweep},
            {"variants", variants},
            {"paper",
             {{"standard",
               {{"gflops", paper.standard_gflops}, {"hbm_gb", paper.standard_hbm_gb}, {"ms", paper.standard_ms}}},
              {"flash", {{"gflops", paper.flash_gflops}, {"hbm_gb", paper.flash_hbm_gb}, {"ms", paper.flash_ms}}},
              {"middle_block_sizes", paper.middle_block_sizes},
              {"middle_claim", paper.middle_claim},
              {"setting", paper.setting},
              {"source", paper.source}}}};
}

// ---------------------------------------------------------------- [read_eager_rates()]
sim::EagerRates read_eager_rates(const std::vector<std::string>& files, const std::string& basis) {
    if (basis != "datasheet" && basis != "copy")
        throw sim::Error("eager rates are fractions of the datasheet or of the copy rate, not '" + basis + "'");
    sim::EagerRates out;
    out.basis = basis;
    const sim::Problem p = sim::figure2_problem();
    const std::regex gemm_name("nvjet|gemm|cutlass|xmma", std::regex::icase);
    for (const auto& path : files) {
        std::ifstream in(path);
        if (!in)
            throw sim::Error(path +
                             ": cannot be read (record it with scripts/eager_pytorch.py on a GPU: "
                             "scripts/gpu_session.sh, stage eager)");
        nlohmann::json doc;
        try {
            doc = nlohmann::json::parse(in);
        } catch (const std::exception& e) { throw sim::Error(path + ": not JSON (" + e.what() + ")"); }
        const auto need = [&](const char* key) -> const nlohmann::json& {
            if (!doc.contains(key))
                throw sim::Error(path + ": has no \"" + key +
                                 "\" (not a scripts/eager_pytorch.py file with ncu's "
                                 "bytes merged?)");
            return doc[key];
        };
        const std::string program = need("program").get<std::string>();
        if (program != "authors" && program != "hf")
            throw sim::Error(path + ": program '" + program + "' is neither authors nor hf");
        if (need("batch").get<int64_t>() != p.batch || need("heads").get<int64_t>() != p.heads ||
            need("seq").get<int64_t>() != p.seq || need("head_dim").get<int64_t>() != p.head_dim)
            throw sim::Error(path + ": measured at another shape than Figure 2's (B 64, H 16, N 1024, d 64)");
        const std::string device = need("device").get<std::string>();
        double rate = 0;
        if (basis == "copy")
            rate = need("copy_tbps").get<double>() * 1e12;
        else
            for (const auto& [key, preset] : {std::pair{"H200", "H200"}, std::pair{"H100", "H100-SXM"},
                                              std::pair{"A100-SXM4-40GB", "A100-40GB"}, std::pair{"A100", "A100-80GB"}})
                if (device.find(key) != std::string::npos) {
                    rate = sim::find_machine(preset).hbm_bandwidth;
                    break;
                }
        if (!(rate > 0))
            throw sim::Error(path + ": no " + basis + " rate for the card it was measured on (" + device + ")");
        std::vector<std::pair<std::string, double>> timed;  // the profiler's kernels, memsets left out
        for (const auto& k : need("kernels")) {
            const std::string name = k.at("name").get<std::string>();
            if (name.rfind("Memset", 0) == 0 || name.rfind("Memcpy", 0) == 0) continue;
            timed.emplace_back(name, k.at("ms_median").get<double>());
        }
        const auto& ncu = need("ncu_kernels");
        if (ncu.size() != timed.size())
            throw sim::Error(path + ": ncu saw " + std::to_string(ncu.size()) + " kernels and the profiler " +
                             std::to_string(timed.size()) + "; the two lists cannot be paired");
        struct Measured {
            std::string name;
            double ms = 0, bytes = 0;
        };
        std::vector<Measured> ms;
        for (size_t i = 0; i < timed.size(); ++i) {
            const double b = ncu[i].at("dram_read_bytes").get<double>() + ncu[i].at("dram_write_bytes").get<double>();
            if (b >= 1e6) ms.push_back({timed[i].first, timed[i].second, b});
        }
        sim::KernelRates any;
        any.hbm = any.gemm = any.exp = 1;
        const sim::Fig2Column model =
            sim::eager_attention(p, any, program == "hf" ? sim::hf_gpt2_eager() : sim::EagerOptions{});
        if (ms.size() != model.kernels.size())
            throw sim::Error(path + ": " + std::to_string(ms.size()) +
                             " measured kernels of 1 MB or more against the "
                             "model's " +
                             std::to_string(model.kernels.size()) + " for the " + program +
                             " program; the sequences differ");
        for (size_t i = 0; i < ms.size(); ++i) {
            const auto& k = model.kernels[i];
            const bool model_gemm = k.name.find("GEMM") != std::string::npos;
            const bool measured_gemm = std::regex_search(ms[i].name, gemm_name);
            const double ratio = ms[i].bytes / static_cast<double>(k.bytes());
            if (model_gemm != measured_gemm || ratio < 0.8 || ratio > 1.25)
                throw sim::Error(path + ": kernel " + std::to_string(i + 1) + " (" + ms[i].name.substr(0, 60) +
                                 ") does not pair with the model's '" + k.name + "' (" +
                                 (model_gemm != measured_gemm ? "one is a GEMM, the other not"
                                                              : "measured / modelled bytes " + f("%.2f", ratio)) +
                                 ")");
            if (!(ms[i].ms > 0)) throw sim::Error(path + ": kernel " + std::to_string(i + 1) + " has no time");
            out.fraction.emplace(k.name, ms[i].bytes / (ms[i].ms * 1e-3) / rate);
        }
        if (program == "authors" && out.device.empty()) {
            out.device = device;
            out.dram_bytes = need("dram_bytes").get<double>();
            out.step_ms = need("step_ms_median").get<double>();
        }
        if (!out.source.empty()) out.source += "; ";
        out.source += path + " (" + program + ", " + device + ", " + doc.value("date", std::string("?")).substr(0, 10) +
                      ", torch " + doc.value("torch", std::string("?")) + ")";
    }
    if (!out.source.empty())
        out.source =
            "fractions of the " +
            std::string(basis == "copy" ? "copy rate measured beside them" : "measuring card's datasheet HBM rate") +
            " that PyTorch's kernels reached, carried to this card: " + out.source;
    return out;
}

std::vector<std::string> default_eager_files(const std::vector<std::string>& dirs) {
    namespace fs = std::filesystem;
    for (const auto& dir : dirs)
        for (const char* card : {"h200", "h100"}) {
            const fs::path a = fs::path(dir) / card / "eager_authors.json";
            const fs::path h = fs::path(dir) / card / "eager_hf.json";
            if (fs::exists(a)) {
                std::vector<std::string> v{a.lexically_normal().string()};
                if (fs::exists(h)) v.push_back(h.lexically_normal().string());
                return v;
            }
        }
    return {};
}

}  // namespace report

#include "report/fp8.hpp"

#include <cstdio>

namespace report {

namespace {
nlohmann::json error_json(const sim::Fp8Error& e) {
    return {{"max_abs", e.max_abs}, {"rms", e.rms}, {"rel_rms", e.rel_rms}};
}
}  // namespace

nlohmann::json fp8_study_json(const sim::Fp8Study& s) {
    const sim::Fp8Options& o = s.options;
    return {{"seq", o.seq},
            {"head_dim", o.head_dim},
            {"block_rows", o.block_rows},
            {"block_cols", o.block_cols},
            {"scales", std::string(sim::name_of(o.scales))},
            {"incoherent", o.incoherent},
            {"outliers", o.outliers},
            {"outlier_scale", o.outlier_scale},
            {"outlier_channels", s.outlier_channels},
            {"seed", o.seed},
            {"amax", {{"q", s.amax_q}, {"k", s.amax_k}, {"v", s.amax_v}}},
            {"fp8", error_json(s.fp8)},
            {"bf16", error_json(s.bf16)},
            {"rms_ratio", s.bf16.rms > 0 ? nlohmann::json(s.fp8.rms / s.bf16.rms) : nlohmann::json(nullptr)},
            {"unit_roundoff", {{"fp8", 0x1p-4}, {"bf16", 0x1p-8}}}};
}

std::string fp8_study_text(const sim::Fp8Study& s) {
    const sim::Fp8Options& o = s.options;
    std::string out;
    char buf[256];
    std::snprintf(buf, sizeof buf, "FP8 (e4m3) attention forward, emulated: N = %lld, d = %lld, tiles %lld x %lld\n",
                  static_cast<long long>(o.seq), static_cast<long long>(o.head_dim),
                  static_cast<long long>(o.block_rows), static_cast<long long>(o.block_cols));
    out += buf;
    out += "  inputs: Q, K, V ~ N(0, 1), seed ";
    out += std::to_string(o.seed);
    if (o.outliers > 0) {
        std::snprintf(buf, sizeof buf, "; %lld channel(s) of Q and K x %g:", static_cast<long long>(o.outliers),
                      o.outlier_scale);
        out += buf;
        for (const auto c : s.outlier_channels) {
            out += ' ';
            out += std::to_string(c);
        }
    }
    out += "\n";
    out += "  scales: " +
           std::string(o.scales == sim::Fp8Scales::block ? "one per tile (B_r rows of Q, B_c of K, V)"
                                                         : "one per tensor") +
           ", amax / 448; P x 2^8; O stored as bf16\n";
    out += std::string("  incoherent processing: ") +
           (o.incoherent ? "on (Q and K times a random-sign Hadamard matrix)" : "off") + "\n";
    std::snprintf(buf, sizeof buf, "  largest |Q|, |K|, |V| (as quantized): %.3g, %.3g, %.3g\n", s.amax_q, s.amax_k,
                  s.amax_v);
    out += buf;
    out += "  error of O against float64:   max abs      RMS          RMS / RMS(O)\n";
    std::snprintf(buf, sizeof buf, "    fp8 (e4m3, u = 2^-4)        %-12.3e %-12.3e %.3e\n", s.fp8.max_abs, s.fp8.rms,
                  s.fp8.rel_rms);
    out += buf;
    std::snprintf(buf, sizeof buf, "    bf16 (u = 2^-8)             %-12.3e %-12.3e %.3e\n", s.bf16.max_abs, s.bf16.rms,
                  s.bf16.rel_rms);
    out += buf;
    if (s.bf16.rms > 0) {
        std::snprintf(buf, sizeof buf, "  fp8's RMS error is %.1fx bf16's\n", s.fp8.rms / s.bf16.rms);
        out += buf;
    }
    return out;
}

}  // namespace report

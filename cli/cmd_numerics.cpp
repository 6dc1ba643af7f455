// flashsim numerics — the FP8 (e4m3) attention forward emulated on the CPU, as FlashAttention-3's
// FP8 kernel computes it (sim/fp8_attention.hpp), and its error against float64 beside bf16's.
//   flashsim numerics --dtype fp8 -n 1024 -d 128 [--scales block|tensor] [--incoherent] [--outliers 4]
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "report/fp8.hpp"
#include "sim/fp8_attention.hpp"

namespace {
struct NumericsArgs {
    std::string dtype = "fp8", scales = "block";
    sim::Fp8Options o;
    bool json = false;
};
}  // namespace

void register_numerics(CLI::App& app, int& rc) {
    auto a = std::make_shared<NumericsArgs>();
    auto* cmd = app.add_subcommand(
        "numerics", "FP8 (e4m3) attention forward emulated on the CPU: its error against float64 beside bf16's");
    cmd->add_option("--dtype", a->dtype, "fp8 (e4m3; bf16 is always shown beside it)")->capture_default_str();
    cmd->add_option("-n,--seq", a->o.seq, "Sequence length N")->capture_default_str();
    cmd->add_option("-d,--head-dim", a->o.head_dim, "Head dimension d")->capture_default_str();
    cmd->add_option("--scales", a->scales, "block (one scale a tile of Q, K, V) or tensor (one a tensor)")
        ->capture_default_str();
    cmd->add_flag("--incoherent", a->o.incoherent,
                  "Multiply Q and K along d by a random-sign Hadamard matrix first (d a power of two)");
    cmd->add_option("--outliers", a->o.outliers, "Channels of Q and K made outliers (0: Gaussian inputs only)")
        ->capture_default_str();
    cmd->add_option("--outlier-scale", a->o.outlier_scale, "Factor of the outlier channels (in Q and in K)")
        ->capture_default_str();
    cmd->add_option("--block-rows", a->o.block_rows, "B_r: rows of Q a tile (and a scale)")->capture_default_str();
    cmd->add_option("--block-cols", a->o.block_cols, "B_c: rows of K and V a tile (and a scale)")
        ->capture_default_str();
    cmd->add_option("--seed", a->o.seed, "Input seed")->capture_default_str();
    cmd->add_flag("--json", a->json, "Print one JSON object");
    cmd->callback([a, &rc] {
        try {
            const auto dt = sim::parse_dtype(a->dtype);
            if (!dt) throw sim::Error("unknown --dtype '" + a->dtype + "'; use fp8 (e4m3)");
            if (*dt != sim::DType::fp8)
                throw sim::Error("numerics studies fp8 (e4m3) and always shows bf16 beside it; --dtype " + a->dtype +
                                 " is not studied here: use --dtype fp8");
            const auto sc = sim::parse_enum<sim::Fp8Scales>(a->scales);
            if (!sc) throw sim::Error("unknown --scales '" + a->scales + "'; use block or tensor");
            a->o.scales = *sc;
            const sim::Fp8Study s = sim::fp8_study(a->o);
            if (a->json)
                std::cout << report::fp8_study_json(s).dump(2) << "\n";
            else
                std::cout << report::fp8_study_text(s);
            rc = 0;
        } catch (const sim::Error& e) {
            print_error("numerics", e.what());
            rc = 1;
        }
    });
}

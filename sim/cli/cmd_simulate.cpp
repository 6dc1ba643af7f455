// flashsim simulate / compare — count one algorithm's traffic (simulate) or all three (compare).
#include <iostream>
#include <memory>

#include "sim/cli/commands.hpp"
#include "sim/cli/report.hpp"
#include "sim/reference.hpp"

namespace {

struct SimulateArgs {
    ProblemArgs prob;
    std::string algo = "flash2";
    int64_t block_rows = 0, block_cols = 0;
    std::string numerics = "auto";
    int64_t record_row = 0;
    bool json = false, check = false;
};

sim::Config make_config(const SimulateArgs& a, sim::Algo algo) {
    sim::Config c;
    c.algo = algo;
    c.block_rows = a.block_rows;
    c.block_cols = a.block_cols;
    c.sram_bytes = a.prob.sram;
    if (a.numerics == "on") c.numerics = sim::Numerics::on;
    else if (a.numerics == "off") c.numerics = sim::Numerics::off;
    else if (a.numerics == "auto") c.numerics = sim::Numerics::automatic;
    else throw sim::Error("--numerics must be on, off or auto, got '" + a.numerics + "'");
    c.record_row = a.record_row;
    return c;
}

sim::Algo algo_or_throw(const std::string& s) {
    const auto a = sim::parse_algo(s);
    if (!a) throw sim::Error("unknown --algo '" + s + "'; use standard, flash1 or flash2");
    return *a;
}

}  // namespace

void register_simulate(CLI::App& app, int& rc) {
    auto args = std::make_shared<SimulateArgs>();
    auto* cmd = app.add_subcommand("simulate", "Count one algorithm's bytes and FLOPs, tile by tile");
    cmd->add_option("--algo,-a", args->algo, "standard, flash1 or flash2")->capture_default_str();
    args->prob.add_to(cmd, true);
    cmd->add_option("--block-rows", args->block_rows, "B_r: query rows per tile (default: the algorithm's rule)");
    cmd->add_option("--block-cols", args->block_cols, "B_c: key columns per tile (default: the algorithm's rule)");
    cmd->add_option("--numerics", args->numerics, "Compute the real output too: on, off, auto (auto: small problems)")
        ->capture_default_str();
    cmd->add_flag("--check", args->check, "Compare the output with the float64 reference (turns numerics on)");
    cmd->add_flag("--json", args->json, "Print one JSON object");
    cmd->callback([args, &rc] {
        try {
            const sim::Problem p = args->prob.problem();
            const sim::Machine& m = args->prob.machine();
            sim::Config c = make_config(*args, algo_or_throw(args->algo));
            if (args->check) c.numerics = sim::Numerics::on;
            const sim::Result r = sim::simulate(p, m, c);
            std::unique_ptr<sim::Result> base;
            if (r.algo != sim::Algo::standard) {
                sim::Config sc = c;
                sc.algo = sim::Algo::standard;
                sc.block_rows = sc.block_cols = 0;
                sc.numerics = sim::Numerics::off;
                base = std::make_unique<sim::Result>(sim::simulate(p, m, sc));
            }
            nlohmann::json j = report::result_json(r);
            std::string extra;
            if (base) {
                j["standard_hbm_bytes"] = base->totals.hbm_total().total();
                j["ratio_to_standard"] =
                    static_cast<double>(r.totals.hbm_total().total()) / base->totals.hbm_total().total();
            }
            if (args->check && r.output) {
                const auto in = sim::generate_inputs(p);
                const auto ref = sim::attention_reference(p, in.Q, in.K, in.V);
                const auto st = sim::validate(*r.output, ref, p.dtype);
                j["vs_reference"] = report::error_json(st);
                char buf[256];
                std::snprintf(buf, sizeof buf,
                              "vs float64 reference: max abs %.3g, relative %.3g, max %lld ulp (%s), %lld of %lld "
                              "elements identical\n",
                              st.max_abs, st.rel_frobenius, static_cast<long long>(st.max_ulp),
                              std::string(sim::dtype_name(p.dtype)).c_str(), static_cast<long long>(st.identical),
                              static_cast<long long>(st.count));
                extra = buf;
            }
            if (args->json) std::cout << j.dump(2) << "\n";
            else std::cout << report::result_text(r, base.get()) << extra;
            rc = 0;
        } catch (const sim::Error& e) {
            print_error("simulate", e.what());
            rc = 1;
        }
    });
}

void register_compare(CLI::App& app, int& rc) {
    auto args = std::make_shared<SimulateArgs>();
    auto* cmd = app.add_subcommand("compare", "Standard vs flash1 vs flash2 on one problem, side by side");
    args->prob.add_to(cmd, false);
    args->prob.seq = 8192;
    args->prob.head_dim = 128;
    cmd->add_flag("--json", args->json, "Print a JSON array, one object per algorithm");
    cmd->callback([args, &rc] {
        try {
            const sim::Problem p = args->prob.problem();
            const sim::Machine& m = args->prob.machine();
            std::vector<sim::Result> rs;
            args->numerics = "off";
            for (auto a : {sim::Algo::standard, sim::Algo::flash1, sim::Algo::flash2})
                rs.push_back(sim::simulate(p, m, make_config(*args, a)));
            if (args->json) std::cout << report::compare_json(rs).dump(2) << "\n";
            else std::cout << report::compare_text(rs);
            rc = 0;
        } catch (const sim::Error& e) {
            print_error("compare", e.what());
            rc = 1;
        }
    });
}

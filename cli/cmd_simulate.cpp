// flashsim simulate / compare — count one algorithm's traffic (simulate) or all three (compare).
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "report/kernel_report.hpp"
#include "report/ladder.hpp"
#include "report/memory.hpp"
#include "report/report.hpp"
#include "cli/sim_flags.hpp"
#include "sim/ladder.hpp"
#include "sim/mask.hpp"
#include "sim/reference.hpp"

void SimFlags::add_to(CLI::App* cmd, bool with_algo, bool with_blocks) {
    if (with_algo) cmd->add_option("--algo,-a", algo, "standard, flash1 or flash2")->capture_default_str();
    if (with_blocks) {
        cmd->add_option("--block-rows", block_rows, "B_r: query rows per tile (default, or 0: the algorithm's rule)");
        cmd->add_option("--block-cols", block_cols, "B_c: key columns per tile (default, or 0: the algorithm's rule)");
    }
    cmd->add_option("--bwd-block-rows", bwd_block_rows, "Backward B_r (default: the forward's, halved to fit)");
    cmd->add_option("--bwd-block-cols", bwd_block_cols, "Backward B_c (default: the forward's, halved to fit)");
    cmd->add_option("--pass", pass, "forward, backward or both")->capture_default_str();
    cmd->add_option("--l2", l2,
                    "L2 model: auto (on within a lookup budget; beyond it a sample of the heads), on (every lookup: a "
                    "long problem may take minutes), off")
        ->capture_default_str();
    cmd->add_option("--ceilings", ceilings,
                    "Timing ceilings: datasheet, measured (when the preset has them) or estimated (a measured card "
                    "of the same architecture, scaled by the two datasheets)")
        ->capture_default_str();
    cmd->add_option("--numerics", numerics, "Compute the real output too: on, off, auto (auto: small problems)")
        ->capture_default_str();
}

sim::Config SimFlags::config(sim::Algo a) const {
    sim::Config c;
    c.algo = a;
    c.block_rows = block_rows;
    c.block_cols = block_cols;
    c.bwd_block_rows = bwd_block_rows;
    c.bwd_block_cols = bwd_block_cols;
    if (numerics == "on")
        c.numerics = sim::Numerics::on;
    else if (numerics == "off")
        c.numerics = sim::Numerics::off;
    else if (numerics == "auto")
        c.numerics = sim::Numerics::automatic;
    else
        throw sim::Error("--numerics must be on, off or auto, got '" + numerics + "'");
    const auto ps = sim::parse_pass(pass);
    if (!ps) throw sim::Error("--pass must be forward, backward or both, got '" + pass + "'");
    c.pass = *ps;
    if (l2 == "auto")
        c.l2 = sim::L2Mode::automatic;
    else if (l2 == "on")
        c.l2 = sim::L2Mode::on;
    else if (l2 == "off")
        c.l2 = sim::L2Mode::off;
    else
        throw sim::Error("--l2 must be auto, on or off, got '" + l2 + "'");
    if (ceilings == "datasheet")
        c.ceilings = sim::Ceilings::datasheet;
    else if (ceilings == "measured" || ceilings == "estimated")  // estimated: rates in the measured fields
        c.ceilings = sim::Ceilings::measured;
    else
        throw sim::Error("--ceilings must be datasheet, measured or estimated, got '" + ceilings + "'");
    if (block_rows < 0 || block_cols < 0 || bwd_block_rows < 0 || bwd_block_cols < 0)
        throw sim::Error(
            "block sizes must be positive (--block-rows, --block-cols, --bwd-block-rows, --bwd-block-cols)");
    c.record_row = record_row;
    c.l2_budget = int64_t{1} << 22;  // the CLI may spend ~0.5 s on the L2 walk; the library default is 2^20
    return c;
}

sim::Algo algo_or_throw(const std::string& s) {
    const auto a = sim::parse_algo(s);
    if (!a) throw sim::Error("unknown --algo '" + s + "'; use standard, flash1 or flash2");
    return *a;
}

namespace {

struct SimulateArgs {
    ProblemArgs prob;
    SimFlags flags;
    bool json = false, check = false, timeline = false;
    std::string kernel, ceilings_file, grid = "auto", middles = "paired", tail = "whole";
    std::string block_sparse;  // the density as typed (read by block_density, which says what is wrong)
};

// --block-sparse: the fraction of key blocks each query block keeps, in (0, 1].
double block_density(const std::string& s) {
    const std::string how =
        "--block-sparse takes the fraction of key blocks each query block keeps, a number above 0 "
        "and at most 1 (e.g. 0.25; 1 is dense)";
    char* end = nullptr;
    const double v = s.empty() ? 0.0 : std::strtod(s.c_str(), &end);
    if (s.empty() || end != s.c_str() + s.size() || !std::isfinite(v)) throw sim::Error(how + "; got '" + s + "'");
    if (v <= 0.0)
        throw sim::Error(how + "; got " + s +
                         (v == 0.0 ? ", which keeps no block: no query would see any key (every output row 0)" : ""));
    if (v > 1.0) throw sim::Error(how + "; got " + s + ", more than every block");
    return v;
}

std::string check_line(const char* what, const sim::ErrorStats& st, sim::DType dt) {
    char buf[320];
    std::snprintf(buf, sizeof buf,
                  "%s vs float64 reference: max abs %.3g, relative %.3g, max %lld ulp (%s), %lld of %lld identical\n",
                  what, st.max_abs, st.rel_frobenius, static_cast<long long>(st.max_ulp),
                  std::string(sim::dtype_name(dt)).c_str(), static_cast<long long>(st.identical),
                  static_cast<long long>(st.count));
    return buf;
}

// The block-sparse walk beside the dense one of the same algorithm and tiles: what the mask saved.
std::string block_sparse_lines(const sim::Result& r, sim::Problem dense, const sim::Machine& m, sim::Config c,
                               nlohmann::json& j) {
    dense.block_density = 1.0;
    c.numerics = sim::Numerics::off;
    c.block_rows = r.block_rows;
    c.block_cols = r.block_cols;
    const sim::Result d = sim::simulate(dense, m, c);
    auto kv = [](const sim::Result& x) {
        return x.totals[sim::Tensor::K].read_bytes + x.totals[sim::Tensor::V].read_bytes;
    };
    const int64_t kept = sim::mask_kept_blocks(r.problem), all = sim::mask_key_blocks(r.problem);
    j["dense_hbm_bytes"] = d.totals.hbm_total().total();
    j["dense_kv_read_bytes"] = kv(d);
    j["ratio_to_dense"] = static_cast<double>(r.totals.hbm_total().total()) / d.totals.hbm_total().total();
    auto g = [](int64_t v) { return report::group_digits(v); };
    char buf[160];
    std::snprintf(buf, sizeof buf,
                  "\nblock-sparse: the block mask keeps %lld of %lld key blocks a query block (%.4g)\n",
                  static_cast<long long>(kept), static_cast<long long>(all), double(kept) / double(all));
    std::string out = buf;
    const int64_t hr = r.totals.hbm_total().total(), hd = d.totals.hbm_total().total();
    std::snprintf(buf, sizeof buf, "%.4g", double(kv(r)) / double(kv(d)));
    out += "  K/V read   " + g(kv(r)) + " B   dense " + g(kv(d)) + " B   ratio " + buf + "\n";
    std::snprintf(buf, sizeof buf, "%.4g", double(hr) / double(hd));
    out += "  HBM total  " + g(hr) + " B   dense " + g(hd) + " B   ratio " + buf + "\n";
    if (r.timing.computed && d.timing.computed) {
        j["dense_predicted_ms"] = d.timing.predicted_ms;
        std::snprintf(buf, sizeof buf, "  time       %.4g ms   dense %.4g ms   ratio %.4g (the ideal machine)\n",
                      r.timing.predicted_ms, d.timing.predicted_ms, r.timing.predicted_ms / d.timing.predicted_ms);
        out += buf;
    }
    return out;
}

// --grid, --middles and --tail: the order the forward's query blocks take, asked for over the
// kernel's own rule, into the simulator's config c and the kernel profiles.
void apply_schedule(const SimulateArgs& a, const sim::Problem& p, sim::Config& c,
                    std::vector<sim::KernelProfile>& profiles) {
    if (a.grid != "auto" && a.grid != "launch" && a.grid != "static")
        throw sim::Error("--grid must be auto, launch or static, got '" + a.grid + "'");
    if (a.grid != "auto")
        for (auto& kp : profiles)  // the asked-for order, whatever the kernel's rule
            if (kp.pass == sim::Pass::forward)
                kp = sim::with_grid(kp, a.grid == "static" ? sim::GridOrder::static_units : sim::GridOrder::launch);
    if (a.grid == "static") c.grid_order = sim::GridOrder::static_units;
    if (a.middles != "paired" && a.middles != "alone")
        throw sim::Error("--middles must be paired or alone, got '" + a.middles + "'");
    c.lone_middles = a.middles == "alone";
    for (auto& kp : profiles) kp.lone_middles = c.lone_middles;
    if (a.tail != "whole" && a.tail != "split") throw sim::Error("--tail must be whole or split, got '" + a.tail + "'");
    if (a.tail == "split") {
        if (a.kernel != "flash2h" || p.head_dim != 128 || p.causal)
            throw sim::Error(
                "--tail split is flash2h's forward at d = 128 without a mask (FLASHSIM_FLASH2H_TAIL=split): "
                "add --kernel flash2h --head-dim 128 and leave out --causal");
        for (auto& kp : profiles) kp.tail_split = kp.pass == sim::Pass::forward;
    }
}

}  // namespace

void register_simulate(CLI::App& app, int& rc) {
    auto args = std::make_shared<SimulateArgs>();
    auto* cmd = app.add_subcommand("simulate", "Count one algorithm's bytes and FLOPs, tile by tile");
    args->prob.add_to(cmd, true);
    args->flags.add_to(cmd, true, true);
    cmd->add_flag("--check", args->check,
                  "Compare the output (and gradients) with the float64 reference (turns numerics on)");
    cmd->add_flag("--json", args->json, "Print one JSON object");
    cmd->add_flag("--timeline", args->timeline, "With --json: include the per-SM timeline segments");
    auto* opt_kernel = cmd->add_option(
        "--kernel", args->kernel,
        "Predict a CUDA kernel (standard, flash1, flash2, flash2h) with its own tiles, instruction path "
        "and schedule, and say where the time goes (replaces --algo and the block options)");
    cmd->add_option(
           "--grid", args->grid,
           "How flash2's forward hands query blocks to the SMs: launch (one block each, in launch order), "
           "static (a persistent grid taking units in turn, as flash2h does), auto (launch; with --kernel, the "
           "kernel's own rule)")
        ->capture_default_str();
    cmd->add_option("--middles", args->middles,
                    "The static order under the causal mask at an odd count of query blocks: paired (two heads' "
                    "middle blocks as one unit, as flash2h runs it) or alone (each head's middle block a unit of "
                    "its own, as flash2h ran until 2026-12-05)")
        ->capture_default_str();
    cmd->add_option("--tail", args->tail,
                    "flash2h's forward in the static order without a mask, d = 128: whole (the last, part-empty "
                    "round of units run as it falls, as flash2h runs by default) or split (that round's key blocks "
                    "spread evenly over every SM, each unit merged by its last piece: FLASHSIM_FLASH2H_TAIL=split)")
        ->capture_default_str();
    auto* opt_sparse =
        cmd->add_option("--block-sparse", args->block_sparse,
                        "Block-sparse attention: each query block keeps this fraction of the key blocks (0 < f <= 1, "
                        "chosen by --seed; the mask's blocks are the tiles B_r x B_c); skipped tiles move and compute "
                        "nothing");
    cmd->add_option("--ceilings-file", args->ceilings_file,
                    "With --ceilings measured: the `flashsim bench --ceilings --json` file to read (default: the "
                    "preset's recorded one, results/h200/ceilings.json for the H200)");
    auto* opt_algo = cmd->get_option("--algo");
    cmd->callback([args, opt_kernel, opt_algo, opt_sparse, &rc] {
        try {
            if (args->timeline && !args->json)
                throw sim::Error("--timeline adds the per-SM timeline to the JSON; add --json");
            sim::Problem p = args->prob.problem();
            if (opt_sparse->count()) {
                p.block_density = block_density(args->block_sparse);
                if (!args->kernel.empty())
                    throw sim::Error(
                        "--kernel predicts a CUDA kernel, and the kernels have no block mask; leave out --kernel to "
                        "simulate block-sparse attention");
            }
            sim::Machine m = args->prob.machine();
            note_long_walk("simulate", p, args->flags.pass == "forward" ? 1.0 : 6.0);
            const bool measured = args->flags.ceilings == "measured";
            if (!args->ceilings_file.empty() && !measured)
                throw sim::Error("--ceilings-file goes with --ceilings measured");
            std::optional<sim::KernelRates> rates;
            if (measured) rates = report::measured_rates(m, p.dtype, args->ceilings_file);
            if (args->flags.ceilings == "estimated")  // throws, in words, where none can be estimated
                rates = report::choose_rates(m, p.dtype, "estimated").rates;
            if (rates) m = report::with_measured(m, *rates);
            std::vector<sim::KernelProfile> profiles;
            std::string algo = args->flags.algo;
            if (opt_kernel->count() && args->kernel.empty())
                throw sim::Error("--kernel needs a kernel's name: standard, flash1, flash2 or flash2h");
            if (!args->kernel.empty() && opt_algo->count())
                throw sim::Error("--kernel predicts that kernel's own algorithm; leave out --algo");
            if (!args->kernel.empty()) {
                if (args->flags.block_rows || args->flags.block_cols || args->flags.bwd_block_rows ||
                    args->flags.bwd_block_cols || args->prob.sram)
                    throw sim::Error(
                        "--kernel uses the kernel's own tiles; leave out --block-rows, --block-cols, "
                        "--bwd-block-rows, --bwd-block-cols and --sram");
                const auto ps = sim::parse_pass(args->flags.pass);
                if (!ps) throw sim::Error("--pass must be forward, backward or both, got '" + args->flags.pass + "'");
                profiles = sim::kernel_profiles(args->kernel, *ps, p);
                if (measured && !rates)
                    throw sim::Error("no measured ceilings are recorded for the " + m.name +
                                     " preset; use --ceilings datasheet or give --ceilings-file");
                algo = std::string(sim::algo_name(profiles.front().algo));
            }
            sim::Config c = args->flags.config(algo_or_throw(algo));
            c.sram_bytes = args->prob.sram;         // 0: the GPU's shared memory per block
            apply_schedule(*args, p, c, profiles);  // --grid, --middles, --tail
            // the kernel's tiles, grid order, launches and blocks an SM (no kernel: c as it is)
            c = sim::kernel_config(c, p, m, profiles);
            if (args->check) {
                // The float64 reference holds N x N matrices a head (2 forward, 4 backward: 16 or 32 N^2
                // bytes), and runs about a second per 2^30 of B H N^2 d.
                const int64_t max_n = c.pass == sim::Pass::forward ? 16384 : 8192;
                if (p.seq > max_n)
                    throw sim::Error(
                        "--check compares with a float64 reference that holds N x N matrices a head (" +
                        std::to_string(static_cast<int64_t>((c.pass == sim::Pass::forward ? 16.0 : 32.0) *
                                                            double(p.seq) * double(p.seq) / double(1 << 30))) +
                        " GiB at N = " + std::to_string(p.seq) + "); it runs up to N = 16384 forward and " +
                        "8192 backward: check a shorter --seq, or run without --check");
                if (double(p.heads_total()) * double(p.seq) * double(p.seq) * double(p.head_dim) >
                    double(int64_t{1} << 35))
                    throw sim::Error("--check at B H N^2 d = " + std::to_string(p.heads_total()) + " x " +
                                     std::to_string(p.seq) + "^2 x " + std::to_string(p.head_dim) +
                                     " would take minutes on the CPU (the limit is 2^35, e.g. N = 16384, d = 128, one "
                                     "head); lower --batch, --heads or --seq");
                c.numerics = sim::Numerics::on;
            }
            sim::Result r = sim::simulate(p, m, c);
            if (args->flags.ceilings == "estimated" && r.timing.ceilings == "measured") {  // say which they are
                r.timing.ceilings = "estimated";
                r.timing.ceilings_note =
                    "HBM bandwidth and matmul rate estimated from a measured card: " + rates->source;
            }
            std::unique_ptr<sim::Result> base;
            if (r.algo != sim::Algo::standard && p.dtype != sim::DType::fp8) {  // fp8: flash's forward alone
                sim::Config sc = c;
                sc.algo = sim::Algo::standard;
                sc.grid_order = sim::GridOrder::launch;
                sc.fwd_blocks_per_sm = sc.bwd_blocks_per_sm = 0;
                sc.block_rows = sc.block_cols = sc.bwd_block_rows = sc.bwd_block_cols = 0;
                sc.numerics = sim::Numerics::off;
                sc.l2 = sim::L2Mode::off;
                sc.timing = false;
                base = std::make_unique<sim::Result>(sim::simulate(p, m, sc));
            }
            nlohmann::json j = report::result_json(r, args->timeline);
            const sim::Footprint fp = sim::footprint(p, r.algo, r.pass, args->kernel);
            j["footprint"] = report::footprint_json(fp, m);
            std::string extra = report::footprint_text(fp, m);
            if (base) {
                j["standard_hbm_bytes"] = base->totals.hbm_total().total();
                j["ratio_to_standard"] =
                    static_cast<double>(r.totals.hbm_total().total()) / base->totals.hbm_total().total();
            }
            if (p.block_sparse()) extra += block_sparse_lines(r, p, m, c, j);
            if (args->check && r.numerics) {
                auto in = sim::generate_inputs(p);
                if (r.output && r.pass != sim::Pass::backward) {
                    const auto ref = sim::attention_reference(r.problem, in.Q, in.K, in.V);  // its mask's blocks
                    const auto st = sim::validate(*r.output, ref, p.dtype);
                    require_finite("O", st);
                    j["vs_reference"] = report::error_json(st);
                    extra += check_line("O ", st, p.dtype);
                }
                if (r.dQ) {
                    in.dO = sim::generate_input(p, sim::InputTensor::dO);
                    const auto g = sim::attention_backward_reference(r.problem, in.Q, in.K, in.V, in.dO);
                    const auto sq = sim::validate(*r.dQ, g.dQ, p.dtype);
                    const auto sk = sim::validate(*r.dK, g.dK, p.dtype);
                    const auto sv = sim::validate(*r.dV, g.dV, p.dtype);
                    require_finite("dQ", sq);
                    require_finite("dK", sk);
                    require_finite("dV", sv);
                    j["gradients_vs_reference"] = {
                        {"dQ", report::error_json(sq)}, {"dK", report::error_json(sk)}, {"dV", report::error_json(sv)}};
                    extra +=
                        check_line("dQ", sq, p.dtype) + check_line("dK", sk, p.dtype) + check_line("dV", sv, p.dtype);
                }
            }
            std::vector<sim::KernelPrediction> preds;
            if (!profiles.empty()) {
                const sim::KernelRates kr = rates ? *rates : sim::datasheet_rates(m);
                nlohmann::json ks = nlohmann::json::array();
                extra += "\nthis kernel (rung 3): where the time goes\n";
                for (const auto& kp : profiles) {
                    preds.push_back(sim::predict_kernel(p, kp, kr, m));
                    ks.push_back(report::kernel_prediction_json(preds.back()));
                    extra += report::kernel_prediction_text(preds.back());
                }
                j["kernel_model"] = ks;  // rung 3's passes, each with where its time goes
            }
            // one predicted_ms: the kernel's where one is named, else the ideal machine's; the other
            // rungs under their own names
            const sim::Ladder ladder = sim::ladder_of(r, preds);
            report::add_ladder_json(j, ladder);
            if (args->json)
                std::cout << j.dump(2) << "\n";
            else
                std::cout << report::result_text(r, base.get(), false) << extra << "\n" << report::ladder_text(ladder);
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
    args->flags.add_to(cmd, false, false);
    cmd->add_flag("--json", args->json, "Print a JSON array, one object per algorithm");
    cmd->callback([args, &rc] {
        try {
            const sim::Problem p = args->prob.problem();
            const sim::Machine& m = args->prob.machine();
            note_long_walk("compare", p, 2.5);
            std::vector<sim::Result> rs;
            if (args->flags.numerics == "on")
                throw sim::Error(
                    "compare counts bytes and time only; for the numbers use simulate --check or "
                    "attend --compare");
            if (args->flags.numerics != "auto" && args->flags.numerics != "off")
                throw sim::Error("--numerics must be on, off or auto, got '" + args->flags.numerics + "'");
            args->flags.numerics = "off";
            for (auto a : {sim::Algo::standard, sim::Algo::flash1, sim::Algo::flash2}) {
                sim::Config c = args->flags.config(a);
                c.sram_bytes = args->prob.sram;
                rs.push_back(sim::simulate(p, m, c));
            }
            if (args->json)
                std::cout << report::compare_json(rs).dump(2) << "\n";
            else
                std::cout << report::compare_text(rs);
            rc = 0;
        } catch (const sim::Error& e) {
            print_error("compare", e.what());
            rc = 1;
        }
    });
}

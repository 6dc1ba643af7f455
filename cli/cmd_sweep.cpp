// flashsim sweep / scenario — one parameter over a list of values (a table, CSV or JSON), and named
// workloads (sim/scenario.cpp) run with all three algorithms.
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "report/kernel_report.hpp"
#include "cli/commands.hpp"
#include "report/report.hpp"
#include "cli/sim_flags.hpp"
#include "sim/scenario.hpp"
#include "sim/figure2.hpp"
#include "report/figure2.hpp"

namespace {

struct SweepArgs {
    ProblemArgs prob;
    SimFlags flags;
    std::string param, values, csv;
    bool json = false, progress = false;
};

const char* kParams = "seq, head-dim, block-rows, block-cols, block (both), sram, batch, heads";

std::vector<int64_t> parse_sweep_values(const std::string& list) {
    std::vector<int64_t> v;
    for (const auto& item : split_items(list, "--values")) {
        size_t used = 0;
        long long x = 0;
        try {
            x = std::stoll(item, &used);
        } catch (const std::exception&) { used = 0; }
        if (used != item.size() || x <= 0)
            throw sim::Error("--values item '" + item + "' is not a positive integer (give e.g. --values 16,32,64)");
        v.push_back(x);
    }
    if (v.empty()) throw sim::Error("--values is empty; give a comma-separated list such as 16,32,64,128");
    return v;
}

}  // namespace

void register_sweep(CLI::App& app, int& rc) {
    auto args = std::make_shared<SweepArgs>();
    auto* cmd = app.add_subcommand("sweep", "Vary one parameter over a list of values: HBM bytes, L2, predicted time");
    args->prob.add_to(cmd, false);
    args->prob.seq = 8192;
    args->prob.head_dim = 128;
    args->flags.add_to(cmd, true, true);
    cmd->add_option("--param", args->param, std::string("What to vary: ") + kParams)->required();
    cmd->add_option("--values", args->values, "Comma-separated values, e.g. 16,32,64,128,256")->required();
    cmd->add_option("--csv", args->csv, "Write the table as CSV to this file");
    cmd->add_flag("--json", args->json, "Print a JSON array, one object per value");
    cmd->add_flag("--progress", args->progress, "Show a progress line on stderr (default: when stderr is a terminal)");
    cmd->callback([args, &rc] {
        try {
            const auto values = parse_sweep_values(args->values);
            const std::string& prm = args->param;
            if (prm != "seq" && prm != "head-dim" && prm != "block-rows" && prm != "block-cols" && prm != "block" &&
                prm != "sram" && prm != "batch" && prm != "heads")
                throw sim::Error("unknown --param '" + prm + "'; use one of " + kParams);
            const sim::Algo algo = algo_or_throw(args->flags.algo);
            args->flags.config(algo);  // refuse bad flags before the first point
            if (args->flags.numerics == "auto") args->flags.numerics = "off";
            const sim::Machine& m = args->prob.machine();
            const bool show = args->progress || isatty(2);
            const auto t0 = std::chrono::steady_clock::now();
            std::vector<report::SweepRow> rows;
            for (size_t i = 0; i < values.size(); ++i) {
                const int64_t v = values[i];
                if (show)
                    std::cerr << "\rsweep " << prm << ": " << i + 1 << "/" << values.size() << " (" << prm << " = " << v
                              << ")        " << std::flush;
                ProblemArgs pa = args->prob;
                SimFlags fl = args->flags;
                if (prm == "seq")
                    pa.seq = v;
                else if (prm == "head-dim")
                    pa.head_dim = v;
                else if (prm == "batch")
                    pa.batch = v;
                else if (prm == "heads")
                    pa.heads = v;
                else if (prm == "sram")
                    pa.sram = v;
                else if (prm == "block-rows")
                    fl.block_rows = v;
                else if (prm == "block-cols")
                    fl.block_cols = v;
                else if (prm == "block")
                    fl.block_rows = fl.block_cols = v;
                report::SweepRow row;
                row.value = std::to_string(v);
                try {
                    const sim::Problem p = pa.problem();
                    sim::Config c = fl.config(algo);
                    c.sram_bytes = pa.sram;
                    row.result = sim::simulate(p, m, c);
                } catch (const sim::Error& e) { row.error = e.what(); }
                rows.push_back(std::move(row));
            }
            if (show) {
                const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
                std::cerr << "\rsweep " << prm << ": " << values.size() << " points in " << s << " s        \n";
            }
            bool any = false;
            for (const auto& r : rows) any |= r.result.has_value();
            if (!args->csv.empty() && any) {  // a sweep with no valid row leaves an existing file as it was
                std::ofstream f(args->csv);
                if (!f) throw sim::Error("cannot write --csv file '" + args->csv + "'");
                f << report::sweep_csv(prm, rows);
                f.close();
                if (!f)
                    throw sim::Error("writing --csv file '" + args->csv +
                                     "' failed (the disk may be full, or the path not a regular file)");
            }
            if (args->json)
                std::cout << report::sweep_json(prm, rows).dump(2) << "\n";
            else
                std::cout << report::sweep_text(prm, rows);
            // A value the simulator refuses is a result of the sweep (where the tiles stop fitting, where N
            // passes the limit): its row says why and the exit stays 0 while any value ran.
            rc = any ? 0 : 1;
            if (!any)
                print_error("sweep", "no value of --" + prm + " gave a valid problem (see the table)" +
                                         (args->csv.empty() ? "" : "; " + args->csv + " was not written"));
        } catch (const sim::Error& e) {
            print_error("sweep", e.what());
            rc = 1;
        }
    });
}

namespace {
struct ScenarioArgs {
    std::string name;
    bool list = false, json = false;
    std::string l2 = "auto", ceilings = "datasheet";
    std::string gpu;                   // figure2 only: another preset than the paper's A100
    std::string eager_rates = "auto";  // figure2 only: auto, none, or FILE[,FILE]
};
}  // namespace

void register_scenario(CLI::App& app, int& rc) {
    auto args = std::make_shared<ScenarioArgs>();
    auto* cmd = app.add_subcommand("scenario", "A named workload (e.g. gpt2-medium): standard vs flash1 vs flash2");
    cmd->add_option("name", args->name, "Scenario name (see --list)");
    cmd->add_flag("--list", args->list, "List the scenarios");
    cmd->add_flag("--json", args->json, "Print JSON");
    cmd->add_option("--l2", args->l2, "L2 model: auto, on, off")->capture_default_str();
    cmd->add_option("--ceilings", args->ceilings, "datasheet or measured")->capture_default_str();
    cmd->add_option("--gpu", args->gpu,
                    "figure2 only: model it on this GPU preset instead of the paper's A100-40GB (flashsim gpus)");
    cmd->add_option("--eager-rates", args->eager_rates,
                    "figure2 only: the eager kernels' measured rates: auto (results' recorded "
                    "scripts/eager_pytorch.py files), none (every kernel at the HBM rate), or FILE[,FILE]")
        ->capture_default_str();
    cmd->callback([args, &rc] {
        try {
            if (args->list || args->name.empty()) {
                if (!args->list) throw sim::Error("give a scenario name, or --list to see them");
                if (!args->name.empty())
                    throw sim::Error("--list lists every scenario; leave out the name '" + args->name +
                                     "' (or run flashsim scenario " + args->name + ")");
                const std::string fig2 =
                    "the FlashAttention paper's Figure 2 (GPT-2 medium, A100): eager PyTorch vs the FA1 kernel, and "
                    "FA1's forward against block size, beside the paper's numbers";
                if (args->json) {
                    nlohmann::json j = nlohmann::json::array();
                    for (const auto& s : sim::scenarios())
                        j.push_back({{"name", s.name}, {"description", s.description}});
                    j.push_back({{"name", "figure2"}, {"description", fig2}});
                    std::cout << j.dump(2) << "\n";
                } else {
                    for (const auto& s : sim::scenarios()) std::cout << s.name << "  " << s.description << "\n";
                    std::cout << "figure2  " << fig2 << "\n";
                }
                rc = 0;
                return;
            }
            std::string lower = args->name;
            for (auto& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
            if (lower == "figure2") {
                const sim::Machine& m = sim::find_machine(args->gpu.empty() ? "A100-40GB" : args->gpu);
                sim::KernelRates rates;
                if (args->ceilings == "datasheet")
                    rates = sim::datasheet_rates(m);
                else if (args->ceilings == "measured") {
                    const auto r = report::measured_rates(m, sim::DType::fp16, "");
                    if (!r)
                        throw sim::Error("no measured ceilings are recorded for " + m.name +
                                         " (results holds the H200's); use --ceilings datasheet, or "
                                         "--gpu H200 --ceilings measured");
                    rates = *r;
                } else
                    throw sim::Error("--ceilings must be datasheet or measured, got '" + args->ceilings + "'");
                std::vector<std::string> files;
                if (args->eager_rates == "auto") {
                    std::vector<std::string> dirs{"results"};
#ifdef FLASHSIM_SOURCE_DIR
                    dirs.push_back(std::string(FLASHSIM_SOURCE_DIR) + "/results");
#endif
                    files = report::default_eager_files(dirs);
                } else if (args->eager_rates != "none") {
                    std::stringstream ss(args->eager_rates);
                    for (std::string item; std::getline(ss, item, ',');)
                        if (!item.empty()) files.push_back(item);
                    if (files.empty())
                        throw sim::Error("--eager-rates: give auto, none, or one or more files separated by commas");
                }
                const sim::EagerRates eager =
                    files.empty()
                        ? sim::EagerRates{}
                        : report::read_eager_rates(files, args->ceilings == "measured" ? "copy" : "datasheet");
                const sim::Figure2 f = sim::figure2(sim::figure2_problem(), m, rates, eager);
                if (args->json)
                    std::cout << report::figure2_json(f).dump(2) << "\n";
                else
                    std::cout << report::figure2_text(f);
                rc = 0;
                return;
            }
            const sim::Scenario* found = sim::scenario_named(args->name);
            if (!found)  // the simulator's scenarios and the command's own figure2
                throw sim::Error("unknown scenario '" + args->name + "'; known scenarios: " + sim::scenario_names() +
                                 ", figure2 (flashsim scenario --list)");
            const sim::Scenario& s = *found;
            if (args->eager_rates != "auto") throw sim::Error("--eager-rates applies to figure2 only");
            if (!args->gpu.empty())
                throw sim::Error("--gpu applies to figure2 only; scenario " + s.name + " runs on its own GPU (" +
                                 s.gpu + "): leave out --gpu, or use flashsim simulate --gpu for another");
            SimFlags fl;
            fl.numerics = "off";
            fl.l2 = args->l2;
            fl.ceilings = args->ceilings;
            fl.pass = std::string(sim::pass_name(s.pass));
            const sim::Machine& m = sim::find_machine(s.gpu);
            std::vector<sim::Result> rs;
            for (auto a : {sim::Algo::standard, sim::Algo::flash1, sim::Algo::flash2})
                rs.push_back(sim::simulate(s.problem, m, fl.config(a)));
            if (args->json)
                std::cout << report::scenario_json(s.name, s.description, rs).dump(2) << "\n";
            else
                std::cout << report::scenario_text(s.name, s.description, rs);
            rc = 0;
        } catch (const sim::Error& e) {
            print_error("scenario", e.what());
            rc = 1;
        }
    });
}

// flashsim attend — run real tensors from .npy files through a simulated algorithm.
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "report/report.hpp"
#include "sim/npy.hpp"
#include "sim/reference.hpp"

namespace {
struct AttendArgs {
    std::string q, k, v, out, algo = "flash2", gpu = "H200";
    int64_t block_rows = 0, block_cols = 0, sram = 0;
    bool causal = false, json = false;
};
}  // namespace

void register_attend(CLI::App& app, int& rc) {
    auto a = std::make_shared<AttendArgs>();
    auto* cmd = app.add_subcommand("attend", "Run Q, K, V from .npy files through a simulated algorithm");
    cmd->add_option("--q", a->q, "Q.npy, shape (N, d) or (B, H, N, d)")->required();
    cmd->add_option("--k", a->k, "K.npy, same shape as Q")->required();
    cmd->add_option("--v", a->v, "V.npy, same shape as Q")->required();
    cmd->add_option("--out", a->out, "Where to write O (.npy, the dtype of Q)")->required();
    cmd->add_option("--algo,-a", a->algo, "standard, flash1 or flash2")->capture_default_str();
    cmd->add_option("--block-rows", a->block_rows, "B_r");
    cmd->add_option("--block-cols", a->block_cols, "B_c");
    cmd->add_option("--gpu", a->gpu, "GPU preset")->capture_default_str();
    cmd->add_option("--sram", a->sram, "SRAM budget in bytes");
    cmd->add_flag("--causal", a->causal, "Causal mask");
    cmd->add_flag("--json", a->json, "Print the traffic as JSON");
    cmd->callback([a, &rc] {
        try {
            const auto q = sim::read_npy(a->q), k = sim::read_npy(a->k), v = sim::read_npy(a->v);
            auto shape = [](const sim::TensorF& t) {
                return "(" + std::to_string(t.batch) + ", " + std::to_string(t.heads) + ", " + std::to_string(t.rows) +
                       ", " + std::to_string(t.cols) + ")";
            };
            for (const auto* x : {&k, &v})
                if (x->tensor.batch != q.tensor.batch || x->tensor.heads != q.tensor.heads ||
                    x->tensor.rows != q.tensor.rows || x->tensor.cols != q.tensor.cols)
                    throw sim::Error("shapes disagree: Q is " + shape(q.tensor) + ", but " + (x == &k ? a->k : a->v) +
                                     " is " + shape(x->tensor));
            sim::Problem p;
            p.batch = q.tensor.batch;
            p.heads = q.tensor.heads;
            p.seq = q.tensor.rows;
            p.head_dim = q.tensor.cols;
            p.dtype = q.descr == "<f2" ? sim::DType::fp16 : sim::DType::fp32;
            p.causal = a->causal;
            p.validate();
            const auto algo = sim::parse_algo(a->algo);
            if (!algo) throw sim::Error("unknown --algo '" + a->algo + "'; use standard, flash1 or flash2");
            sim::Config c;
            c.algo = *algo;
            c.block_rows = a->block_rows;
            c.block_cols = a->block_cols;
            c.sram_bytes = a->sram;
            c.numerics = sim::Numerics::on;
            if (a->sram < 0) throw sim::Error("--sram must be positive");
            sim::Inputs in{q.tensor, k.tensor, v.tensor, {}};
            const sim::Result r = sim::simulate(p, sim::find_machine(a->gpu), c, in);
            sim::write_npy(a->out, *r.output, q.descr, q.four_d);
            if (a->json) {
                std::cout << report::result_json(r).dump(2) << "\n";
            } else {
                std::cout << report::result_text(r, nullptr);
                std::cout << "wrote " << a->out << " " << shape(*r.output) << "\n";
            }
            rc = 0;
        } catch (const sim::Error& e) {
            print_error("attend", e.what());
            rc = 1;
        }
    });
}

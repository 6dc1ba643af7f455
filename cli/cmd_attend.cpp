// flashsim attend — the user's own Q, K, V (and dO) from .npy files through a simulated algorithm
// (--backend sim) or a real GPU kernel (--backend cuda), the outputs written as .npy; with
// --compare the same tensors also through the float64 reference (and, for the GPU, the simulator's
// algorithm with the kernel's tiles), each difference measured: max abs, relative, ulps and the
// count of bit-identical elements.
//
// Built twice: into flashsim (the simulator only; `--backend cuda` there means flashsim-bench was
// not built, and it says so) and into flashsim-bench with FLASHSIM_HAVE_CUDA, which `flashsim
// attend --backend cuda ...` runs (cli/main.cpp).
#include <cmath>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <memory>
#include <sstream>

#include "cli/commands.hpp"
#include "report/report.hpp"
#include "sim/dtype.hpp"
#include "sim/npy.hpp"
#include "sim/reference.hpp"

#if FLASHSIM_HAVE_CUDA
#include "cuda/api.hpp"
#endif

namespace {
struct AttendArgs {
    std::string q, k, v, dout, out, dq, dk, dv, algo = "flash2", gpu = "H200", backend = "sim", pass = "forward", dtype;
    int64_t block_rows = 0, block_cols = 0, sram = 0;
    bool causal = false, json = false, compare = false;
};

using nlohmann::json;

std::string shape_of(const sim::TensorF& t) {
    return "(" + std::to_string(t.batch) + ", " + std::to_string(t.heads) + ", " + std::to_string(t.rows) + ", " +
           std::to_string(t.cols) + ")";
}

std::string index_of(const sim::TensorF& t, size_t flat) {
    const auto k = static_cast<int64_t>(flat);
    const int64_t c = k % t.cols, n = (k / t.cols) % t.rows, h = (k / t.cols / t.rows) % t.heads,
                  b = k / t.cols / t.rows / t.heads;
    return "(" + std::to_string(b) + ", " + std::to_string(h) + ", " + std::to_string(n) + ", " + std::to_string(c) +
           ")";
}

// Non-finite values and values the storage type cannot hold are refused: attention over NaN or
// inf has no meaning to show, and a value rounded to inf would become one.
void check_values(const std::string& file, sim::TensorF& t, sim::DType dt) {
    int64_t bad = 0, over = 0;
    size_t first_bad = 0, first_over = 0;
    for (size_t k = 0; k < t.data.size(); ++k) {
        const float x = t.data[k];
        if (!std::isfinite(x)) {
            if (!bad++) first_bad = k;
            continue;
        }
        const float r = sim::round_to(dt, x);
        if (!std::isfinite(r) && !over++) first_over = k;
        t.data[k] = r;
    }
    if (bad) {
        std::ostringstream s;
        s << file << " holds " << bad << " non-finite value" << (bad > 1 ? "s" : "") << " (the first, "
          << t.data[first_bad] << ", at " << index_of(t, first_bad)
          << "); attention of NaN or inf is not defined: replace them (numpy.nan_to_num) or mask those positions";
        throw sim::Error(s.str());
    }
    if (over) {
        std::ostringstream s;
        s << file << " holds " << over << " value" << (over > 1 ? "s" : "") << " beyond " << sim::dtype_name(dt)
          << "'s range (the first, " << std::setprecision(9) << t.data[first_over] << ", at " << index_of(t, first_over)
          << "); scale the input down" << (dt == sim::DType::fp16 ? " or use --dtype bf16 (float32's range)" : "");
        throw sim::Error(s.str());
    }
}

// A result with NaN or inf is refused before anything is written: finite inputs whose products
// overflow float32 (|q . k| / sqrt(d) beyond 3.4e38) have no attention to show.
void check_result(const char* name, const sim::TensorF& t) {
    int64_t bad = 0;
    size_t first = 0;
    for (size_t i = 0; i < t.data.size(); ++i)
        if (!std::isfinite(t.data[i]) && !bad++) first = i;
    if (bad)
        throw sim::Error(std::string(name) + " came out with " + std::to_string(bad) + " NaN or infinite value" +
                         (bad > 1 ? "s" : "") + " (the first at " + index_of(t, first) +
                         "): the inputs are finite but their products overflow float32 (|q . k| / sqrt(d) above "
                         "3.4e38); scale Q and K down. Nothing was written");
}

std::string sibling(const std::string& out, const std::string& tag) {
    std::filesystem::path p(out);
    return (p.parent_path() / (p.stem().string() + "_" + tag + ".npy")).string();
}

struct Row {
    std::string tensor, against;
    sim::ErrorStats e;
};

void print_rows(const std::vector<Row>& rows, sim::DType dt) {
    std::cout << "\n  tensor  against                                                max abs      relative  max ulps   "
                 "bit-identical ("
              << sim::dtype_name(dt) << ")\n";
    for (const auto& r : rows) {
        std::ostringstream id;
        id << r.e.identical << " of " << r.e.count << " (" << std::fixed << std::setprecision(1)
           << (r.e.count ? 100.0 * double(r.e.identical) / double(r.e.count) : 0) << "%)";
        std::cout << "  " << std::left << std::setw(6) << r.tensor << "  " << std::setw(53) << r.against << std::right
                  << std::scientific << std::setprecision(3) << std::setw(11) << r.e.max_abs << std::setw(12)
                  << r.e.rel_frobenius << std::defaultfloat << std::setw(10) << r.e.max_ulp << "   " << id.str()
                  << (r.e.nonfinite ? "  NON-FINITE: " + std::to_string(r.e.nonfinite) : "") << "\n";
    }
    std::cout << "  (ulps and bit-identical after rounding both sides to " << sim::dtype_name(dt)
              << "; ulps grow without meaning where the true value is near zero; a flash kernel and standard "
                 "attention agree in exact arithmetic and differ here only by rounding)\n";
}

json rows_json(const std::vector<Row>& rows) {
    json a = json::array();
    for (const auto& r : rows)
        a.push_back({{"tensor", r.tensor},
                     {"against", r.against},
                     {"max_abs", r.e.max_abs},
                     {"relative", r.e.rel_frobenius},
                     {"max_ulp", r.e.max_ulp},
                     {"identical", r.e.identical},
                     {"count", r.e.count},
                     {"nonfinite", r.e.nonfinite}});
    return a;
}

// Where the results go (flag, path), checked before any work: an existing folder each, no two outputs on
// one path, and no output over an input (nothing is lost when a run is refused).
std::vector<std::pair<std::string, std::string>> checked_outputs(const AttendArgs& a, bool bwd) {
    std::vector<std::pair<std::string, std::string>> outputs{{"--out", a.out}};
    if (bwd) {
        outputs.emplace_back("--dq", a.dq.empty() ? sibling(a.out, "dQ") : a.dq);
        outputs.emplace_back("--dk", a.dk.empty() ? sibling(a.out, "dK") : a.dk);
        outputs.emplace_back("--dv", a.dv.empty() ? sibling(a.out, "dV") : a.dv);
    }
    namespace fs = std::filesystem;
    std::error_code ec;
    auto same = [&](const std::string& x, const std::string& y) {
        return fs::weakly_canonical(x, ec) == fs::weakly_canonical(y, ec);
    };
    for (size_t i = 0; i < outputs.size(); ++i) {
        const auto& [flag, path] = outputs[i];
        const fs::path dir = fs::path(path).parent_path();
        if (!dir.empty() && !fs::is_directory(dir, ec))
            throw sim::Error(flag + " " + path + ": the folder " + dir.string() +
                             " does not exist; create it or write elsewhere (nothing was written)");
        if (fs::is_directory(path, ec))
            throw sim::Error(flag + " " + path + " is a folder; give a file name such as " +
                             (fs::path(path) / "O.npy").string());
        for (size_t j = 0; j < i; ++j)
            if (same(path, outputs[j].second))
                throw sim::Error(flag + " and " + outputs[j].first + " are the same file (" + path +
                                 "); give each output its own path");
        for (const std::string& in : {a.q, a.k, a.v, a.dout})
            if (!in.empty() && same(path, in))
                throw sim::Error(flag + " " + path +
                                 " is also an input; write the result elsewhere so that the input is kept");
    }
    return outputs;
}

// All or nothing: each file is written beside its target as NAME.partial, and only when every one is
// written are they renamed into place; a failure removes the partial files and leaves any existing
// outputs as they were.
void write_all(const std::vector<std::pair<std::string, std::string>>& written,
               const std::vector<const sim::TensorF*>& tensors, const std::string& npy_descr, bool four_d) {
    std::vector<std::string> partial;
    try {
        for (size_t i = 0; i < written.size(); ++i) {
            partial.push_back(written[i].second + ".partial");
            sim::write_npy(partial.back(), *tensors[i], npy_descr, four_d);
        }
        for (size_t i = 0; i < written.size(); ++i) {
            std::error_code ec;
            std::filesystem::rename(partial[i], written[i].second, ec);
            if (ec)
                throw sim::Error("cannot move '" + partial[i] + "' to '" + written[i].second + "': " + ec.message());
        }
    } catch (...) {
        for (const auto& f : partial) {
            std::error_code ec;
            std::filesystem::remove(f, ec);
        }
        throw;
    }
}

struct Tensors {
    const sim::TensorF &Q, &K, &V;
    const sim::TensorF* dO;  // a backward's
};
struct Outputs {
    const sim::TensorF *O, *dQ, *dK, *dV;
};

// --compare: the outputs against float64 on the CPU, and for the GPU the simulator's against both.
std::vector<Row> compare_rows(const AttendArgs& a, const sim::Problem& p, const Tensors& in, const Outputs& out,
                              const sim::Result& simulated, sim::Algo algo, bool gpu) {
    const double work = double(p.heads_total()) * double(p.seq) * double(p.seq) * double(p.head_dim);
    if (work > 2e10)
        throw sim::Error("--compare runs the float64 reference on the CPU, and B*H*N*N*d = " +
                         std::to_string(static_cast<int64_t>(work)) +
                         " is above 2e10 (minutes); compare a slice of the heads");
    const sim::DType dt = p.dtype;
    std::vector<Row> rows;
    const sim::TensorD refO = sim::attention_reference(p, in.Q, in.K, in.V);
    const std::string sim_name = "simulator (" + std::string(sim::algo_name(algo)) +
                                 ", B_r = " + std::to_string(simulated.block_rows) +
                                 ", B_c = " + std::to_string(simulated.block_cols) + ")";
    const std::string mine = gpu ? "GPU " + a.algo : "simulator " + a.algo;
    rows.push_back({"O", "float64 reference (" + mine + ")", sim::validate(*out.O, refO, dt)});
    if (gpu) {
        rows.push_back({"O", "float64 reference (" + sim_name + ")", sim::validate(*simulated.output, refO, dt)});
        rows.push_back({"O", sim_name + " (GPU " + a.algo + ")", sim::validate(*out.O, *simulated.output, dt)});
    }
    if (!in.dO) return rows;
    const sim::Gradients g = sim::attention_backward_reference(p, in.Q, in.K, in.V, *in.dO);
    const std::vector<std::tuple<std::string, const sim::TensorF*, const sim::TensorD*, const sim::TensorF*>> grads{
        {"dQ", out.dQ, &g.dQ, &*simulated.dQ},
        {"dK", out.dK, &g.dK, &*simulated.dK},
        {"dV", out.dV, &g.dV, &*simulated.dV}};
    for (const auto& [name, got, want, s] : grads) {
        rows.push_back({name, "float64 reference (" + mine + ")", sim::validate(*got, *want, dt)});
        if (gpu) {
            rows.push_back({name, "float64 reference (" + sim_name + ")", sim::validate(*s, *want, dt)});
            rows.push_back({name, sim_name + " (GPU " + a.algo + ")", sim::validate(*got, *s, dt)});
        }
    }
    return rows;
}

void add_attend_options(CLI::App* cmd, AttendArgs& a) {
    cmd->add_option("--q", a.q, "Q.npy, shape (N, d) or (B, H, N, d)")->required();
    cmd->add_option("--k", a.k, "K.npy, same shape as Q")->required();
    cmd->add_option("--v", a.v, "V.npy, same shape as Q")->required();
    cmd->add_option("--do", a.dout, "dO.npy, same shape as Q (--pass backward)");
    cmd->add_option("--out", a.out, "Where to write O (.npy, the dtype of Q)")->required();
    cmd->add_option("--dq", a.dq, "Where to write dQ (--pass backward; default: <out>_dQ.npy)");
    cmd->add_option("--dk", a.dk, "Where to write dK (default: <out>_dK.npy)");
    cmd->add_option("--dv", a.dv, "Where to write dV (default: <out>_dV.npy)");
    cmd->add_option("--backend", a.backend, "sim (the simulator, any machine) or cuda (the GPU kernels)")
        ->capture_default_str();
    cmd->add_option("--algo,-a", a.algo, "standard, flash1 or flash2; with --backend cuda also flash2h")
        ->capture_default_str();
    cmd->add_option("--pass", a.pass, "forward, or backward (forward then backward; needs --do)")
        ->capture_default_str();
    cmd->add_option("--dtype", a.dtype,
                    "Storage type: fp16, bf16 or fp32 (sim only); default: the file's (float16 -> fp16, else fp32)");
    cmd->add_option("--block-rows", a.block_rows, "B_r (sim)");
    cmd->add_option("--block-cols", a.block_cols, "B_c (sim)");
    cmd->add_option("--gpu", a.gpu, "GPU preset (sim)")->capture_default_str();
    cmd->add_option("--sram", a.sram, "SRAM budget in bytes (sim)");
    cmd->add_flag("--causal", a.causal, "Causal mask");
    cmd->add_flag("--compare", a.compare,
                  "Also run the float64 reference (and for --backend cuda the simulator's algorithm) and print the "
                  "differences");
    cmd->add_flag("--json", a.json, "Print the result as JSON");
}

}  // namespace

void register_attend(CLI::App& app, int& rc) {
    auto a = std::make_shared<AttendArgs>();
    auto* cmd = app.add_subcommand("attend", "Run your Q, K, V (.npy) through a simulated algorithm or a GPU kernel");
    add_attend_options(cmd, *a);
    cmd->callback([a, &rc] {
        try {
            if (a->backend != "sim" && a->backend != "cuda")
                throw sim::Error("unknown --backend '" + a->backend + "'; use sim or cuda");
            const bool gpu = a->backend == "cuda";
            if (a->pass != "forward" && a->pass != "backward")
                throw sim::Error("unknown --pass '" + a->pass + "'; use forward or backward");
            const bool bwd = a->pass == "backward";
            if (bwd && a->dout.empty()) throw sim::Error("--pass backward needs the upstream gradient: --do dO.npy");
            if (!bwd && !a->dout.empty()) throw sim::Error("--do is read only with --pass backward");
            if (!bwd && (!a->dq.empty() || !a->dk.empty() || !a->dv.empty()))
                throw sim::Error("--dq, --dk and --dv are written only with --pass backward (and --do dO.npy)");
            const std::vector<std::pair<std::string, std::string>> outputs = checked_outputs(*a, bwd);
            if (a->sram < 0) throw sim::Error("--sram must be positive");
            if (gpu && (a->block_rows || a->block_cols || a->sram))
                throw sim::Error(
                    "--block-rows, --block-cols and --sram set the simulator's tiles; a GPU kernel has its "
                    "own (printed with the result)");
#if !FLASHSIM_HAVE_CUDA
            if (gpu) {
                print_error("attend",
                            "this build has no CUDA kernels (flashsim-bench was not built beside flashsim); "
                            "build with nvcc (cmake --preset cuda) to use --backend cuda");
                rc = 2;
                return;
            }
#endif
            auto q = sim::read_npy(a->q), k = sim::read_npy(a->k), v = sim::read_npy(a->v);
            std::optional<sim::NpyArray> dO;
            if (bwd) dO = sim::read_npy(a->dout);
            std::vector<std::pair<std::string, sim::NpyArray*>> files{{a->k, &k}, {a->v, &v}};
            if (dO) files.emplace_back(a->dout, &*dO);
            for (const auto& [name, x] : files)
                if (x->tensor.batch != q.tensor.batch || x->tensor.heads != q.tensor.heads ||
                    x->tensor.rows != q.tensor.rows || x->tensor.cols != q.tensor.cols)
                    throw sim::Error("shapes disagree: Q is " + shape_of(q.tensor) + ", but " + name + " is " +
                                     shape_of(x->tensor));
            sim::DType dt = q.descr == "<f2" ? sim::DType::fp16 : sim::DType::fp32;
            if (!a->dtype.empty()) {
                const auto parsed = sim::parse_dtype(a->dtype);
                if (!parsed) throw sim::Error("unknown --dtype '" + a->dtype + "'; use fp16, bf16 or fp32");
                if (*parsed == sim::DType::fp8)
                    throw sim::Error(
                        "fp8 is modelled for the attention forward only (`flashsim simulate --kernel flash2h --dtype "
                        "fp8`, `flashsim numerics --dtype fp8`); use fp16, bf16 or fp32 here");
                dt = *parsed;
            }
            if (gpu && dt == sim::DType::fp32)
                throw sim::Error("the GPU kernels store fp16 or bf16, and " + a->q + " is " +
                                 (q.descr == "<f4" ? "float32" : "float64") +
                                 ": say which with --dtype bf16 or --dtype fp16 (values are rounded to it)");
            files.insert(files.begin(), {a->q, &q});
            for (const auto& [name, x] : files) check_values(name, x->tensor, dt);

            sim::Problem p;
            p.batch = q.tensor.batch;
            p.heads = q.tensor.heads;
            p.seq = q.tensor.rows;
            p.head_dim = q.tensor.cols;
            p.dtype = dt;
            p.causal = a->causal;
            p.validate();
            const std::string npy_descr = q.descr;
            json doc{{"backend", a->backend}, {"algo", a->algo}, {"pass", a->pass}, {"dtype", sim::dtype_name(dt)}};
            doc["shape"] = {p.batch, p.heads, p.seq, p.head_dim};
            doc["causal"] = p.causal;

            // The run: the simulator's algorithm, or the GPU kernel.
            sim::TensorF O, dQ, dK, dV;
            sim::Config c;  // the simulator's configuration (for --backend cuda: the kernel's tiles)
            std::string tiles_text;
            if (!gpu) {
                const auto algo = sim::parse_algo(a->algo);
                if (!algo) throw sim::Error("unknown --algo '" + a->algo + "'; use standard, flash1 or flash2");
                c.algo = *algo;
                c.block_rows = a->block_rows;
                c.block_cols = a->block_cols;
                c.sram_bytes = a->sram;
            }
#if FLASHSIM_HAVE_CUDA
            if (gpu) {
                std::string why;
                if (!fcuda::device_available(&why)) {
                    print_error("attend", "no CUDA device: " + why + " (--backend sim runs the simulator instead)");
                    rc = 2;
                    return;
                }
                const auto vs = fcuda::variants();
                if (std::find(vs.begin(), vs.end(), a->algo) == vs.end())
                    throw sim::Error("unknown --algo '" + a->algo +
                                     "' for the GPU; use standard, flash1, flash2 or flash2h");
                if (!fcuda::variant_available(a->algo, &why)) throw sim::Error(why);
                const fcuda::Pass fp = bwd ? fcuda::Pass::backward : fcuda::Pass::forward;
                if (!fcuda::supports(a->algo, fp))
                    throw sim::Error(a->algo + " has no backward pass on the GPU; use standard, flash2 or flash2h");
                fcuda::TileConfig t;
                try {
                    t = fcuda::tile_config(a->algo, p, fcuda::Pass::forward);
                } catch (const std::runtime_error& e) { throw sim::Error(std::string(e.what())); }
                c.algo = *sim::parse_algo(t.algo);
                c.block_rows = t.block_rows;
                c.block_cols = t.block_cols;
                c.sram_bytes = t.sram_bytes;
                tiles_text =
                    std::string("kernel ") + a->algo + " on " + fcuda::device_name() + ": " +
                    (t.block_rows > 0 ? "B_r = " + std::to_string(t.block_rows) + ", B_c = " +
                                            std::to_string(t.block_cols) + ", " + t.loop_order + ", " + t.layout
                                      : std::string("cuBLAS products and a softmax kernel, S and P stored in HBM"));
                doc["device"] = fcuda::device_name();
                doc["tiles"] = {
                    {"block_rows", t.block_rows}, {"block_cols", t.block_cols}, {"loop_order", t.loop_order}};
                fcuda::Outputs o;
                try {
                    o = fcuda::compute(p, a->algo, fp, q.tensor, k.tensor, v.tensor, bwd ? &dO->tensor : nullptr);
                } catch (const fcuda::OutOfDeviceMemory& e) {
                    throw sim::Error(std::string(e.what()) + "; use fewer heads or a shorter sequence");
                }
                O = std::move(o.O);
                if (bwd) {
                    dQ = std::move(o.dQ);
                    dK = std::move(o.dK);
                    dV = std::move(o.dV);
                }
            }
#endif
            c.numerics = sim::Numerics::on;
            c.pass = bwd ? sim::Pass::both : sim::Pass::forward;
            std::optional<sim::Result> simulated;
            if (!gpu || a->compare) {
                sim::Inputs in{q.tensor, k.tensor, v.tensor, bwd ? dO->tensor : sim::TensorF{}};
                simulated = sim::simulate(p, sim::find_machine(a->gpu), c, in);
                if (!simulated->output) throw sim::Error("the simulator returned no output (numerics off)");
                if (bwd && !simulated->dQ) throw sim::Error("the simulator returned no gradients");
            }
            if (!gpu) {
                O = *simulated->output;
                if (bwd) {
                    dQ = *simulated->dQ;
                    dK = *simulated->dK;
                    dV = *simulated->dV;
                }
            }
            check_result("O", O);
            if (bwd) {
                check_result("dQ", dQ);
                check_result("dK", dK);
                check_result("dV", dV);
            }
            std::vector<std::pair<std::string, std::string>> written{{"O", a->out}};
            std::vector<const sim::TensorF*> tensors{&O};
            if (bwd) {
                written.insert(written.end(),
                               {{"dQ", outputs[1].second}, {"dK", outputs[2].second}, {"dV", outputs[3].second}});
                tensors.insert(tensors.end(), {&dQ, &dK, &dV});
            }
            write_all(written, tensors, npy_descr, q.four_d);

            const std::vector<Row> rows =
                a->compare ? compare_rows(*a, p, Tensors{q.tensor, k.tensor, v.tensor, dO ? &dO->tensor : nullptr},
                                          Outputs{&O, &dQ, &dK, &dV}, *simulated, c.algo, gpu)
                           : std::vector<Row>{};

            if (a->json) {
                if (!gpu) doc["simulation"] = report::result_json(*simulated);
                json w = json::object();
                for (const auto& [t, path] : written) w[t] = path;
                doc["written"] = w;
                if (a->compare) doc["compare"] = rows_json(rows);
                std::cout << doc.dump(2) << "\n";
            } else {
                if (gpu)
                    std::cout << tiles_text << "\n";
                else
                    std::cout << report::result_text(*simulated, nullptr);
                for (const auto& [t, path] : written)
                    std::cout << "wrote " << t << " to " << path << " " << shape_of(O) << "\n";
                if (a->compare) print_rows(rows, dt);
            }
            rc = 0;
        } catch (const sim::Error& e) {
            print_error("attend", e.what());
            rc = 1;
        } catch (const std::runtime_error& e) {  // a CUDA call that failed
            print_error("attend", e.what());
            rc = 2;
        }
    });
}

#include <charconv>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <new>

#include "cli/commands.hpp"

void ProblemArgs::add_to(CLI::App* cmd, bool shape_required) {
    auto* s = cmd->add_option("--seq,-n", seq, "Sequence length N (tokens)");
    auto* d = cmd->add_option("--head-dim,-d", head_dim, "Head dimension d");
    if (shape_required) {
        s->required();
        d->required();
    }
    cmd->add_option("--batch,-b", batch, "Batch size B")->capture_default_str();
    cmd->add_option("--heads", heads, "Attention heads H")->capture_default_str();
    cmd->add_option("--dtype", dtype,
                    "Storage type: fp16, bf16 or fp32 (arithmetic is fp32); fp8 (e4m3) with --kernel flash2h, forward")
        ->capture_default_str();
    cmd->add_option("--gpu", gpu, "GPU preset: H200, H100-SXM, A100-40GB, A100-80GB, RTX4090")->capture_default_str();
    cmd->add_option("--sram", sram, "SRAM budget M in bytes (default, or 0: the GPU's shared memory per block)");
    cmd->add_option("--seed", seed, "Input generator seed")->capture_default_str();
    cmd->add_flag("--causal", causal, "Causal mask: query n sees keys 0..n");
    cmd->add_option("--window", window, "Sliding window: query n sees keys n-W+1..n");
    cmd->add_option("--pad-left", pad_left, "Left padding: the first P keys are masked for every query");
    cmd->add_option("--scale", scale, "Softmax scale (default 1/sqrt(d))");
}

sim::Problem ProblemArgs::problem() const {
    sim::Problem p;
    p.seq = seq;
    p.head_dim = head_dim;
    p.batch = batch;
    p.heads = heads;
    const auto dt = sim::parse_dtype(dtype);
    if (!dt) throw sim::Error("unknown --dtype '" + dtype + "'; use fp16, bf16, fp32 or fp8");
    p.dtype = *dt;
    p.seed = seed;
    p.causal = causal || window > 0;
    p.window = window;
    p.pad_left = pad_left;
    p.scale = scale;
    if (sram < 0) throw sim::Error("--sram must be a positive number of bytes, got " + std::to_string(sram));
    p.validate();
    return p;
}

const sim::Machine& ProblemArgs::machine() const { return sim::find_machine(gpu); }

namespace {

// CLI11 reads a whole number with strtoll's automatic base and clamps what overflows: "--seq 010" was
// N = 8, "0x20" 32, and 99999999999999999999 the largest int64. Every whole-number option of every
// command takes plain decimal digits instead (a '-' where the type is signed); anything else, or a
// value beyond 64 bits, is refused by name. Leading zeros are dropped before CLI11 converts, and CLI11
// still refuses values beyond a narrower type (an int) itself.
void decimal_whole_numbers(CLI::App& app) {
    for (CLI::Option* o : app.get_options()) {
        const std::string type = o->get_type_name();
        if (type != "INT" && type != "UINT") continue;
        const bool is_signed = type == "INT";
        o->transform(CLI::Validator(
            [is_signed](std::string& s) -> std::string {
                const char* first = s.data();
                const char* last = s.data() + s.size();
                const bool digits = !s.empty() &&
                                    s.find_first_not_of("0123456789", s[0] == '-' ? 1 : 0) == std::string::npos &&
                                    s != "-";
                if (!digits || (!is_signed && s[0] == '-'))
                    return "'" + s + "' is not a whole number in decimal digits" +
                           (is_signed ? std::string() : std::string(" (0 or more)"));
                // the value in the option's signedness, rewritten in plain decimal for CLI11 to convert
                auto canonical = [&](auto v) -> std::string {
                    if (std::from_chars(first, last, v).ec != std::errc())
                        return "'" + s + "' is beyond the range of a 64-bit whole number";
                    s = std::to_string(v);
                    return {};
                };
                return is_signed ? canonical(int64_t{0}) : canonical(uint64_t{0});
            },
            ""));
    }
    for (CLI::App* sub : app.get_subcommands({})) decimal_whole_numbers(*sub);
}

}  // namespace

int parse_and_run(CLI::App& app, int argc, char** argv, const int& rc) {
    // The first word that is not an option must name a command. CLI11 alone would answer an
    // unknown one with "A subcommand is required" (or, with --help after it, the main help and exit 0).
    std::string known;
    bool found = false;
    const std::string first = argc > 1 ? argv[1] : "";
    for (const CLI::App* sub : app.get_subcommands({})) {
        known += (known.empty() ? "" : ", ") + sub->get_name();
        found = found || sub->check_name(first);
    }
    if (argc < 2) {
        std::cerr << app.get_name() << ": a command is required: " << known << " (see " << app.get_name()
                  << " --help)\n";
        return 2;
    }
    if (!first.empty() && first[0] != '-' && !found) {
        std::cerr << app.get_name() << ": unknown command '" << first << "'; the commands are: " << known << "\n";
        return 2;
    }
    // an option before any command: flashsim's own options are the help ones; every other belongs to a command
    if (!first.empty() && first[0] == '-' && first != "-h" && first != "--help" && first != "--help-all") {
        std::cerr << app.get_name() << ": '" << first << "' is not an option of " << app.get_name()
                  << " itself; options go after a command (" << app.get_name()
                  << " <command> --help lists them): " << known << "\n";
        return 2;
    }
    decimal_whole_numbers(app);
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) { return app.exit(e); } catch (const CLI::CallForAllHelp& e) {
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        std::cerr << "flashsim: " << e.what() << " (see flashsim --help)\n";
        return 2;
    } catch (const std::bad_alloc&) {
        std::cerr << "flashsim: out of memory: the problem is larger than this machine's memory holds; lower --seq, "
                     "--batch or --heads (or run without --check, which keeps a float64 reference)\n";
        return 1;
    }
    return rc;
}

std::vector<std::string> split_items(const std::string& list, const std::string& flag) {
    std::vector<std::string> out;
    if (list.empty()) return out;
    size_t start = 0;
    while (true) {
        const size_t comma = list.find(',', start);
        const std::string raw = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        const auto b = raw.find_first_not_of(" \t"), e = raw.find_last_not_of(" \t");
        if (b == std::string::npos)
            throw sim::Error(flag + " has an empty item in '" + list +
                             "' (a leading, doubled or trailing comma); give items separated by single commas");
        out.push_back(raw.substr(b, e - b + 1));
        if (comma == std::string::npos) return out;
        start = comma + 1;
    }
}

void require_finite(const std::string& what, const sim::ErrorStats& st) {
    if (st.nonfinite == 0) return;
    throw sim::Error(what + " came out with " + std::to_string(st.nonfinite) + " NaN or infinite value" +
                     (st.nonfinite > 1 ? "s" : "") + (st.where.empty() ? "" : " (the first at " + st.where + ")") +
                     " in float32: the scores (scale x q . k) overflow its range of 3.4e38; use a smaller --scale. "
                     "No result is shown");
}

void note_long_walk(const std::string& cmd, const sim::Problem& p, double work) {
    if (!p.causal || p.window > 0) return;  // the causal triangle; a window's band is another count
    const double tiles = double(p.seq) / 128.0 * (double(p.seq) / 128.0) / 2.0;
    const double seconds = 2.5e-8 * tiles * work;  // ~25 ns a tile, measured on a 2-core machine
    if (seconds < 10) return;
    std::fprintf(stderr,
                 "flashsim %s: note: a causal walk at N = %lld visits every tile below the diagonal, about %.2g of "
                 "them a head, one by one (an unmasked problem takes a shortcut): expect about %.0f s. The time "
                 "grows as N^2; a smaller --seq shows the same per-token picture.\n",
                 cmd.c_str(), static_cast<long long>(p.seq), tiles, seconds);
}

void print_error(const std::string& cmd, const std::string& what) {
    std::cerr << "flashsim " << cmd << ": error: " << what << "\n";
}

// tests/cli/fuzz/fuzz_cli.cpp — libFuzzer target for the command line of `flashsim`: the input is
// split on whitespace into argv and run through the same command tree as the executable
// (register_commands, parse_and_run). Every command line must end with an exit status of 0, 1 or
// 2; a crash, an uncaught exception or a sanitizer report is a bug. How to build and run:
// tests/fuzz.md. Run it in an empty directory: commands may write the files they are asked to.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "lessons/lib/expr.hpp"

namespace {
// Command lines whose numbers would make a run long are skipped: the target is the argument
// handling and the refusals, not the simulator's speed. Returns false for such a line.
bool small_enough(const std::vector<std::string>& args) {
    double product = 1;
    for (const auto& a : args) {
        if (a.find("0x") != std::string::npos || a.find("0X") != std::string::npos ||
            a.find("0b") != std::string::npos || a.find("0o") != std::string::npos)
            return false;
        if (a.find_first_of("eE") != std::string::npos && a.find_first_of("0123456789") != std::string::npos)
            return false;  // 1e9 and friends
        std::string run;
        for (size_t i = 0; i <= a.size(); ++i) {
            if (i < a.size() && a[i] >= '0' && a[i] <= '9') {
                run += a[i];
                continue;
            }
            if (!run.empty()) {
                if (run.size() > 5) return false;
                product *= std::max(1.0, std::stod(run));
                run.clear();
            }
        }
    }
    return product <= 1e7;
}
}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    lessons::detail::limits().max_tile_steps = 1 << 12;
    lessons::detail::limits().max_numerics_work = 1 << 18;
    lessons::detail::limits().allow_l2 = false;
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size > 512) return 0;
    std::vector<std::string> args{"flashsim"};
    std::string cur;
    for (size_t i = 0; i <= size; ++i) {
        const char c = i < size ? static_cast<char>(data[i]) : ' ';
        if (c == ' ' || c == '\n' || c == '\t' || c == '\0') {
            if (!cur.empty()) args.push_back(cur);
            cur.clear();
        } else {
            cur += c;
        }
    }
    if (args.size() > 24 || !small_enough(args)) return 0;
    // `bench` would exec flashsim-bench in the real executable; here it is the in-process command
    // of a build without CUDA, which answers "no CUDA in this build".
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    CLI::App app{"flashsim", "flashsim"};
    int rc = 0;
    register_commands(app, rc);
    const int status = parse_and_run(app, static_cast<int>(argv.size()), argv.data(), rc);
    if (status < 0 || status > 2) std::abort();
    return 0;
}

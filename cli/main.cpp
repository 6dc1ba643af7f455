// flashsim — the command-line client of the simulator (and, with CUDA, of the kernels).
// Reads straight through: build the command tree, parse, run the chosen command, exit.
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>

#include "cli/commands.hpp"

int main(int argc, char** argv) {
    // `flashsim bench` runs flashsim-bench (beside this executable), which carries the CUDA
    // runtime; without it (a build without nvcc) the bench command below says so and exits 2.
    if (argc > 1 && std::strcmp(argv[1], "bench") == 0) {
        std::error_code ec;
        const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
        const std::string bench = (self.parent_path() / "flashsim-bench").string();
        if (!ec && ::access(bench.c_str(), X_OK) == 0) {
            argv[0] = const_cast<char*>(bench.c_str());
            ::execv(bench.c_str(), argv);
        }
    }
    CLI::App app{"flashsim: watch attention move bytes between HBM and SRAM, standard vs FlashAttention", "flashsim"};
    app.require_subcommand(1);
    app.set_help_all_flag("--help-all", "Show help for every command");
    int rc = 0;
    register_simulate(app, rc);
    register_compare(app, rc);
    register_softmax(app, rc);
    register_attend(app, rc);
    register_bench(app, rc);
    register_sweep(app, rc);
    register_scenario(app, rc);
    register_fit(app, rc);
    register_decode(app, rc);
    register_lesson(app, rc);
    return parse_and_run(app, argc, argv, rc);
}

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
    // `flashsim attend --backend cuda` runs there too: the GPU kernels live in flashsim-bench.
    bool cuda_attend = false;
    if (argc > 1 && std::strcmp(argv[1], "attend") == 0)
        for (int i = 2; i < argc; ++i)
            cuda_attend =
                cuda_attend || std::strcmp(argv[i], "--backend=cuda") == 0 ||
                (std::strcmp(argv[i], "--backend") == 0 && i + 1 < argc && std::strcmp(argv[i + 1], "cuda") == 0);
    if (argc > 1 && (std::strcmp(argv[1], "bench") == 0 || cuda_attend)) {
        std::error_code ec;
        const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
        const std::string bench = (self.parent_path() / "flashsim-bench").string();
        if (!ec && ::access(bench.c_str(), X_OK) == 0) {
            argv[0] = const_cast<char*>(bench.c_str());
            ::execv(bench.c_str(), argv);
        }
    }
    CLI::App app{"flashsim: watch attention move bytes between HBM and SRAM, standard vs FlashAttention", "flashsim"};
    int rc = 0;
    register_commands(app, rc);
    return parse_and_run(app, argc, argv, rc);
}

// flashsim-bench — the `flashsim bench` command in an executable of its own. It links the CUDA
// runtime and cuBLAS, whose loading costs about 0.1 s at every start; keeping them out of
// `flashsim` keeps the simulator's answers fast. `flashsim bench ...` runs this program.
#include "cli/commands.hpp"

int main(int argc, char** argv) {
    CLI::App app{"flashsim bench: time the CUDA kernels and compare their traffic with the simulator", "flashsim"};
    app.require_subcommand(1);
    int rc = 0;
    register_bench(app, rc);
    register_attend(app, rc);  // flashsim attend --backend cuda
    return parse_and_run(app, argc, argv, rc);
}

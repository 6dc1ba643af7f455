// flashsim — the command-line client of the simulator (and, with CUDA, of the kernels).
// Reads straight through: build the command tree, parse, run the chosen command, exit.
#include <iostream>

#include "sim/cli/commands.hpp"

int main(int argc, char** argv) {
    CLI::App app{"flashsim: watch attention move bytes between HBM and SRAM, standard vs FlashAttention"};
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
#if FLASHSIM_HAVE_LESSONS
    register_lesson(app, rc);
#endif
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForAllHelp& e) {
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        std::cerr << "flashsim: " << e.what() << " (see flashsim --help)\n";
        return 2;
    }
    return rc;
}

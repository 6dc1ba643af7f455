// The command tree of `flashsim`: every command registered (main.cpp and the CLI fuzz target).
#include "cli/commands.hpp"

void register_commands(CLI::App& app, int& rc) {
    app.require_subcommand(1);
    app.set_help_all_flag("--help-all", "Show help for every command");
    register_simulate(app, rc);
    register_compare(app, rc);
    register_softmax(app, rc);
    register_numerics(app, rc);
    register_attend(app, rc);
    register_bench(app, rc);
    register_sweep(app, rc);
    register_scenario(app, rc);
    register_fit(app, rc);
    register_decode(app, rc);
    register_ring(app, rc);
    register_lesson(app, rc);
    register_lab(app, rc);
}

// flashsim lab — the lab's puzzles (lab/): write the tiling in Python, the simulator grades it.
//
//   flashsim lab --list              the puzzles
//   flashsim lab check N [FILE]      run FILE (default lab/puzzles/NN_*.py) on random inputs and report
//   flashsim lab check N --trace F   and save the run as a lab trace for flashsim-app --trace F
//
// The puzzles and their checker are Python (python/flashsim/lab.py, on the tile machine's bindings):
// this command runs python/flashsim/lab.py (as `python3 -m flashsim.lab` would) with the package's two folders on PYTHONPATH, so it
// works from any directory whether or not scripts/ wrote the flashsim.pth.
#include <cstdlib>
#include <memory>
#include <string>
#include <sys/wait.h>
#include <vector>

#include "cli/commands.hpp"

namespace {

struct LabArgs {
    bool list = false;
    std::vector<std::string> words;  // check N [FILE]
    std::string trace;               // --trace FILE: save the run (report/lab_trace.hpp's format)
};

std::string shell_quote(const std::string& s) {
    std::string q = "'";
    for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
}

int run_lab(const LabArgs& a) {
    std::vector<std::string> argv;
    if (a.list) {
        argv.push_back("--list");
    } else if (!a.words.empty() && a.words[0] == "check" && (a.words.size() == 2 || a.words.size() == 3)) {
        argv = a.words;
        if (!a.trace.empty()) argv.insert(argv.end(), {"--trace", a.trace});
    } else {
        print_error("lab", "say --list, or check N [FILE] (e.g. flashsim lab check 6 lab/puzzles/06_fa2_forward.py)");
        return 2;
    }
    std::string path = std::string(FLASHSIM_SOURCE_DIR) + "/python:" + FLASHSIM_BINARY_DIR + "/python";
    if (const char* old = std::getenv("PYTHONPATH"); old && *old) path += std::string(":") + old;
#ifdef FLASHSIM_PYTHON3
    const std::string python = FLASHSIM_PYTHON3;  // the interpreter the module was built for
#else
    const std::string python = "python3";
#endif
    // the checker's file rather than -m: a module missing or stale is then reported in one line
    std::string cmd = "PYTHONPATH=" + shell_quote(path) + " " + shell_quote(python) + " " +
                      shell_quote(std::string(FLASHSIM_SOURCE_DIR) + "/python/flashsim/lab.py");
    for (const auto& w : argv) cmd += " " + shell_quote(w);
    const int st = std::system(cmd.c_str());
    if (st == -1 || !WIFEXITED(st)) {
        print_error("lab", "could not run python3; install python3 (scripts/deps.sh lists what the lab needs)");
        return 2;
    }
    return WEXITSTATUS(st);
}

}  // namespace

void register_lab(CLI::App& app, int& rc) {
    auto a = std::make_shared<LabArgs>();
    auto* cmd = app.add_subcommand(
        "lab", "The lab's puzzles: write a tiled attention in Python, the simulator checks its output and its bytes");
    cmd->add_flag("--list", a->list, "List the puzzles");
    cmd->add_option("words", a->words,
                    "check N [FILE]: check puzzle N (FILE: default the learner's file in lab/puzzles)");
    cmd->add_option("--trace", a->trace, "With check: save the run as a lab trace that flashsim-app --trace replays");
    cmd->callback([a, &rc] { rc = run_lab(*a); });
}

// flashsim-app --trace FILE under Xvfb: a learner's FA2 forward, run on the tile machine here and
// saved as a lab trace, opens in the memory view beside the built-in flash2 and renders a PNG that
// is not blank; the bytes the app shows (its printed line, the panel's own text) equal the closed
// form and the tile machine's count. Bad trace files exit non-zero with one line, before any
// window. Exits 77 (ctest: skipped) when Xvfb is missing.
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <utility>

#include "report/lab_trace.hpp"
#include "tests/viz/app_harness.hpp"
#include "tests/viz/lab_fa2.hpp"

using namespace app_test;

namespace {

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

}  // namespace

int main(int argc, char** argv) {
    namespace fs = std::filesystem;
    const std::string app = FLASHSIM_APP_BIN;
    const fs::path dir = argc > 1 ? fs::path(argv[1]) : fs::temp_directory_path() / "flashsim_app_trace";
    fs::create_directories(dir);

    // The learner's run: N = 200, d = 32, fp16, B_r = 64, B_c = 48, so T_r = 4 query tiles. FA2's
    // forward reads Q once (N d 2 B), K and V once per query tile (4 N d 2 B each), writes O once
    // (N d 2 B) and LSE once in fp32 (4 N B): 12,800 + 2 x 51,200 + 12,800 + 800 = 128,800 B.
    const int64_t n = 200, d = 32, nd = n * d * 2;
    const int64_t closed = nd + 2 * 4 * nd + nd + 4 * n;
    const sim::TileMachine tm = lab_test::fa2_run(n, d, 64, 48, sim::DType::fp16, 1 << 20);
    check(tm.totals().hbm_total().total() == closed,
          "the tile machine counts the closed form's " + std::to_string(closed) + " B");
    const std::string trace = (dir / "fa2.json").string();
    report::save_lab_trace(trace, tm, report::complete_lab_trace_info(tm, {}));

    // Bad files: refused before a window opens, one line, non-zero exit.
    std::ofstream(dir / "not_json.json") << "{ this is not json";
    std::ofstream(dir / "old.json") << "{\"format\": \"flashsim-lab-trace\", \"version\": 0}";
    {
        std::ifstream in(trace);
        std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        const std::string from = "\"tensor\": \"Q\"";  // the first event loads Q: make it a tensor never added
        const size_t at = text.find(from);
        check(at != std::string::npos, "the trace file names its events' tensors as \"tensor\": \"Q\"");
        if (at != std::string::npos) text.replace(at, from.size(), "\"tensor\": \"dV\"");
        std::ofstream(dir / "unknown_tensor.json") << text;
    }
    const std::pair<std::string, std::string> bad[] = {
        {(dir / "missing.json").string(), "does not exist"},
        {(dir / "not_json.json").string(), "is not JSON"},
        {(dir / "old.json").string(), "reads version 1"},
        {(dir / "unknown_tensor.json").string(), "names tensor 'dV', which is not one of the trace's tensors"},
    };
    for (const auto& [file, phrase] : bad) {
        const Run r = run("env -u DISPLAY " + app + " --trace '" + file + "'");
        check(r.rc != 0 && r.out.find("error") != std::string::npos && r.out.find(phrase) != std::string::npos &&
                  r.out.find('\n') == r.out.size() - 1,
              "--trace " + fs::path(file).filename().string() + ": exit " + std::to_string(r.rc) +
                  ", one line: " + first_line(r.out));
    }

    {  // the tour opens lessons itself: a trace with it is refused
        const Run r = run("env -u DISPLAY " + app + " --tour --trace '" + trace + "'");
        check(r.rc == 2 && r.out.find("cannot be combined with --trace") != std::string::npos,
              "--tour --trace: exit 2, one line: " + first_line(r.out));
    }
    if (run("command -v Xvfb").rc != 0) {
        std::printf("skipped: Xvfb is not installed (apt install xvfb)\n");
        return failures ? 1 : 77;
    }
    const Xvfb server(dir);
    check(!server.display().empty(), "Xvfb started");
    if (server.display().empty()) return 1;

    const std::string png = (dir / "trace.png").string();
    fs::remove(png);
    const Run r = run(app + " --size 1280x800 --trace '" + trace + "' --screenshot '" + png + "'");
    std::string said = "--trace --screenshot: exit 0 (got " + std::to_string(r.rc) + ")";
    if (r.rc != 0) said.append(": ").append(r.out);
    check(r.rc == 0, said);
    // the line the app prints is the lab view's own text (report::lab_run_line), for both runs
    check(r.out.find("yours: 128,800 B moved") != std::string::npos && closed == 128800,
          "the app shows the learner's 128,800 B (the closed form)");
    check(r.out.find("built-in flash2 (B_r 64, B_c 48): 128,800 B moved") != std::string::npos,
          "the app shows the built-in flash2 at the same tiles moving the same 128,800 B");
    const Image im = load(png);
    check(im.w == 1280 && im.h == 800, "the PNG is 1280x800");
    const double var = im.px.empty() ? 0 : variance(im);
    check(var > 200.0, "the PNG is not blank (pixel variance " + std::to_string(var) + ")");
    return failures ? 1 : 0;
}

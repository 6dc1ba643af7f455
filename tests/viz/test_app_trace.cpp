// flashsim-app --trace FILE under Xvfb: a learner's FA2 forward, run on the tile machine here and
// saved as a lab trace, opens in the memory view beside the built-in flash2 and renders a PNG that
// is not blank; the bytes the app shows (its printed line, the panel's own text) equal the closed
// form and the tile machine's count. Bad trace files exit non-zero with one line, before any
// window. Exits 77 (ctest: skipped) when Xvfb is missing.
#include <stb_image.h>

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
#include "tests/viz/lab_fa2.hpp"

namespace {

int failures = 0;

void check(bool ok, const std::string& what) {
    std::printf("%s %s\n", ok ? "ok  " : "FAIL", what.c_str());
    if (!ok) ++failures;
}

struct Run {
    int rc = -1;
    std::string out;
};

Run run(const std::string& cmd) {
    Run r;
    FILE* p = popen((cmd + " 2>&1").c_str(), "r");
    if (!p) return r;
    char buf[512];
    while (std::fgets(buf, sizeof buf, p)) r.out += buf;
    const int st = pclose(p);
    r.rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return r;
}

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
    // One Xvfb server; it picks a free display and writes its number (-displayfd).
    const std::string num = (dir / "xvfb.display").string();
    fs::remove(num);
    const Run x = run("Xvfb -displayfd 1 -screen 0 1600x1000x24 -nolisten tcp >'" + num + "' 2>'" +
                      (dir / "xvfb.log").string() + "' </dev/null & echo $!");
    const int pid = std::atoi(x.out.c_str());
    std::string display;
    for (int i = 0; i < 300 && pid > 0 && display.empty(); ++i) {  // up to 30 s
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        std::ifstream f(num);
        int k = -1;
        if (f >> k && k >= 0) display.append(":").append(std::to_string(k));
    }
    check(!display.empty(), "Xvfb started");
    if (display.empty()) return 1;
    setenv("DISPLAY", display.c_str(), 1);

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
    int w = 0, h = 0, ch = 0;
    unsigned char* px = stbi_load(png.c_str(), &w, &h, &ch, 3);
    check(px && w == 1280 && h == 800, "the PNG is 1280x800");
    double s = 0, s2 = 0;
    const size_t count = px ? static_cast<size_t>(w) * h * 3 : 0;
    for (size_t i = 0; i < count; ++i) s += px[i], s2 += static_cast<double>(px[i]) * px[i];
    const double m = count ? s / static_cast<double>(count) : 0;
    const double var = count ? s2 / static_cast<double>(count) - m * m : 0;
    check(var > 200.0, "the PNG is not blank (pixel variance " + std::to_string(var) + ")");
    if (px) stbi_image_free(px);
    if (pid > 0) kill(pid, SIGTERM);
    return failures ? 1 : 0;
}

// Smoke test of flashsim-app under Xvfb: every panel and every step of every lesson render to a PNG that
// is not blank (pixel variance), consecutive lesson steps differ, bad arguments exit non-zero with a
// one-line error. Exits 77 (ctest: skipped) when xvfb-run is not installed.
#include <stb_image.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

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

struct Image {
    int w = 0, h = 0;
    std::vector<unsigned char> px;  // RGB
};

Image load(const std::string& path) {
    Image im;
    int n = 0;
    unsigned char* d = stbi_load(path.c_str(), &im.w, &im.h, &n, 3);
    if (d) {
        im.px.assign(d, d + static_cast<size_t>(im.w) * im.h * 3);
        stbi_image_free(d);
    }
    return im;
}

double variance(const Image& im) {
    double s = 0, s2 = 0;
    const size_t n = im.px.size();
    for (unsigned char c : im.px) s += c, s2 += static_cast<double>(c) * c;
    const double m = s / static_cast<double>(n);
    return s2 / static_cast<double>(n) - m * m;
}

// fraction of pixels that differ between two images of the same size
double differing(const Image& a, const Image& b) {
    if (a.w != b.w || a.h != b.h) return 1.0;
    size_t d = 0;
    for (size_t i = 0; i < a.px.size(); i += 3)
        if (a.px[i] != b.px[i] || a.px[i + 1] != b.px[i + 1] || a.px[i + 2] != b.px[i + 2]) ++d;
    return static_cast<double>(d) / static_cast<double>(a.px.size() / 3);
}

}  // namespace

int main(int argc, char** argv) {
    namespace fs = std::filesystem;
    const std::string app = FLASHSIM_APP_BIN;
    const fs::path dir = argc > 1 ? fs::path(argv[1]) : fs::temp_directory_path() / "flashsim_smoke";
    fs::create_directories(dir);

    // bad arguments: refused before any window opens
    for (const char* bad :
         {"--panel bogus", "--size 12", "--step 0", "--screenshot out.bmp", "--lesson no-such-lesson"}) {
        const Run r = run(app + " " + bad);
        check(r.rc != 0 && r.out.find("error") != std::string::npos && r.out.find('\n') == r.out.size() - 1,
              std::string("refuses '") + bad + "' with one line: " + r.out.substr(0, r.out.find('\n')));
    }
    {  // no display: one line, exit 1, no crash
        const Run r = run("env -u DISPLAY -u WAYLAND_DISPLAY " + app + " --frames 1");
        check(r.rc == 1 && r.out.find("cannot open a window") != std::string::npos &&
                  r.out.find('\n') == r.out.size() - 1,
              "without a display: one line and exit 1: " + r.out.substr(0, r.out.find('\n')));
    }
    if (run("command -v xvfb-run").rc != 0) {
        std::printf("skipped: xvfb-run is not installed (apt install xvfb)\n");
        return failures ? 1 : 77;
    }
    const std::string xvfb = "xvfb-run -a -s '-screen 0 1400x900x24' ";
    auto shot = [&](const std::string& name, const std::string& args, const std::string& env = "") {
        const std::string png = (dir / (name + ".png")).string();
        fs::remove(png);
        const Run r = run(env + xvfb + app + " --size 1280x800 --screenshot " + png + " " + args);
        check(r.rc == 0, name + ": exit 0 (" + std::to_string(r.rc) + ")" + (r.rc ? " " + r.out : ""));
        const Image im = load(png);
        check(im.w == 1280 && im.h == 800, name + ": PNG is 1280x800");
        const double var = im.px.empty() ? 0 : variance(im);
        check(var > 200.0, name + ": not blank (pixel variance " + std::to_string(var) + ")");
        return im;
    };
    for (const char* p : {"memory", "compare", "scores", "timeline", "softmax", "charts", "measured"})
        shot(std::string("panel_") + p, std::string("--panel ") + p);
    // consecutive lesson steps of the first lesson must look different
    Image prev;
    for (int s = 1; s <= 4; ++s) {
        // a lesson may have fewer steps: the app refuses a step past the end, which ends the walk
        if (s > 2 &&
            run("env -u DISPLAY -u WAYLAND_DISPLAY " + app + " --lesson 1 --step " + std::to_string(s) + " --frames 1")
                    .out.find("past the lesson") != std::string::npos)
            break;
        const Image im = shot("lesson1_step" + std::to_string(s), "--lesson 1 --step " + std::to_string(s));
        if (!prev.px.empty()) {
            const double f = differing(prev, im);
            check(f > 0.005, "lesson 1: step " + std::to_string(s) + " differs from step " + std::to_string(s - 1) +
                                 " (" + std::to_string(100 * f) + "% of pixels)");
        }
        prev = im;
    }
    // every step of every lesson opens and renders (under the sanitizers: the first and the last): the
    // walk ends at the first step the app refuses as past the lesson, and at the first lesson
    // number it does not know
    int lessons_seen = 0, steps_seen = 0;
    for (int l = 1; l <= 99; ++l) {
#if FLASHSIM_SMOKE_TOUR_ENDS
        // the lesson's step count, from the app's refusal of a step past it
        const Run probe = run("env -u DISPLAY -u WAYLAND_DISPLAY " + app + " --lesson " + std::to_string(l) +
                              " --step 999 --frames 1");
        const size_t at = probe.out.find("past the lesson's ");
        if (at == std::string::npos) break;  // lesson l does not exist: the course has ended
        const int last = std::atoi(probe.out.c_str() + at + 18);
        check(last >= 1, "lesson " + std::to_string(l) + " has steps (" + std::to_string(last) + ")");
        const std::vector<int> steps = last > 1 ? std::vector<int>{1, last} : std::vector<int>{1};
#endif
        int s = 1;
        for (;; ++s) {
#if FLASHSIM_SMOKE_TOUR_ENDS
            if (s > static_cast<int>(steps.size())) break;
            const int step = steps[static_cast<size_t>(s - 1)];
#else
            const int step = s;
#endif
            const std::string name = "tour_" + std::to_string(l) + "_" + std::to_string(step);
            const std::string png = (dir / (name + ".png")).string();
            const Run r = run("xvfb-run -a -s '-screen 0 1400x900x24' " + app + " --size 1280x800 --lesson " +
                              std::to_string(l) + " --step " + std::to_string(step) + " --frames 2 --screenshot " + png);
            if (r.rc != 0 && r.out.find("past the lesson") != std::string::npos) break;
            if (r.rc != 0 && s == 1 && r.out.find("lesson") != std::string::npos &&
                r.out.find("no lesson") != std::string::npos)
                break;
            check(r.rc == 0, "lesson " + std::to_string(l) + " step " + std::to_string(step) + ": exit 0 (" +
                                 std::to_string(r.rc) + ")" + (r.rc ? " " + r.out : ""));
            if (r.rc != 0) break;
            const Image im = load(png);
            check(variance(im) > 200.0, "lesson " + std::to_string(l) + " step " + std::to_string(step) + ": not blank");
            ++steps_seen;
        }
        if (s == 1) break;  // lesson l does not exist: the course has ended
        ++lessons_seen;
    }
#if FLASHSIM_SMOKE_TOUR_ENDS
    const int per_lesson = 2;  // the first and the last step
#else
    const int per_lesson = 3;  // every lesson has at least three
#endif
    check(lessons_seen >= 12 && steps_seen >= per_lesson * lessons_seen,
          "the tour saw " + std::to_string(lessons_seen) + " lessons and " + std::to_string(steps_seen) + " steps");
    // a lesson file that does not load: the app still opens and shows the error in the lesson's place
    {
        const fs::path bad = dir / "bad_lessons";
        fs::create_directories(bad);
        FILE* f = std::fopen((bad / "01-broken.toml").c_str(), "w");
        if (f) {
            std::fputs("id = \"broken\"\ntitle = [unclosed\n", f);
            std::fclose(f);
        }
        shot("broken_lesson", "", "FLASHSIM_LESSONS='" + bad.string() + "' ");
    }
    // every view at every window size from a small laptop to a 1440p monitor: one process a size
    // renders every view (--panel all); a crash (e.g. a chart too narrow for its labels) fails
    for (const char* size : {"640x400", "800x600", "1280x800", "1920x1080", "2560x1440"}) {
        const std::string base = (dir / (std::string("size_") + size + ".png")).string();
        const std::string stem = base.substr(0, base.size() - 4);
        const Run r = run("xvfb-run -a -s '-screen 0 2600x1500x24' " + app + " --size " + size +
                          " --panel all --frames 3 --screenshot " + base);
        check(r.rc == 0, std::string("all views at ") + size + ": exit 0 (" + std::to_string(r.rc) + ")" +
                             (r.rc ? " " + r.out : ""));
        int w = 0, h = 0;
        std::sscanf(size, "%dx%d", &w, &h);
        for (const char* p : {"memory", "compare", "scores", "timeline", "softmax", "charts", "measured"}) {
            const Image im = load(stem + "-" + p + ".png");
            check(im.w == w && im.h == h && variance(im) > 200.0,
                  std::string(p) + " at " + size + ": a " + size + " PNG, not blank");
        }
    }
    // animation steps of one view differ too
    const Image a = shot("memory_step0", "--panel memory --anim-step 0");
    const Image b = shot("memory_step5", "--panel memory --anim-step 5");
    check(differing(a, b) > 0.001, "memory view: step 5 differs from step 0");
    // the backward pass draws its own tensors (dO, dQ, dK, dV, D) and its own steps
    const Image c = shot("memory_backward_step5", "--panel memory --pass backward --anim-step 5");
    check(differing(b, c) > 0.01, "memory view: the backward's step 5 differs from the forward's");
    // the score matrix fills as the sweep goes on
    const Image d = shot("scores_step0", "--panel scores --anim-step 0");
    const Image e = shot("scores_step40", "--panel scores --anim-step 40");
    check(differing(d, e) > 0.005, "score matrix: step 40 differs from step 0");
    std::printf("%s\n", failures ? "FAILED" : "all checks passed");
    return failures ? 1 : 0;
}

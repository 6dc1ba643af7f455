// tests/viz/app_harness.hpp — what the app's tests under Xvfb share: ok/FAIL lines and their count,
// running a command with its output and exit status, one Xvfb server for a whole test, and a PNG's
// pixels (loaded with stb_image; the test's executable defines nothing of stb, the library does).
#pragma once
#include <stb_image.h>

#include <signal.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <vector>

namespace app_test {

inline int failures = 0;
inline void check(bool ok, const std::string& what) {
    std::printf("%s %s\n", ok ? "ok  " : "FAIL", what.c_str());
    if (!ok) ++failures;
}

struct Run {
    int rc = -1;
    std::string out;
};

inline Run run(const std::string& cmd) {
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

inline Image load(const std::string& path) {
    Image im;
    int n = 0;
    unsigned char* d = stbi_load(path.c_str(), &im.w, &im.h, &n, 3);
    if (d) {
        im.px.assign(d, d + static_cast<size_t>(im.w) * im.h * 3);
        stbi_image_free(d);
    }
    return im;
}

inline double variance(const Image& im) {
    double s = 0, s2 = 0;
    const size_t n = im.px.size();
    for (unsigned char c : im.px) s += c, s2 += static_cast<double>(c) * c;
    const double m = s / static_cast<double>(n);
    return s2 / static_cast<double>(n) - m * m;
}

// fraction of pixels that differ between two images of the same size
inline double differing(const Image& a, const Image& b) {
    if (a.w != b.w || a.h != b.h) return 1.0;
    size_t d = 0;
    for (size_t i = 0; i < a.px.size(); i += 3)
        if (a.px[i] != b.px[i] || a.px[i + 1] != b.px[i + 1] || a.px[i + 2] != b.px[i + 2]) ++d;
    return static_cast<double>(d) / static_cast<double>(a.px.size() / 3);
}

// One Xvfb server for the whole test. It picks a free display itself (-displayfd) and writes its
// number to a file; DISPLAY is set for every run after. Stopped when the test ends.
class Xvfb {
public:
    Xvfb(const std::filesystem::path& dir) {
        const std::string num = (dir / "xvfb.display").string(), log = (dir / "xvfb.log").string();
        std::filesystem::remove(num);
        const Run r = run("Xvfb -displayfd 1 -screen 0 2600x1500x24 -nolisten tcp >'" + num + "' 2>'" + log +
                          "' </dev/null & echo $!");
        pid_ = std::atoi(r.out.c_str());
        for (int i = 0; i < 300 && pid_ > 0 && display_.empty(); ++i) {  // up to 30 s
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
            FILE* f = std::fopen(num.c_str(), "r");
            if (!f) continue;
            int n = -1;
            char nl = 0;
            if (std::fscanf(f, "%d%c", &n, &nl) == 2 && n >= 0 && nl == '\n') display_ = ":" + std::to_string(n);
            std::fclose(f);
        }
        if (!display_.empty()) setenv("DISPLAY", display_.c_str(), 1);
    }
    ~Xvfb() {
        if (pid_ > 0) kill(pid_, SIGTERM);
    }
    Xvfb(const Xvfb&) = delete;
    Xvfb& operator=(const Xvfb&) = delete;
    const std::string& display() const { return display_; }

private:
    int pid_ = -1;
    std::string display_;
};

}  // namespace app_test

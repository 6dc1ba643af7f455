// viz/main.cpp — flashsim-app: watch attention move bytes between HBM and SRAM, the online softmax
// rescale, and the simulator beside measurements. Reads like Dear ImGui's own example:
// setup (arguments, window, ImGui, data) -> loop (input, draw, screenshot) -> cleanup.
//
//   flashsim-app                               opens on the first lesson
//   flashsim-app --screenshot out.png --panel compare --size 1280x800
//   flashsim-app --seq 4096 --play --frames 600 --report-frame-time
//   flashsim-app --tour                        every step of every lesson, one after another
//   flashsim-app --trace run.json              a learner's lab run beside the built-in algorithm
#include <GLFW/glfw3.h>
#include <imgui.h>
#include <imgui_impl_glfw.h>
#include <imgui_impl_opengl3.h>
#include <stb_image_write.h>

#include <algorithm>
#include <cfloat>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <future>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "report/results.hpp"
#include "viz/app_args.hpp"
#include "viz/contact_sheet.hpp"
#include "viz/cut_text.hpp"
#include "viz/lab_trace.hpp"
#include "viz/lessons_view.hpp"
#include "viz/live_run.hpp"
#include "viz/measurement.hpp"
#include "viz/panels.hpp"
#include "viz/series.hpp"
#include "viz/ui.hpp"
#include "viz/view_state.hpp"
#include "viz/visible_area.hpp"

#ifndef FLASHSIM_SOURCE_DIR
#define FLASHSIM_SOURCE_DIR "."
#endif

namespace {

int fail(const std::string& what, int code = 2) {
    std::fprintf(stderr, "flashsim-app: error: %s\n", what.c_str());
    return code;
}

std::string default_results_dir() { return report::results_dir(); }

// The frame just rendered (the back buffer), RGB from the top row down.
viz::RgbImage read_frame(int w, int h) {
    std::vector<unsigned char> px(static_cast<size_t>(w) * h * 4);
    viz::RgbImage im{w, h, std::vector<uint8_t>(static_cast<size_t>(w) * h * 3)};
    glPixelStorei(GL_PACK_ALIGNMENT, 1);
    glReadBuffer(GL_BACK);
    glReadPixels(0, 0, w, h, GL_RGBA, GL_UNSIGNED_BYTE, px.data());
    for (int y = 0; y < h; ++y)  // OpenGL's first row is the bottom one; drop alpha (RGB is smaller)
        for (int x = 0; x < w; ++x)
            std::copy_n(px.data() + (static_cast<size_t>(h - 1 - y) * w + x) * 4, 3,
                        im.px.data() + (static_cast<size_t>(y) * w + x) * 3);
    return im;
}

bool write_png(const std::string& path, int w, int h) {
    const viz::RgbImage im = read_frame(w, h);
    stbi_write_png_compression_level = 9;
    return stbi_write_png(path.c_str(), w, h, 3, im.px.data(), w * 3) != 0;
}

// --panel all: "out.png" -> "out-memory.png", "out-compare.png", ...
std::string screenshot_name(const std::string& base, viz::Panel p) {
    return base.substr(0, base.size() - 4) + "-" + std::string(viz::panel_name(p)) + ".png";
}

bool key(int glfw_key) { return ImGui::IsKeyPressed(glfw_key); }

// Everything the loop reads and writes: the view state, the background jobs, the lessons, and
// the frame bookkeeping of the scripted modes (screenshots, the tour).
struct App {
    viz::AppArgs args;
    viz::ViewState v;
    viz::Simulations sims;
    viz::ChartJob charts;
    viz::RingJob ring;    // the ring view's simulation (sim::simulate_ring), off the UI thread
    viz::ExactJob exact;  // the exactness view's outputs (numerics on), off the UI thread
    viz::MeasuredSet measured;
    viz::LessonLibrary lib;
    std::future<viz::LessonLibrary> lib_job;
    bool lessons_ready = false;
    bool scripted = false;              // render a fixed number of frames (screenshots, timing)
    std::string tour_error;             // --tour: why the step on screen failed ("": it has not)
    std::vector<std::string> tour_cut;  // --tour: the lines of text the step's last frame drew cut
    std::vector<viz::RgbImage> sheet;   // --contact-sheet: the lesson's steps so far, shrunk
    viz::TourLog tour;
    viz::ReplayCache cache;
    viz::LiveRun live;
    viz::LabTraceState lab;  // a lab trace shown in the memory view (--trace, the lesson pane's box)
    GLFWwindow* window = nullptr;
    // Presentation: full screen, zoom (1 to 2), the left column hidden, a picture asked for, and
    // what the last key did (shown a few seconds).
    bool full_screen = false;
    int win_x = 0, win_y = 0, win_w = 0, win_h = 0;  // the window before full screen
    float zoom = 1.0f;
    ImFont* font_1x = nullptr;
    ImFont* font_2x = nullptr;  // null where only ImGui's built-in font is there
    bool hide_controls = false;
    bool save_picture = false;
    std::string notice;
    double notice_until = 0;

    // Open the lesson step v.lesson, v.lesson_step and show its view: what the lesson panel's Back /
    // Next, Page Up / Down, the command line and the tour all do. Returns why it could not be opened.
    std::string apply_step() {
        if (lib.lessons.empty()) return lib.error;
        std::string err = viz::open_lesson_step(lib, v.lesson, v.lesson_step, v, sims);
        return err;
    }
    // A checked design answer: simulate its parameters (v.edit, set by the lesson panel) and show the
    // Compare view, where its run stands beside the exercise's reference.
    void open_design() {
        v.design_apply = false;
        v.param_error = sims.request(v.edit);
        if (!v.param_error.empty()) return;
        v.own_params = true;
        v.algo = v.edit.algo;
        v.columns = {true, true, true};
        v.panel = viz::Panel::compare;
    }
    // --answer: the text checked against the lesson's exercise as its field would check it; a checked
    // design opens its run. Returns why it was not an answer ("" when it was checked).
    std::string answer(const std::string& text) {
        const viz::LessonDoc& L = lib.lessons[static_cast<size_t>(v.lesson)];
        if (!L.exercise) return "--answer: lesson " + L.id + " has no exercise";
        viz::ExerciseState& st = v.exercises[L.id];
        st.typed = text;
        st = viz::submit_answer(*L.exercise, st);
        if (!st.answered) return "--answer: " + st.message;
        if (st.design) {
            v.design_shown = st.design;
            v.edit = st.design->params;
            open_design();
        }
        return {};
    }
    // command-line overrides of whatever the lesson shows
    std::string apply_overrides() {
        if (args.gpus) v.ring.gpus = *args.gpus;
        if (args.layout) v.ring.layout = *args.layout;
        if (args.pass) v.ring.pass = *args.pass;
        if (args.seq || args.head_dim || args.algo || args.causal || args.pass) {
            if (args.pass) v.edit.pass = *args.pass;
            if (args.seq) v.edit.seq = *args.seq;
            if (args.head_dim) v.edit.head_dim = *args.head_dim;
            if (args.algo) v.edit.algo = v.algo = *args.algo;
            if (args.causal) v.edit.causal = true;
            v.own_params = true;
            if (std::string err = sims.request(v.edit); !err.empty()) return err;
        }
        if (!sims.busy() && !sims.current())
            if (std::string err = sims.request(v.edit); !err.empty()) return err;
        if (args.panel) v.panel = *args.panel;
        if (lab.shown() && !args.panel) v.panel = viz::Panel::memory;
        if (args.anim_step >= 0) {
            v.pending_step = args.anim_step;
            v.ring_pos = static_cast<double>(args.anim_step) + 1.0;  // the ring view: that step, complete
        }
        return {};
    }
    std::vector<int> step_counts() const {
        std::vector<int> steps;
        for (const auto& l : lib.lessons) steps.push_back(static_cast<int>(l.steps.size()));
        return steps;
    }
    void say(std::string what) {
        notice = std::move(what);
        notice_until = ImGui::GetTime() + 4.0;
    }
};

// The lessons and the command line's choices. Lessons load (and simulate their configurations) in
// the background unless the command line names one: then a bad name or step is refused before
// any window opens. Returns an exit code, or -1 to go on.
int load_data(App& a) {
    using namespace viz;
    AppArgs& args = a.args;
    ViewState& v = a.v;
    a.measured = load_measurements(args.results_dir.empty() ? default_results_dir() : args.results_dir);
    a.scripted = args.frames > 0;
    if (!args.trace.empty()) {  // a bad trace file is refused before any window opens
        if (!a.lab.open(args.trace)) return fail(a.lab.error, 1);
        if (args.anim_step >= 0) a.lab.step = args.anim_step;
        std::printf("trace %s\n  %s\n  %s\n", args.trace.c_str(), a.lab.run->mine_line.c_str(),
                    a.lab.run->builtin_line.c_str());
    }
    if (!args.lesson.empty() || args.lesson_step_given || a.scripted) {
        a.lib = load_lesson_library();
        a.lessons_ready = true;
        if (!args.lesson.empty()) {
            v.lesson = a.lib.find(args.lesson);
            if (v.lesson < 0) {
                std::string ids;
                for (const auto& l : a.lib.lessons) ids += (ids.empty() ? "" : ", ") + l.id;
                return fail("no lesson '" + args.lesson + "'; lessons: " + ids);
            }
        }
        if (args.lesson_step_given) {
            const int n =
                a.lib.lessons.empty() ? 0 : static_cast<int>(a.lib.lessons[static_cast<size_t>(v.lesson)].steps.size());
            if (args.lesson_step >= n)
                return fail("--step " + std::to_string(args.lesson_step + 1) + " is past the lesson's " +
                            std::to_string(n) + " steps");
            v.lesson_step = args.lesson_step;
        }
        if (args.tour && a.lib.lessons.empty()) return fail("--tour: no lessons to open: " + a.lib.error, 1);
        a.tour_error = a.apply_step();  // the tour starts at the first step of the first lesson
        if (!args.answer.empty())
            if (std::string err = a.answer(args.answer); !err.empty()) return fail(err);
    } else {
        a.lib_job = std::async(std::launch::async, load_lesson_library);
    }
    if (std::string err = a.apply_overrides(); !err.empty()) return fail(err);
    if (args.play) v.playing = v.ring_playing = true;
    if (args.show_keys) v.show_help = true;
    if (args.speed > 0) v.speed = clamp_speed(args.speed);
    a.zoom = static_cast<float>(args.zoom);
    return -1;
}

// The window, ImGui and the font. Returns an exit code, or -1 to go on.
int open_window(App& a) {
    const viz::AppArgs& args = a.args;
    const bool scripted = a.scripted;
    static std::string glfw_error;  // the last GLFW complaint, folded into our one-line error
    glfwSetErrorCallback([](int, const char* what) { glfw_error = what ? what : ""; });
    if (!glfwInit()) return fail("cannot open a window (" + glfw_error + "): set DISPLAY, or run under xvfb-run -a", 1);
    glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
    glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 3);
    glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
    GLFWwindow* window = a.window =
        glfwCreateWindow(args.width, args.height, "flashsim: IO-aware attention", nullptr, nullptr);
    if (!window) {
        glfwTerminate();
        return fail("cannot create an OpenGL 3.3 window (" + glfw_error + "): is OpenGL available? try xvfb-run -a", 1);
    }
    glfwSetErrorCallback(
        [](int code, const char* what) { std::fprintf(stderr, "flashsim-app: GLFW error %d: %s\n", code, what); });
    glfwMakeContextCurrent(window);
    glfwSwapInterval(scripted ? 0 : 1);
    IMGUI_CHECKVERSION();
    ImGui::CreateContext();
    ImGuiIO& io = ImGui::GetIO();
    io.IniFilename = nullptr;  // the layout is fixed; no imgui.ini next to the user's files
    ImGui::StyleColorsDark();
    float xscale = 1, yscale = 1;
    glfwGetWindowContentScale(window, &xscale, &yscale);
    const float scale = std::clamp(std::max(xscale, yscale), 1.0f, 4.0f);
    const float font_px = (args.font_px > 0 ? static_cast<float>(args.font_px) : 17.0f) * scale;
    const char* font = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";
    // Beyond Latin-1 the lessons write a few symbols (lesson 7's "O∘dO"), which ImGui's default
    // range drew as "?": Greek, general punctuation, arrows and mathematical operators too.
    static const ImWchar ranges[] = {0x0020, 0x00FF, 0x0370, 0x03FF, 0x2000, 0x206F, 0x2190, 0x21FF, 0x2200, 0x22FF, 0};
    // the font at 1x and at 2x: zoom draws from the nearer, so text stays sharp up to 2x
    if (std::filesystem::exists(font) && (a.font_1x = io.Fonts->AddFontFromFileTTF(font, font_px, nullptr, ranges))) {
        a.font_2x = io.Fonts->AddFontFromFileTTF(font, font_px * 2, nullptr, ranges);
    } else {
        ImFontConfig cfg;
        cfg.SizePixels = font_px;
        a.font_1x = io.Fonts->AddFontDefault(&cfg);
        std::fprintf(stderr, "flashsim-app: %s not found (install fonts-dejavu-core); using ImGui's built-in font\n",
                     font);
    }
    ImGuiStyle& style = ImGui::GetStyle();
    style.ScaleAllSizes(scale);
    style.WindowRounding = 0;
    style.FrameRounding = 3 * scale;
    style.Colors[ImGuiCol_WindowBg] = ImVec4(0.11f, 0.11f, 0.13f, 1.0f);
    ImGui_ImplGlfw_InitForOpenGL(window, true);
    ImGui_ImplOpenGL3_Init("#version 330 core");

    return -1;
}

// F11 (or Alt+Enter): full screen on the window's monitor, and back.
void toggle_full_screen(App& a) {
    GLFWmonitor* mon = glfwGetPrimaryMonitor();
    const GLFWvidmode* mode = mon ? glfwGetVideoMode(mon) : nullptr;
    if (!a.full_screen && mode) {
        glfwGetWindowPos(a.window, &a.win_x, &a.win_y);
        glfwGetWindowSize(a.window, &a.win_w, &a.win_h);
        glfwSetWindowMonitor(a.window, mon, 0, 0, mode->width, mode->height, mode->refreshRate);
        a.full_screen = true;
    } else if (a.full_screen) {
        glfwSetWindowMonitor(a.window, nullptr, a.win_x, a.win_y, a.win_w, a.win_h, 0);
        a.full_screen = false;
    }
}

// The presentation keys: full screen, zoom, hide the controls, save a picture, quit.
void presentation_keys(App& a) {
    const ImGuiIO& io = ImGui::GetIO();
    if (key(GLFW_KEY_F11) || (io.KeyAlt && key(GLFW_KEY_ENTER))) toggle_full_screen(a);
    if (io.KeyCtrl) {
        const float before = a.zoom;
        if (key(GLFW_KEY_EQUAL) || key(GLFW_KEY_KP_ADD)) a.zoom = std::min(2.0f, a.zoom + 0.1f);
        if (key(GLFW_KEY_MINUS) || key(GLFW_KEY_KP_SUBTRACT)) a.zoom = std::max(1.0f, a.zoom - 0.1f);
        if (key(GLFW_KEY_0) || key(GLFW_KEY_KP_0)) a.zoom = 1.0f;
        if (a.zoom != before) a.say("zoom " + std::to_string(static_cast<int>(std::lround(a.zoom * 100))) + "%");
        if (key(GLFW_KEY_Q)) glfwSetWindowShouldClose(a.window, 1);
        return;  // Ctrl+digit zooms, it does not switch views
    }
    if (key(GLFW_KEY_Q)) glfwSetWindowShouldClose(a.window, 1);
    if (key(GLFW_KEY_H)) a.hide_controls = !a.hide_controls;
    if (key(GLFW_KEY_P)) a.save_picture = true;
}

// The keyboard (not while typing in a field): animation, lesson steps, views, presentation.
// Returns the lesson step to open (-1: none).
int handle_keys(App& a, const viz::RunSet* rs) {
    using namespace viz;
    ViewState& v = a.v;
    const ImGuiIO& io = ImGui::GetIO();
    if (io.WantTextInput) return -1;
    int lesson_go = -1;
    presentation_keys(a);
    if (io.KeyCtrl) return -1;
    RingJob& ring = a.ring;
    const Timeline* tl = rs ? &rs->timeline(driver(*rs, v.panel, v.algo, v.columns)) : nullptr;
    if (key(GLFW_KEY_F1)) v.show_help = !v.show_help;
    for (ImWchar c : io.InputQueueCharacters)
        if (c == '?') v.show_help = !v.show_help;
    if (key(GLFW_KEY_ESCAPE)) v.show_help = false;
    if (v.panel == Panel::softmax) {
        if (key(GLFW_KEY_RIGHT))
            v.softmax_focus = v.softmax_focus < 0 ? -1 : v.softmax_focus + 1;  // clamped by the panel
        if (key(GLFW_KEY_LEFT)) v.softmax_focus = v.softmax_focus < 0 ? 1000 : std::max(0, v.softmax_focus - 1);
        if (key(GLFW_KEY_HOME)) v.softmax_focus = 0;
        if (key(GLFW_KEY_END)) v.softmax_focus = -1;
    } else if (v.panel == Panel::ring) {
        if (const RingRun* rr = ring.current().get()) {
            const sim::RingResult& r = rr->result;
            const int64_t n = ring_step_count(r);
            // the step shown: the one the position completes (or 0 at the start)
            const int64_t k = v.ring_pos <= 0 ? -1 : static_cast<int64_t>(std::ceil(v.ring_pos)) - 1;
            if (key(GLFW_KEY_SPACE)) {
                if (!v.ring_playing && v.ring_pos >= static_cast<double>(n)) v.ring_pos = 0;
                v.ring_playing = !v.ring_playing;
            }
            if (key(GLFW_KEY_RIGHT)) {
                v.ring_pos = ring_pos_of_step(r, k + 1);
                v.ring_playing = false;
            }
            if (key(GLFW_KEY_LEFT)) {
                v.ring_pos = k > 0 ? ring_pos_of_step(r, k - 1) : 0.0;
                v.ring_playing = false;
            }
            if (key(GLFW_KEY_HOME)) v.ring_pos = 0, v.ring_playing = false;
            if (key(GLFW_KEY_END)) v.ring_pos = static_cast<double>(n), v.ring_playing = false;
        }
    } else if (tl) {
        if (key(GLFW_KEY_SPACE) && !v.answer_hidden) {
            if (!v.playing && v.cursor.step >= last_step(*tl) && v.cursor.frac >= 1.0) v.cursor = {0, 0.0};
            v.playing = !v.playing;
        }
        if (key(GLFW_KEY_RIGHT)) step_forward(v, *tl);
        if (key(GLFW_KEY_LEFT)) step_back(v, *tl);
        if (key(GLFW_KEY_HOME)) go_home(v);
        if (key(GLFW_KEY_END)) go_end(v, *tl);
    }
    const std::vector<int> steps = a.step_counts();  // Page Down / Up cross lessons as Next / Back do
    if (key(GLFW_KEY_PAGE_DOWN) && next_step_open(a.lib, v) && lesson_next(v.lesson, v.lesson_step, steps))
        lesson_go = v.lesson_step;
    if (key(GLFW_KEY_PAGE_UP) && lesson_back(v.lesson, v.lesson_step, steps)) lesson_go = v.lesson_step;
    // the number row: 1-9, 0, -, = (a key's character is its GLFW code; panel_of_key maps it)
    static_assert(GLFW_KEY_1 == '1' && GLFW_KEY_0 == '0' && GLFW_KEY_MINUS == '-' && GLFW_KEY_EQUAL == '=');
    for (const char c : std::string_view(kPanelKeys))
        if (key(c))
            if (const std::optional<Panel> p = panel_of_key(c)) { switch_panel(v, rs, *p); }
    return lesson_go;
}

// New results from the background jobs: lessons, simulations, charts, ring, exactness, live run.
void poll_jobs(App& a, const viz::Timeline*& prev_tl, std::shared_ptr<const viz::RunSet>& prev_rs) {
    using namespace viz;
    ViewState& v = a.v;
    if (!a.lessons_ready && a.lib_job.valid() &&
        a.lib_job.wait_for(std::chrono::seconds(0)) == std::future_status::ready) {
        a.lib = a.lib_job.get();
        a.lessons_ready = true;
        a.apply_step();  // the app opens on the first lesson once it has loaded
        a.apply_overrides();
    }
    if (a.sims.poll() || (a.sims.current() && prev_rs != a.sims.current())) {
        a.cache = ReplayCache{};
        const RunSet& now = *a.sims.current();
        if (v.pending_step >= 0) {
            scrub_to(v, now.timeline(driver(now, v.panel, v.algo, v.columns)), v.pending_step);
            v.pending_step = -1;
        } else {
            rebase(v, now, prev_tl);
        }
        a.charts.request(now.params);
        if (a.scripted && v.panel == Panel::charts) a.charts.wait();
        prev_rs = a.sims.current();
    }
    a.charts.poll();
    // the ring view simulates the app's problem with its own inputs; a new request only when
    // either changed (a refusal stays in ring.refusal() and the last good ring stays shown)
    if (a.sims.current() && v.panel == Panel::ring) {
        a.ring.request(a.sims.current()->params, v.ring);
        if (a.scripted) a.ring.wait();
    }
    a.ring.poll();
    // the exactness view computes the app's problem's outputs, only while it is shown
    if (a.sims.current() && v.panel == Panel::exact) {
        a.exact.request(a.sims.current()->params);
        if (a.scripted) a.exact.wait();
    }
    a.exact.poll();
    a.live.poll();
}

// The left column: the lesson pane, the bar that shares the height, the controls, the keys.
// Returns the lesson step to open (-1: none).
int draw_left(App& a, const viz::RunSet* rs, float left_w) {
    using namespace viz;
    ViewState& v = a.v;
    const float fs = ImGui::GetFontSize();
    int lesson_go = -1;
    ImGui::BeginChild("left", ImVec2(left_w, 0), false);
    ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(ui::okabe::sky), "flashsim");
    ImGui::SameLine();
    ImGui::TextDisabled("IO-aware exact attention");
    ImGui::Separator();
    // the lesson pane above the controls, the bar between them dragged to share the height
    const float left_h = ImGui::GetContentRegionAvail().y - ImGui::GetTextLineHeightWithSpacing() * 2;
    ImGui::BeginChild("lesson", ImVec2(0, std::max(fs * 8, left_h * v.lesson_share)), true);
    if (!a.lessons_ready) {
        ImGui::TextDisabled("loading the lessons (each simulates its own configurations)...");
    } else {
        const int g = draw_lesson_panel(a.lib, v);
        if (g >= 0) lesson_go = g;
    }
    if (draw_lab_trace_opener(a.lab)) { v.panel = Panel::memory; }
    ImGui::EndChild();
    ImGui::InvisibleButton("splitter", ImVec2(-1, fs * 0.45f));
    if (ImGui::IsItemHovered() || ImGui::IsItemActive()) ImGui::SetMouseCursor(ImGuiMouseCursor_ResizeNS);
    if (ImGui::IsItemActive() && left_h > 0)
        v.lesson_share = std::clamp(v.lesson_share + ImGui::GetIO().MouseDelta.y / left_h, 0.2f, 0.85f);
    const ImVec2 r0 = ImGui::GetItemRectMin(), r1 = ImGui::GetItemRectMax();
    ImGui::GetWindowDrawList()->AddLine(ImVec2(r0.x + fs, r0.y + fs * 0.22f), ImVec2(r1.x - fs, r0.y + fs * 0.22f),
                                        IM_COL32(255, 255, 255, 60), 2);
    ImGui::BeginChild("controls", ImVec2(0, -ImGui::GetTextLineHeightWithSpacing() * 2), true);
    if (draw_controls_panel(rs, a.sims.busy(), a.sims.progress(), v)) {
        v.param_error = a.sims.request(v.edit);
        if (v.param_error.empty())
            v.own_params = true;
        else if (rs) {
            v.edit = rs->params;  // refused: the fields go back to what the views show (the banner says why)
            v.edit.algo = v.algo;
        }
    }
    ImGui::EndChild();
    // the keys a presenter needs, always on screen
    ui::wrapped("F1 keys  F11 full screen  Ctrl +/- zoom  H hide controls  P save picture  Q quit");
    ImGui::EndChild();
    return lesson_go;
}

// The view of v.panel (or a progress bar while its simulation runs). Returns whether the view
// itself was drawn (the tour checks it).
bool draw_view(App& a, const viz::RunSet* rs) {
    using namespace viz;
    ViewState& v = a.v;
    const float fs = ImGui::GetFontSize();
    const Panel p = v.panel;
    if (p == Panel::memory && a.lab.shown()) {  // a lab trace, beside its built-in run (needs no RunSet)
        draw_lab_trace_panel(a.lab, v);
        return true;
    }
    if (!rs && p != Panel::softmax && p != Panel::measured) {
        ImGui::ProgressBar(a.sims.progress(), ImVec2(fs * 16, 0), "simulating...");
        if (!a.sims.last_error().empty()) ui::wrapped("%s", a.sims.last_error().c_str());
        return false;
    }
    auto& cache = a.cache;
    auto& charts = a.charts;
    auto& measured = a.measured;
    auto& live = a.live;
    auto& ring = a.ring;
    auto& exact = a.exact;
    switch (p) {
        case Panel::memory:
            draw_memory_panel(*rs, cache, v);
            break;
        case Panel::compare:
            draw_compare_panel(*rs, cache, v);
            break;
        case Panel::scores:
            draw_scores_panel(*rs, cache, v);
            break;
        case Panel::timeline:
            draw_timeline_panel(*rs, measured, v);
            break;
        case Panel::softmax:
            draw_softmax_panel(v);
            break;
        case Panel::charts:
            draw_charts_panel(*rs, charts.current().get(), charts.progress(), charts.busy(), measured, v);
            break;
        case Panel::measured:
            begin_visible_area("measured");  // its text wraps at what is on screen, not at the scrolled width
            draw_measured_panel(measured, rs, &live, v);
            ImGui::EndChild();
            break;
        case Panel::ring:
            draw_ring_panel(ring, v);
            break;
        case Panel::exact:
            begin_visible_area("exact");  // its text wraps at what is on screen, not at the scrolled width
            draw_exact_panel(exact, v);
            ImGui::EndChild();
            break;
        case Panel::footprint:
            begin_visible_area("footprint");  // its text wraps at what is on screen, not at the scrolled width
            draw_footprint_panel(*rs, v);
            ImGui::EndChild();
            break;
        case Panel::decoding:
            draw_decode_panel(*rs, v);
            break;
        case Panel::roofline:
            draw_roofline_panel(*rs, measured, v);
            break;
    }
    return true;
}

// The right side: a refusal's banner and the tabs stay put; the view under them scrolls. (The
// tabs in the scrolling child stretched to the widest view's width and the last ones ran off the
// screen.) Returns whether the view was drawn.
bool draw_right(App& a, const viz::RunSet* rs) {
    using namespace viz;
    ViewState& v = a.v;
    const float fs = ImGui::GetFontSize();
    ImGui::BeginChild("right", ImVec2(0, 0), false, ImGuiWindowFlags_NoScrollbar | ImGuiWindowFlags_NoScrollWithMouse);
    if (!v.param_error.empty()) {  // a refusal, where the learner looks after pressing Simulate
        ImGui::PushStyleColor(ImGuiCol_Text, ImGui::ColorConvertU32ToFloat4(ui::okabe::vermillion));
        ui::wrapped("Not applied: %s", v.param_error.c_str());
        ImGui::PopStyleColor();
        if (ImGui::SmallButton("OK")) v.param_error.clear();
        ImGui::SameLine();
        ImGui::TextDisabled("the views still show the last good simulation");
    }
    // The views, one button each, in rows as wide as the window: every view's name whole and on screen
    // (a tab bar cut the last ones at the window's edge, mid-word, and scrolled them out of sight).
    {
        const ImGuiStyle& st = ImGui::GetStyle();
        const float right = ImGui::GetCursorScreenPos().x + ImGui::GetContentRegionAvail().x;
        ImGui::PushStyleVar(ImGuiStyleVar_ItemSpacing, ImVec2(st.ItemSpacing.x * 0.5f, st.ItemSpacing.y));
        for (int k = 0; k < kPanelCount; ++k) {
            const Panel p = static_cast<Panel>(k);
            const std::string title = std::string(panel_title(p)) + "###" + std::string(panel_name(p));
            const float w =
                ImGui::CalcTextSize(panel_title(p).data(), panel_title(p).data() + panel_title(p).size()).x +
                st.FramePadding.x * 2;
            if (k > 0 && ImGui::GetItemRectMax().x + st.ItemSpacing.x * 0.5f + w <= right) ImGui::SameLine();
            const bool on = v.panel == p;
            ImGui::PushStyleColor(ImGuiCol_Button, st.Colors[on ? ImGuiCol_TabActive : ImGuiCol_Tab]);
            ImGui::PushStyleColor(ImGuiCol_ButtonHovered, st.Colors[ImGuiCol_TabHovered]);
            ImGui::PushStyleColor(ImGuiCol_ButtonActive, st.Colors[ImGuiCol_TabActive]);
            if (ImGui::Button(title.c_str()) && !on) switch_panel(v, rs, p);
            ImGui::PopStyleColor(3);
        }
        ImGui::PopStyleVar();
        ImGui::Separator();
    }
    // Below a minimum size the views scroll instead of squeezing (at 640x400 the HBM boxes collapsed
    // and the side-by-side panes overlapped); the width at the unzoomed font, so that at 2x zoom on
    // 1920x1080 they fit beside the lesson. Only then do they scroll sideways: a line too long for a
    // view is cut, not hidden past a scrollbar (the tour names it).
    const ImVec2 avail = ImGui::GetContentRegionAvail(), min_view(fs / a.zoom * 44.0f, fs * 28.0f);
    const bool too_narrow = avail.x < min_view.x;
    if (too_narrow || avail.y < min_view.y)
        ImGui::SetNextWindowContentSize(ImVec2(std::max(avail.x, min_view.x), std::max(avail.y, min_view.y)));
    ImGui::BeginChild("views", ImVec2(0, 0), false, too_narrow ? ImGuiWindowFlags_HorizontalScrollbar : 0);
    const bool drawn = draw_view(a, rs);
    ImGui::EndChild();
    ImGui::EndChild();
    return drawn;
}

// P: the frame just rendered as a PNG in the working folder, and the command that brings the
// step back on the clipboard.
void save_picture(App& a, int fw, int fh) {
    const viz::ViewState& v = a.v;
    const std::string cmd = "flashsim-app --lesson " + std::to_string(v.lesson + 1) + " --step " +
                            std::to_string(v.lesson_step + 1) + " --panel " + std::string(viz::panel_name(v.panel));
    const std::string png = "flashsim-lesson" + std::to_string(v.lesson + 1) + "-step" +
                            std::to_string(v.lesson_step + 1) + "-" + std::string(viz::panel_name(v.panel)) + ".png";
    ImGui::SetClipboardText(cmd.c_str());
    a.say(write_png(png, fw, fh) ? "saved " + png + "; copied: " + cmd : "could not write " + png + " here");
}

// --contact-sheet: lesson `lesson`'s steps, three a row, as DIR/lesson-NN-ID.jpg (JPEG: a tenth of the
// PNG's size for the same picture, so a whole course fits in docs/). Returns why it could not be written.
std::string write_sheet(App& a, int lesson) {
    const viz::RgbImage im = viz::contact_sheet(a.sheet, 3, 6);
    a.sheet.clear();
    if (im.px.empty()) return {};
    std::error_code ec;
    std::filesystem::create_directories(a.args.contact_sheet, ec);
    char name[32];
    std::snprintf(name, sizeof name, "lesson-%02d-", lesson + 1);
    const std::string path =
        (std::filesystem::path(a.args.contact_sheet) / (name + a.lib.lessons[static_cast<size_t>(lesson)].id + ".jpg"))
            .string();
    if (!stbi_write_jpg(path.c_str(), im.w, im.h, 3, im.px.data(), 70)) return "cannot write " + path;
    return {};
}

// --tour: the step on screen has been rendered: say so (or why not) and name any text it drew cut,
// write the lesson's contact sheet at its last step, then open the next step as Next does. Returns
// false after the last step.
bool tour_step_done(App& a, bool view_drawn, int& rc) {
    using namespace viz;
    ViewState& v = a.v;
    if (a.tour_error.empty() && !a.sims.last_error().empty()) a.tour_error = a.sims.last_error();
    if (a.tour_error.empty() && !view_drawn) a.tour_error = "its view was not drawn";
    const LessonDoc& L = a.lib.lessons[static_cast<size_t>(v.lesson)];
    std::printf("%s\n", a.tour.step_done(L, v.lesson_step, v.panel, a.tour_error).c_str());
    for (const std::string& t : a.tour_cut) std::printf("%s\n", a.tour.clipped(L, v.lesson_step, v.panel, t).c_str());
    a.tour_cut.clear();
    std::fflush(stdout);
    const std::vector<int> steps = a.step_counts();
    const int was = v.lesson;
    const bool more = lesson_next(v.lesson, v.lesson_step, steps);
    if ((!more || v.lesson != was) && !a.args.contact_sheet.empty())
        if (std::string err = write_sheet(a, was); !err.empty()) rc = fail(err, 1);
    if (!more) return false;
    a.tour_error = a.apply_step();
    a.sims.wait();  // the next step's simulations, finished before its frames
    if (v.panel == Panel::charts) a.charts.wait();
    return true;
}

void report_frame_time(const App& a, const std::vector<double>& frame_ms, const std::vector<double>& ui_ms) {
    using namespace viz;
    const AppArgs& args = a.args;
    const ViewState& v = a.v;
    std::vector<double> s(frame_ms.begin() + std::min<size_t>(frame_ms.size() - 1, 5),
                          frame_ms.end());  // skip warm-up
    std::sort(s.begin(), s.end());
    double sum = 0;
    for (double x : s) sum += x;
    const double mean = sum / static_cast<double>(s.size());
    const RunSet* rs = a.sims.current().get();
    std::printf(
        "frames %zu (after 5 warm-up) at %dx%d, N = %lld, panel %s: mean %.2f ms, median %.2f ms, p95 %.2f ms, "
        "max %.2f ms, %.1f fps (mean)\n",
        s.size(), args.width, args.height, rs ? static_cast<long long>(rs->problem.seq) : 0LL,
        std::string(panel_name(v.panel)).c_str(), mean, s[s.size() / 2], s[s.size() * 95 / 100], s.back(),
        1000.0 / mean);
    std::vector<double> u(ui_ms.begin() + std::min<size_t>(ui_ms.size() - 1, 5), ui_ms.end());
    std::sort(u.begin(), u.end());
    double usum = 0;
    for (double x : u) usum += x;
    std::printf(
        "of which the app's own work (input, panels, draw lists): mean %.2f ms, p95 %.2f ms; the rest is "
        "OpenGL rasterising and presenting\n",
        usum / static_cast<double>(u.size()), u[u.size() * 95 / 100]);
    std::printf("renderer: %s\n", reinterpret_cast<const char*>(glGetString(GL_RENDERER)));
}

}  // namespace

int main(int argc, char** argv) {
    using namespace viz;
    // ---------------------------------------------------------------- arguments, data, window
    App a;
    {
        bool want_help = false;
        std::string help_text;
        if (std::string err = parse_app_args(argc, argv, a.args, &want_help, &help_text); !err.empty())
            return fail(err);
        if (want_help) {
            std::printf("%s", help_text.c_str());
            return 0;
        }
    }
    if (const int rc = load_data(a); rc >= 0) return rc;
    if (const int rc = open_window(a); rc >= 0) return rc;
    const AppArgs& args = a.args;
    ViewState& v = a.v;
    ImGuiIO& io = ImGui::GetIO();
    const bool scripted = a.scripted;
    if (scripted) a.sims.wait();          // a screenshot shows the finished simulation, not a progress bar
    std::vector<double> frame_ms, ui_ms;  // whole frame; the app's own part (events, layout, drawing lists)
    int frame = 0;
    int rc = 0;
    const Timeline* prev_tl = nullptr;
    std::shared_ptr<const RunSet> prev_rs;

    // ---------------------------------------------------------------- loop
    // Idle, the app waits for input instead of redrawing 60 times a second: background work wakes
    // it (glfwPostEmptyEvent from the worker threads). Playing, it draws at a rate that follows the
    // speed (six frames a step: 12 a second at 2 steps/s, at least 10, at most 60), not as fast as the
    // machine allows. (Ten a step cost 26-32% of a core at 2 steps/s under llvmpipe, which spends about
    // 15 ms of CPU on a 1280x800 frame; a step of a dozen events is too quick to follow tile by tile at
    // either rate.)
    a.sims.set_wake(glfwPostEmptyEvent);
    a.charts.set_wake(glfwPostEmptyEvent);
    a.ring.set_wake(glfwPostEmptyEvent);
    a.exact.set_wake(glfwPostEmptyEvent);
    int settle = 3;  // frames to draw after an event before waiting again (ImGui settles hover/active state)
    auto last_frame = std::chrono::steady_clock::now();
    while (!glfwWindowShouldClose(a.window)) {
        const bool animating = (v.playing && animated(v.panel)) || (v.ring_playing && v.panel == Panel::ring);
        const bool working =
            a.sims.busy() || a.charts.busy() || a.ring.busy() || a.exact.busy() || a.live.running() || !a.lessons_ready;
        if (scripted || settle > 0) {
            glfwPollEvents();
            settle = std::max(0, settle - 1);
        } else {
            // playing: the next frame when its time comes; otherwise a text field's cursor blinks,
            // progress bars move, and only events matter
            const double fps = std::clamp(v.speed * 6.0, 10.0, 60.0);
            const double since = std::chrono::duration<double>(std::chrono::steady_clock::now() - last_frame).count();
            const double timeout = animating          ? std::max(0.0, 1.0 / fps - since)
                                   : working          ? 0.1
                                   : io.WantTextInput ? 0.5
                                                      : 10.0;
            const auto w0 = std::chrono::steady_clock::now();
            glfwWaitEventsTimeout(timeout);
            if (!animating &&
                std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count() < timeout * 0.9)
                settle = 3;  // woken by an event, not the timeout
        }
        const auto t0 = last_frame = std::chrono::steady_clock::now();
        poll_jobs(a, prev_tl, prev_rs);
        v.answer_hidden = a.lessons_ready && !next_step_open(a.lib, v);
        const RunSet* rs = a.sims.current().get();
        prev_tl = rs ? &rs->timeline(driver(*rs, v.panel, v.algo, v.columns)) : nullptr;

        // Ctrl +/-: every view lays out from the font size
        const bool big = a.font_2x && a.zoom > 1.4f;
        io.FontDefault = big ? a.font_2x : a.font_1x;
        io.FontGlobalScale = big ? a.zoom / 2 : a.zoom;
        ImGui_ImplOpenGL3_NewFrame();
        ImGui_ImplGlfw_NewFrame();
        // scripted frames (screenshots, the tour) show no hover: where Xvfb's pointer happens to be
        // opened tooltips that differed from one run to the next
        if (scripted) io.MousePos = ImVec2(-FLT_MAX, -FLT_MAX);
        ImGui::NewFrame();
        int lesson_go = handle_keys(a, rs);
        if (v.panel == Panel::ring && v.ring_playing && a.ring.current()) {
            const double dt = scripted ? 1.0 / 60.0 : io.DeltaTime;
            ring_tick(v.ring_pos, v.ring_playing, ring_step_count(a.ring.current()->result), dt,
                      std::min(v.speed, 4.0));
        }
        if (rs && animated(v.panel)) {
            const double dt = scripted ? 1.0 / 60.0 : io.DeltaTime;
            tick(v, rs->timeline(driver(*rs, v.panel, v.algo, v.columns)), dt);
        }

        // the one window: lesson and controls on the left (H hides them), the views on the right
        const ImGuiViewport* vp = ImGui::GetMainViewport();
        ImGui::SetNextWindowPos(vp->WorkPos);
        ImGui::SetNextWindowSize(vp->WorkSize);
        // No background: the clear colour is the window colour, and llvmpipe (software GL under
        // Xvfb) spends a frame's worth of fill on every full-window rectangle.
        ImGui::Begin("flashsim", nullptr,
                     ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoBringToFrontOnFocus |
                         ImGuiWindowFlags_NoSavedSettings | ImGuiWindowFlags_NoBackground);
        if (!a.hide_controls) {
            const float fs = ImGui::GetFontSize();
            const int g =
                draw_left(a, rs, std::min(vp->WorkSize.x * 0.45f, std::max(fs * 19.0f, vp->WorkSize.x * 0.26f)));
            if (g >= 0) lesson_go = g;
            ImGui::SameLine();
        }
        const bool view_drawn = draw_right(a, rs);
        ImGui::End();
        draw_help_overlay(v);
        if (!a.notice.empty() && ImGui::GetTime() < a.notice_until) {
            ImGui::SetNextWindowPos(ImVec2(vp->WorkPos.x + vp->WorkSize.x * 0.5f, vp->WorkPos.y + vp->WorkSize.y - 8),
                                    ImGuiCond_Always, ImVec2(0.5f, 1.0f));
            ImGui::SetNextWindowBgAlpha(0.9f);
            ImGui::Begin("notice", nullptr,
                         ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_AlwaysAutoResize | ImGuiWindowFlags_NoInputs |
                             ImGuiWindowFlags_NoFocusOnAppearing);
            ImGui::TextUnformatted(a.notice.c_str());
            ImGui::End();
            settle = std::max(settle, 1);  // redraw once more when it is due to go
        }
        if (lesson_go >= 0 && !a.lib.lessons.empty()) a.apply_step();
        if (v.design_apply) a.open_design();

        // render
        ImGui::Render();
        {
            const auto fields = ui::take_text_fields();  // (every frame: they are the frame's)
            if (args.tour && frame + 1 >= args.frames)
                a.tour_cut = cut_lines(drawn_glyphs(*ImGui::GetDrawData(), fields));
        }
        const auto t_ui = std::chrono::steady_clock::now();
        int fw = 0, fh = 0;
        glfwGetFramebufferSize(a.window, &fw, &fh);
        glViewport(0, 0, fw, fh);
        glClearColor(0.11f, 0.11f, 0.13f, 1.0f);
        glClear(GL_COLOR_BUFFER_BIT);
        ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
        if (args.tour)
            for (GLenum e; (e = glGetError()) != GL_NO_ERROR;)
                if (a.tour_error.empty()) {
                    char code[16];
                    std::snprintf(code, sizeof code, "0x%04x", e);
                    a.tour_error = std::string("OpenGL error ") + code + " while rendering";
                }
        ++frame;
        if (a.save_picture) {
            a.save_picture = false;
            save_picture(a, fw, fh);
        }
        if (args.tour && frame >= args.frames && !args.contact_sheet.empty())  // about 640 pixels wide a step
            a.sheet.push_back(shrink(read_frame(fw, fh), std::max(1, (fw + 320) / 640)));
        if (scripted && frame >= args.frames && !args.screenshot.empty()) {
            const std::string png = args.all_panels ? screenshot_name(args.screenshot, v.panel) : args.screenshot;
            if (!write_png(png, fw, fh)) rc = fail("cannot write " + png, 1);
        }
        glfwSwapBuffers(a.window);
        if (scripted) {
            glFinish();
            frame_ms.push_back(
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
            ui_ms.push_back(std::chrono::duration<double, std::milli>(t_ui - t0).count());
            if (frame >= args.frames && args.tour) {
                if (!tour_step_done(a, view_drawn, rc)) break;
                frame = 0;
            } else if (frame >= args.frames) {
                const int next = static_cast<int>(v.panel) + 1;
                if (!args.all_panels || next >= kPanelCount || rc) break;
                // --panel all: the next view, with its data ready, for another args.frames frames
                switch_panel(v, rs, static_cast<Panel>(next));
                if (v.panel == Panel::charts) a.charts.wait();
                frame = 0;
            }
        }
    }

    // ---------------------------------------------------------------- cleanup
    if (args.tour) {
        std::printf("%s\n", a.tour.summary(a.lib.lessons.size()).c_str());
        if (!a.tour.failures().empty()) rc = fail(a.tour.failures(), 1);
    }
    if (args.report_frame_time && !frame_ms.empty()) report_frame_time(a, frame_ms, ui_ms);
    a.sims.set_wake(nullptr);  // no wake-ups to a terminated GLFW from a run still finishing
    a.charts.set_wake(nullptr);
    a.ring.set_wake(nullptr);
    ImGui_ImplOpenGL3_Shutdown();
    ImGui_ImplGlfw_Shutdown();
    ImGui::DestroyContext();
    glfwDestroyWindow(a.window);
    glfwTerminate();
    return rc;
}

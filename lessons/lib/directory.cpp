// lessons/lib/directory.cpp — the lessons directory: where it is, and every lesson in it.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <toml++/toml.h>

#include "lessons/lib/lesson.hpp"

namespace lessons {

// ---------------------------------------------------------------- [load_all / lessons_dir]
std::vector<std::string> lesson_files(const std::string& dir) {
    namespace fs = std::filesystem;
    std::vector<std::string> files;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec))
        if (e.is_regular_file() && e.path().extension() == ".toml") files.push_back(e.path().string());
    if (ec) throw LoadError(dir, 0, 0, "cannot list the lessons directory: " + ec.message());
    std::sort(files.begin(), files.end());
    return files;
}

std::vector<Loaded> load_all(const std::string& dir) {
    std::vector<Loaded> out;
    std::set<std::string> ids;
    for (const auto& f : lesson_files(dir)) {
        Loaded x = load_file(f);
        if (x.lesson && !ids.insert(x.lesson->id).second) {
            x.error =
                f + ":1:1: id '" + x.lesson->id + "' is used by another lesson in " + dir + "; ids must be unique";
            x.lesson.reset();
        }
        out.push_back(std::move(x));
    }
    return out;
}

Loaded load_file(const std::string& path) {
    Loaded x;
    x.file = path;
    try {
        x.lesson = load_lesson(path);
    } catch (const LoadError& e) {
        x.error = e.what();
    } catch (const std::exception& e) {  // never expected; reported, not crashed on
        x.error = path + ":0:0: internal error: " + e.what();
    }
    return x;
}

Header read_header(const std::string& path) {
    toml::table t;
    try {
        t = toml::parse_file(path);
    } catch (const toml::parse_error& e) {
        throw LoadError(path, 0, 0, std::string("not a TOML file: ") + std::string(e.description()));
    }
    Header h;
    h.file = path;
    const auto id = t["id"].value<std::string>();
    const auto number = t["number"].value<int64_t>();
    const auto title = t["title"].value<std::string>();
    if (!id || !number || !title) throw LoadError(path, 0, 0, "the lesson needs an id, a number and a title");
    h.id = *id;
    h.number = *number;
    h.title = *title;
    return h;
}

#ifndef FLASHSIM_LESSONS_SOURCE_DIR
#define FLASHSIM_LESSONS_SOURCE_DIR ""
#endif

std::string lessons_dir() {
    namespace fs = std::filesystem;
    std::vector<std::string> tried;
    auto ok = [&](const fs::path& p) {
        tried.push_back(p.string());
        std::error_code ec;
        return fs::is_directory(p, ec);
    };
    if (const char* env = std::getenv("FLASHSIM_LESSONS"); env && *env) {
        if (ok(env)) return env;
        throw LoadError(env, 0, 0, "FLASHSIM_LESSONS names a directory that does not exist");
    }
    std::error_code ec;
    const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    if (!ec) {
        for (const fs::path& p : {exe.parent_path() / ".." / ".." / "lessons", exe.parent_path() / ".." / "lessons"})
            if (ok(p)) return p.lexically_normal().string();
    }
    if (*FLASHSIM_LESSONS_SOURCE_DIR && ok(FLASHSIM_LESSONS_SOURCE_DIR)) return FLASHSIM_LESSONS_SOURCE_DIR;
    std::string t;
    for (const auto& x : tried) t += (t.empty() ? "" : ", ") + x;
    throw LoadError("lessons", 0, 0,
                    "no lessons directory found (tried " + t + "); set FLASHSIM_LESSONS=/path/to/lessons");
}

}  // namespace lessons

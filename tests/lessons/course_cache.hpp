// tests/lessons/course_cache.hpp — the course loaded once for the whole test binary (loading every
// lesson runs the simulator for each configuration: seconds under the sanitizers, so the suites
// share one load instead of each making its own).
#pragma once
#include <vector>

#include "lessons/lib/lesson.hpp"

namespace lessons_test {
// Every lesson file of FLASHSIM_LESSONS_DIR as lessons::load_all gives them (test_lessons.cpp).
const std::vector<lessons::Loaded>& loaded_course();
}  // namespace lessons_test

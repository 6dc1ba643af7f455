// viz/background.hpp — one computation at a time off the UI thread, for the app's simulations and
// its ring (no GL, no ImGui).
//
//   request(key) ──► runs work(key) on a worker thread; a request while one runs waits in a
//   one-slot queue (the newest replaces an older one: a running job cannot be interrupted)
//   poll(), once a frame ──► takes a finished result (current()) or the message of an exception
//   (last_error(), through an optional rewording), then starts the queued request
//
// The wake function (the app passes glfwPostEmptyEvent) is called on the worker thread as a run
// ends, result or exception, so that a window waiting for events wakes to show it.
#pragma once
#include <atomic>
#include <chrono>
#include <exception>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <utility>

namespace viz {

template <typename Key, typename Result>
class BackgroundJob {
public:
    using Work = std::function<std::shared_ptr<Result>(const Key&)>;
    using Words = std::function<std::string(const std::string&)>;  // an exception's message as shown

    explicit BackgroundJob(Work work, Words words = {}) : work_(std::move(work)), words_(std::move(words)) {}
    ~BackgroundJob() {
        if (job_.valid()) job_.wait();
    }
    BackgroundJob(const BackgroundJob&) = delete;
    BackgroundJob& operator=(const BackgroundJob&) = delete;

    // Starts work(k) now, or after the running one.
    void request(const Key& k) {
        if (job_.valid())
            queued_ = k;
        else
            start(k);
    }
    void drop_queued() { queued_.reset(); }
    // Call once a frame: true when a new result arrived.
    bool poll() {
        if (!job_.valid() || job_.wait_for(std::chrono::seconds(0)) != std::future_status::ready) return false;
        bool changed = false;
        try {
            current_ = job_.get();
            error_.clear();
            changed = true;
        } catch (const std::exception& e) {
            job_ = {};
            error_ = words_ ? words_(e.what()) : std::string(e.what());
        }
        if (queued_) {
            const Key k = std::move(*queued_);
            queued_.reset();
            start(k);
        }
        return changed;
    }
    // Blocks until nothing runs or waits (screenshot mode, tests).
    void wait() {
        while (busy()) {
            if (job_.valid()) job_.wait();
            poll();
        }
    }
    bool busy() const { return job_.valid() || queued_.has_value(); }
    const std::shared_ptr<const Result>& current() const { return current_; }
    const std::string& last_error() const { return error_; }
    void set_wake(void (*wake)()) { wake_ = wake; }

private:
    void start(const Key& k) {
        job_ = std::async(std::launch::async, [this, k] {
            struct Wake {  // on the way out, result or exception
                std::atomic<void (*)()>& f;
                ~Wake() {
                    if (auto w = f.load()) w();
                }
            } wake{wake_};
            return work_(k);
        });
    }

    Work work_;
    Words words_;
    std::atomic<void (*)()> wake_{nullptr};
    std::shared_ptr<const Result> current_;
    std::optional<Key> queued_;
    std::string error_;
    std::future<std::shared_ptr<Result>> job_;  // last: destroyed (and waited for) first
};

}  // namespace viz

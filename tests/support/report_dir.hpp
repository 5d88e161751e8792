// A fresh directory for a test's desync reports, removed with it.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>

namespace lockstep::testing {

struct ReportDir {
  std::filesystem::path path;
  explicit ReportDir(const std::string& tag)
      : path(std::filesystem::temp_directory_path() / ("lockstep-" + tag + "-" + std::to_string(::getpid()))) {
    std::filesystem::create_directories(path);
  }
  ~ReportDir() { std::filesystem::remove_all(path); }
  ReportDir(const ReportDir&) = delete;
  ReportDir& operator=(const ReportDir&) = delete;
};

}  // namespace lockstep::testing

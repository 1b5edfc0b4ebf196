// What the example programs share: printed checks, whether a library is
// mapped into the process, and the message of the c10::Error a call throws.
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/util/Exception.h>

#include <cstdio>
#include <fstream>
#include <string>

namespace example {

// Checks that failed so far (the exit status is non-zero if any did).
inline int& failures() {
  static int n = 0;
  return n;
}

inline void check(bool ok, const std::string& what) {
  std::printf("%s %s\n", ok ? "ok  " : "FAIL", what.c_str());
  if (!ok) ++failures();
}

// Whether a shared library of this name is mapped into the process.
inline bool mapped(const char* name) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    if (line.find(name) != std::string::npos) return true;
  }
  return false;
}

inline c10::OperatorHandle op(const char* name) { return c10::Dispatcher::singleton().findSchemaOrThrow(name, ""); }

// The message of the c10::Error `call` throws ("" if it throws none).
template <class Call>
std::string error_of(Call call) {
  try {
    call();
  } catch (const c10::Error& e) {
    return e.what_without_backtrace();
  }
  return "";
}

}  // namespace example

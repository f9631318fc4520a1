// Finds and loads a backend module (module_abi.h) once per process and
// checks that it was built with this libmodel.
#pragma once

#include <string>

#include "backend/module_abi.h"

namespace lamina::model::backend {

// The module's file: `name` in `dir`, or, when `dir` is empty, in the
// installed backend folder, found relative to liblamina-model.so's own
// location (no path of the build machine is compiled in).
std::string module_path(const std::string& dir, const char* name);

struct Loaded {
  const Api* api = nullptr;  // null when the module cannot be used
  std::string error;         // why not: names the path and the cause
};

// Loads `path` the first time and returns the same result afterwards; a
// module that loaded stays loaded (the objects it made outlive any caller).
const Loaded& load(const std::string& path);

// libmodel's internals as a module receives them.
const Host& host();

}  // namespace lamina::model::backend

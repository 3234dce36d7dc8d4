// What a CUDA error code means for attribution (src/cuda/cuda_errors.def): whether the call that returned it
// caused it, or only is where an earlier kernel's fault surfaced.
#pragma once

#include <string>

#include "call_values.h"

namespace blockrun {

enum class ErrorMeaning {
  Own,           // the call's own error: nothing was enqueued; a launch returning it is the culprit
  Asynchronous,  // a kernel's execution error, sticky: the call that returned it is where it surfaced
  Unknown,       // not in the table (or CUDA_ERROR_UNKNOWN): possibly asynchronous, never exact
  Environment,   // no usable driver or device: no launch is its culprit or a suspect
};

ErrorMeaning error_meaning(ErrorCode code);
const char* error_meaning_name(ErrorMeaning meaning);

// An error with its meaning, looked up once where the error enters the engine: every decision on its way to
// the first error's record (culprit, suspects, exact or not, the environment's) reads the same meaning.
struct ClassifiedError {
  explicit ClassifiedError(ErrorCode error) : code(error), meaning(error_meaning(error)) {}
  ErrorCode code;
  ErrorMeaning meaning;
  // It may be an earlier kernel's, surfacing at this call: asynchronous or unknown.
  bool may_have_surfaced() const {
    return !code.ok() && (meaning == ErrorMeaning::Asynchronous || meaning == ErrorMeaning::Unknown);
  }
};

// Name and text of an error code, supplied by the shim per family (cudaGetErrorName, ...).
struct ErrorText {
  std::string name;
  std::string text;
};

// A CUDA code a kernel's load or store on a bad address comes back as (700, 716, 717, 719: the table's
// CUDA_BLOCKRUN_BAD_ACCESS rows). One access may come back as any of them.
bool is_bad_memory_access(int cuda_code);

// An error that may be an earlier kernel's, surfacing at this call: asynchronous or unknown.
inline bool may_have_surfaced(ErrorCode code) {
  return ClassifiedError(code).may_have_surfaced();
}

// What an environment error (no usable driver or device) says to the user: the problem and its fix; empty
// texts for any other code.
struct EnvironmentAdvice {
  const char* problem = "";
  const char* fix = "";
};
EnvironmentAdvice environment_advice(const ClassifiedError& error);

}  // namespace blockrun
// SPDX-License-Identifier: MIT

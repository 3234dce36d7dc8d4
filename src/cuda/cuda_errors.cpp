// The table of src/cuda/cuda_errors.def as a lookup: runtime and driver codes share their numbers.
#include "cuda/cuda_errors.h"

namespace blockrun {

namespace {

ErrorMeaning cuda_meaning(int number) {
  switch (number) {
#define CUDA_BLOCKRUN_ERROR(meaning, number, runtime_name, driver_name) \
  case number:                                                          \
    return ErrorMeaning::meaning;
#include "cuda/cuda_errors.def"
    default:
      return ErrorMeaning::Unknown;
  }
}

ErrorMeaning cublas_meaning(int number) {
  switch (number) {
#define CUDA_BLOCKRUN_CUBLAS_STATUS(meaning, number, name) \
  case number:                                             \
    return ErrorMeaning::meaning;
#include "cuda/cuda_errors.def"
    default:
      return ErrorMeaning::Unknown;
  }
}

}  // namespace

ErrorMeaning error_meaning(ErrorCode code) {
  if (code.ok()) return ErrorMeaning::Own;
  return code.layer == Layer::Cublas || code.layer == Layer::CublasLt ? cublas_meaning(code.code)
                                                                      : cuda_meaning(code.code);
}

bool is_bad_memory_access(int cuda_code) {
  switch (cuda_code) {
#define CUDA_BLOCKRUN_BAD_ACCESS(number) \
  case number:                           \
    return true;
#include "cuda/cuda_errors.def"
    default:
      return false;
  }
}

EnvironmentAdvice environment_advice(const ClassifiedError& error) {
  if (error.meaning != ErrorMeaning::Environment) return {};
  switch (error.code.code) {
#define CUDA_BLOCKRUN_ENVIRONMENT(number, problem, fix) \
  case number:                                          \
    return {problem, fix};
#include "cuda/cuda_errors.def"
    default:
      return {};
  }
}

const char* error_meaning_name(ErrorMeaning meaning) {
  switch (meaning) {
    case ErrorMeaning::Own:
      return "own";
    case ErrorMeaning::Asynchronous:
      return "asynchronous";
    case ErrorMeaning::Unknown:
      return "unknown";
    case ErrorMeaning::Environment:
      return "environment";
  }
  return "unknown";
}

}  // namespace blockrun
// SPDX-License-Identifier: MIT

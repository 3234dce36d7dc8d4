// Kernel names: demangling and the short "base" name users type in a policy.
#pragma once

#include <string>
#include <string_view>

#include "config/policy.h"

namespace blockrun {

// The brackets that nest in C++ names and in the policy's terms: (), <>, [] and {}. One definition for every
// scanner that skips what is inside them (a parameter list, template arguments, `{lambda()#1}`).
constexpr bool opens_nesting(char c) {
  return c == '(' || c == '<' || c == '[' || c == '{';
}
constexpr bool closes_nesting(char c) {
  return c == ')' || c == '>' || c == ']' || c == '}';
}

// Demangles an Itanium C++ name; returns the input unchanged where it is not one (C kernels,
// cuBLAS's plain names, Triton's names).
std::string demangle(const char* mangled);

// `void ns::kernel<float>(float*, int)` -> `ns::kernel<float>`: drops the parameter list, cv/ref
// qualifiers after it and a leading return type, respecting nesting of (), <> and [].
std::string base_name(std::string_view demangled);

KernelName make_kernel_name(const char* mangled);

// A name as it may appear in a log line: control bytes escaped (\xNN: C0, DEL, the C1 controls as UTF-8
// encodes them, and every byte that is not part of well-formed UTF-8, a lone 0x9B among them), so that one
// record stays one line, and a terminal takes none of it as a command, whatever a kernel was called, and at
// most `limit` bytes kept (the length said after an ellipsis; a character cut there is escaped).
std::string printable(std::string_view text, size_t limit = 4096);

}  // namespace blockrun
// SPDX-License-Identifier: MIT

// Kernel names: demangling and the short "base" name users type in a policy.
#include "cuda/names.h"

#include <cxxabi.h>

#include <cstdlib>

namespace blockrun {

std::string demangle(const char* mangled) {
  if (!mangled) return "";
  if (mangled[0] != '_' || mangled[1] != 'Z') return mangled;
  int status = 0;
  char* text = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  if (status != 0 || !text) return mangled;
  std::string out(text);
  std::free(text);
  return out;
}

std::string base_name(std::string_view name) {
  // Find the parameter list: the last top-level "(...)" group, scanning from the end.
  size_t end = name.size();
  int depth = 0;
  for (size_t i = name.size(); i-- > 0;) {
    char c = name[i];
    if (closes_nesting(c)) {
      if (depth == 0 && c == ')') end = i;  // candidate: closing paren of the parameter list
      ++depth;
    } else if (opens_nesting(c)) {
      --depth;
      if (depth == 0 && c == '(' && end != name.size()) {
        // `(anonymous namespace)` is part of a name, not a parameter list.
        if (name.substr(i, 21) != "(anonymous namespace)") {
          name = name.substr(0, i);
          break;
        }
        end = name.size();
      }
    }
  }
  // Drop a leading return type: the name starts after the last top-level space.
  depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    if (opens_nesting(c)) ++depth;
    if (closes_nesting(c) && depth > 0) --depth;
    if (c == ' ' && depth == 0) start = i + 1;
  }
  return std::string(name.substr(start));
}

namespace {

// The length of the well-formed UTF-8 sequence at `text[at]` (RFC 3629: no overlong form, no surrogate, at
// most U+10FFFF) within `end`, or 0 where there is none.
size_t utf8_sequence(std::string_view text, size_t at, size_t end) {
  auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  unsigned char lead = byte(at);
  size_t length = lead >= 0xc2 && lead <= 0xdf   ? 2
                  : lead >= 0xe0 && lead <= 0xef ? 3
                  : lead >= 0xf0 && lead <= 0xf4 ? 4
                                                 : 0;
  if (length == 0 || at + length > end) return 0;
  // The second byte's range narrows after E0, ED, F0 and F4; every other continuation is 80..BF.
  unsigned char low = lead == 0xe0 ? 0xa0 : lead == 0xf0 ? 0x90 : 0x80;
  unsigned char high = lead == 0xed ? 0x9f : lead == 0xf4 ? 0x8f : 0xbf;
  if (byte(at + 1) < low || byte(at + 1) > high) return 0;
  for (size_t i = at + 2; i < at + length; ++i)
    if (byte(i) < 0x80 || byte(i) > 0xbf) return 0;
  return length;
}

}  // namespace

std::string printable(std::string_view text, size_t limit) {
  std::string out;
  size_t kept = text.size() > limit ? limit : text.size();
  out.reserve(kept + 16);
  static const char kHex[] = "0123456789abcdef";
  auto escape = [&](unsigned char c) {
    out += "\\x";
    out += kHex[c >> 4];
    out += kHex[c & 15];
  };
  for (size_t i = 0; i < kept;) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      if (c < 0x20 || c == 0x7f) {
        escape(c);
      } else {
        out += static_cast<char>(c);
      }
      ++i;
      continue;
    }
    size_t length = utf8_sequence(text, i, kept);
    if (length == 0) {
      // A byte of no well-formed sequence: a lone 0x80..0x9F is a C1 control to a terminal that reads 8-bit
      // controls (0x9B is CSI), and any of them can join what follows into one (issue 40, N9): all escaped,
      // so that the text printed is valid UTF-8.
      escape(c);
      ++i;
    } else if (c == 0xc2 && static_cast<unsigned char>(text[i + 1]) <= 0x9f) {
      // U+0080..U+009F in UTF-8: the C1 controls, which a UTF-8 terminal takes as ESC-sequences do (U+009B
      // is CSI).
      escape(c);
      escape(static_cast<unsigned char>(text[i + 1]));
      i += 2;
    } else {
      out.append(text.substr(i, length));
      i += length;
    }
  }
  if (kept < text.size()) out += "...(" + std::to_string(text.size()) + " bytes)";
  return out;
}

KernelName make_kernel_name(const char* mangled) {
  KernelName name;
  name.mangled = mangled ? mangled : "";
  name.demangled = demangle(mangled);
  name.base = base_name(name.demangled);
  return name;
}

}  // namespace blockrun
// SPDX-License-Identifier: MIT

// Text built without allocating, for the paths that must not allocate: the fatal-signal handler's log line
// and report record (shim/signals.cpp) and the timeline trace, which is written from that handler too
// (trace/trace_writer.h). Numbers are formatted by hand; every function here is async-signal-safe.
#pragma once

#include <cstddef>
#include <cstdint>

#include "report/output_file.h"
#include "call_values.h"

namespace blockrun {

// A fixed buffer that text and numbers are appended to without allocating.
template <size_t kBytes>
struct Text {
  char text[kBytes];
  size_t size = 0;
  void add(const char* part) {
    while (*part && size < sizeof(text) - 1) text[size++] = *part++;
  }
  // A record's key (report/keys.def), after a comma unless it is the object's first.
  void key(const char* name, bool first = false) {
    add(first ? "\"" : ",\"");
    add(name);
    add("\":");
  }
  // A string value whose text needs no escaping (a fixed word, a hex number), or null.
  void word(const char* text_or_null) {
    if (!text_or_null) {
      add("null");
      return;
    }
    add("\"");
    add(text_or_null);
    add("\"");
  }
  // A JSON string's contents, valid UTF-8 whatever `part` holds (issue 17, F11): quotes and backslashes
  // escaped, control characters dropped, a byte that does not start a well-formed UTF-8 sequence written as
  // U+FFFD, at most `limit` bytes of `part` (a kernel's demangled name can run to kilobytes), cut between
  // characters.
  void add_json(const char* part, size_t limit) {
    const auto* bytes = reinterpret_cast<const unsigned char*>(part);
    size_t length = 0;
    while (length < limit && bytes[length]) ++length;
    for (size_t at = 0; at < length;) {
      unsigned char c = bytes[at];
      size_t sequence = utf8_sequence(bytes + at, length - at);
      if (sequence == 0) {  // not UTF-8: the replacement character, 3 bytes
        if (size + 3 > sizeof(text) - 2) return;
        text[size++] = '\xef';
        text[size++] = '\xbf';
        text[size++] = '\xbd';
        ++at;
        continue;
      }
      if (c < 0x20) {
        ++at;
        continue;
      }
      size_t needed = sequence + (c == '"' || c == '\\');
      if (size + needed > sizeof(text) - 2) return;  // no room for the whole character
      if (c == '"' || c == '\\') text[size++] = '\\';
      for (size_t i = 0; i < sequence; ++i) text[size++] = static_cast<char>(bytes[at + i]);
      at += sequence;
    }
  }
  // The length of the well-formed UTF-8 sequence at `bytes` (at most `left` bytes), or 0.
  static size_t utf8_sequence(const unsigned char* bytes, size_t left) {
    unsigned char c = bytes[0];
    if (c < 0x80) return 1;
    size_t length = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
    if (length == 0 || length > left) return 0;
    for (size_t i = 1; i < length; ++i)
      if ((bytes[i] & 0xc0) != 0x80) return 0;
    // Overlong forms, surrogates and code points past U+10FFFF are not UTF-8.
    if ((c == 0xe0 && bytes[1] < 0xa0) || (c == 0xed && bytes[1] > 0x9f) || (c == 0xf0 && bytes[1] < 0x90) ||
        (c == 0xf4 && bytes[1] > 0x8f))
      return 0;
    return length;
  }
  void add_hex(uint64_t number) {
    char digits[16];
    int count = 0;
    do {
      digits[count++] = "0123456789abcdef"[number % 16];
      number /= 16;
    } while (number && count < 16);
    add("0x");
    while (count > 0 && size < sizeof(text) - 1) text[size++] = digits[--count];
  }
  void add(uint64_t number, int min_digits = 1) {
    char digits[24];
    int count = 0;
    do {
      digits[count++] = static_cast<char>('0' + number % 10);
      number /= 10;
    } while (number && count < 24);
    while (count < min_digits && count < 24) digits[count++] = '0';
    while (count > 0 && size < sizeof(text) - 1) text[size++] = digits[--count];
  }
  // A signed number.
  void add_signed(int64_t number) {
    if (number < 0) {
      add("-");
      add(static_cast<uint64_t>(0) - static_cast<uint64_t>(number));
    } else {
      add(static_cast<uint64_t>(number));
    }
  }
  // Nanoseconds as microseconds with three decimals (`12.345`): a trace's timestamps and durations.
  void add_microseconds(uint64_t nanoseconds) {
    add(nanoseconds / 1000);
    add(".");
    add(nanoseconds % 1000, 3);
  }
  // A JSON string: `part` quoted, escaped as add_json does.
  void add_string(const char* part, size_t limit) {
    add("\"");
    add_json(part, limit);
    add("\"");
  }
  bool full() const { return size >= sizeof(text) - 2; }
  // The text, terminated (add() always leaves room for the terminator).
  const char* c_str() {
    text[size] = 0;
    return text;
  }
  void write_to(OutputFile* file) const {
    if (file) file->write_record(text, size);
  }
};

// A stream as the log writes it: `0x0`, `0x55d1c2a0`, `per-thread default (thread 2)`.
template <size_t kBytes>
void add_stream(Text<kBytes>& out, const StreamId& stream) {
  if (stream.per_thread_owner != 0) {
    out.add("per-thread default (thread ");
    out.add(static_cast<uint64_t>(stream.per_thread_owner));
    out.add(")");
  } else {
    out.add_hex(reinterpret_cast<uintptr_t>(stream.handle));
  }
}

// A grid or block as CUDA's launch syntax writes it: `(4096,1,1)`.
template <size_t kBytes>
void add_dim3(Text<kBytes>& out, const Dim3& dim) {
  out.add("(");
  out.add(static_cast<uint64_t>(dim.x));
  out.add(",");
  out.add(static_cast<uint64_t>(dim.y));
  out.add(",");
  out.add(static_cast<uint64_t>(dim.z));
  out.add(")");
}

}  // namespace blockrun
// SPDX-License-Identifier: MIT

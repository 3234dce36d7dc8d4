// Text as the reads keep it: UTF-8 copied into fixed buffers, too long a text cut between characters keeping
// its head or its tail, and a str's code points (1, 2 or 4 bytes each) encoded to UTF-8 on the way.
#include <cstdint>
#include <cstring>

#include "internal.h"

namespace blockrun::shim::python {

namespace {

// UTF-8 of one code point; a lone surrogate (a str may hold one, UTF-8 may not) or an invalid value is '?'.
size_t encode_utf8(uint32_t code_point, char* out) {
  if (code_point < 0x80) {
    out[0] = static_cast<char>(code_point);
    return 1;
  }
  if (code_point < 0x800) {
    out[0] = static_cast<char>(0xC0 | (code_point >> 6));
    out[1] = static_cast<char>(0x80 | (code_point & 0x3F));
    return 2;
  }
  if ((code_point >= 0xD800 && code_point <= 0xDFFF) || code_point > 0x10FFFF) {
    out[0] = '?';
    return 1;
  }
  if (code_point < 0x10000) {
    out[0] = static_cast<char>(0xE0 | (code_point >> 12));
    out[1] = static_cast<char>(0x80 | ((code_point >> 6) & 0x3F));
    out[2] = static_cast<char>(0x80 | (code_point & 0x3F));
    return 3;
  }
  out[0] = static_cast<char>(0xF0 | (code_point >> 18));
  out[1] = static_cast<char>(0x80 | ((code_point >> 12) & 0x3F));
  out[2] = static_cast<char>(0x80 | ((code_point >> 6) & 0x3F));
  out[3] = static_cast<char>(0x80 | (code_point & 0x3F));
  return 4;
}

bool continuation_byte(char byte) {
  return (static_cast<unsigned char>(byte) & 0xC0) == 0x80;
}

}  // namespace

// Copies UTF-8 `text` into `out` (capacity `capacity`, NUL-terminated). Too long a text keeps its head
// ("name...") or its tail ("...path/file.py"), cut between characters.
void copy_text(const char* text, size_t length, char* out, size_t capacity, Keep keep) {
  if (length < capacity) {
    std::memcpy(out, text, length);
    out[length] = '\0';
    return;
  }
  size_t kept = capacity - 4;  // room for "..." and the NUL
  if (keep == Keep::Head) {
    while (kept > 0 && continuation_byte(text[kept])) --kept;
    std::memcpy(out, text, kept);
    std::memcpy(out + kept, "...", 4);
  } else {
    size_t start = length - kept;
    while (start < length && continuation_byte(text[start])) ++start;
    std::memcpy(out, "...", 3);
    std::memcpy(out + 3, text + start, length - start);
    out[3 + length - start] = '\0';
  }
}

// Encodes the code points of a str's canonical data (kind 1, 2 or 4 bytes each) to UTF-8, enough of them
// from the head or the tail to fill `out`, then copies as copy_text does.
void copy_code_points(const unsigned char* data, int kind, int64_t length, char* out, size_t capacity,
                      Keep keep) {
  // One code point past the capacity tells whether the text is longer.
  char buffer[kPythonFileBytes + 4];
  size_t limit = capacity < sizeof buffer - 4 ? capacity : sizeof buffer - 4;
  auto code_point = [&](int64_t index) -> uint32_t {
    if (kind == 1) return data[index];
    if (kind == 2) {
      uint16_t unit;
      std::memcpy(&unit, data + 2 * index, 2);
      return unit;
    }
    uint32_t unit;
    std::memcpy(&unit, data + 4 * index, 4);
    return unit;
  };
  if (keep == Keep::Head) {
    size_t used = 0;
    for (int64_t index = 0; index < length && used < limit; ++index)
      used += encode_utf8(code_point(index), buffer + used);
    copy_text(buffer, used, out, capacity, keep);
  } else {
    // Filled backwards from the end of the buffer.
    size_t used = 0;
    for (int64_t index = length - 1; index >= 0 && used < limit; --index) {
      char encoded[4];
      size_t size = encode_utf8(code_point(index), encoded);
      used += size;
      std::memcpy(buffer + sizeof buffer - used, encoded, size);
    }
    copy_text(buffer + sizeof buffer - used, used, out, capacity, keep);
  }
}

}  // namespace blockrun::shim::python
// SPDX-License-Identifier: MIT

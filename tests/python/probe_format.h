// Shared by the Python frame probes: a PythonStack as JSON, for the test scripts and programs to check, with
// the frame python_call_site chooses (`call_site`, -1 for none).
#pragma once

#include <cstddef>
#include <cstdio>
#include <string>

#include "callsites/callsite.h"
#include "callsites/python_site_cache.h"
#include "callsites/sites.h"

namespace blockrun::probe {

inline const char* status_name(PythonStatus status) {
  switch (status) {
    case PythonStatus::NotCaptured:
      return "NotCaptured";
    case PythonStatus::NoPython:
      return "NoPython";
    case PythonStatus::NoThreadState:
      return "NoThreadState";
    case PythonStatus::Captured:
      return "Captured";
    case PythonStatus::Unavailable:
      return "Unavailable";
  }
  return "?";
}

// A JSON string; UTF-8 passes through unchanged, so that the tests see the captured bytes.
inline void append_json_string(std::string& out, const char* text) {
  if (!text) {
    out += "null";
    return;
  }
  out += '"';
  for (const char* c = text; *c; ++c) {
    unsigned char byte = static_cast<unsigned char>(*c);
    if (byte == '"' || byte == '\\') {
      out += '\\';
      out += *c;
    } else if (byte < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", byte);
      out += escaped;
    } else {
      out += *c;
    }
  }
  out += '"';
}

inline void append_frame(std::string& out, const PythonFrame* frame) {
  if (!frame) {
    out += "null";
    return;
  }
  out += "{\"file\": ";
  append_json_string(out, frame->file);
  out += ", \"line\": " + std::to_string(frame->line) + ", \"function\": ";
  append_json_string(out, frame->function);
  out += "}";
}

inline std::string to_json(const PythonStack& stack) {
  std::string out = "{\"status\": \"";
  out += status_name(stack.status);
  out += "\", \"gil_held\": ";
  out += stack.gil_held ? "true" : "false";
  out += ", \"truncated\": ";
  out += stack.truncated ? "true" : "false";
  out += ", \"skipped\": " + std::to_string(stack.skipped);
  out += ", \"skipped_at\": " + std::to_string(stack.skipped_at);
  // The frame the report shows as the launch's Python line.
  out += ", \"call_site\": " + std::to_string(python_call_site(stack));
  out += ", \"method\": ";
  append_json_string(out, stack.method);
  out += ", \"reason\": ";
  append_json_string(out, stack.reason);
  out += ", \"frames\": [";
  for (size_t index = 0; index < stack.count; ++index) {
    if (index) out += ", ";
    append_frame(out, &stack.frames[index]);
  }
  out += "]}";
  return out;
}

// A launch's line as breadcrumbs keep it (read_python_site), its numbers looked up in `sites`.
inline std::string to_json(const PythonLaunchSite& site, const PythonSiteTable& sites) {
  std::string out = "{\"status\": \"";
  out += status_name(site.status);
  out += "\", \"cached\": ";
  out += site.cached ? "true" : "false";
  out += ", \"site\": ";
  append_frame(out, sites.get(site.site));
  out += ", \"innermost\": ";
  append_frame(out, sites.get(site.innermost));
  out += "}";
  return out;
}

}  // namespace blockrun::probe
// SPDX-License-Identifier: MIT

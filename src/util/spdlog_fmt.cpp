// spdlog and fmt, compiled once for the whole engine (SPDLOG_COMPILED_LIB, fmt without FMT_HEADER_ONLY).
//
// Why: used header-only, every file that includes spdlog.h compiled its implementation again, more than half
// of such a file's compile time at -O2, and some twenty files of the engine and its tests do, in three trees
// (normal, ASan, TSan; docs/performance.md, "CI time"). This file is what spdlog's own src/spdlog.cpp and
// src/stdout_sinks.cpp and fmt's src/format.cc compile, for the parts the engine uses, built into the static
// engine: the shim still depends on no spdlog or fmt library at run time, and exports none of their symbols
// (hidden visibility, --exclude-libs).
#if !defined(SPDLOG_COMPILED_LIB) || defined(FMT_HEADER_ONLY)
#error "the engine is built with SPDLOG_COMPILED_LIB and without FMT_HEADER_ONLY (CMakeLists.txt)"
#endif

#include <fmt/format-inl.h>

#include <mutex>
#include <spdlog/common-inl.h>
#include <spdlog/details/backtracer-inl.h>
#include <spdlog/details/log_msg-inl.h>
#include <spdlog/details/log_msg_buffer-inl.h>
#include <spdlog/details/null_mutex.h>
#include <spdlog/details/os-inl.h>
#include <spdlog/details/periodic_worker-inl.h>
#include <spdlog/details/registry-inl.h>
#include <spdlog/logger-inl.h>
#include <spdlog/pattern_formatter-inl.h>
#include <spdlog/sinks/ansicolor_sink-inl.h>
#include <spdlog/sinks/base_sink-inl.h>
#include <spdlog/sinks/sink-inl.h>
#include <spdlog/sinks/stdout_sinks-inl.h>
#include <spdlog/spdlog-inl.h>

// fmt's out-of-line templates (format.h declares them extern where FMT_HEADER_ONLY is not defined).
FMT_BEGIN_NAMESPACE
namespace detail {
template FMT_API auto thousands_sep_impl<char>(locale_ref) -> thousands_sep_result<char>;
template FMT_API auto thousands_sep_impl<wchar_t>(locale_ref) -> thousands_sep_result<wchar_t>;
template FMT_API auto decimal_point_impl(locale_ref) -> char;
template FMT_API auto decimal_point_impl(locale_ref) -> wchar_t;
template FMT_API void buffer<char>::append(const char*, const char*);
template FMT_API void buffer<wchar_t>::append(const wchar_t*, const wchar_t*);
template FMT_API locale_ref::locale_ref(const std::locale& loc);
template FMT_API auto locale_ref::get<std::locale>() const -> std::locale;
}  // namespace detail
FMT_END_NAMESPACE

// spdlog's sink templates the engine derives from or creates.
template class SPDLOG_API spdlog::sinks::base_sink<std::mutex>;
template class SPDLOG_API spdlog::sinks::base_sink<spdlog::details::null_mutex>;
template class SPDLOG_API spdlog::sinks::stdout_sink_base<spdlog::details::console_mutex>;
template class SPDLOG_API spdlog::sinks::stdout_sink_base<spdlog::details::console_nullmutex>;
template class SPDLOG_API spdlog::sinks::stdout_sink<spdlog::details::console_mutex>;
template class SPDLOG_API spdlog::sinks::stdout_sink<spdlog::details::console_nullmutex>;
template class SPDLOG_API spdlog::sinks::stderr_sink<spdlog::details::console_mutex>;
template class SPDLOG_API spdlog::sinks::stderr_sink<spdlog::details::console_nullmutex>;
// The registry's default logger (registry-inl.h), which the engine never uses but spdlog creates.
template class SPDLOG_API spdlog::sinks::ansicolor_sink<spdlog::details::console_mutex>;
template class SPDLOG_API spdlog::sinks::ansicolor_stdout_sink<spdlog::details::console_mutex>;
// SPDX-License-Identifier: MIT

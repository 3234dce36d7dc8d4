// The block policy: which launches the shim makes blocking. Every decision goes through this one
// interface, so that the rule language of a later issue replaces the inside without touching callers.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace blockrun {

// The names a kernel is known by. `base` is the demangled name without parameter list and return
// type (`stencil`, `ns::kernel<float>`): what users type.
struct KernelName {
  std::string mangled;
  std::string demangled;
  std::string base;
};

// Shell-style glob: `*`, `?`, `[abc]`, `[!a-z]`, backslash escapes the next character.
bool glob_match(std::string_view pattern, std::string_view text);

class Policy {
 public:
  enum class Mode { None, All, Globs };

  Policy() = default;

  // Parses `none`, `all` or comma-separated globs. Commas inside (), <> and [] belong to the glob, so
  // `stencil(float*, int)` is one glob. On failure returns nullopt and sets *error.
  static std::optional<Policy> parse(std::string_view text, std::string* error);

  Mode mode() const { return mode_; }
  bool blocks_nothing() const { return mode_ == Mode::None; }
  // Whether decisions depend on the kernel's name (then it must be known before the launch).
  bool needs_kernel_name() const { return mode_ == Mode::Globs; }

  bool blocks_kernel(const KernelName& name) const;
  // A library call (e.g. `cublasSgemm_v2`) as one launch unit.
  bool blocks_library_call(std::string_view api_name) const;

  const std::vector<std::string>& globs() const { return globs_; }
  std::string describe() const;

 private:
  // The decision for a launch known by these names: none blocks nothing, all blocks everything,
  // globs block what any glob matches under any of the names.
  template <typename... Names>
  bool decide(const Names&... names) const {
    if (mode_ != Mode::Globs) return mode_ == Mode::All;
    for (const std::string& glob : globs_) {
      if ((glob_match(glob, names) || ...)) return true;
    }
    return false;
  }

  Mode mode_ = Mode::None;
  std::vector<std::string> globs_;
};

// Splits at commas that are not inside (), <> or []; trims blanks around each piece.
std::vector<std::string> split_top_level(std::string_view text, char separator);

}  // namespace blockrun

// A launch's Python line from the engine's cache (python_site_cache.h): the thread's frames walked in place,
// a few words of each (a code object's identity and the frame's place in it; on 3.12+, once a code watcher is
// registered, its instruction pointer alone), looked up as a key; read in full (frame_walk.cpp) only for a
// walk the cache does not know.
#include <atomic>
#include <cstdint>
#include <cstring>

#include "util/address_set.h"
#include "internal.h"
#include "callsites/python_site_cache.h"

namespace blockrun::shim::python {

std::atomic<uint64_t> g_read_in_full{0};

namespace {

// ---- a launch's line from the cache (python_site_cache.h) ----

// Mixes `value` into `state`: a multiply-xorshift finalizer, so that a bit changed in either moves about half
// the bits of the result.
uint64_t mix(uint64_t state, uint64_t value) {
  uint64_t x = (state ^ value) * 0x9E3779B97F4A7C15ull;
  x ^= x >> 32;
  x *= 0xD6E8FEB86659FD93ull;
  return x ^ (x >> 32);
}

// A 64-bit hash of `size` bytes, a word at a time: each step a bijection of the state for a given word (an
// xor, an odd multiply, a rotation), so inputs that differ only in their last word never meet, and others
// meet about once in 2^64; `mix` at the end. The texts hashed here are a few dozen bytes, hashed for every
// frame of every launch's walk: this takes about a third of std::hash's instructions for them.
uint64_t hash_bytes(const unsigned char* data, size_t size, uint64_t seed) {
  uint64_t state = seed ^ size * 0xC2B2AE3D27D4EB4Full;
  size_t index = 0;
  for (; index + 8 <= size; index += 8) {
    uint64_t word;
    std::memcpy(&word, data + index, 8);
    state = (state ^ word) * 0x9E3779B97F4A7C15ull;
    state = state << 29 | state >> 35;
  }
  uint64_t last = 0;
  for (size_t shift = 0; index < size; ++index, shift += 8) last |= uint64_t{data[index]} << shift;
  return mix(state, last);
}

// The hash of a str object's text (its canonical data). False where it fails a check.
bool hash_str(const Cpython& py, uintptr_t text, uint64_t* out) {
  StrData str;
  if (!read_str(py, text, &str)) return false;
  *out = hash_bytes(str.data, static_cast<size_t>(str.length) * static_cast<size_t>(str.kind),
                    static_cast<uint64_t>(str.kind));
  return true;
}

// The longest line table hashed (bytes): a frame of a longer function is read in full each time.
constexpr int64_t kMaxHashedLineTable = int64_t{1} << 16;

// The hash of the last file text hashed in one walk, by the str object's address: the frames of a walk keep
// their code objects, and these their file names, alive until it ends, so within one walk the same address is
// the same text. Frames of one module share one file name object; their walks hash it once.
struct FileMemo {
  uintptr_t text = 0;
  uint64_t hash = 0;
};

// 3.8-3.11: what the full read's answer for a frame of the code object at `code` is made of, hashed: the
// texts of its file and function, co_firstlineno and the line table. The line is a function of these and the
// frame's offset (PyCode_Addr2Line reads nothing else), the file and the function are their texts; so a code
// object made where a freed one was hashes apart from it unless it gives the same answers anyway. 64 bits:
// two different contents meet one hash about once in 2^64 pairs. False where a pointer fails a check or the
// line table is longer than kMaxHashedLineTable.
bool content_identity(const Cpython& py, uintptr_t code, FileMemo* memo, uint64_t* out) {
  const Layout& layout = py.layout;
  uintptr_t file_text = load<uintptr_t>(code + layout.code_filename);
  if (file_text != memo->text) {
    if (!hash_str(py, file_text, &memo->hash)) return false;
    memo->text = file_text;
  }
  uint64_t function;
  if (!hash_str(py, load<uintptr_t>(code + layout.code_function), &function)) return false;
  uintptr_t table = load<uintptr_t>(code + layout.code_line_table);
  if (!is_object_of(table, py.bytes_type, layout)) return false;
  int64_t size = load<int64_t>(table + layout.bytes_size);
  if (size < 0 || size > kMaxHashedLineTable) return false;
  uint64_t lines = hash_bytes(reinterpret_cast<const unsigned char*>(table + layout.bytes_data),
                              static_cast<size_t>(size), load<uint32_t>(code + layout.code_first_line));
  *out = mix(mix(memo->hash, function), lines) | 1;  // never 0, the end marker's
  return true;
}

// A frame's two words (python_site_cache.h): what tells its code object from any other that was or will be at
// its address (a code object never changes, so the same one gives the same file, function and line for the
// same position), and where the frame is in it. 3.12+: the code object's address; and co_version, a number no
// other code object of the process has, beside the instruction's offset. 3.8-3.11, where nothing numbers
// code objects: the hash of what the answer is made of (content_identity); and the offset. False where the
// frame cannot be told apart: co_version 0 (once 2^32 were made), a pointer that fails a check, a line table
// too long, or a traced frame (3.8-3.10: its line is f_lineno, in no word); it is then read in full.
bool frame_words(const Cpython& py, const FrameAt& at, FileMemo* memo, uint64_t* code, uint64_t* detail) {
  if (at.traced) return false;
  if (py.layout.code_version >= 0) {
    uint32_t version = load<uint32_t>(at.code + py.layout.code_version);
    if (version == 0) return false;
    *code = at.code;
    *detail = uint64_t{version} << 32 | static_cast<uint32_t>(at.offset);
    return true;
  }
  if (py.layout.code_line_table < 0 || !content_identity(py, at.code, memo, code)) return false;
  *detail = static_cast<uint32_t>(at.offset);
  return true;
}

// A lookup: builds the walk's key a frame at a time and looks each prefix up, stopping at the first that the
// cache knows (python_site_cache.h: why the first is right) or where the key is full. The lookups below give
// it each frame's words.
class KeyLookup {
 public:
  KeyLookup(const PythonSiteCache& cache, PythonWalkKey* key, PythonLaunchSite* out)
      : cache_(cache), key_(key), out_(out) {}
  Step look_up(uint64_t code, uint64_t detail) {
    if (!key_->add_frame(code, detail)) return Step::Stop;
    if (!cache_.find(*key_, out_)) return Step::Next;
    found_ = true;
    return Step::Stop;
  }
  void end() { found_ = key_->add_end() && cache_.find(*key_, out_); }
  bool found() const { return found_; }

 private:
  const PythonSiteCache& cache_;
  PythonWalkKey* key_;
  PythonLaunchSite* out_;
  bool found_ = false;
};

// The lookup by frame_words, for walk_frames.
class SiteLookup : public KeyLookup {
 public:
  SiteLookup(const Cpython& py, const PythonSiteCache& cache, PythonWalkKey* key, PythonLaunchSite* out)
      : KeyLookup(cache, key, out), py_(py) {}
  Step frame(const FrameAt& at) {
    uint64_t code, detail;
    if (!frame_words(py_, at, &file_memo_, &code, &detail)) return Step::Stop;
    return look_up(code, detail);
  }
  void incomplete() {}

 private:
  const Cpython& py_;
  FileMemo file_memo_;
};

// ---- lines keyed by instruction pointers (3.12+) ----
//
// SiteLookup reads three lines of every frame's code object (its type, co_version, _co_firsttraceable): in a
// training loop they are cold at every launch, and they were most of what the line cost
// (docs/performance.md). A frame's instruction pointer alone would do, for it points into the frame's code
// object, which the frame keeps alive: no other live code object holds that address. What it cannot tell is a
// code object from one made later where a freed one was. CPython 3.12+ tells when a code object is freed
// (PyCode_AddWatcher: the watcher is called before it is), so:
// - the first time a line is read in full, the shim asks the main interpreter's main thread to register a
// code
//   watcher (Py_AddPendingCall: it runs there with the GIL at the thread's next check, a few instructions
//   later in a running program; until it has, and in any other interpreter, lines are keyed by co_version);
// - a line keyed by instruction pointers is remembered only after the code objects of its frames are in
//   g_remembered_codes, and only from a full read that passed over no incomplete frame (so its frames are
//   exactly those the lookup keyed);
// - when one of those code objects is about to be freed, the watcher advances g_code_epoch, which is a word
// of
//   every frame: no line remembered before can be found again.
// Why that is enough: a code object made where a remembered one was is made after it was freed, so after the
// epoch moved; a frame that runs it was pushed after that by its thread, holding the GIL, and the thread's
// walk comes after that, so it reads the new epoch. Under an unchanged epoch every remembered frame's code
// object is still alive, so an equal instruction pointer is in the same code object at the same place, and
// the full read would choose the same. Each epoch retires every line, so a program whose remembered code
// objects keep dying goes back to co_version keys after kMaxCodeEpochs; and a program whose remembered code
// objects do not fit in g_remembered_codes, at once. The watcher is a change to the interpreter the program
// can see only by registering eight code watchers of its own (CPython's limit): the shim's then takes the
// place of its eighth, which fails as it would have with eight registered before it.

enum class Watch : int { NotAsked, Asked, Watching, GaveUp };

constexpr int kCodeEventDestroy = 1;        // PY_CODE_EVENT_DESTROY (Include/cpython/code.h, 3.12, 3.13)
constexpr uint64_t kMaxCodeEpochs = 1024;   // epochs before going back to co_version keys
constexpr size_t kRememberedCodes = 16384;  // code objects whose lines may be remembered: 128 KiB at most

std::atomic<Watch> g_watch{Watch::NotAsked};
uintptr_t g_watched_interpreter = 0;  // the main interpreter, written before g_watch becomes Watching
std::atomic<uint64_t> g_code_epoch{0};
// Never freed: watchers and launches can come after static destructors.
AddressSet* const g_remembered_codes = new AddressSet(kRememberedCodes);

// The code watcher: CPython calls it, with the GIL, after a code object is made and before one is freed.
int on_code_event(int event, Object* code) {
  if (event == kCodeEventDestroy && g_remembered_codes->contains(reinterpret_cast<uintptr_t>(code))) {
    g_code_epoch.fetch_add(1, std::memory_order_release);
  }
  return 0;
}

// Registers on_code_event: run by the main interpreter's main thread with the GIL (Py_AddPendingCall). Never
// fails the pending call (that would raise in the program): a failed registration leaves co_version keys.
int watch_code_objects(void*) {
  const Cpython& py = g_python;
  Object* type = nullptr;
  Object* value = nullptr;
  Object* traceback = nullptr;
  py.error_fetch(&type, &value, &traceback);
  int watcher = py.add_code_watcher(on_code_event);
  Object* interpreter = py.main_interpreter();
  py.error_restore(type, value, traceback);  // drops the RuntimeError of a failed registration
  if (watcher < 0 || !interpreter) {
    g_watch.store(Watch::GaveUp, std::memory_order_release);
    return 0;
  }
  g_watched_interpreter = reinterpret_cast<uintptr_t>(interpreter);
  g_watch.store(Watch::Watching, std::memory_order_release);
  return 0;
}

// Asks for the watcher, once (from the full read: not on the path of a line found).
void ask_to_watch_code_objects(const Cpython& py) {
  if (!py.add_pending_call || py.layout.thread_interpreter < 0) return;
  Watch expected = Watch::NotAsked;
  if (!g_watch.compare_exchange_strong(expected, Watch::Asked, std::memory_order_relaxed)) return;
  if (py.add_pending_call(watch_code_objects, nullptr) != 0)
    g_watch.store(Watch::GaveUp, std::memory_order_relaxed);
}

// Whether this thread's line is keyed by instruction pointers, and under which epoch (*epoch).
bool keyed_by_instruction_pointers(const Cpython& py, uintptr_t thread, uint64_t* epoch) {
  return watching(epoch) && plausible(thread) &&
         load<uintptr_t>(thread + py.layout.thread_interpreter) == g_watched_interpreter;
}

// Whether a line keyed by instruction pointers may be remembered after the full read that gave `offered`: no
// incomplete frame passed over, and every code object in g_remembered_codes (where one does not fit, lines go
// back to co_version keys).
bool remember_codes(const OfferedCodes& offered) {
  if (offered.incomplete) return false;
  for (size_t index = 0; index < offered.count; ++index) {
    if (!g_remembered_codes->insert(offered.codes[index])) {
      g_watch.store(Watch::GaveUp, std::memory_order_relaxed);
      return false;
    }
  }
  return true;
}

// The lookup keyed by instruction pointers: a frame's words are its instruction pointer and the epoch with
// the frame's owner (a generator's frame is never incomplete, another's may be: python_site_cache.h's words
// must determine what the full read takes from the frame).
class InstructionLookup : public KeyLookup {
 public:
  InstructionLookup(const PythonSiteCache& cache, uint64_t epoch, PythonWalkKey* key, PythonLaunchSite* out)
      : KeyLookup(cache, key, out), detail_(epoch << 8) {}
  Step frame(uintptr_t instruction, int owner) {
    if (instruction == 0) return Step::Stop;  // 0 is the key's end marker
    return look_up(instruction, detail_ | static_cast<uint8_t>(owner));
  }

 private:
  uint64_t detail_;
};

constexpr const char* kReadInPlaceWithGil =
    "read in place with the GIL held (the thread's own frames, as without it)";

}  // namespace

// Whether lines are keyed by instruction pointers in the watched interpreter, and under which epoch (*epoch).
bool watching(uint64_t* epoch) {
  if (g_watch.load(std::memory_order_acquire) != Watch::Watching) return false;
  *epoch = g_code_epoch.load(std::memory_order_acquire);
  return *epoch < kMaxCodeEpochs;
}

// The launch's line: looked up by the words of its frames, read in full where the cache does not know them.
// With the GIL held too, where the version's layout is known: the thread's frames are as frozen as without
// it (and no other thread runs Python), and the key must come from the same walk as the full read it stands
// for. Another version (no layout) with the GIL: the public C API, nothing remembered.
void read_site(PythonSiteCache& cache, PythonStack* scratch, PythonLaunchSite* out) {
  Reading reading;
  if (!begin_reading(scratch, &reading)) {
    out->status = scratch->status;
    return;
  }
  const Cpython& py = *reading.py;
  if (py.layout.walker == Walker::None) {
    g_read_in_full.fetch_add(1, std::memory_order_relaxed);
    read_with_gil(py, scratch);
    *out = cache.keep(*scratch, nullptr);
    return;
  }
  // A walk that fails a check is read in full, which fails the same check: Unavailable with its reason.
  PythonWalkKey key;
  uint64_t epoch = 0;
  bool by_pointers = keyed_by_instruction_pointers(py, reading.thread, &epoch);
  if (by_pointers) {
    InstructionLookup lookup(cache, epoch, &key, out);
    if (!walk_instruction_pointers(py, reading.thread, lookup) && lookup.found()) return;
  } else {
    SiteLookup lookup(py, cache, &key, out);
    if (!walk_frames(py, reading.thread, lookup) && lookup.found()) return;
  }
  g_read_in_full.fetch_add(1, std::memory_order_relaxed);
  ask_to_watch_code_objects(py);
  OfferedCodes offered;
  read_in_place(reading, reading.held ? kReadInPlaceWithGil : py.layout.method, scratch,
                by_pointers ? &offered : nullptr);
  *out = cache.keep(*scratch, !by_pointers || remember_codes(offered) ? &key : nullptr);
}

}  // namespace blockrun::shim::python
// SPDX-License-Identifier: MIT

// A launch's Python line, for a launch from a code location seen before, without reading its frames again
// (issue 21). With breadcrumbs (or --trace) every launch keeps its Python line as two numbers in the
// PythonSiteTable (python_sites.h). Reading it in full is the costly way: the frames walked, their files
// copied and classified, the chosen frames' lines computed (a scan of the line table) and their texts hashed
// to be interned. From the cache it is a few times cheaper, most of it the walk over CPython's frames and
// code objects (docs/performance.md, "The Python line's cache", has the figures). A program launches from the
// same few hundred places millions of times, so the shim first walks the frames reading only a few words of
// each (the code object, where in it the frame is, what tells that code object from others) and looks that
// walk up here; only a walk not seen before is read in full, and its numbers remembered.
//
// Why a hit gives the line a full read would give. The choice (python_call_site, sites.h) is a function of
// the frames the walk offers, innermost first: of each frame's file (classified), function name and line. It
// does not look at all of them: python_call_site's `extent` says how many frames it depended on (up to the
// program's first, the one after it, and behind Dynamo's frame the next of the program's), and whether it
// depended on the stack ending there. So a walk is remembered under the words of exactly those frames (and an
// end marker where the end mattered). Another walk whose first frames have the same words offers the same
// frames up to there, so the choice looks at the same frames and stops at the same place: the same answer,
// whatever follows. That is why a lookup may stop at the first remembered prefix it meets.
//
// The words of a frame are the reader's business (shim/python/): they must determine what the full
// read takes from that frame (its file, function and line). A code object never changes, so its address and
// the frame's instruction would, but for one thing: without the GIL nothing keeps a code object alive between
// two launches, and CPython's allocator gives a freed one's address to the next at once, typically to the
// same function compiled again (a reload), its line table and constants where the old ones were too:
// comparing what the code object holds by address does not tell them apart. So the words also tell a code
// object from any other that was or will be at its address: CPython 3.12+ numbers the code objects it makes
// (co_version); and from 3.12 on, once the shim watches code objects die (PyCode_AddWatcher), a frame's
// instruction pointer alone names its code object, which the frame keeps alive, and the death of a code
// object a remembered walk holds changes a word of every frame, retiring every walk remembered before.
// Before 3.12 nothing numbers or watches code objects, and the words are instead a hash of what the answer is
// made of (the texts of the file and function, the first line and the line table): a code object made where
// another was gives another hash unless it gives the same answer (one chance in 2^64 of two contents meeting
// one hash).
//
// Also the same: the classification of a file, which reads nothing else but the Inductor cache directory, set
// once before any line is chosen (sites.h). Only Captured reads are remembered, so a hit is Captured; how the
// frames were read (PythonStack::method) belongs to a read, not to a place, and no launch record keeps it.
//
// A walk is found by a 64-bit hash of its words and frame count, not by comparing the words: a hit reads one
// cache line (the bucket), where comparing the words read three or four more, each cold between a real
// program's launches (issue 21: in a training loop the line cost several times what it did in a tight loop;
// docs/performance.md). The hash is built a word at a time, each step a bijection of the state for the word
// it takes (PythonWalkKey::add_frame), so two walks that differ in a single word never meet; walks that
// differ in more meet about once in 2^64 pairs, as the words of 3.8-3.11 (hashes of contents) already accept.
//
// Memory: `capacity` entries rounded up to buckets of kWays (64 KiB for the default), allocated zeroed at the
// first walk remembered (a process without Python pays nothing). When a bucket's entries are taken, a new
// walk replaces one: a program with more distinct launch places than entries reads some in full again,
// never a wrong line.
//
// Threads: no lock and no allocation on a lookup. Each bucket has a version (a sequence lock): a writer makes
// it odd, writes, makes it even again; a reader takes an entry only if the version was even and did not
// change while it read it. Two threads remembering at once: one wins, the other's walk is read in full again
// next time.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "callsites/callsite.h"
#include "callsites/python_sites.h"

namespace blockrun {

// What a launch record keeps of its Python frames (LaunchRecord::python_status, python_site,
// python_innermost).
struct PythonLaunchSite {
  PythonStatus status = PythonStatus::NotCaptured;
  uint32_t site = 0;       // the program's own line (python_call_site), a PythonSiteTable number; 0: none
  uint32_t innermost = 0;  // the innermost frame, where that is another; 0: none
  bool cached = false;     // from the cache: the frames' texts were not read
};

// The frames of one walk, innermost first, as words chosen by the reader (two a frame, opaque here), with
// the hash of each prefix. Built on the launch path: its arrays are left uninitialized.
class PythonWalkKey {
 public:
  // Frames a remembered walk may cover: every frame the bounded walk reads (callsite.h) and the end marker,
  // so that every choice can be remembered.
  static constexpr size_t kMaxFrames = kMaxPythonFramesScanned + 1;
  static constexpr size_t kWordsPerFrame = 2;

  PythonWalkKey() : frames_(0) {}

  // Adds the next frame outwards: `code` (never 0, the end marker's) and `detail`. Returns false, adding
  // nothing, when the key is full. Inline: the shim calls it for every frame of every launch's walk.
  bool add_frame(uint64_t code, uint64_t detail) {
    if (frames_ == kMaxFrames) return false;
    words_[frames_ * kWordsPerFrame] = code;
    words_[frames_ * kWordsPerFrame + 1] = detail;
    // One word at a time, each step a bijection of the state for a given word and of the word for a given
    // state (xor, rotate, multiply by an odd constant): walks that differ in one word never share a state.
    uint64_t state = frames_ == 0 ? kSeed : states_[frames_ - 1];
    state = rotate(state ^ code) * 0x9E3779B97F4A7C15ull;
    state = rotate(state ^ detail) * 0xC2B2AE3D27D4EB4Full;
    states_[frames_] = state;
    ++frames_;
    return true;
  }
  // Adds the end marker: the walk reached the outermost frame. Returns false when the key is full.
  bool add_end() { return add_frame(0, 0); }

  size_t frames() const { return frames_; }
  // Whether frame `index` is the end marker.
  bool end_at(size_t index) const { return index < frames_ && words_[index * kWordsPerFrame] == 0; }
  const uint64_t* words() const { return words_; }
  // The hash of the first `frames` frames (frames <= frames()): never 0, the mark of an empty entry.
  uint64_t hash(size_t frames) const {
    // The state finished (MurmurHash3's finalizer, a bijection) with the frame count mixed in, so that a
    // prefix and a longer walk differ.
    uint64_t hash = (frames == 0 ? kSeed : states_[frames - 1]) ^ (frames * 0x165667B19E3779F9ull);
    hash ^= hash >> 33;
    hash *= 0xFF51AFD7ED558CCDull;
    hash ^= hash >> 33;
    hash *= 0xC4CEB9FE1A85EC53ull;
    hash ^= hash >> 33;
    return hash != 0 ? hash : 1;
  }

 private:
  static constexpr uint64_t kSeed = 0x27D4EB2F165667C5ull;
  static uint64_t rotate(uint64_t value) { return value << 29 | value >> 35; }
  uint64_t words_[kMaxFrames * kWordsPerFrame];
  uint64_t states_[kMaxFrames];  // the hash's state after each frame
  size_t frames_;
};

class PythonSiteCache {
 public:
  static constexpr size_t kDefaultCapacity = 2048;
  static constexpr size_t kWays = 3;  // entries a walk may be in: a bucket, one cache line

  // Remembers numbers of `sites`, which must outlive it. Room for at least `capacity` entries, in a power of
  // two of buckets (at least one).
  explicit PythonSiteCache(PythonSiteTable& sites, size_t capacity = kDefaultCapacity);
  ~PythonSiteCache();
  PythonSiteCache(const PythonSiteCache&) = delete;
  PythonSiteCache& operator=(const PythonSiteCache&) = delete;

  // The numbers remembered for a walk whose first frames are all of `key`'s: true and `out` filled (status
  // Captured, `cached`), or false. Inline, called at every frame of a walk: a bit test where no remembered
  // walk has key.frames() frames, else one bucket read.
  bool find(const PythonWalkKey& key, PythonLaunchSite* out) const {
    size_t frames = key.frames();
    if (frames == 0 || !(depths_.load(std::memory_order_relaxed) & depth_bit(frames))) return false;
    return probe(key.hash(frames), out);
  }

  // A launch's numbers from the full read `python` of its frames: the frames python_call_site chooses,
  // interned. Where the read was Captured, both frames were interned and `key` (the same walk's words,
  // nullptr for none) covers the frames the choice depended on, remembers them for find. An intern that
  // found the site table full is not remembered: such a launch is read in full each time, as before.
  PythonLaunchSite keep(const PythonStack& python, const PythonWalkKey* key);

  PythonSiteTable& sites() { return sites_; }

 private:
  struct Bucket;
  // The bit of depths_ for a walk of `frames` frames; the deepest share the last (a find there only looks).
  static uint64_t depth_bit(size_t frames) { return uint64_t{1} << (frames < 63 ? frames : 63); }
  bool probe(uint64_t hash, PythonLaunchSite* out) const;
  void remember(uint64_t hash, size_t frames, uint32_t site, uint32_t innermost);
  Bucket* storage();

  PythonSiteTable& sites_;
  const size_t buckets_;                   // a power of two
  std::atomic<Bucket*> storage_{nullptr};  // allocated at the first walk remembered
  // Bit n: some entry covers n frames (63: 63 or more), a find at n may hit.
  std::atomic<uint64_t> depths_{0};
};

}  // namespace blockrun
// SPDX-License-Identifier: MIT

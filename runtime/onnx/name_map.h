// NameMap: a hash map from names to V for the values of a graph. Type inference adds
// every value of a graph to one and looks every node input up in it, and the
// converter's value table keeps them: a large graph has hundreds of thousands of
// values. Open addressing with linear probing in one power-of-two array, so a name
// costs no allocation of its own, and each entry keeps part of its name's hash, so a
// lookup reads only the names whose hash matches. The keys are views: the strings they
// view (a model's names) must outlive the map and stay unchanged.
//
// A subset of std::unordered_map's interface; any insertion may move the entries
// (invalidating iterators and pointers), erasing shifts later entries back.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <iterator>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace onnx_amp {

template <typename V>
class NameMap {
  struct Entry {
    std::pair<std::string_view, V> item;  // an empty entry's name has no data
    uint32_t hash = 0;                    // the low bits of the name's hash
  };

 public:
  using value_type = std::pair<std::string_view, V>;

  template <bool kConst>
  class Iterator {
    using Slot = std::conditional_t<kConst, const Entry, Entry>;

   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = NameMap::value_type;
    using difference_type = std::ptrdiff_t;
    using pointer = std::conditional_t<kConst, const value_type*, value_type*>;
    using reference = std::conditional_t<kConst, const value_type&, value_type&>;

    Iterator() = default;
    Iterator(Slot* at, Slot* end) : at_(at), end_(end) { SkipEmpty(); }
    operator Iterator<true>() const requires(!kConst) { return {at_, end_}; }

    reference operator*() const { return at_->item; }
    pointer operator->() const { return &at_->item; }
    Iterator& operator++() {
      ++at_;
      SkipEmpty();
      return *this;
    }
    bool operator==(const Iterator& other) const { return at_ == other.at_; }

   private:
    friend class NameMap;
    void SkipEmpty() {
      while (at_ != end_ && at_->item.first.data() == nullptr) ++at_;
    }
    Slot* at_ = nullptr;
    Slot* end_ = nullptr;
  };
  using iterator = Iterator<false>;
  using const_iterator = Iterator<true>;

  iterator begin() { return {entries_.data(), entries_.data() + entries_.size()}; }
  iterator end() { return {entries_.data() + entries_.size(), entries_.data() + entries_.size()}; }
  const_iterator begin() const { return {entries_.data(), entries_.data() + entries_.size()}; }
  const_iterator end() const { return {entries_.data() + entries_.size(), entries_.data() + entries_.size()}; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  // Room for `count` names without growing.
  void reserve(size_t count) {
    size_t capacity = 16;
    while (capacity < 2 * count) capacity *= 2;  // at most half full
    if (capacity > entries_.size()) Rehash(capacity);
  }

  iterator find(std::string_view name) { return empty() ? end() : At(Locate(name, Hash(name))); }
  const_iterator find(std::string_view name) const { return empty() ? end() : At(Locate(name, Hash(name))); }
  size_t count(std::string_view name) const { return find(name) == end() ? 0 : 1; }
  const V& at(std::string_view name) const {
    const const_iterator it = find(name);
    if (it == end()) throw std::out_of_range("NameMap::at: no entry '" + std::string(name) + "'");
    return it->second;
  }

  // The entry of `name`, added with a value-initialized V when new; whether it was added.
  std::pair<iterator, bool> try_emplace(std::string_view name) {
    if (2 * (size_ + 1) > entries_.size()) Rehash(entries_.empty() ? 16 : 2 * entries_.size());
    const uint32_t hash = Hash(name);
    const size_t slot = Locate(name, hash);
    if (entries_[slot].item.first.data() != nullptr) return {At(slot), false};
    entries_[slot].item = {name.data() == nullptr ? std::string_view("") : name, V{}};
    entries_[slot].hash = hash;
    ++size_;
    return {At(slot), true};
  }

  // Removes the entry at `it` (not end()); the entries after it in its probe run move back
  // into the gap.
  void erase(const_iterator it) {
    size_t gap = static_cast<size_t>(it.at_ - entries_.data());
    entries_[gap] = Entry{};
    --size_;
    const size_t mask = entries_.size() - 1;
    for (size_t next = (gap + 1) & mask; entries_[next].item.first.data() != nullptr; next = (next + 1) & mask) {
      // The entry at `next` may fill the gap when its home slot is not in (gap, next].
      const size_t home = entries_[next].hash & mask;
      const bool home_after_gap = gap <= next ? (gap < home && home <= next) : (gap < home || home <= next);
      if (home_after_gap) continue;
      entries_[gap] = std::move(entries_[next]);
      entries_[next] = Entry{};
      gap = next;
    }
  }

 private:
  static uint32_t Hash(std::string_view name) { return static_cast<uint32_t>(std::hash<std::string_view>{}(name)); }

  // The slot holding `name`, or the empty slot where its probe run ends (the table is
  // never full). The table must have entries.
  size_t Locate(std::string_view name, uint32_t hash) const {
    const size_t mask = entries_.size() - 1;
    for (size_t slot = hash & mask;; slot = (slot + 1) & mask) {
      const Entry& entry = entries_[slot];
      if (entry.item.first.data() == nullptr || (entry.hash == hash && entry.item.first == name)) return slot;
    }
  }

  iterator At(size_t slot) {
    if (entries_[slot].item.first.data() == nullptr) return end();
    return {entries_.data() + slot, entries_.data() + entries_.size()};
  }
  const_iterator At(size_t slot) const {
    if (entries_[slot].item.first.data() == nullptr) return end();
    return {entries_.data() + slot, entries_.data() + entries_.size()};
  }

  void Rehash(size_t capacity) {
    std::vector<Entry> old = std::move(entries_);
    entries_.assign(capacity, Entry{});
    const size_t mask = capacity - 1;
    for (Entry& entry : old) {
      if (entry.item.first.data() == nullptr) continue;
      size_t slot = entry.hash & mask;
      while (entries_[slot].item.first.data() != nullptr) slot = (slot + 1) & mask;
      entries_[slot] = std::move(entry);
    }
  }

  std::vector<Entry> entries_;  // empty, or a power of two of them, at most half full
  size_t size_ = 0;
};

}  // namespace onnx_amp

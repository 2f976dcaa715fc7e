// SortedMap: a string-keyed map held as one vector of (key, value) pairs
// sorted by key (byte-wise, as std::less<> compares std::string).
//
// The fold's records (state/flight.h) are copied whole each time a message
// changes one field, and most hold a few dozen short fields: a std::map pays
// one allocation per field for that copy and for its destruction, a sorted
// vector one in all (short keys and texts stay inside std::string). Lookups
// are binary searches; an insert or erase moves the entries after it, which
// is cheap at these sizes. Iteration is in key order, as with std::map, so
// serialisation and comparison are unchanged.
//
// Unlike std::map, an insert or an erase invalidates every iterator and
// reference into the map: take what you need before changing it.
//
// Thread-safety: a plain value.
#pragma once

#include <algorithm>
#include <cstddef>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

namespace msgx {

template <typename V>
class SortedMap {
 public:
  using key_type = std::string;
  using mapped_type = V;
  using value_type = std::pair<std::string, V>;
  using iterator = typename std::vector<value_type>::iterator;
  using const_iterator = typename std::vector<value_type>::const_iterator;
  using size_type = std::size_t;

  SortedMap() = default;
  // As std::map: of equal keys the first is kept.
  SortedMap(std::initializer_list<value_type> init) {
    for (const value_type& e : init) emplace(e.first, e.second);
  }

  iterator begin() { return entries_.begin(); }
  iterator end() { return entries_.end(); }
  const_iterator begin() const { return entries_.begin(); }
  const_iterator end() const { return entries_.end(); }
  size_type size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }
  void clear() { entries_.clear(); }
  void reserve(size_type n) { entries_.reserve(n); }

  iterator lower_bound(std::string_view key) {
    return std::lower_bound(entries_.begin(), entries_.end(), key, Less);
  }
  const_iterator lower_bound(std::string_view key) const {
    return std::lower_bound(entries_.begin(), entries_.end(), key, Less);
  }
  iterator find(std::string_view key) {
    auto it = lower_bound(key);
    return it != entries_.end() && it->first == key ? it : entries_.end();
  }
  const_iterator find(std::string_view key) const {
    auto it = lower_bound(key);
    return it != entries_.end() && it->first == key ? it : entries_.end();
  }
  size_type count(std::string_view key) const { return find(key) != end() ? 1 : 0; }
  bool contains(std::string_view key) const { return find(key) != end(); }

  V& at(std::string_view key) {
    auto it = find(key);
    if (it == end()) throw std::out_of_range("SortedMap::at");
    return it->second;
  }
  const V& at(std::string_view key) const {
    auto it = find(key);
    if (it == end()) throw std::out_of_range("SortedMap::at");
    return it->second;
  }
  // The value under `key`, inserted value-initialised when absent.
  V& operator[](std::string_view key) { return try_emplace(key).first->second; }

  // Inserts (key, V(args...)) unless `key` is present; as std::map.
  template <typename... Args>
  std::pair<iterator, bool> try_emplace(std::string_view key, Args&&... args) {
    auto it = lower_bound(key);
    if (it != entries_.end() && it->first == key) return {it, false};
    it = entries_.emplace(it, std::piecewise_construct, std::forward_as_tuple(key),
                          std::forward_as_tuple(std::forward<Args>(args)...));
    return {it, true};
  }
  template <typename K, typename M>
  std::pair<iterator, bool> emplace(K&& key, M&& value) {
    return try_emplace(std::string_view(key), std::forward<M>(value));
  }
  std::pair<iterator, bool> insert(value_type entry) {
    auto it = lower_bound(entry.first);
    if (it != entries_.end() && it->first == entry.first) return {it, false};
    return {entries_.insert(it, std::move(entry)), true};
  }
  template <typename M>
  std::pair<iterator, bool> insert_or_assign(std::string_view key, M&& value) {
    auto [it, inserted] = try_emplace(key, std::forward<M>(value));
    if (!inserted) it->second = std::forward<M>(value);
    return {it, inserted};
  }

  size_type erase(std::string_view key) {
    auto it = find(key);
    if (it == end()) return 0;
    entries_.erase(it);
    return 1;
  }
  iterator erase(const_iterator pos) { return entries_.erase(pos); }

  bool operator==(const SortedMap&) const = default;

 private:
  static bool Less(const value_type& e, std::string_view key) { return e.first < key; }
  std::vector<value_type> entries_;
};

}  // namespace msgx

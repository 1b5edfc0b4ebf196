// Little-endian bytes written and read back field by field, and the framing
// every torch_tile file uses: magic (8 bytes), format version (u32), CRC-32C
// of the payload (u32), payload size (u64), payload. A reader refuses a
// corrupt, truncated or other-version input with an Error naming what it read,
// and never reads past the end. Used by serialized plans and bundles.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/error.h"
#include "runtime/plan/expr.h"

namespace torch_tile {

// CRC-32C (Castagnoli) of data[offset:]: detects the corruption a file or a
// transfer can bring (not a defence against someone who can write the bytes:
// plans and bundles are trusted like the cubins they carry).
uint32_t crc32c(const std::string& data, size_t offset);

// The bytes of the file at `path`; a Value error naming `who` and the path if it cannot be opened or read.
std::string read_file(const std::string& path, const std::string& who);

class ByteWriter {
 public:
  template <class T>
  void pod(T v) {
    char bytes[sizeof(T)];
    std::memcpy(bytes, &v, sizeof(T));  // little-endian hosts only (x86-64, aarch64)
    out.append(bytes, sizeof(T));
  }
  void count(size_t n) { pod(uint32_t(n)); }
  void flag(bool b) { pod(uint8_t(b)); }
  void str(const std::string& s) {
    count(s.size());
    out += s;
  }
  void expr(const Expr& e);
  void exprs(const std::vector<Expr>& es);
  std::string out;
};

class ByteReader {
 public:
  // `what` names the input in errors ("serialized plans", "bundle").
  ByteReader(const std::string& data, size_t pos, const char* what) : data_(data), pos_(pos), what_(what) {}
  template <class T>
  T pod() {
    need(sizeof(T));
    T v;
    std::memcpy(&v, data_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  // A count of items each at least `min_item_bytes` long: bounded by what is left.
  size_t count(size_t min_item_bytes = 1);
  bool flag();
  std::string str();
  Expr expr();
  std::vector<Expr> exprs();
  bool at_end() const { return pos_ == data_.size(); }
  [[noreturn]] void corrupt(const std::string& problem) const;

 private:
  void need(size_t n) const {
    if (data_.size() - pos_ < n) corrupt("truncated");
  }
  const std::string& data_;
  size_t pos_;
  const char* what_;
};

// The framed file of `payload`.
std::string frame(const char (&magic)[8], uint32_t version, const std::string& payload);

// Checks the frame of `bytes` (magic, version, size, checksum) and returns
// the payload's offset; `what` names the input in errors.
size_t unframe(const std::string& bytes, const char (&magic)[8], uint32_t version, const char* what);

}  // namespace torch_tile

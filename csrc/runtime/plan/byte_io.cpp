#include "runtime/plan/byte_io.h"

#include <cstdio>

#include <array>

namespace torch_tile {

uint32_t crc32c(const std::string& data, size_t offset) {
  static const auto table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  uint32_t crc = 0xFFFFFFFFu;
  for (size_t i = offset; i < data.size(); ++i) crc = table[(crc ^ uint8_t(data[i])) & 0xFF] ^ (crc >> 8);
  return crc ^ 0xFFFFFFFFu;
}

void ByteWriter::expr(const Expr& e) {
  count(e.code.size());
  for (int64_t c : e.code) pod(c);
  str(e.text);
}

void ByteWriter::exprs(const std::vector<Expr>& es) {
  count(es.size());
  for (const Expr& e : es) expr(e);
}

size_t ByteReader::count(size_t min_item_bytes) {
  const size_t n = pod<uint32_t>();
  if (n > (data_.size() - pos_) / min_item_bytes) corrupt("a count larger than the data");
  return n;
}

bool ByteReader::flag() {
  const uint8_t v = pod<uint8_t>();
  if (v > 1) corrupt("a flag that is neither 0 nor 1");
  return v == 1;
}

std::string ByteReader::str() {
  const size_t n = count();
  std::string s = data_.substr(pos_, n);
  pos_ += n;
  return s;
}

Expr ByteReader::expr() {
  Expr e;
  e.code.resize(count(sizeof(int64_t)));
  for (int64_t& c : e.code) c = pod<int64_t>();
  e.text = str();
  if (!e.code.empty()) e.validate();  // empty: no expression (LaunchPlan::validate says where one is needed)
  return e;
}

std::vector<Expr> ByteReader::exprs() {
  std::vector<Expr> es(count(8));
  for (Expr& e : es) e = expr();
  return es;
}

void ByteReader::corrupt(const std::string& problem) const {
  fail(ErrorKind::Value, std::string(what_) + " are corrupt: " + problem);
}

namespace {
constexpr size_t kHeaderSize = 8 + 4 + 4 + 8;
}  // namespace

std::string frame(const char (&magic)[8], uint32_t version, const std::string& payload) {
  ByteWriter header;
  header.out.append(magic, sizeof(magic));
  header.pod(version);
  header.pod(crc32c(payload, 0));
  header.pod(uint64_t(payload.size()));
  return header.out + payload;
}

size_t unframe(const std::string& bytes, const char (&magic)[8], uint32_t version, const char* what) {
  if (bytes.size() < kHeaderSize || std::memcmp(bytes.data(), magic, sizeof(magic)) != 0) {
    fail(ErrorKind::Value, std::string("not ") + what + " (no " + std::string(magic, strnlen(magic, 8)) +
                               " header)");
  }
  ByteReader header(bytes, sizeof(magic), what);
  const uint32_t found = header.pod<uint32_t>();
  const uint32_t crc = header.pod<uint32_t>();
  const uint64_t size = header.pod<uint64_t>();
  // Damage first: a damaged header's version field is no version (the framing is the same in every version).
  const char* damage = size != bytes.size() - kHeaderSize      ? "truncated or with trailing data"
                       : crc32c(bytes, kHeaderSize) != crc ? "checksum mismatch"
                                                           : nullptr;
  const std::string reads = "this torch_tile reads version " + std::to_string(version);
  if (damage != nullptr) {
    header.corrupt(std::string(damage) +
                   (found == version ? "" : " (its header's version field reads " + std::to_string(found) + "; " +
                                                reads + ")"));
  }
  if (found != version) {
    fail(ErrorKind::Value, std::string(what) + " of format version " + std::to_string(found) + "; " + reads);
  }
  return kHeaderSize;
}

// C stdio: no iostreams in this library (see tensor_map.cpp).
std::string read_file(const std::string& path, const std::string& who) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) fail(ErrorKind::Value, who + ": cannot open '" + path + "'");
  std::string bytes;
  char buffer[1 << 16];
  size_t n = 0;
  while ((n = std::fread(buffer, 1, sizeof(buffer), f)) > 0) bytes.append(buffer, n);
  const bool failed = std::ferror(f) != 0;
  std::fclose(f);
  if (failed) fail(ErrorKind::Value, who + ": cannot read '" + path + "'");
  return bytes;
}

}  // namespace torch_tile

#include "dtype_map.h"

#include "runtime/error.h"

namespace torch_tile {
namespace {

struct Entry {
  c10::ScalarType scalar;
  DLDataType dl;
  bool kernel = true;  // whether a tile kernel takes it (complex: a plan holds it, views it as real, launches none)
};

constexpr Entry kTable[] = {
    {c10::ScalarType::Float, {kDLFloat, 32, 1}},
    {c10::ScalarType::Half, {kDLFloat, 16, 1}},
    {c10::ScalarType::BFloat16, {kDLBfloat, 16, 1}},
    {c10::ScalarType::Double, {kDLFloat, 64, 1}},
    {c10::ScalarType::Char, {kDLInt, 8, 1}},
    {c10::ScalarType::Short, {kDLInt, 16, 1}},
    {c10::ScalarType::Int, {kDLInt, 32, 1}},
    {c10::ScalarType::Long, {kDLInt, 64, 1}},
    {c10::ScalarType::Byte, {kDLUInt, 8, 1}},
    {c10::ScalarType::UInt16, {kDLUInt, 16, 1}},
    {c10::ScalarType::UInt32, {kDLUInt, 32, 1}},
    {c10::ScalarType::UInt64, {kDLUInt, 64, 1}},
    {c10::ScalarType::Bool, {kDLBool, 8, 1}},
    {c10::ScalarType::Float8_e4m3fn, {kDLFloat8_e4m3fn, 8, 1}},
    {c10::ScalarType::Float8_e5m2, {kDLFloat8_e5m2, 8, 1}},
    {c10::ScalarType::Float8_e4m3fnuz, {kDLFloat8_e4m3fnuz, 8, 1}},
    {c10::ScalarType::Float8_e5m2fnuz, {kDLFloat8_e5m2fnuz, 8, 1}},
    {c10::ScalarType::ComplexHalf, {kDLComplex, 32, 1}, false},
    {c10::ScalarType::ComplexFloat, {kDLComplex, 64, 1}, false},
    {c10::ScalarType::ComplexDouble, {kDLComplex, 128, 1}, false},
};

}  // namespace

bool to_dl_dtype(c10::ScalarType t, DLDataType* out) {
  for (const Entry& e : kTable) {
    if (e.scalar == t) {
      *out = e.dl;
      return true;
    }
  }
  return false;
}

std::vector<c10::ScalarType> plan_scalar_types(bool kernel_only) {
  std::vector<c10::ScalarType> types;
  for (const Entry& e : kTable) {
    if (e.kernel || !kernel_only) types.push_back(e.scalar);
  }
  return types;
}

DLDataType dl_dtype_of(c10::ScalarType t) {
  DLDataType dl{};
  if (!to_dl_dtype(t, &dl)) {
    fail(ErrorKind::Type, std::string("torch_tile: dtype ") + c10::toString(t) + " cannot be passed to a kernel");
  }
  return dl;
}

DLDataType dl_dtype_of(const at::TensorBase& t) { return dl_dtype_of(t.scalar_type()); }

c10::ScalarType to_scalar_type(DLDataType t) {
  const uint32_t packed = pack_dtype(t);
  for (const Entry& e : kTable) {
    if (pack_dtype(e.dl) == packed) return e.scalar;
  }
  fail(ErrorKind::Type, "torch_tile: no torch dtype for DLPack dtype code " + std::to_string(t.code) +
                            " bits " + std::to_string(t.bits));
}

}  // namespace torch_tile

#include "written_argument_check.h"

#include <algorithm>
#include <string>

#include "runtime/error.h"

namespace torch_tile {
namespace {

enum class Overlap { None, Full, Partial, Unknown };

// ATen's rules (has_internal_overlap, get_overlap_status), computed from
// storage offsets rather than data pointers, so that fake and meta tensors
// are checked the same way without touching their (absent) data.
bool checkable(const at::Tensor& t) {
  return t.defined() && t.has_storage() && !t.unsafeGetTensorImpl()->has_symbolic_sizes_strides();
}

bool has_internal_overlap(const at::Tensor& t) {
  if (!checkable(t) || t.is_non_overlapping_and_dense()) return false;
  const auto sizes = t.sizes();
  const auto strides = t.strides();
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] > 1 && strides[d] == 0) return true;
  }
  return false;  // too hard to tell, as ATen
}

// "(2, 0)": no iostreams (their number formatting crashes inside torch 2.11's
// process, a libstdc++ mismatch; see csrc/runtime/cuda/tensor_map.cpp).
std::string strides_text(const at::Tensor& t) {
  std::string s = "(";
  for (size_t d = 0; d < t.strides().size(); ++d) s += (d ? ", " : "") + std::to_string(t.strides()[d]);
  return s + (t.dim() == 1 ? ",)" : ")");
}

Overlap overlap_of(const at::Tensor& a, const at::Tensor& b) {
  if (!checkable(a) || !checkable(b) || a.numel() == 0 || b.numel() == 0) return Overlap::None;
  if (a.storage().unsafeGetStorageImpl() != b.storage().unsafeGetStorageImpl()) return Overlap::None;
  if (!a.is_non_overlapping_and_dense() || !b.is_non_overlapping_and_dense()) return Overlap::Unknown;
  const int64_t a_begin = a.storage_offset() * int64_t(a.itemsize());
  const int64_t b_begin = b.storage_offset() * int64_t(b.itemsize());
  const int64_t a_end = a_begin + a.numel() * int64_t(a.itemsize());
  const int64_t b_end = b_begin + b.numel() * int64_t(b.itemsize());
  if (a_begin == b_begin && a_end == b_end) return Overlap::Full;
  return (a_begin < b_end && b_begin < a_end) ? Overlap::Partial : Overlap::None;
}

}  // namespace

void check_written_arguments(const std::string& op, const std::vector<std::string>& arg_names,
                             const std::vector<int>& written, const c10::IValue* args) {
  for (const int w : written) {
    if (!args[w].isTensor()) continue;
    const at::Tensor& out = args[w].toTensor();
    if (has_internal_overlap(out)) {
      fail(ErrorKind::Value, op + ": argument '" + arg_names[size_t(w)] +
                                 "' is written, but several of its elements share one memory location (an "
                                 "expanded or otherwise self-overlapping view, strides " + strides_text(out) +
                                 "); pass a tensor that owns its elements, e.g. .clone()");
    }
    for (size_t j = 0; j < arg_names.size(); ++j) {
      if (int(j) == w) continue;
      // The same memory for a written and a read argument (x.add_(x)) is an
      // elementwise read-modify-write: allowed, as in ATen. Two written
      // arguments on the same memory, or partial overlap, are not.
      const bool both_written = std::find(written.begin(), written.end(), int(j)) != written.end();
      auto check = [&](const at::Tensor& other, const std::string& item) {
        const Overlap overlap = overlap_of(out, other);
        if (overlap == Overlap::Partial || (overlap == Overlap::Full && both_written)) {
          fail(ErrorKind::Value, op + ": argument '" + arg_names[size_t(w)] + "' is written and " +
                                     (overlap == Overlap::Partial ? "partially overlaps" : "is the same memory as") +
                                     " argument '" + arg_names[j] + "'" + item +
                                     " (some elements of one are elements of the other); the result would depend "
                                     "on the order the kernel's programs run in. Pass non-overlapping tensors, e.g. "
                                     ".clone() one");
        }
      };
      if (args[j].isTensor()) check(args[j].toTensor(), "");
      if (args[j].isTensorList()) {  // a list[Tensor] argument's items are read
        const c10::ArrayRef<c10::IValue> items = args[j].toListRef();
        for (size_t k = 0; k < items.size(); ++k) check(items[k].toTensor(), "[" + std::to_string(k) + "]");
      }
    }
  }
}

}  // namespace torch_tile

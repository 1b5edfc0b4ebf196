#include "output_allocation.h"

#include <ATen/EmptyTensor.h>
#include <ATen/ops/empty_strided.h>

#include <algorithm>

#include "runtime/error.h"
#include "dtype_map.h"

namespace torch_tile {
namespace {

// Whether `t` has the strides empty() gives its sizes (a size-0 or size-1 dimension counts as 1).
bool has_default_strides(const at::Tensor& t) {
  int64_t expected = 1;
  for (int64_t d = t.dim() - 1; d >= 0; --d) {
    if (t.stride(d) != expected) return false;
    expected *= std::max<int64_t>(t.size(d), 1);
  }
  return true;
}

}  // namespace

at::Tensor allocate_output(const AllocStep& step, const int64_t* shape, int rank, const at::Tensor* like,
                           c10::Allocator* allocator, c10::DispatchKeySet keys) {
  const c10::ScalarType dtype = to_scalar_type(unpack_dtype(step.dtype));
  at::Tensor t;
  if (step.kind == AllocStep::Kind::EmptyLike) {
    if (like == nullptr) fail(ErrorKind::Runtime, "empty_like without a source tensor");
    // torch's empty_like keeps a non-overlapping and dense source's strides, also a contiguous one's that
    // are not empty()'s (size-1 dimensions, no element); a source with empty()'s strides takes the cheaper
    // contiguous constructor (same result).
    t = (like->is_non_overlapping_and_dense() && !has_default_strides(*like))
            ? at::detail::empty_strided_generic(like->sizes(), like->strides(), allocator, keys, dtype)
            : at::detail::empty_generic(like->sizes(), allocator, keys, dtype, std::nullopt);
  } else {
    t = at::detail::empty_generic(c10::IntArrayRef(shape, size_t(rank)), allocator, keys, dtype, std::nullopt);
  }
  if (step.zero) t.zero_();
  return t;
}

at::Tensor copy_of_layout(const at::Tensor& t) {
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (t.stride(d) == 0 && t.size(d) > 1) return t.clone(at::MemoryFormat::Contiguous);
  }
  return at::empty_strided(t.sizes(), t.strides(), t.options()).copy_(t);
}

}  // namespace torch_tile

#include "output_allocation.h"

#include <ATen/EmptyTensor.h>

#include "../runtime/error.h"
#include "dtype_map.h"

namespace torch_tile {

at::Tensor allocate_output(const AllocStep& step, const int64_t* shape, int rank, const at::Tensor* like,
                           c10::Allocator* allocator, c10::DispatchKeySet keys) {
  const c10::ScalarType dtype = to_scalar_type(unpack_dtype(step.dtype));
  at::Tensor t;
  if (step.kind == AllocStep::Kind::EmptyLike) {
    if (like == nullptr) fail(ErrorKind::Runtime, "empty_like without a source tensor");
    // A contiguous source takes the cheaper contiguous constructor (same result).
    t = (!like->is_contiguous() && like->is_non_overlapping_and_dense())
            ? at::detail::empty_strided_generic(like->sizes(), like->strides(), allocator, keys, dtype)
            : at::detail::empty_generic(like->sizes(), allocator, keys, dtype, std::nullopt);
  } else {
    t = at::detail::empty_generic(c10::IntArrayRef(shape, size_t(rank)), allocator, keys, dtype, std::nullopt);
  }
  if (step.zero) t.zero_();
  return t;
}

}  // namespace torch_tile

// In-place tile ops: a written tensor argument must not share memory with
// another argument in a way the kernel cannot see (as ATen's
// assert_no_internal_overlap / assert_no_partial_overlap refuse for its own
// in-place ops). A kernel reading and writing partially overlapping ranges
// computes a result that depends on the order of its programs.
#pragma once

#include <ATen/core/ivalue.h>

#include <string>
#include <vector>

namespace torch_tile {

// `args[i]` is the op's i-th argument (non-tensors are skipped); `written`
// lists the indices of the arguments the op writes. Throws a Value Error
// (ValueError in Python) naming the op and the arguments.
void check_written_arguments(const std::string& op, const std::vector<std::string>& arg_names,
                             const std::vector<int>& written, const c10::IValue* args);

}  // namespace torch_tile

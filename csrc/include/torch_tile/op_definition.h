// Ops defined in C++, over CUDA C++ kernels, with no Python anywhere: the op's
// body is a C++ function that builds a launch plan (the same plans traced
// Python bodies make), run once per new case of a call (dtypes, ranks, None
// arguments, the branches it takes on sizes); every later call of that case
// runs the plan natively. Kernels compile on demand with NVRTC (the torch
// wheel's, or a toolkit's), cached in memory per specialization.
//
//   namespace tt = torch_tile;
//   static const tt::CudaKernel scale(R"(  // static: bodies run later, on each new case
//     template <typename T>
//     __global__ void scale(T* out, const T* x, float alpha, long long n) {
//       long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
//       if (i < n) out[i] = T(float(x[i]) * alpha);
//     })", "scale");
//   tt::define_op("demo::scale(Tensor x, float alpha) -> Tensor", [](tt::OpBuilder& b) {
//     tt::PlanTensor x = b.tensor("x");
//     b.check(x.is_contiguous(), "x must be contiguous");
//     tt::PlanTensor out = b.empty_like(x);
//     tt::IntExpr n = x.numel();
//     b.launch(scale, {tt::ceil_div(n, 256)}, 256,
//              {tt::KernelArg::pointer(out), tt::KernelArg::pointer(x), tt::KernelArg::f32(b.float_arg("alpha")),
//               tt::KernelArg::i64(n)},
//              tt::LaunchOptions{{tt::cuda_type(x.dtype())}});
//     b.returns({out});
//   });
//   at::Tensor y = c10::Dispatcher::singleton().findSchemaOrThrow("demo::scale", "")
//                      .typed<at::Tensor(const at::Tensor&, double)>().call(x, 2.0);
//
// The op gets the native CUDA kernel, a Meta kernel (shapes from the plan: fake
// tensors and torch.compile, which specialises on sizes), and autograd kernels
// that refuse calls needing a gradient (define the backward as another op).
// Its plans serialize and bundle as traced ones do. Errors are c10::Error
// naming the op.
#pragma once

#include <c10/core/ScalarType.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace torch_tile {

// An integer worth computing per call: from the call's sizes, strides, numel
// and int arguments, with C++'s operators (`/` and `%` round as Python's `//`
// and `%`; comparisons give 0 or 1). Evaluated natively, overflow-checked.
class IntExpr {
 public:
  IntExpr(int64_t value);  // NOLINT(google-explicit-constructor): constants mix with sizes, `n + 1`
  IntExpr(int value) : IntExpr(int64_t(value)) {}  // NOLINT(google-explicit-constructor)
  // The plan's postfix bytecode (csrc/runtime/plan/expr.h) and a rendering for messages.
  IntExpr(std::vector<int64_t> code, std::string text) : code_(std::move(code)), text_(std::move(text)) {}
  const std::vector<int64_t>& code() const { return code_; }
  const std::string& text() const { return text_; }

 private:
  std::vector<int64_t> code_;
  std::string text_;
};

IntExpr operator+(const IntExpr& a, const IntExpr& b);
IntExpr operator-(const IntExpr& a, const IntExpr& b);
IntExpr operator*(const IntExpr& a, const IntExpr& b);
IntExpr operator/(const IntExpr& a, const IntExpr& b);  // floor division, as Python's //
IntExpr operator%(const IntExpr& a, const IntExpr& b);  // the divisor's sign, as Python's %
IntExpr operator-(const IntExpr& a);
IntExpr operator<(const IntExpr& a, const IntExpr& b);
IntExpr operator<=(const IntExpr& a, const IntExpr& b);
IntExpr operator==(const IntExpr& a, const IntExpr& b);
IntExpr operator!=(const IntExpr& a, const IntExpr& b);
IntExpr operator>(const IntExpr& a, const IntExpr& b);
IntExpr operator>=(const IntExpr& a, const IntExpr& b);
IntExpr operator!(const IntExpr& a);
IntExpr operator&&(const IntExpr& a, const IntExpr& b);  // both non-zero (no short circuit: both are evaluated)
IntExpr operator||(const IntExpr& a, const IntExpr& b);
IntExpr min(const IntExpr& a, const IntExpr& b);
IntExpr max(const IntExpr& a, const IntExpr& b);
IntExpr ceil_div(const IntExpr& a, const IntExpr& b);
IntExpr next_power_of_2(const IntExpr& a);  // triton.next_power_of_2

// A tensor of the plan: a tensor argument, or one the op allocates. Its dtype
// and rank are fixed per plan; sizes and strides are per call.
class PlanTensor {
 public:
  IntExpr size(int64_t dim) const;  // dim < 0 counts from the end
  IntExpr stride(int64_t dim) const;
  IntExpr numel() const;
  // 1 when the strides are the contiguous ones of the sizes (size-1 dimensions' strides are free).
  IntExpr is_contiguous() const;
  int64_t dim() const { return ndim_; }
  c10::ScalarType dtype() const { return dtype_; }
  int32_t slot() const { return slot_; }

 private:
  friend class OpBuilder;
  PlanTensor(int32_t slot, int64_t ndim, c10::ScalarType dtype, std::string name)
      : slot_(slot), ndim_(ndim), dtype_(dtype), name_(std::move(name)) {}
  int64_t checked_dim(int64_t dim) const;
  int32_t slot_;
  int64_t ndim_;
  c10::ScalarType dtype_;
  std::string name_;  // for messages and expression text: "x", "out0"
};

// A float a kernel receives: a float argument of the op (per call) or a constant.
class FloatValue {
 public:
  FloatValue(double constant) : value_(constant) {}  // NOLINT(google-explicit-constructor)

 private:
  friend class OpBuilder;
  friend class KernelArg;
  FloatValue(int32_t arg, double value) : arg_(arg), value_(value) {}
  int32_t arg_ = -1;  // the op argument, or -1 for value_
  double value_ = 0.0;
};

// One kernel parameter, as the kernel declares it: a tensor's data pointer
// (`T*`), or a value of a declared width. The declaration is checked against
// the compiled kernel's parameters when it is loaded.
class KernelArg {
 public:
  static KernelArg pointer(const PlanTensor& t);
  static KernelArg i32(IntExpr v);  // int (a value outside int32 is refused at launch)
  static KernelArg i64(IntExpr v);  // long long
  static KernelArg boolean(IntExpr v);  // bool (non-zero is true)
  static KernelArg f32(FloatValue v);   // float
  static KernelArg f64(FloatValue v);   // double

  enum class Kind { Pointer, I32, I64, Bool, F32, F64 };
  Kind kind() const { return kind_; }

 private:
  friend class OpBuilder;
  KernelArg(Kind kind, int32_t slot, IntExpr value, FloatValue f) : kind_(kind), slot_(slot), value_(std::move(value)), float_(f) {}
  Kind kind_;
  int32_t slot_ = -1;
  IntExpr value_ = 0;
  FloatValue float_ = 0.0;
};

// Which facts about its arguments a CudaKernel's variants are compiled for:
// each distinct set of facts is one variant, which sees them as 0/1 macros
// (argument i counts the kernel's parameters from 0).
enum class Specialization {
  None,    // one variant per dtypes and parameter widths
  // Triton's bits: TT_ALIGNED16_<i> (a pointer 16-byte aligned), TT_EQ1_<i>
  // and TT_DIV16_<i> (an integer equal to 1, divisible by 16).
  Triton,
  // cuTile's bits of each tensor's layout: TT_ALIGNED16_<i> (data pointer),
  // TT_DISJOINT_<i> (no two elements share memory) and, per dimension d < 5,
  // TT_STRIDE16B_<i>_<d> (stride a multiple of 16 bytes), TT_STRIDE1_<i>_<d>,
  // TT_SIZE16_<i>_<d> (size divisible by 16), TT_SIZE1_<i>_<d>. Integers are
  // not specialised.
  CuTile,
};

// A __global__ function of a CUDA C++ source (templates allowed).
class CudaKernel {
 public:
  // `source`: the translation unit; `name`: the function, without template
  // arguments; `options`: extra NVRTC options (-D, -I, -std=c++20...);
  // `specialize`: the bits its variants are compiled for (see Specialization).
  CudaKernel(std::string source, std::string name, std::vector<std::string> options = {},
             Specialization specialize = Specialization::None);
  // `specialize = true` is Specialization::Triton, as torch_tile.CudaKernel(specialize=True).
  CudaKernel(std::string source, std::string name, std::vector<std::string> options, bool specialize)
      : CudaKernel(std::move(source), std::move(name), std::move(options),
                   specialize ? Specialization::Triton : Specialization::None) {}
  // The same, reading the source from a .cu file (now).
  static CudaKernel from_file(const std::string& path, std::string name, std::vector<std::string> options = {},
                              Specialization specialize = Specialization::None);
  static CudaKernel from_file(const std::string& path, std::string name, std::vector<std::string> options,
                              bool specialize) {
    return from_file(path, std::move(name), std::move(options),
                     specialize ? Specialization::Triton : Specialization::None);
  }
  const std::string& name() const { return name_; }
  Specialization specialization() const { return specialize_; }
  // The kernel's runtime id (registered with the runtime by the constructor).
  int64_t id() const { return id_; }

 private:
  std::string name_;
  Specialization specialize_ = Specialization::None;
  int64_t id_ = 0;
};

// The C++ element type of a dtype, for a template argument: "float", "__half", "__nv_bfloat16"...
std::string cuda_type(c10::ScalarType dtype);

// Threads per block: an int is a 1-D block, `{16, 16}` a 2-D one.
struct BlockDim {
  BlockDim(int x, int y = 1, int z = 1) : x(x), y(y), z(z) {}  // NOLINT: implicit, as CUDA's dim3
  int x, y, z;
};

struct LaunchOptions {
  std::vector<std::string> template_args;  // C++ text of each: cuda_type(x.dtype()), "256", "true"
  int32_t shared_mem = 0;                  // dynamic shared memory, bytes
};

namespace detail {
struct PlanUnderConstruction;
}

// What an op's body receives: the call's case (dtypes, ranks, which optional
// arguments are None) and the plan it builds for every call of that case.
class OpBuilder {
 public:
  // Arguments, by their schema names.
  PlanTensor tensor(const std::string& arg);  // a Tensor argument (an optional one must be present)
  IntExpr int_arg(const std::string& arg);    // an int or bool argument
  FloatValue float_arg(const std::string& arg);
  bool is_none(const std::string& arg);       // an optional argument: fixed per plan

  // Whether `condition` holds for this call; the plan serves only calls where
  // it has the same value (a guard), as a traced body's `if` on sizes does.
  bool holds(const IntExpr& condition);
  // Refuses calls where `condition` does not hold: a c10::ValueError naming the op and `message`.
  void check(const IntExpr& condition, const std::string& message);
  // Refuses this case (a dtype or rank the op does not take): a c10::ValueError naming the op and `message`.
  [[noreturn]] void refuse(const std::string& message);

  // Allocations: contiguous `shape`, or `like`'s layout (its strides when dense).
  PlanTensor empty(const std::vector<IntExpr>& shape, c10::ScalarType dtype);
  PlanTensor empty_like(const PlanTensor& like, std::optional<c10::ScalarType> dtype = std::nullopt);
  PlanTensor zeros(const std::vector<IntExpr>& shape, c10::ScalarType dtype);
  PlanTensor zeros_like(const PlanTensor& like, std::optional<c10::ScalarType> dtype = std::nullopt);

  // Launches `kernel` with 1 to 3 grid dimensions and a block of threads
  // (`256`, or `{16, 16}`: x and y up to 1024, z up to 64, 1024 in all) on
  // the current stream; `args`: one per kernel parameter, in order.
  void launch(const CudaKernel& kernel, const std::vector<IntExpr>& grid, BlockDim block,
              const std::vector<KernelArg>& args, const LaunchOptions& options = {});

  // The tensors the op returns (distinct tensors it allocated), as many as its schema's returns.
  void returns(const std::vector<PlanTensor>& outputs);

  // The op being built, for messages.
  const std::string& op_name() const;

  explicit OpBuilder(detail::PlanUnderConstruction& plan) : plan_(plan) {}

 private:
  PlanTensor allocate(const std::vector<IntExpr>* shape, const PlanTensor* like, c10::ScalarType dtype, bool zero);
  int32_t argument(const std::string& arg, const char* expected) const;
  detail::PlanUnderConstruction& plan_;
};

// A body: builds the plan of one case of the op.
using OpBody = std::function<void(OpBuilder&)>;

// Defines `schema` ("namespace::name(Tensor x, float alpha) -> Tensor", as
// TORCH_LIBRARY's def) with the dispatcher and registers its kernels. Tensor[]
// arguments, list returns and written arguments are not supported; the op
// needs a Tensor argument. Thread-safe; defining a name twice is an error.
void define_op(const std::string& schema, OpBody body);

// The op's plans, serialized (csrc/runtime/plan/plan_serialization.h: the format
// traced ops export), e.g. to ship in a bundle or check what a body built.
std::string export_plans(const std::string& qualname);

}  // namespace torch_tile

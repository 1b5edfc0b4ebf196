/* A libcuda.so.1 for machines without a GPU, enough for cuTile's launcher to build a kernel's signature
 * from its arguments and hand it to the kernel's _compile (tests/cutile_launcher_probe.py stops it there).
 * cuTile resolves every driver function through cuGetProcAddress_v2: the ones whose results it reads answer
 * as one sm_90 device with one context; every other one succeeds and does nothing. */
#include <stdint.h>
#include <string.h>

typedef int CUresult;
#define CONTEXT ((void*)0x1000)

static CUresult success(void) { return 0; }
static CUresult device_attribute(int* value, int attribute, int device) {
  (void)device;
  *value = attribute == 75 ? 9 : attribute == 76 ? 0 : 1024; /* compute capability 9.0; limits */
  return 0;
}
static CUresult pointer_attribute(void* data, int attribute, uintptr_t pointer) {
  (void)attribute, (void)pointer;
  memset(data, 0, 8);
  *(void**)data = CONTEXT;
  return 0;
}
static CUresult out_context(void** context) { *context = CONTEXT; return 0; }
static CUresult out_zero(int* value) { *value = 0; return 0; }
static CUresult out_one(int* value) { *value = 1; return 0; }
static CUresult driver_version(int* version) { *version = 13000; return 0; }
static CUresult device_get(int* device, int ordinal) { *device = ordinal; return 0; }
static CUresult stream_context(void* stream, void** context) { (void)stream; *context = CONTEXT; return 0; }
static CUresult object_id(void* object, unsigned long long* id) { (void)object; *id = 1; return 0; }
static CUresult not_capturing(void* stream, int* status) { (void)stream; *status = 0; return 0; }
static CUresult primary_context(void** context, int device) { (void)device; *context = CONTEXT; return 0; }

CUresult cuGetProcAddress_v2(const char* symbol, void** function, int version, unsigned long long flags,
                             int* status) {
  static const struct { const char* name; void* function; } answers[] = {
      {"cuDeviceGetAttribute", (void*)device_attribute}, {"cuPointerGetAttribute", (void*)pointer_attribute},
      {"cuCtxGetCurrent", (void*)out_context},           {"cuCtxGetDevice", (void*)out_zero},
      {"cuDriverGetVersion", (void*)driver_version},     {"cuDeviceGetCount", (void*)out_one},
      {"cuDeviceGet", (void*)device_get},                {"cuStreamGetCtx", (void*)stream_context},
      {"cuCtxGetId", (void*)object_id},                  {"cuStreamGetId", (void*)object_id},
      {"cuStreamIsCapturing", (void*)not_capturing},     {"cuDevicePrimaryCtxRetain", (void*)primary_context},
  };
  (void)version, (void)flags;
  if (status) *status = 0;
  *function = (void*)success;
  for (size_t i = 0; i < sizeof(answers) / sizeof(answers[0]); ++i) {
    if (!strcmp(symbol, answers[i].name)) *function = answers[i].function;
  }
  return 0;
}
CUresult cuInit(unsigned flags) { (void)flags; return 0; }
CUresult cuDriverGetVersion(int* version) { return driver_version(version); }

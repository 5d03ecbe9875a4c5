/* Each work-group's HW_ID: lane 0 of its (first) wave stores s_getreg_b32
 * hwreg(HW_REG_HW_ID) (hardware register 4, offset 0, 32 bits: SIMM16 (31 << 11) | 4) to
 * out[work-group id]. Freestanding (no device-libs); compiled by capi/tests/c_abi.rs and
 * kfd-emu's tests at test time:
 *   clang-19 -x cl -cl-std=CL1.2 -target amdgcn-amd-amdhsa -mcpu=gfx90a -nogpulib -O2 -c
 *   ld.lld-19 -shared */
kernel void hw_id(global uint* out) {
  uint v = __builtin_amdgcn_s_getreg((31 << 11) | 4);
  if (__builtin_amdgcn_workitem_id_x() == 0) out[__builtin_amdgcn_workgroup_id_x()] = v;
}

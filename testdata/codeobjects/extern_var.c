// A kernel that reads a variable its code object does not define: `ext_var` is an undefined
// dynamic symbol with an R_AMDGPU_ABS64 relocation, which the loader resolves to the address
// the application gives with hsa_executable_agent_global_variable_define (or
// hsa_executable_global_variable_define).
extern __attribute__((address_space(1), visibility("default"))) int ext_var;

__attribute__((amdgpu_kernel, visibility("default"))) void read_ext(__attribute__((address_space(1))) int *out) {
    *out = ext_var;
}

// OpenCL image kernels for the gfx9 interpreter's MIMG tests (gfx9/tests/gfx9_image.rs):
// the image built-ins of ROCm's device-libs compile to image_load/image_store/image_sample*.
// One work-item per texel of row 0 (the tests run 1D dispatches).
__kernel void copy_f(read_only image2d_t src, write_only image2d_t dst) {
  int2 p = (int2)(get_global_id(0) % 8, get_global_id(0) / 8);
  write_imagef(dst, p, read_imagef(src, p));
}
__kernel void copy_ui_array(read_only image2d_array_t src, write_only image2d_array_t dst) {
  int i = get_global_id(0);
  int4 p = (int4)(i % 4, i / 4 % 4, i / 16, 0);
  write_imageui(dst, p, read_imageui(src, p) + (uint4)(1, 2, 3, 4));
}
// The sampler is a constant: device-libs' S# for normalized coordinates, clamp-to-edge and
// linear filtering.
__constant sampler_t smp = CLK_NORMALIZED_COORDS_TRUE | CLK_ADDRESS_CLAMP_TO_EDGE |
                           CLK_FILTER_LINEAR;
__kernel void sample_f(read_only image2d_t src, __global float4* out) {
  float i = get_global_id(0);
  out[get_global_id(0)] = read_imagef(src, smp, (float2)(i / 64.0f, 0.3f));
}

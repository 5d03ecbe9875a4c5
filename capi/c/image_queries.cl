// OpenCL kernels for c/image_kernel.c, built by capi/tests/c_abi.rs with clang-19 and ROCm
// device-libs when present: image queries and reads of 1DB, 1DA and 3D images, and reads
// through a sampler argument (a handle of hsa_ext_sampler_create).
__kernel void queries(read_only image1d_buffer_t b, read_only image1d_array_t a,
                      read_only image3d_t t, __global int* out) {
  if (get_global_id(0) != 0) return;
  out[0] = get_image_width(b);
  out[1] = get_image_width(a);
  out[2] = get_image_array_size(a);
  out[3] = get_image_depth(t);
  out[4] = get_image_channel_order(b);
  out[5] = get_image_channel_data_type(a);
  out[6] = read_imageui(b, 3).x;
  out[7] = read_imageui(a, (int2)(1, 2)).x;
  out[8] = get_image_height(t);
}
__kernel void sampled(read_only image2d_t img, sampler_t smp, __global float2* coords,
                      __global float* out) {
  int i = get_global_id(0);
  out[i] = read_imagef(img, smp, coords[i & 1]).x;
}

/* hsa-rt's extension to the HSA runtime API (libhsa-runtime64 built from hsa-rt).
 *
 * 1. Host implementations of kernels on the emulated device (the default Linux build): with
 *    no AMD GPU driver, hsa-rt runs an emulated GPU whose dispatches call a host function
 *    once per work-group. hsa_rt_emulated_register_kernel.
 * 2. The bare-metal build for firmware written in C (`cargo build -p hsa-capi
 *    --no-default-features --features baremetal`: libhsa_runtime64.a): the firmware describes
 *    its machine in an hsa_rt_baremetal_host_t, registers it with hsa_rt_baremetal_init before
 *    hsa_init, and calls hsa_rt_baremetal_interrupt from its ISR for the GPU's IH interrupt.
 *    Every other function is the HSA API of hsa.h / hsa_ext_amd.h, over that machine. */
#ifndef HSA_RT_EXT_H
#define HSA_RT_EXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <hsa/hsa.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One work-group of a dispatch. Sizes in work-items; addresses are device addresses, which on
 * the emulated device are also host addresses. 80 bytes. */
typedef struct hsa_rt_dispatch_s {
  uint32_t dimensions;          /* grid dimensions, 1..3 */
  uint32_t grid_size[3];        /* grid size x/y/z */
  uint16_t workgroup_size[3];   /* work-group size x/y/z */
  uint16_t reserved0;
  uint32_t workgroup_count[3];  /* work-groups per dimension */
  uint32_t workgroup_id[3];     /* this work-group's id x/y/z */
  uint32_t group_segment_size;  /* LDS bytes of the dispatch */
  uint32_t private_segment_size;/* private bytes per work-item */
  uint64_t kernel_object;       /* kernel descriptor address */
  void* kernarg_address;        /* kernarg segment */
  void* group_segment;          /* this work-group's LDS, zeroed, valid during the call */
} hsa_rt_dispatch_t;

/* Called once per work-group, on the queue's processor thread. Returning anything but
 * HSA_STATUS_SUCCESS stops the queue with that status (the queue's error callback sees it). */
typedef hsa_status_t (*hsa_rt_host_kernel_fn)(const hsa_rt_dispatch_t* dispatch, void* user);

/* Registers fn (with user) as the kernel whose kernel object is kernel_object on the emulated
 * device (Linux build only), replacing an earlier registration for it. The kernel object is the device address
 * of the kernel's descriptor: HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT of its symbol, what a
 * dispatch packet's kernel_object holds; so register after loading the code object (the
 * device knows kernels by address, not by name).
 * Returns HSA_STATUS_ERROR_NOT_INITIALIZED before hsa_init, HSA_STATUS_ERROR_INVALID_ARGUMENT
 * for a NULL fn or a kernel object that is 0 or not 64-byte aligned,
 * HSA_STATUS_ERROR_INVALID_AGENT when the runtime is not on the emulated device (a real GPU
 * runs the code object itself). */
hsa_status_t hsa_rt_emulated_register_kernel(uint64_t kernel_object, hsa_rt_host_kernel_fn fn,
                                             void* user);

/* ---- The bare-metal build ------------------------------------------------------------
 *
 * Everything hsa_rt_baremetal_init is given is checked and copied (tables included, so they
 * need not outlive the call); the callbacks and `context` must stay valid until the last
 * hsa_shut_down has returned. The firmware promises, for that whole time:
 *  - each carve-out is memory nobody but this runtime (and the GPU it drives) uses, mapped
 *    read-write for the CPU at virt_base (when not 0) and for the GPU at gpu_va, over all of
 *    size_bytes; carve-outs never overlap; system memory is mapped at the same address for
 *    the GPU as for the CPU (gpu_va == virt_base: HSA hands host pointers to the GPU);
 *  - the doorbell aperture is mapped uncached over all of size_bytes,
 *    (first + count) * 8 <= size_bytes, and nobody else rings those doorbells;
 *  - the IH ring, its write-pointer write-back and the read-pointer register are mapped, and
 *    only this runtime reads the ring;
 *  - every callback may be called from any thread, with `context` as its first argument;
 *    ih_overflow_clear and wake_waiters also from interrupt context, and they never block.
 * Addresses are plain 64-bit numbers: CPU virtual (virt), physical (phys) or GPU virtual
 * (gpu_va). Sizes are in bytes. Ref: the Rust trait hsa_baremetal::Host, which this mirrors. */

/* The value of hsa_rt_baremetal_host_t.version this library reads (it also takes 1: the
 * struct without the version-2 fields). */
#define HSA_RT_BAREMETAL_HOST_VERSION 2

/* What a carve-out's memory is. */
typedef enum {
  HSA_RT_BAREMETAL_SYSTEM_MEMORY = 0,     /* host DRAM the GPU reaches over the bus */
  HSA_RT_BAREMETAL_HOST_VISIBLE_VRAM = 1, /* VRAM the CPU reaches through a BAR mapping */
  HSA_RT_BAREMETAL_PRIVATE_VRAM = 2       /* VRAM the CPU cannot touch: virt_base 0 */
} hsa_rt_baremetal_memory_kind_t;

/* One region of memory the runtime manages. 40 bytes. */
typedef struct hsa_rt_baremetal_carve_out_s {
  uint32_t node;        /* the topology node id whose memory it is */
  uint32_t kind;        /* hsa_rt_baremetal_memory_kind_t */
  uint64_t phys_base;   /* physical (bus) address of the first byte */
  uint64_t virt_base;   /* CPU virtual address of the first byte; 0 for PRIVATE_VRAM only */
  uint64_t gpu_va;      /* GPU virtual address of the first byte (= virt_base for system memory) */
  uint64_t size_bytes;  /* a multiple of 4096 */
} hsa_rt_baremetal_carve_out_t;

/* The doorbell BAR mapping and the doorbells the runtime may use (soc15 doorbells are 64-bit,
 * 8 bytes apart). 24 bytes. */
typedef struct hsa_rt_baremetal_doorbells_s {
  uint64_t virt_base;   /* CPU virtual address of doorbell 0, mapped uncached */
  uint64_t size_bytes;  /* size of the mapping */
  uint32_t first;       /* the first doorbell index the runtime may use */
  uint32_t count;       /* how many consecutive doorbells from first */
} hsa_rt_baremetal_doorbells_t;

/* The soc15 interrupt-handler (IH) ring the firmware set up (IH_RB_BASE, IH_RB_CNTL,
 * IH_RB_WPTR_ADDR), and where the runtime writes the read pointer back. 48 bytes. */
typedef struct hsa_rt_baremetal_ih_ring_s {
  uint64_t ring_virt_base;        /* the ring, 8-byte aligned */
  uint32_t ring_size_bytes;       /* a power of two, at least 32 (one entry) */
  uint32_t reserved;              /* 0 */
  uint64_t wptr_virt;             /* 32-bit write-pointer write-back: byte offset, bit 0
                                     RB_OVERFLOW; 8-byte aligned */
  uint64_t rptr_block_virt_base;  /* mapping of the register block holding IH_RB_RPTR
                                     (8-byte aligned) */
  uint64_t rptr_block_size_bytes; /* size of that mapping */
  uint64_t rptr_offset_bytes;     /* byte offset of IH_RB_RPTR in it (a multiple of 4) */
} hsa_rt_baremetal_ih_ring_t;

/* Twelve gfx9 MQD register images of an AQL compute queue, computed by the runtime (amdkfd's
 * struct v9_mqd field names), for a host that programs an HQD's registers itself; the whole
 * 2048-byte image is at hsa_rt_baremetal_queue_mapping_t.mqd_address. 48 bytes. */
typedef struct hsa_rt_baremetal_mqd_s {
  uint32_t cp_hqd_pq_base_lo;              /* ring address >> 8, low 32 bits */
  uint32_t cp_hqd_pq_base_hi;              /* ring address >> 8, high 32 bits */
  uint32_t cp_hqd_pq_control;              /* QUEUE_SIZE | RPTR_BLOCK_SIZE 5 << 8 | QUEUE_FULL_EN |
                                              WPP_CLAMP_EN | SLOT_BASED_WPTR 2 << 25 |
                                              NO_UPDATE_RPTR | UNORD_DISPATCH */
  uint32_t cp_hqd_pq_rptr_report_addr_lo;
  uint32_t cp_hqd_pq_rptr_report_addr_hi;
  uint32_t cp_hqd_pq_wptr_poll_addr_lo;
  uint32_t cp_hqd_pq_wptr_poll_addr_hi;
  uint32_t cp_hqd_pq_doorbell_control;     /* dword offset << 2 | DOORBELL_BIF_DROP |
                                              DOORBELL_EN */
  uint32_t cp_hqd_aql_control;             /* CONTROL0 = 1 */
  uint32_t cp_hqd_eop_base_addr_lo;        /* EOP address >> 8, low 32 bits */
  uint32_t cp_hqd_eop_base_addr_hi;
  uint32_t cp_hqd_eop_control;             /* EOP_SIZE */
} hsa_rt_baremetal_mqd_t;

/* A compute queue the GPU is to serve (map_queue) or stop serving (unmap_queue). Addresses are
 * GPU addresses but mqd_virt; the ring, amd_queue_t, EOP buffer and MQD stay valid until
 * unmap_queue returned. 128 bytes. */
typedef struct hsa_rt_baremetal_queue_mapping_s {
  uint32_t node;            /* the GPU node id */
  uint32_t doorbell;        /* the doorbell index the queue listens on */
  uint64_t ring;            /* the ring of 64-byte AQL packets */
  uint64_t ring_size_bytes;
  uint64_t read_pointer;    /* where the CP reports the read index (amd_queue_t.read_dispatch_id) */
  uint64_t write_pointer;   /* where the CP polls the write index (amd_queue_t.write_dispatch_id) */
  uint64_t amd_queue;       /* the amd_queue_t (its first 40 bytes are the hsa_queue_t) */
  uint64_t eop;             /* the end-of-pipe buffer the runtime allocated */
  uint64_t eop_size_bytes;
  hsa_rt_baremetal_mqd_t mqd;
  uint64_t mqd_address;     /* the whole MQD (2048 bytes, struct v9_mqd, as amdkfd fills an
                               AQL queue's): a KIQ MAP_QUEUES' mqd_addr */
  uint64_t mqd_virt;        /* the CPU virtual address of that MQD */
} hsa_rt_baremetal_queue_mapping_t;

/* One memory bank of a node: KFD's nodes/N/mem_banks/M/properties. 24 bytes. */
typedef struct hsa_rt_baremetal_memory_bank_s {
  uint32_t heap_type;       /* 0 system, 1 frame buffer public, 2 frame buffer private */
  uint32_t flags;           /* HSA_MEM_FLAGS_* */
  uint64_t size_bytes;      /* size_in_bytes */
  uint32_t width_bits;      /* width */
  uint32_t mem_clk_max_mhz; /* mem_clk_max */
} hsa_rt_baremetal_memory_bank_t;

/* One topology node (a CPU or a GPU agent): the fields, units and meanings of KFD's
 * nodes/N/properties. A node is a GPU when simd_count > 0. Caches and IO links are not
 * described (the runtime reports none). 304 bytes. */
typedef struct hsa_rt_baremetal_node_s {
  uint32_t node_id;
  uint32_t gpu_id;
  char name[64];            /* NUL-terminated UTF-8: "gfx90a", or a CPU's model */
  char marketing_name[64];  /* NUL-terminated UTF-8; may be empty */
  uint32_t cpu_cores_count;
  uint32_t simd_count;
  uint32_t cpu_core_id_base;
  uint32_t simd_id_base;
  uint32_t max_waves_per_simd;
  uint32_t lds_size_in_kb;
  uint32_t gds_size_in_kb;
  uint32_t num_gws;
  uint32_t wave_front_size;
  uint32_t array_count;
  uint32_t simd_arrays_per_engine;
  uint32_t cu_per_simd_array;
  uint32_t simd_per_cu;
  uint32_t max_slots_scratch_cu;
  uint32_t gfx_target_version;   /* e.g. 90010 for gfx90a: decides the agent's ISA */
  uint32_t vendor_id;
  uint32_t device_id;
  uint32_t location_id;
  uint32_t domain;
  uint32_t num_sdma_engines;
  uint32_t num_sdma_xgmi_engines;
  uint32_t num_sdma_queues_per_engine;
  uint32_t num_cp_queues;
  uint32_t max_engine_clk_fcompute;  /* MHz */
  uint32_t max_engine_clk_ccompute;  /* MHz */
  uint32_t fw_version;
  uint32_t capability;
  uint32_t debug_prop;
  uint32_t sdma_fw_version;
  uint32_t num_xcc;
  uint32_t asic_revision;
  uint32_t reserved;                 /* 0 */
  uint64_t hive_id;
  uint64_t unique_id;
  uint64_t local_mem_size;           /* bytes */
  const hsa_rt_baremetal_memory_bank_t* mem_banks;  /* mem_banks_count entries; NULL if 0 */
  uint32_t mem_banks_count;
  uint32_t reserved1;                /* 0 */
} hsa_rt_baremetal_node_t;

/* What a firmware hands the runtime. NULL optional callbacks mean "nothing to do". A callback
 * returning hsa_status_t reports failure with any status but HSA_STATUS_SUCCESS; the HSA call
 * that caused it then fails with that status. 232 bytes (version 1: 216). */
/* The ih_filter word of hsa_rt_baremetal_host_t: the IH entries of VMIDs first..last (0-15)
 * and, when pasid is not 0, of that PASID only are this runtime's (amdkfd's
 * first_vmid_kfd..last_vmid_kfd on an IH ring shared with amdgpu); the others are skipped.
 * 0 instead takes every entry. */
#define HSA_RT_BAREMETAL_IH_FILTER(first_vmid, last_vmid, pasid)                          \
  (0x80000000u | ((uint32_t)(first_vmid) & 0xfu) | (((uint32_t)(last_vmid) & 0xfu) << 4) | \
   (((uint32_t)(pasid) & 0xffffu) << 8))

typedef struct hsa_rt_baremetal_host_s {
  uint32_t version;   /* HSA_RT_BAREMETAL_HOST_VERSION */
  uint32_t ih_filter; /* 0, or HSA_RT_BAREMETAL_IH_FILTER(first, last, pasid) */
  void* context;      /* first argument of every callback */

  /* Memory: carve_out_count regions, at least one of system memory (the runtime's signals,
   * queues and kernarg live there). */
  const hsa_rt_baremetal_carve_out_t* carve_outs;
  uint32_t carve_out_count;
  /* Topology: node_count nodes in node-id order. */
  uint32_t node_count;
  const hsa_rt_baremetal_node_t* nodes;

  hsa_rt_baremetal_doorbells_t doorbells;
  hsa_rt_baremetal_ih_ring_t ih_ring;
  /* Ticks per second of timestamp_ticks; not 0. */
  uint64_t timestamp_frequency_hz;

  /* Zeroes [gpu_va, gpu_va + size_bytes) of PRIVATE_VRAM (an SDMA constant fill), before the
   * runtime hands it out. Required when a carve-out is PRIVATE_VRAM. */
  hsa_status_t (*clear_device_memory)(void* context, uint64_t gpu_va, uint64_t size_bytes);
  /* Makes [gpu_va, gpu_va + size_bytes) of a carve-out reachable by the GPUs of nodes[0 ..
   * node_count) (per-node page tables). Optional: carve-outs are then mapped for every node. */
  hsa_status_t (*map_memory)(void* context, uint64_t gpu_va, uint64_t size_bytes,
                             const uint32_t* nodes, uint32_t node_count);
  /* Makes the GPU serve the queue (KIQ MAP_QUEUES, or program an HQD from the MQD).
   * HSA_STATUS_ERROR_OUT_OF_RESOURCES when no HQD is free. Required. */
  hsa_status_t (*map_queue)(void* context, const hsa_rt_baremetal_queue_mapping_t* mapping);
  /* Stops the queue (dequeue the HQD); once it returns the GPU no longer reads its ring. May
   * block. Required. */
  hsa_status_t (*unmap_queue)(void* context, const hsa_rt_baremetal_queue_mapping_t* mapping);
  /* Clears RB_OVERFLOW (IH_RB_CNTL.WPTR_OVERFLOW_CLEAR) after the runtime saw it. Optional;
   * interrupt context. */
  void (*ih_overflow_clear)(void* context);
  /* Sleeps the calling CPU until an interrupt may have arrived or deadline_ticks passed. It
   * must call still_waiting(waiter) with interrupts masked and sleep only if it returns true,
   * unmasking and sleeping atomically (x86: sti; hlt), so that no wake-up is lost. Spurious
   * returns are allowed. Required. */
  void (*wait_for_interrupt)(void* context, uint64_t deadline_ticks,
                             bool (*still_waiting)(void* waiter), void* waiter);
  /* Wakes CPUs sleeping in wait_for_interrupt after a software-signaled event (an IPI, or
   * nothing on one core). Optional; must not block. */
  void (*wake_waiters)(void* context);
  /* A monotonic timestamp, ticks of timestamp_frequency_hz. Required. */
  uint64_t (*timestamp_ticks)(void* context);
  /* Receives the library's log, one NUL-terminated line per record up to info level: each
   * failing call's error message (what HSA_RT_LOG=1 prints on Linux), warnings, errors.
   * Optional. */
  void (*log)(void* context, const char* line);

  /* Only in a build for a target without an OS (--target x86_64-unknown-none, where the
   * library is no_std), ignored elsewhere: */
  /* The library's heap: size bytes aligned to align (a power of two), or NULL when out of
   * memory. Required there. The first successful registration's allocate and deallocate
   * serve the library from then on; a later registration must pass the same two. */
  void* (*allocate)(void* context, size_t size, size_t align);
  /* Gives back what allocate returned, with the same size and align. Required with allocate. */
  void (*deallocate)(void* context, void* ptr, size_t size, size_t align);
  /* Called after a panic of the library (its message, also given to log) and must not
   * return. Optional: the CPU then spins forever. */
  void (*abort)(void* context, const char* message);

  /* Version 2 on: the GPU context the firmware set up for the runtime's queues. A version-1
   * host's struct ends before these fields (216 bytes); the runtime then takes their zero
   * meanings. */
  /* The VMID the runtime's queues run under (each MQD's cp_hqd_vmid), 0-15. */
  uint32_t queue_vmid;
  /* SH_MEM_BASES programmed for that VMID (SHARED_BASE bits 31:16, PRIVATE_BASE 15:0); the
   * runtime writes the apertures it names into each amd_queue_t. 0: amdkfd's gfx9 value
   * 0x00010002 (LDS at 1 << 48, scratch at 2 << 48). */
  uint32_t sh_mem_bases;
  /* CP_MEC_DOORBELL_RANGE_LOWER and _UPPER as programmed (byte offsets into the doorbell
   * aperture of the first and last doorbell dword the MEC takes). hsa_init fails with
   * HSA_STATUS_ERROR_INVALID_ARGUMENT when a granted doorbell lies outside. Both 0: not
   * checked. */
  uint32_t mec_doorbell_range_lower;
  uint32_t mec_doorbell_range_upper;
} hsa_rt_baremetal_host_t;

/* Registers the host the next hsa_init builds the runtime over (bare-metal build only).
 * Returns HSA_STATUS_ERROR_INVALID_ARGUMENT for a NULL host, a version other than
 * HSA_RT_BAREMETAL_HOST_VERSION or 1, a queue_vmid past 15, a mec_doorbell_range_lower above
 * its upper, a NULL required callback, timestamp_frequency_hz 0, an
 * ih_filter that is neither 0 nor an HSA_RT_BAREMETAL_IH_FILTER with first <= last, a table
 * pointer that is NULL with a non-zero count, an unknown carve-out kind, a PRIVATE_VRAM
 * carve-out with a virt_base or without clear_device_memory, a CPU-visible carve-out with
 * virt_base 0, a node name that is not NUL-terminated UTF-8, or (without an OS) a NULL
 * allocate/deallocate or ones other than the first registration's (the host's log callback, when
 * given, receives the message naming the field); HSA_STATUS_ERROR_INVALID_RUNTIME_STATE while
 * the runtime is initialized. What only the platform can check (overlapping carve-outs,
 * doorbells outside the aperture, the IH ring's alignment, no room for the event page) makes
 * hsa_init fail with HSA_STATUS_ERROR_INVALID_ARGUMENT or ..._OUT_OF_RESOURCES. hsa_init
 * before any registration returns HSA_STATUS_ERROR_INVALID_RUNTIME_STATE. */
hsa_status_t hsa_rt_baremetal_init(const hsa_rt_baremetal_host_t* host);

/* The firmware's ISR for the GPU's IH interrupt calls this (bare-metal build only): it drains
 * the IH ring, marks the events the CP's end-of-pipe entries name, writes the read pointer
 * back and wakes waiters. Returns the number of events signaled (0 when the runtime is not
 * initialized). Never blocks, never allocates. */
uint64_t hsa_rt_baremetal_interrupt(void);

#ifdef __cplusplus
}
#endif

#endif

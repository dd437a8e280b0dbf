/* SPDX-License-Identifier: MIT */
/*
 * vgpu ring protocol: the one definition of the bytes that pass between a
 * client (guest CUDA library) and the vgpu-worker that owns its vGPU.
 *
 * The same bytes travel over every transport:
 *   local - a Unix-socket handshake with vgpud, then a memfd ring and two
 *           eventfd doorbells handed over by the worker (SCM_RIGHTS);
 *   pci   - the mdev's BAR2 ring and BAR0 doorbell (later issue).
 *
 * A ring is one shared mapping:
 *
 *   +-------------------------+ 0
 *   | struct vgpu_ring_header | one page: layout, indices, sleep flags
 *   +-------------------------+ sq_offset
 *   | sq_entries x vgpu_sqe   | submission queue (client -> worker)
 *   +-------------------------+ cq_offset
 *   | cq_entries x vgpu_cqe   | completion queue (worker -> client)
 *   +-------------------------+ data_offset
 *   | data area               | payloads: copy chunks, kernel parameters,
 *   |                         | names, library images, device info
 *   +-------------------------+ total_size
 *
 * The client is untrusted. The worker keeps its own copy of the layout
 * (never re-reads the layout fields of the header), copies every
 * descriptor out of the ring before it looks at it, and checks every
 * index, offset, length and handle. A bad descriptor gets an error
 * completion; a bad index (a tail that is not within sq_entries of the
 * head) breaks the ring: the worker sets VGPU_RING_BROKEN and drops the
 * client. Status codes in completions are CUresult values (cuda.h).
 */
#ifndef VGPU_PROTOCOL_H
#define VGPU_PROTOCOL_H

#include <stdint.h>

#define VGPU_PROTO_MAGIC	     0x55504756u /* "VGPU" little-endian */
#define VGPU_PROTO_MAJOR	     1 /* incompatible changes bump this */
#define VGPU_PROTO_MINOR	     7 /* compatible additions bump this */
#define VGPU_PROTO_MINOR_CLUSTERS    5 /* LAUNCH's cluster shape */
#define VGPU_PROTO_MINOR_HOST_MAP    5 /* HOST_REGION_ADDRESS */
#define VGPU_PROTO_MINOR_COOPERATIVE 6 /* LAUNCH's cooperative bit */
#define VGPU_PROTO_MINOR_TENSOR_MAP  7 /* TENSOR_MAP */

#define VGPU_NAME_MAX	     64	 /* vGPU names, including the NUL */
#define VGPU_MESSAGE_MAX     256 /* human-readable error text, with NUL */
#define VGPU_KERNEL_NAME_MAX 1024
#define VGPU_MAX_PARAMS	     64	   /* kernel parameters per kernel */
#define VGPU_MAX_PARAM_BYTES 32764 /* CUDA's limit on a kernel's params */
#define VGPU_MAX_IMAGE_BYTES (256u << 20) /* one library image */

/* Default ring geometry chosen by the worker (the client reads it). */
#define VGPU_RING_SQ_ENTRIES  256
#define VGPU_RING_CQ_ENTRIES  256
#define VGPU_RING_DATA_BYTES  (16u << 20)
#define VGPU_COPY_CHUNK_BYTES (1u << 20) /* clients chunk copies to this */

/* ---- handshake on the local transport's client socket ---------------- */

/*
 * Client -> vgpud, the first and only message a client sends on the
 * socket. vgpud checks magic, version, the name and the peer credentials
 * (SO_PEERCRED) and then passes the connection to that vGPU's worker.
 */
struct vgpu_hello {
	uint32_t magic;
	uint16_t major;
	uint16_t minor;
	uint32_t flags; /* none defined yet; must be 0 */
	uint32_t reserved;
	char vgpu_name[VGPU_NAME_MAX]; /* NUL-terminated */
};

enum vgpu_hello_status {
	VGPU_HELLO_OK = 0,
	VGPU_HELLO_BAD_MESSAGE = 1, /* wrong size, magic or flags */
	VGPU_HELLO_BAD_VERSION = 2, /* major version differs */
	VGPU_HELLO_NO_SUCH_VGPU = 3,
	VGPU_HELLO_PERMISSION = 4,  /* peer uid is not the vGPU's user */
	VGPU_HELLO_UNAVAILABLE = 5, /* worker restarting or failed */
	VGPU_HELLO_RESOURCES = 6,   /* too many clients, no memory */
};

/*
 * vgpud or the worker -> client. On VGPU_HELLO_OK the worker attaches
 * three descriptors with SCM_RIGHTS, in this order: the ring memfd, the
 * submit doorbell (an eventfd: client writes, worker waits on it) and the
 * completion doorbell (the client's end of a datagram socket pair: the
 * worker sends a byte, the client polls and reads; a socket, so that
 * nothing the client does to its end can make the worker block). After the
 * handshake the socket carries nothing; its closing tells either side
 * that the other is gone.
 */
struct vgpu_hello_reply {
	uint32_t magic;
	uint16_t major; /* the server's version */
	uint16_t minor;
	int32_t status; /* enum vgpu_hello_status */
	uint32_t reserved;
	uint64_t ring_size;		/* bytes to mmap from the memfd */
	char message[VGPU_MESSAGE_MAX]; /* why, when status != OK */
};

/* ---- ring header --------------------------------------------------- */

/* header.status, written by the worker */
enum vgpu_ring_status {
	VGPU_RING_OK = 0,
	VGPU_RING_BROKEN = 1, /* client violated the protocol; dropped */
	VGPU_RING_DEAD = 2,   /* the vGPU failed (fault, watchdog, stop) */
};

#define VGPU_CACHELINE 64

struct vgpu_ring_header {
	/* layout: written once by the worker, read-only to the client */
	uint32_t magic;
	uint16_t major;
	uint16_t minor;
	uint32_t features;   /* VGPU_FEATURE_* */
	uint32_t sq_entries; /* power of two */
	uint32_t cq_entries; /* power of two */
	uint32_t sq_offset;
	uint32_t cq_offset;
	uint32_t reserved0;
	uint64_t data_offset;
	uint64_t data_size;
	uint64_t total_size;

	/* indices, free-running u32, each on its own line (one writer each) */
	_Alignas(VGPU_CACHELINE) uint32_t sq_tail; /* client writes */
	_Alignas(VGPU_CACHELINE) uint32_t sq_head; /* worker writes */
	_Alignas(VGPU_CACHELINE) uint32_t cq_tail; /* worker writes */
	_Alignas(VGPU_CACHELINE) uint32_t cq_head; /* client writes */

	/*
	 * Spin-then-sleep: a side that found nothing to do for a while sets
	 * its flag, issues a full barrier, re-checks its queue, and only
	 * then blocks on its eventfd. The other side rings the doorbell
	 * after publishing only when it sees the flag set.
	 */
	_Alignas(VGPU_CACHELINE) uint32_t worker_sleeping; /* worker writes */
	_Alignas(VGPU_CACHELINE) uint32_t client_sleeping; /* client writes */
	_Alignas(VGPU_CACHELINE) uint32_t status; /* enum vgpu_ring_status */
	int32_t error; /* CUresult the vGPU failed with, when status DEAD */
	/* Written by the worker (minor 3): bumped each time the vGPU's
	 * composition changes (a resize or a move). A client whose device
	 * description (vgpu_device_info.change_count) differs reads it again
	 * before it answers a device query. */
	uint32_t change_count;
};

#define VGPU_FEATURE_NONE 0u

/* ---- descriptors --------------------------------------------------- */

enum vgpu_opcode {
	VGPU_OP_NOP = 0,
	/* out: struct vgpu_device_info at data[a0], a1 bytes available */
	VGPU_OP_GET_DEVICE_INFO = 1,

	/* memory; device pointers are addresses in the vGPU's VA range */
	VGPU_OP_MEM_ALLOC = 10,	   /* a0 = bytes -> r0 = device pointer */
	VGPU_OP_MEM_FREE = 11,	   /* a0 = device pointer */
	VGPU_OP_MEM_GET_INFO = 12, /* -> r0 = free, r1 = total (quota) */
	VGPU_OP_MEMCPY_HTOD = 13,  /* a0 = dst, a1 = data offset, a2 = bytes */
	VGPU_OP_MEMCPY_DTOH = 14,  /* a0 = src, a1 = data offset, a2 = bytes */
	VGPU_OP_MEMCPY_DTOD = 15,  /* a0 = dst, a1 = src, a2 = bytes */
	VGPU_OP_MEMSET = 16,	   /* a0 = dst, a1 = value, a2 = count,
				      a3 = element size: 1, 2 or 4 */

	/* code: a library image is staged in pieces, then loaded */
	VGPU_OP_STAGE_WRITE = 20,    /* a0 = offset in stage, a1 = data off,
					a2 = bytes */
	VGPU_OP_LIBRARY_LOAD = 21,   /* a0 = image bytes (staged) ->
					r0 = library handle */
	VGPU_OP_LIBRARY_UNLOAD = 22, /* handle = library */
	/* handle = library, a0 = data offset of a NUL-terminated name,
	 * a1 = bytes; -> r0 = kernel handle, and struct vgpu_kernel_info
	 * written at data[a2] (a3 bytes available) */
	VGPU_OP_LIBRARY_GET_KERNEL = 23,
	/* handle = kernel, stream = stream; a0 = gridX | gridY << 32,
	 * a1 = gridZ | blockX << 32, a2 = blockY | blockZ << 32,
	 * a3 = shared memory bytes | clusterX << 32 | clusterY << 40 |
	 * clusterZ << 48 (minor version 5: a thread-block cluster shape,
	 * each edge 1 to 16 and at most 16 blocks, the grid a multiple of
	 * it; all three 0: no cluster) | VGPU_LAUNCH_COOPERATIVE (minor
	 * version 6: every block resident at once, as
	 * cuLaunchCooperativeKernel; no cluster then; more blocks than the
	 * slice holds: CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE), bits 57-63 0;
	 * a4 = data offset of the parameter buffer laid out as struct
	 * vgpu_kernel_info says, a5 = its bytes */
	VGPU_OP_LAUNCH = 24,
	/* handle = library, a0 = data offset of a NUL-terminated name of a
	 * __device__/__constant__ variable, a1 = bytes; -> r0 = its device
	 * address, r1 = its size. While the library stays loaded, copies and
	 * memsets of this client may touch [r0, r0 + r1) (minor version 1) */
	VGPU_OP_LIBRARY_GET_GLOBAL = 25,
	/* Kernel attributes (minor version 3), handle = kernel:
	 * KERNEL_GET_ATTRIBUTE: a0 = CUfunction_attribute -> r0 = its value
	 * (an int, sign-extended). KERNEL_SET_ATTRIBUTE: a0 = attribute
	 * (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
	 * _PREFERRED_SHARED_MEMORY_CARVEOUT, and from minor version 4 the
	 * cluster ones, 10 to 15), a1 = value.
	 * KERNEL_OCCUPANCY: a0 = threads per block, a1 = dynamic shared
	 * bytes, a2 = CU_OCCUPANCY_* flags -> r0 = resident blocks per SM.
	 * KERNEL_CLUSTERS (minor version 4): a0..a3 the grid, block and
	 * shared memory bytes as LAUNCH's, a4 = clusterX | clusterY << 16 |
	 * clusterZ << 32 (all 0: none given), a5 = CUclusterSchedulingPolicy
	 * | query << 32 (enum vgpu_cluster_query) -> r0 = the answer. */
	VGPU_OP_KERNEL_GET_ATTRIBUTE = 26,
	VGPU_OP_KERNEL_SET_ATTRIBUTE = 27,
	VGPU_OP_KERNEL_OCCUPANCY = 28,
	VGPU_OP_KERNEL_CLUSTERS = 29,

	/* streams: stream handle 0 is the client's default stream */
	VGPU_OP_STREAM_CREATE = 30, /* -> r0 = stream handle */
	VGPU_OP_STREAM_DESTROY = 31,
	VGPU_OP_STREAM_SYNC = 32,
	VGPU_OP_STREAM_QUERY = 33, /* status CUDA_ERROR_NOT_READY if busy */
	VGPU_OP_CTX_SYNC = 34,	   /* every stream of this client */
	/* a context limit of the vGPU (minor version 4; its clients share
	 * it, as they share the context): a0 = CUlimit, a1 = 1 to set it
	 * to a2 first (0: only read) -> r0 = its value now */
	VGPU_OP_CTX_LIMIT = 35,

	/* events: handle = event */
	VGPU_OP_EVENT_CREATE = 40, /* a0 = CU_EVENT_* flags -> r0 = handle */
	VGPU_OP_EVENT_RECORD = 41, /* stream = stream */
	VGPU_OP_EVENT_SYNC = 42,
	VGPU_OP_EVENT_QUERY = 43,
	VGPU_OP_EVENT_ELAPSED = 44, /* handle = start, a0 = end handle ->
				       r0 = milliseconds as float bits */
	VGPU_OP_EVENT_DESTROY = 45,
	VGPU_OP_STREAM_WAIT_EVENT = 46, /* stream waits for event handle */
	/*
	 * Host functions (minor version 3): cuLaunchHostFunc that does not
	 * block its caller. stream = stream; a0 = data offset of the
	 * stream's struct vgpu_gate (8-byte aligned, the same for every gate
	 * of a stream), a1 = sequence number, above the stream's last one.
	 * The worker enqueues on the stream "write a1 to gate.reached" (done
	 * once everything before it is) and then "wait until the client has
	 * written a1 or more to gate.open". The client runs the function when
	 * it sees reached >= a1, then writes open = a1. The GPU never waits
	 * on the client's word itself: the worker copies it, never past a1,
	 * into memory of its own, and opens every gate of a stream or a
	 * client that goes away. NOT_SUPPORTED: the library waits for the
	 * stream and calls the function itself.
	 */
	VGPU_OP_STREAM_GATE = 47,

	/*
	 * Host regions (minor version 2): page-locked host memory shared by
	 * the client and the worker, for cudaMallocHost/cuMemAllocHost. A copy
	 * from or to a region is one DMA, with no bounce through the data area.
	 *
	 * HOST_REGION_CREATE: a0 = bytes (> 0, <= VGPU_HOST_REGION_MAX_BYTES,
	 * rounded up to pages) -> r0 = region handle, r1 = its size. Before it
	 * posts the completion, the worker sends on the client socket one
	 * packet, struct vgpu_region_msg, with the region's memfd attached
	 * (SCM_RIGHTS); the client maps it MAP_SHARED. A client may hold
	 * regions of VGPU_HOST_REGIONS_MAX_BYTES in all.
	 */
	VGPU_OP_HOST_REGION_CREATE = 50,
	VGPU_OP_HOST_REGION_DESTROY = 51, /* handle = region */
	/* handle = region, stream = stream; a0 = device address, a1 = offset
	 * in the region, a2 = bytes. Like MEMCPY_HTOD/DTOH: complete when
	 * the copy is done. */
	VGPU_OP_MEMCPY_REGION_HTOD = 52,
	VGPU_OP_MEMCPY_REGION_DTOH = 53,
	/* Mapped host memory (minor version 5): handle = region -> r0 = the
	 * device address of its first byte (kernels may read and write the
	 * region there; the worker's own address, as unified addressing
	 * has it), r1 = its size. CUDA_ERROR_NOT_SUPPORTED where the
	 * backend cannot map it into the device. */
	VGPU_OP_HOST_REGION_ADDRESS = 54,

	/*
	 * A library's kernels (minor version 4): handle = library, a0 =
	 * index, a1 = data offset, a2 = bytes there -> r0 = the library's
	 * number of kernels, r1 = the bytes of kernel a0's name with its NUL
	 * (0 past the end), the name written at data[a1] when a2 holds it.
	 */
	VGPU_OP_LIBRARY_KERNEL_NAME = 60,

	/*
	 * A tensor map (minor version 7): a0 = data offset of a struct
	 * vgpu_tensor_map (8-byte aligned), a1 = its bytes. The worker
	 * encodes it as cuTensorMapEncodeTiled, _Im2col, _Im2colWide or
	 * cuTensorMapReplaceAddress would (kind) and writes the 128 bytes
	 * into its map; the driver's own error otherwise. The map is bytes
	 * the client passes to its kernels: nothing is checked beyond what
	 * the encoding needs (a kernel can be given any pointer anyway).
	 */
	VGPU_OP_TENSOR_MAP = 61,

	VGPU_OP_COUNT_ /* not an opcode */
};

/* VGPU_OP_LAUNCH a3: a cooperative launch (minor version 6). */
#define VGPU_LAUNCH_COOPERATIVE (1ull << 56)

/* Submission queue entry: 64 bytes, fixed. */
struct vgpu_sqe {
	uint16_t opcode; /* enum vgpu_opcode */
	uint16_t flags;	 /* none defined yet; must be 0 */
	uint32_t tag;	 /* echoed in the completion */
	uint32_t stream; /* stream handle, 0 = default stream */
	uint32_t handle; /* object the op acts on, per opcode */
	uint64_t a[6];
};

/* VGPU_OP_KERNEL_CLUSTERS: what is asked. */
enum vgpu_cluster_query {
	VGPU_CLUSTERS_ACTIVE = 0,   /* cuOccupancyMaxActiveClusters */
	VGPU_CLUSTERS_MAX_SIZE = 1, /* cuOccupancyMaxPotentialClusterSize */
};

/* Completion queue entry: 32 bytes, fixed. */
struct vgpu_cqe {
	uint32_t tag;
	int32_t status; /* CUresult */
	uint64_t r[2];
	uint64_t reserved;
};

_Static_assert(sizeof(struct vgpu_sqe) == 64, "sqe is 64 bytes");
_Static_assert(sizeof(struct vgpu_cqe) == 32, "cqe is 32 bytes");

/* VGPU_OP_STREAM_GATE: one per stream, in the data area. */
struct vgpu_gate {
	uint64_t reached; /* written by the GPU, read by the client */
	uint64_t open;	  /* written by the client, read by the worker */
};

#define VGPU_HOST_REGION_MAX_BYTES  (4ull << 30)  /* one region */
#define VGPU_HOST_REGIONS_MAX_BYTES (16ull << 30) /* one client's, in all */
#define VGPU_REGION_MSG_MAGIC	    0x47525056u	  /* "VPRG" little-endian */

/* Worker -> client on the client socket, with the region's memfd. */
struct vgpu_region_msg {
	uint32_t magic;
	uint32_t handle; /* as r0 of the HOST_REGION_CREATE completion */
	uint64_t size;
};

/* ---- payloads in the data area -------------------------------------- */

enum vgpu_backend_kind {
	VGPU_BACKEND_CUDA = 1,
	VGPU_BACKEND_SIM = 2, /* CPU simulator: never a GPU figure */
};

#define VGPU_DEVICE_ATTRS 160 /* > CU_DEVICE_ATTRIBUTE_MAX in CUDA 13.0 */

/* VGPU_OP_GET_DEVICE_INFO: what a client sees as "the device". */
struct vgpu_device_info {
	char name[256];	    /* "vGPU <name>: 16-SM slice of NVIDIA H100 ..." */
	char gpu_name[128]; /* the physical GPU (or "vgpu simulated GPU") */
	char vgpu_name[VGPU_NAME_MAX];
	uint32_t backend;  /* enum vgpu_backend_kind */
	uint32_t sm_count; /* SMs of the slice */
	uint32_t cc_major;
	uint32_t cc_minor;
	uint64_t memory_quota;	 /* bytes the vGPU may allocate */
	uint32_t driver_version; /* as cuDriverGetVersion */
	uint32_t change_count;	 /* the ring header's when this was written
				    (minor 3; 0 before) */
	uint8_t uuid[16];
	/* attrs[i] = value of CUdevice_attribute i for this vGPU; the
	 * multiprocessor count is the slice's. 0 where unknown. */
	int32_t attrs[VGPU_DEVICE_ATTRS];
};

/* One kernel parameter as the worker read it at load time. */
struct vgpu_param {
	uint32_t offset; /* within the parameter buffer */
	uint32_t size;
};

/* VGPU_OP_LIBRARY_GET_KERNEL: the parameter layout of one kernel. */
struct vgpu_kernel_info {
	uint32_t nparams;
	uint32_t param_bytes; /* size of the buffer a launch passes */
	struct vgpu_param params[VGPU_MAX_PARAMS];
};

/* VGPU_OP_TENSOR_MAP: what is asked. */
enum vgpu_tensor_map_kind {
	VGPU_TENSOR_MAP_TILED = 1,	     /* cuTensorMapEncodeTiled */
	VGPU_TENSOR_MAP_IM2COL = 2,	     /* cuTensorMapEncodeIm2col */
	VGPU_TENSOR_MAP_IM2COL_WIDE = 3,     /* cuTensorMapEncodeIm2colWide */
	VGPU_TENSOR_MAP_REPLACE_ADDRESS = 4, /* cuTensorMapReplaceAddress */
};

#define VGPU_TENSOR_MAP_RANK_MAX 5 /* CUDA's */
#define VGPU_TENSOR_MAP_BYTES	 128

/*
 * VGPU_OP_TENSOR_MAP's request and answer. The CUDA call's arguments by
 * name; the arrays hold rank entries (strides rank - 1, the im2col
 * corners rank - 2), the rest 0. REPLACE_ADDRESS reads map and
 * global_address only. The enums are cuda.h's values.
 */
struct vgpu_tensor_map {
	uint32_t kind; /* enum vgpu_tensor_map_kind */
	uint32_t data_type;
	uint32_t rank;
	uint32_t interleave;
	uint32_t swizzle;
	uint32_t l2_promotion;
	uint32_t oob_fill;
	uint32_t wide_mode; /* IM2COL_WIDE: CUtensorMapIm2ColWideMode */
	uint64_t global_address;
	uint64_t global_dim[VGPU_TENSOR_MAP_RANK_MAX];
	uint64_t global_strides[VGPU_TENSOR_MAP_RANK_MAX - 1];
	uint32_t box_dim[VGPU_TENSOR_MAP_RANK_MAX];
	uint32_t element_strides[VGPU_TENSOR_MAP_RANK_MAX];
	/* IM2COL: the pixel box's corners; IM2COL_WIDE: [0] its width's */
	int32_t lower_corner[VGPU_TENSOR_MAP_RANK_MAX - 2];
	int32_t upper_corner[VGPU_TENSOR_MAP_RANK_MAX - 2];
	uint32_t channels_per_pixel;
	uint32_t pixels_per_column;
	uint8_t map[VGPU_TENSOR_MAP_BYTES]; /* in (REPLACE_ADDRESS), out */
};

_Static_assert(sizeof(struct vgpu_tensor_map) == 312,
	       "struct vgpu_tensor_map is 312 bytes");

#endif /* VGPU_PROTOCOL_H */

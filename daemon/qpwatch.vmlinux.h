/* SPDX-License-Identifier: MIT */
/*
 * The kernel types qpwatch.bpf.c reads, and nothing else: a hand-written
 * slice of what `bpftool btf dump file /sys/kernel/btf/vmlinux format c`
 * prints, so that the build never needs the build host's kernel or its BTF
 * (docs/qpwatch.md, "BTF").
 *
 * - The structs carry only the members the program reads.  They are marked
 *   preserve_access_index, so clang records every access as a CO-RE
 *   relocation by member name, which libbpf resolves at load time against the
 *   running kernel's BTF (/sys/kernel/btf/vmlinux, and module BTF such as
 *   /sys/kernel/btf/ib_core when a type lives only there).  Member order,
 *   offsets and padding here do not matter; names and kinds do.
 * - enum ib_qp_type is read as a value, so its numbering matters; it is
 *   stable kernel ABI (it is also what RDMA netlink reports).
 * - The BPF constants are UAPI (linux/bpf.h) and never change.
 *
 * Checked against Debian's 6.1.0-56-amd64 (docs/qpwatch.md tells how).
 */
#ifndef __VMLINUX_H__
#define __VMLINUX_H__

typedef signed char __s8;
typedef unsigned char __u8;
typedef short __s16;
typedef unsigned short __u16;
typedef int __s32;
typedef unsigned int __u32;
typedef long long __s64;
typedef unsigned long long __u64;
typedef __u8 u8;
typedef __u16 u16;
typedef __u32 u32;
typedef __u64 u64;
typedef __u16 __be16;
typedef __u32 __be32;
typedef __u32 __wsum;
typedef _Bool bool;
enum { false = 0, true = 1 };

/* UAPI: include/uapi/linux/bpf.h */
enum bpf_map_type {
	BPF_MAP_TYPE_HASH = 1,
	BPF_MAP_TYPE_RINGBUF = 27,
};

enum {
	BPF_ANY = 0,
};

#pragma clang attribute push(__attribute__((preserve_access_index)), apply_to = record)

/* arch/x86/include/asm/ptrace.h (x86-64), what bpf_tracing.h's PT_REGS_*
 * macros name for kprobes.  Other architectures need their own here. */
#if defined(__TARGET_ARCH_x86)
struct pt_regs {
	unsigned long r15, r14, r13, r12, bp, bx, r11, r10, r9, r8;
	unsigned long ax, cx, dx, si, di, orig_ax, ip, cs, flags, sp, ss;
};
#else
#error "qpwatch.vmlinux.h: only __TARGET_ARCH_x86 has struct pt_regs here"
#endif

struct task_struct {
	struct task_struct *group_leader;
	char comm[16];
};

/* include/rdma/ib_verbs.h */
enum ib_qp_type {
	IB_QPT_SMI = 0,
	IB_QPT_GSI = 1,
	IB_QPT_RC = 2,
	IB_QPT_UC = 3,
	IB_QPT_UD = 4,
	IB_QPT_RAW_IPV6 = 5,
	IB_QPT_RAW_ETHERTYPE = 6,
	IB_QPT_RAW_PACKET = 8,
	IB_QPT_XRC_INI = 9,
	IB_QPT_XRC_TGT = 10,
	IB_QPT_MAX = 11,
	IB_QPT_DRIVER = 255,
};

struct ib_device {
	char name[64];
	u32 index;
};

struct ib_qp {
	struct ib_device *device;
	u32 qp_num;
	enum ib_qp_type qp_type;
};

#pragma clang attribute pop

#endif /* __VMLINUX_H__ */

// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Where one cong_control call spends its time: `make bench`'s "parts"
 * section builds lib/bbr3_ops.h's CCs again with -DBBR_PARTS_TIMING
 * (build/bench/, never installed) and reads the per-CPU sums below.
 * Without that flag every macro here is empty and the objects are the
 * ones bbrctl loads.
 *
 * A clock read (bpf_ktime_get_ns()) between the parts of the call: the
 * storage lookup ("get"), the inputs' copy ("in": bbr_cc_ack_in()), the
 * core ("core": bbr_core_main()), the parameter pick of a round start
 * ("pick") and the write-back ("out"). One more read after the last
 * gives the cost of a read itself ("clk"), which every part carries once.
 * The reads are ordered (rdtsc after lfence), so a part also pays for the
 * loads still in flight when it starts: the parts add up to more than an
 * uninstrumented call, and only comparisons within one run mean much.
 *
 * With -DBBR_PARTS_TWICE as well, the core runs first on a copy of the
 * socket's state and inputs ("first") and then on the socket's own
 * ("core"): both calls see the same data, warm; the first alone finds
 * the core's instructions and branch history cold, as every call of an
 * ordinary build does.
 */
#ifndef BBR_LIB_PARTS_TIMING_H
#define BBR_LIB_PARTS_TIMING_H

#ifdef BBR_PARTS_TIMING

/* The bench reads the fields by name, from the map's BTF
 * (selftests/bench/bench.py, parts_sums()). */
struct bbr_parts {
	u64 calls;
	u64 get_ns, in_ns, core_ns, pick_ns, out_ns, clk_ns;
	u64 first_ns, copy_ns;
	u64 round_starts;
	u64 t[2];		/* scratch: the clock at the last mark, now */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct bbr_parts);
} bbr_parts SEC(".maps");

#define BBR_PARTS_BEGIN()						\
	u32 parts_key_ = 0;						\
	struct bbr_parts *pt_ = bpf_map_lookup_elem(&bbr_parts, &parts_key_); \
	if (!pt_)							\
		return;							\
	pt_->t[0] = bpf_ktime_get_ns()

/* The time since the last mark goes to field; the clock is marked anew. */
#define BBR_PARTS_MARK(field)						\
	do {								\
		pt_->t[1] = bpf_ktime_get_ns();				\
		pt_->field += pt_->t[1] - pt_->t[0];			\
		pt_->t[0] = pt_->t[1];					\
	} while (0)

#define BBR_PARTS_END()							\
	do {								\
		pt_->calls++;						\
		pt_->clk_ns += bpf_ktime_get_ns() - pt_->t[0];		\
	} while (0)

#define BBR_PARTS_ROUND_START()	(pt_->round_starts++)

#ifdef BBR_PARTS_TWICE
struct bbr_parts_copy {
	struct bbr3_sk sks;
	struct bbr_sock s;
	struct bbr_rs r;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct bbr_parts_copy);
} bbr_parts_copy SEC(".maps");

/* The core on a copy of (core_, ack_): its instructions are cold, its
 * data warm from the copy. The copy's own time is copy_ns. */
#define BBR_PARTS_CORE_ON_COPY(core_, ack_, ext_)			\
	do {								\
		struct bbr_parts_copy *c_ =				\
			bpf_map_lookup_elem(&bbr_parts_copy, &parts_key_); \
		if (!c_)						\
			return;						\
		__builtin_memcpy(&c_->sks, (core_), sizeof(c_->sks));	\
		__builtin_memcpy(&c_->s, &(ack_)->s, sizeof(c_->s));	\
		__builtin_memcpy(&c_->r, &(ack_)->r, sizeof(c_->r));	\
		BBR_PARTS_MARK(copy_ns);				\
		bbr_core_main(&c_->sks, &c_->s, &c_->r, (ext_));	\
		BBR_PARTS_MARK(first_ns);				\
	} while (0)
#else
#define BBR_PARTS_CORE_ON_COPY(core_, ack_, ext_)
#endif

#else /* !BBR_PARTS_TIMING */

#define BBR_PARTS_BEGIN()
#define BBR_PARTS_MARK(field)
#define BBR_PARTS_END()
#define BBR_PARTS_ROUND_START()
#define BBR_PARTS_CORE_ON_COPY(core_, ack_, ext_)

#endif /* BBR_PARTS_TIMING */
#endif /* BBR_LIB_PARTS_TIMING_H */

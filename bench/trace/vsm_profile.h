/* SPDX-License-Identifier: GPL-2.0-only */
/* What vsm-profile.bpf.c counts and vsm-profile.c reads: samples by kernel address and task. */
#ifndef VSM_PROFILE_H
#define VSM_PROFILE_H

#define VSM_PROFILE_MAX_KEYS 32768
#define VSM_PROFILE_COMM_LEN 16

struct vsm_profile_key {
	__u64 ip; /* the interrupted kernel address; 0 for user space */
	char comm[VSM_PROFILE_COMM_LEN];
};

#endif

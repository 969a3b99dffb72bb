# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""The soak: bbr-bpf under hours-of-use conditions squeezed into minutes
(`make soak`, selftests/soak/run; README.md in this directory).

Everything the soak registers, attaches, pins or creates carries the tag
soak<pid>: CCs soak<pid>3 (bbr3), soak<pid>s (bbr_swift), soak<pid>u (the
copy that is unloaded under load), namespaces soak<pid>-0s/-0m/-0r, the
cgroup soak<pid>/ and its children. An operator's bbr3 or bbr_swift is
never touched.
"""

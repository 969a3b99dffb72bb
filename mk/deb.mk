# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# make deb: the Debian package, build/deb/bbr-bpf_VERSION_amd64.deb (and
# its -dbgsym, .buildinfo and .changes), built by dpkg-buildpackage from a
# copy of the tree (packaging/deb-build; packaging/debian/ is its debian/
# directory). Needs what `make setup` installs (debhelper, scdoc, the
# toolchain); lintian checks the result: `lintian build/deb/*.deb`.

DEB_DIR := $(BUILD_DIR)/deb

.PHONY: deb
deb:
	packaging/deb-build $(DEB_DIR)

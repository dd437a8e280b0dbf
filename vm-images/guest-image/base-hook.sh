#!/bin/sh
# SPDX-License-Identifier: MIT
#
# vm-images/guest-image/base-hook.sh ROOT: mmdebstrap's customize hook for
# the guest image's base system (build.sh), run once per base build after
# the packages are installed. Only what needs the guest's own tools (in a
# chroot); the files of the image are laid over the base later, on every
# build (build.sh, rootfs/).
set -eu
root=$1

# dpkg's unsafe I/O (no fsync per file) is for the build only
sed -i '/^force-unsafe-io$/d' "$root/etc/dpkg/dpkg.cfg.d/99mmdebstrap"

# root logs in without a password (a local test VM: say so in the motd)
chroot "$root" passwd -q -d root
# a login prompt on the serial port even without console=ttyS0
chroot "$root" systemctl -q enable serial-getty@ttyS0.service
# DHCP on every Ethernet link (rootfs/etc/systemd/network/), without
# making the boot wait for a network that may not be there
chroot "$root" systemctl -q enable systemd-networkd.service
chroot "$root" systemctl -q disable systemd-networkd-wait-online.service
# no unattended apt runs in a VM that comes and goes
chroot "$root" systemctl -q disable apt-daily.timer apt-daily-upgrade.timer

# Secure Boot is on and DKMS signed the module with its own key, which was never enrolled in MOK
# (the MOK manager prompt at the next boot was missed): the kernel's lockdown refuses the module and
# modprobe fails with "Key was rejected by service" (gpu-operator issues 1142, 1726).
rm -rf "$ROOT/proc/driver/nvidia" "$ROOT/sys/module/nvidia"
mkdir -p "$ROOT/sys/firmware/efi/efivars" "$ROOT/sys/firmware/efi/mok-variables" "$ROOT/var/lib/dkms"
# efivars: 4 bytes of attributes (NV+BS+RT = 0x06), then the value
printf '\006\000\000\000\001' >"$ROOT/sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c"
# the DKMS signing certificate (DER) and the enrolled MOK list (EFI_SIGNATURE_LISTs: header + certificates)
printf '\060\202\003\037DKMS module signing key 2024 gpu-node-1' >"$ROOT/var/lib/dkms/mok.pub"
printf '\241\131\300\245\344\224\247\112\207\265\253\025\134\053\360\162Canonical Ltd. Secure Boot Signing' >"$ROOT/sys/firmware/efi/mok-variables/MokListRT"

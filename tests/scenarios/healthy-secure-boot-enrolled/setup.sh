# Healthy but unusual: Secure Boot on, the DKMS key enrolled (its certificate is in MokListRT), the
# signed module loaded. Nothing to say.
. "$NODE_LIB"
real_cdi
mkdir -p "$ROOT/sys/firmware/efi/efivars" "$ROOT/sys/firmware/efi/mok-variables" "$ROOT/var/lib/dkms"
# efivars: 4 bytes of attributes (NV+BS+RT = 0x06), then the value
printf '\006\000\000\000\001' >"$ROOT/sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c"
# the DKMS signing certificate (DER) and the enrolled MOK list (EFI_SIGNATURE_LISTs: header + certificates)
printf '\060\202\003\037DKMS module signing key 2024 gpu-node-1' >"$ROOT/var/lib/dkms/mok.pub"
cat "$ROOT/var/lib/dkms/mok.pub" >"$ROOT/sys/firmware/efi/mok-variables/MokListRT"

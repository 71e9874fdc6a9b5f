# The --events file is not kubectl output (a truncated paste). The doctor cannot read events, so it
# says so as a warning and judges the node without them; nothing else changes.

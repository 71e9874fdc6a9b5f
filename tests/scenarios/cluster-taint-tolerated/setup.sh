# Healthy but unusual: the same tainted GPU node, and the pending GPU pod tolerates the taint with
# operator Exists and no value (ToleratesTaint: Exists matches any value). It is Pending only because
# it was just created; nothing can be said against it.

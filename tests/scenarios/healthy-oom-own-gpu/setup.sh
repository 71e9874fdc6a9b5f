# A pod that ran out of GPU memory on a GPU of its own: its model is too large for the GPU; nobody
# shares it, so no co-tenant is named and no sharing finding is made.
. "$NODE_LIB"
real_cdi

# kubelet lists running pods; the checkpoint still gives GPU 0 to train-0, whose pod dir kubelet has
# not cleaned up yet, but no running pod holds GPU 0 any more

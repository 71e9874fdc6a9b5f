# Healthy but unusual: the device plugin pod restarted once (last state Error: it started before the
# driver finished loading at boot and exited, as the plugin does with failOnInitError) and has run
# since, Ready. One restart that recovered is not a crash loop: the plugin serves its socket and the
# node advertises its GPUs.

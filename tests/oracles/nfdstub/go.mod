// The two packages of node-feature-discovery that NVIDIA's k8s-device-plugin v0.17.4 imports, for
// its NodeFeature API output only: the proxy does not serve the release it requires (v0.15.7, 403),
// and the oracle tests run GFD with --output-file. Written for these tests; no NFD code.
module sigs.k8s.io/node-feature-discovery

go 1.22

require (
	k8s.io/apimachinery v0.31.3
	k8s.io/client-go v0.31.3
)

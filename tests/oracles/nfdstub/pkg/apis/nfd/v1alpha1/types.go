// Package v1alpha1: the NodeFeature object as GFD fills it (name, node label, spec labels).
package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// NodeFeatureObjNodeNameLabel names the node a NodeFeature object is for.
const NodeFeatureObjNodeNameLabel = "nfd.node.kubernetes.io/node-name"

// Features is empty: GFD publishes labels only.
type Features struct{}

// NewFeatures returns empty features.
func NewFeatures() *Features { return &Features{} }

// NodeFeatureSpec holds the labels.
type NodeFeatureSpec struct {
	Features Features          `json:"features"`
	Labels   map[string]string `json:"labels"`
}

// NodeFeature is the custom resource GFD creates or updates.
type NodeFeature struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              NodeFeatureSpec `json:"spec"`
}

// DeepCopy copies the object and its maps.
func (n *NodeFeature) DeepCopy() *NodeFeature {
	if n == nil {
		return nil
	}
	out := &NodeFeature{TypeMeta: n.TypeMeta, Spec: NodeFeatureSpec{Labels: map[string]string{}}}
	n.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	for k, v := range n.Spec.Labels {
		out.Spec.Labels[k] = v
	}
	return out
}

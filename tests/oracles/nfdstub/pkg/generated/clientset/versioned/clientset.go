// Package versioned: the NodeFeature client interface GFD uses, with no client behind it.
package versioned

import (
	"context"
	"errors"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"sigs.k8s.io/node-feature-discovery/pkg/apis/nfd/v1alpha1"
)

var errNoAPI = errors.New("this test build of GFD has no NodeFeature API client: use --output-file")

// NodeFeatureInterface gets, creates and updates NodeFeature objects.
type NodeFeatureInterface interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*v1alpha1.NodeFeature, error)
	Create(ctx context.Context, nf *v1alpha1.NodeFeature, opts metav1.CreateOptions) (*v1alpha1.NodeFeature, error)
	Update(ctx context.Context, nf *v1alpha1.NodeFeature, opts metav1.UpdateOptions) (*v1alpha1.NodeFeature, error)
}

// NfdV1alpha1Interface gives the NodeFeature client of a namespace.
type NfdV1alpha1Interface interface {
	NodeFeatures(namespace string) NodeFeatureInterface
}

// Interface is the clientset.
type Interface interface {
	NfdV1alpha1() NfdV1alpha1Interface
}

// Clientset is never made: NewForConfig fails.
type Clientset struct{}

// NewForConfig refuses: no API client in this build.
func NewForConfig(*rest.Config) (*Clientset, error) { return nil, errNoAPI }

// NfdV1alpha1 is unreachable (no Clientset is ever returned).
func (*Clientset) NfdV1alpha1() NfdV1alpha1Interface { return nil }

package kubeapi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// CRD files the product ships (manifests/) and the upstream ones it works with (testdata/reference/crds,
// byte-for-byte copies listed with their sources in testdata/reference/SOURCES.md).
const (
	ProvisioningRequestCRD = "manifests/crd/o2ims.provisioning.oran.org_provisioningrequests.yaml"
	PackageVariantCRD      = "config.porch.kpt.dev_packagevariants.yaml"
	ClusterCRD             = "cluster.x-k8s.io_clusters.yaml"
	ClusterV1beta1OnlyCRD  = "clusters-v1beta1-only.yaml"
	BareMetalHostCRD       = "metal3.io_baremetalhosts.yaml"
	HardwareDataCRD        = "metal3.io_hardwaredata.yaml"
	// PackageRevisionCRD stands in for Porch's aggregated API (derived from its Go types; SOURCES.md).
	PackageRevisionCRD = "porch.kpt.dev_packagerevisions.yaml"
	// PackageRevisionResourcesCRD stands in for the same API's revision content (SOURCES.md §5a).
	PackageRevisionResourcesCRD = "porch.kpt.dev_packagerevisionresources.yaml"
	Metal3MachineCRD            = "infrastructure.cluster.x-k8s.io_metal3machines.yaml"
)

// ReferenceDir holds the upstream documents the tests and the local run read, inside the checkout.
const ReferenceDir = "testdata/reference"

// ReferenceCRD is the path of an upstream CRD file in testdata/reference/crds.
func ReferenceCRD(name string) (string, error) {
	return RepoFile(filepath.Join(ReferenceDir, "crds", name))
}

// ReferenceFile is the path of an upstream document in testdata/reference (e.g. the O2IMS OpenAPI).
func ReferenceFile(rel string) (string, error) {
	return RepoFile(filepath.Join(ReferenceDir, rel))
}

// RepoFile is the path of a file in this checkout.
func RepoFile(rel string) (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, rel), nil
}

// DefaultCRDs are the product's CRD and the upstream ones of the chain (the Cluster CRD as upstream ships
// it, v1beta2 storage).
func DefaultCRDs() ([]string, error) {
	own, err := RepoFile(ProvisioningRequestCRD)
	if err != nil {
		return nil, err
	}
	paths := []string{own}
	for _, n := range []string{PackageVariantCRD, PackageRevisionCRD, PackageRevisionResourcesCRD, ClusterCRD, BareMetalHostCRD, HardwareDataCRD} {
		p, err := ReferenceCRD(n)
		if err != nil {
			return nil, err
		}
		paths = append(paths, p)
	}
	return paths, nil
}

// InstallCRDs creates (or replaces) the CRDs in the given files and waits until each is Established.
func (s *Server) InstallCRDs(ctx context.Context, paths ...string) error {
	dyn := s.AdminDynamic()
	var names []string
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			var obj map[string]any
			if err := dec.Decode(&obj); err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				return fmt.Errorf("%s: %w", path, err)
			}
			if obj == nil {
				continue
			}
			u := &unstructured.Unstructured{Object: obj}
			if u.GetKind() != "CustomResourceDefinition" {
				continue
			}
			existing, err := dyn.Resource(crdGVR).Get(ctx, u.GetName(), metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err):
				_, err = dyn.Resource(crdGVR).Create(ctx, u, metav1.CreateOptions{})
			case err == nil:
				u.SetResourceVersion(existing.GetResourceVersion())
				_, err = dyn.Resource(crdGVR).Update(ctx, u, metav1.UpdateOptions{})
			}
			if err != nil {
				return fmt.Errorf("installing CRD %s from %s: %w", u.GetName(), path, err)
			}
			names = append(names, u.GetName())
		}
	}
	for _, name := range names {
		if err := s.waitEstablished(ctx, name); err != nil {
			return err
		}
	}
	return nil
}

// DeleteCRD removes a CRD and waits until it is gone (tests switch between the two Cluster CRD variants).
func (s *Server) DeleteCRD(ctx context.Context, name string) error {
	dyn := s.AdminDynamic()
	if err := dyn.Resource(crdGVR).Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for {
		_, err := dyn.Resource(crdGVR).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("CRD %s not deleted: %w", name, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (s *Server) waitEstablished(ctx context.Context, name string) error {
	dyn := s.AdminDynamic()
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for {
		crd, err := dyn.Resource(crdGVR).Get(ctx, name, metav1.GetOptions{})
		if err == nil && established(crd) {
			return s.waitServed(ctx, crd)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("CRD %s not established: %w", name, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func established(crd *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Established" && m["status"] == "True" {
			return true
		}
	}
	return false
}

// waitServed lists the new resource once: Established can precede discovery and the REST handler by a
// moment, and a test's first create must not race that.
func (s *Server) waitServed(ctx context.Context, crd *unstructured.Unstructured) error {
	group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
	plural, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "plural")
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	dyn := s.AdminDynamic()
	for _, v := range versions {
		m, _ := v.(map[string]any)
		if served, _ := m["served"].(bool); !served {
			continue
		}
		version, _ := m["name"].(string)
		gvr := schema.GroupVersionResource{Group: group, Version: version, Resource: plural}
		for {
			_, err := dyn.Resource(gvr).List(ctx, metav1.ListOptions{Limit: 1})
			if err == nil {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("%s not served: %v", gvr, err)
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	return nil
}

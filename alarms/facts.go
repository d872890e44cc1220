package alarms

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/o2ims-operator/o2ims-operator/inventory"
)

// RequestLister lists the cached ProvisioningRequests (nbi.Store is one).
type RequestLister interface {
	List() ([]*unstructured.Unstructured, error)
}

// NewFacts is the Facts of the operator's own parts: requests (the informer cache, as the NBI reads it),
// view (the inventory), dms (the deployment managers the inventory answers; nil: none) and netbox (the
// client's Degraded: "" while NetBox can be used).
func NewFacts(requests RequestLister, view *inventory.View, dms func() ([]*inventory.Entry, error), netbox func() string) Facts {
	return &partsFacts{requests: requests, view: view, dms: dms, netbox: netbox}
}

type partsFacts struct {
	requests RequestLister
	view     *inventory.View
	dms      func() ([]*inventory.Entry, error)
	netbox   func() string
}

func (f *partsFacts) Requests() ([]*unstructured.Unstructured, error) { return f.requests.List() }

func (f *partsFacts) Inventory() (*inventory.Snapshot, bool) {
	if synced, _ := f.view.Synced(); !synced {
		return nil, false
	}
	return f.view.Snapshot(), true
}

func (f *partsFacts) DeploymentManagers() ([]*inventory.Entry, error) {
	if f.dms == nil {
		return nil, nil
	}
	return f.dms()
}

func (f *partsFacts) NetBoxProblem() string {
	if f.netbox == nil {
		return ""
	}
	return f.netbox()
}
